"""Write the text-game suites: ``python -m envgym_textgames.build {scienceworld,textworld} [options]``.

ScienceWorld: for each of its task types, the first ``--per-split`` variations of each of its train, dev
and test lists (``--per-split 0``: every variation, ScienceWorld's full 7,207), each with the gold path
ScienceWorld generates for it, replayed to prove it scores 100 (a variation whose gold path does not is
left out and reported). TextWorld: ``--games`` seeds per challenge family, each generated, its walkthrough
replayed to prove it wins. Both print one line per task type / family: tasks, gold score, seconds.
``textworld-games`` generates the games of a TextWorld suite into the cache (a setup step, so that the
first episodes of each game do not pay for it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from envgym.plugin import TaskSpec, write_tasks


def build_scienceworld(per_split: int, only: list[str] | None = None, rotate: bool = False) -> list[TaskSpec]:
    from envgym_textgames.scienceworld import new_simulator, scienceworld_task

    sim = new_simulator()
    tasks: list[TaskSpec] = []
    try:
        for index, name in enumerate(sim.get_task_names()):
            if only and name not in only:
                continue
            start, scores = time.monotonic(), []
            sim.load(name, 0, "")
            splits = {"train": sim.get_variations_train(), "dev": sim.get_variations_dev(),
                      "test": sim.get_variations_test()}
            if rotate:  # one split per task type, cycling: the bundled sample
                splits = {split: splits[split] for split in [("train", "dev", "test")[index % 3]]}
            for split, variations in splits.items():
                for variation in variations[:per_split] if per_split else variations:
                    sim.load(name, variation, "", generateGoldPath=True)
                    gold = list(sim.get_gold_action_sequence())
                    sim.server.reset()
                    description = sim.server.freeActionTaskDesc()
                    sim.server.step("look around")
                    for command in gold:
                        sim.server.step(command)
                    score = round(100 * sim.server.getScore())
                    scores.append(score)
                    if score < 100 or not sim.server.getCompleted():
                        print(f"  left out {name} variation {variation}: gold path scores {score}", file=sys.stderr)
                        continue
                    tasks.append(scienceworld_task(name, variation, split, gold, description))
            print(f"{name:45s} {len(scores):4d} variations, gold mean {sum(scores) / max(len(scores), 1):6.1f}, "
                  f"{time.monotonic() - start:6.1f} s", flush=True)
    finally:
        sim.close()
    return tasks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envgym_textgames.build", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="game", required=True)
    sw = sub.add_parser("scienceworld", help="ScienceWorld variations with their gold paths")
    sw.add_argument("--per-split", type=int, default=1, help="variations per task type and split (0: all)")
    sw.add_argument("--task", action="append", help="only this task type (repeatable)")
    sw.add_argument("--rotate", action="store_true",
                    help="one split per task type (train, dev, test cycling over the types), as the bundled suite")
    sw.add_argument("--out", type=Path, required=True, help="the tasks.jsonl to write")
    tw = sub.add_parser("textworld", help="generated TextWorld games with their walkthroughs")
    tw.add_argument("--games", type=int, default=3, help="seeds per challenge family")
    tw.add_argument("--out", type=Path, required=True, help="the tasks.jsonl to write")
    games = sub.add_parser("textworld-games", help="generate a TextWorld suite's games into the cache")
    games.add_argument("--suite", default="text-textworld", help="the suite (name or folder)")
    args = parser.parse_args(argv)
    if args.game == "textworld-games":
        from envgym.plugin import load_suite
        from envgym_textgames.textworld import game_file

        for task in load_suite(args.suite):
            start = time.monotonic()
            path = game_file(task.initial_state)
            print(f"{task.id:40s} {time.monotonic() - start:6.1f} s  {path}", flush=True)
        return 0
    if args.game == "scienceworld":
        if args.per_split < 0:
            parser.error("--per-split must be 0 (all) or more")
        tasks = build_scienceworld(args.per_split, args.task, args.rotate)
    else:
        from envgym_textgames.textworld import build_textworld

        if args.games < 1:
            parser.error("--games must be at least 1")
        tasks = build_textworld(args.games)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_tasks(args.out, tasks)
    print(f"wrote {len(tasks)} tasks to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
