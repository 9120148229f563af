"""Write the text-game suites: ``python -m envgym_textgames.build {scienceworld,textworld} [options]``.

ScienceWorld: for each of its task types, the first ``--per-split`` variations of each of its train, dev
and test lists (``--per-split 0``: every variation, ScienceWorld's full 7,207), each with the gold path
ScienceWorld generates for it, replayed to prove it scores 100 (a variation whose gold path does not is
left out and reported). TextWorld: ``--games`` seeds per challenge family, each generated, its walkthrough
replayed to prove it wins. Both print one line per task type / family: tasks, gold score, seconds.
``textworld-games`` generates the games of a TextWorld suite into the cache (a setup step, so that the
first episodes of each game do not pay for it).

``distinct`` counts a generator's distinct tasks (:func:`envgym.plugin.distinct`: by normalised content and by
reference solution) over a seed range made in several processes, each task appended to ``--out`` as it is made
(rerun the same command to resume), then prints the count and, per level, the reference length and the CPU
seconds a task took to make.

ScienceWorld's step limit (:mod:`envgym_textgames.scienceworld`): ``scienceworld-gold`` replays a suite's
gold paths under each ``--step-limit`` (default: none, then the package's own) and prints which finish;
``scienceworld-limit`` writes a copy of a suite whose tasks carry ``step_limit`` (new task hashes: a
leaderboard keeps their runs apart from the unlimited suite's), for ``envgym eval --suite FILE``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from envgym.plugin import TaskSpec, write_tasks


def build_scienceworld(per_split: int, only: list[str] | None = None, rotate: bool = False) -> list[TaskSpec]:
    from envgym_textgames.scienceworld import new_simulator, scienceworld_task
    from envgym_textgames.scienceworld_gen import play_gold

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
                    gold, description, score, completed = play_gold(sim, name, variation)
                    scores.append(score)
                    if score < 100 or not completed:
                        print(f"  left out {name} variation {variation}: gold path scores {score}", file=sys.stderr)
                        continue
                    tasks.append(scienceworld_task(name, variation, split, gold, description))
            print(f"{name:45s} {len(scores):4d} variations, gold mean {sum(scores) / max(len(scores), 1):6.1f}, "
                  f"{time.monotonic() - start:6.1f} s", flush=True)
    finally:
        sim.close()
    return tasks


def _step_limit(text: str) -> int | str | None:
    """An argparse type: ``none``, ``package`` or a whole number of moves >= 1."""
    if text in ("none", "package"):
        return None if text == "none" else text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected none, package or a number of moves, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"a step limit must be at least 1 move, got {value}")
    return value


def gold_under_limits(tasks: list[TaskSpec], limits: list[int | str | None]) -> int:
    """Replay each task's gold path under each step limit, one line per task; return 1 if a gold path did
    not win with no limit (the suite is broken), else 0."""
    import json

    from envgym_textgames.scienceworld import ScienceWorldEnv, resolve_step_limit

    names = [f"{'none' if v is None else v}" + (f" ({resolve_step_limit(v, 'step_limit')})" if v == "package" else "")
             for v in limits]
    won = dict.fromkeys(names, 0)
    broken = 0
    env = ScienceWorldEnv()
    try:
        width = max((len(t.id) for t in tasks), default=4)
        print(f"{'task':{width}s} {'commands':>8s}  " + "  ".join(f"{n:>18s}" for n in names), flush=True)
        for task in tasks:
            commands = [json.loads(c.arguments or "{}").get("command", "") for a in task.solution or ()
                        for c in a.tool_calls]
            cells = []
            for name, limit in zip(names, limits, strict=True):
                env._start(task.model_copy(update={"initial_state": {**task.initial_state, "step_limit": limit}}))
                for command in commands:
                    if env._command(command)[1]:
                        break
                row = env._state().row
                won[name] += row["won"]
                broken += limit is None and not row["won"]
                cells.append(f"{'won' if row['won'] else 'NOT won'} {row['score']:3d}, {row['moves']:3d} moves")
            print(f"{task.id:{width}s} {len(commands):8d}  " + "  ".join(f"{c:>18s}" for c in cells), flush=True)
    finally:
        if env._sim is not None:
            env._sim.close()
    print("gold paths that win: " + ", ".join(f"step limit {n}: {won[n]}/{len(tasks)}" for n in names))
    return 1 if broken else 0


def _make(job: tuple[str, str, int]) -> dict[str, Any]:
    from envgym.plugin import load_suite

    name, split, seed = job
    start = time.process_time()
    task = load_suite(f"{name}@{seed}:{seed + 1}:split={split}")[0]
    return {"seed": seed, "cpu_s": round(time.process_time() - start, 3), "task": task.model_dump(mode="json")}


def count_distinct(name: str, split: str, seeds: range, procs: int, out: Path) -> None:
    """Count generator ``name``'s distinct tasks over ``seeds`` (levels mixed) made in ``procs`` processes, with
    :func:`envgym.plugin.distinct`; each task is appended to ``out`` as it is made (a rerun resumes)."""
    import json
    from multiprocessing import get_context

    from envgym.plugin import distinct

    rows = {}
    if out.is_file():
        for line in out.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["seed"]] = row
    todo = [(name, split, seed) for seed in seeds if seed not in rows]
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with out.open("a") as sink, get_context("spawn").Pool(procs) as pool:
        for done, row in enumerate(pool.imap_unordered(_make, todo, chunksize=8), 1):
            rows[row["seed"]] = row
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            if done % 500 == 0:
                print(f"{done}/{len(todo)} made, {time.monotonic() - start:.0f} s", flush=True)
    counted = distinct(TaskSpec.model_validate(rows[seed]["task"]) for seed in seeds)
    print(f"{name} seeds {seeds.start}..{seeds.stop - 1}, split {split}: {counted.total} tasks, "
          f"{counted.by_content} by content, {counted.by_solution} by solution, {counted.distinct} distinct")
    levels: dict[int, list[tuple[int, float]]] = {}
    for seed in seeds:
        task = rows[seed]["task"]
        levels.setdefault(task["metadata"]["level"], []).append((len(task["solution"]), rows[seed]["cpu_s"]))
    for level, cells in sorted(levels.items()):
        lengths = [n for n, _ in cells]
        cpu = sum(c for _, c in cells) / len(cells)
        print(f"  level {level}: {len(cells)} tasks, reference {sum(lengths) / len(lengths):.2f} commands "
              f"(min {min(lengths)}, max {max(lengths)}), {cpu:.3f} CPU s a task ({1 / cpu:.2f} tasks/s per core)")


def _seeds(text: str) -> range:
    """An argparse type: ``START:STOP``."""
    start, colon, stop = text.partition(":")
    if not colon or not start.isdigit() or not stop.isdigit() or int(start) >= int(stop):
        raise argparse.ArgumentTypeError(f"expected START:STOP with START < STOP, got {text!r}")
    return range(int(start), int(stop))


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
    gold = sub.add_parser("scienceworld-gold", help="replay a suite's gold paths under ScienceWorld step limits")
    gold.add_argument("--suite", default="text-scienceworld", help="the suite (name or folder)")
    gold.add_argument("--step-limit", type=_step_limit, action="append", metavar="none|package|N",
                      help="a step limit to replay under (repeatable; default: none, then package)")
    limited = sub.add_parser("scienceworld-limit", help="a copy of a ScienceWorld suite played under a step limit")
    limited.add_argument("--suite", default="text-scienceworld", help="the suite (name or folder)")
    limited.add_argument("--step-limit", type=_step_limit, required=True, metavar="none|package|N",
                         help="the step_limit every task carries (package: the scienceworld package's default)")
    limited.add_argument("--out", type=Path, required=True, help="the tasks.jsonl to write")
    dist = sub.add_parser("distinct", help="count a task generator's distinct tasks over a seed range")
    dist.add_argument("generator", help="the generator (envgym tasks generate --list)")
    dist.add_argument("--split", default="train", help="its split (default: train)")
    dist.add_argument("--seeds", type=_seeds, default=range(10_000), metavar="START:STOP", help="default 0:10000")
    dist.add_argument("--procs", type=int, default=2, help="processes making tasks (default 2)")
    dist.add_argument("--out", type=Path, required=True, help="JSONL of the tasks made (appended to; resumes)")
    args = parser.parse_args(argv)
    if args.game == "distinct":
        if args.procs < 1:
            parser.error("--procs must be at least 1")
        from envgym.plugin import SpecError

        try:
            count_distinct(args.generator, args.split, args.seeds, args.procs, args.out)
        except SpecError as exc:  # an unknown generator or split
            print(f"{parser.prog} distinct: error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.game in ("scienceworld-gold", "scienceworld-limit"):
        from envgym.plugin import load_suite

        tasks = load_suite(args.suite)
        if args.game == "scienceworld-gold":
            return gold_under_limits(tasks, args.step_limit or [None, "package"])
        tasks = [t.model_copy(update={"initial_state": {**t.initial_state, "step_limit": args.step_limit}})
                 for t in tasks]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_tasks(args.out, tasks)
        print(f"wrote {len(tasks)} tasks (step_limit {args.step_limit or 'none'}) to {args.out}")
        return 0
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
