"""``envgym train``: the bundled GRPO trainer from the command line.

    envgym train --recipe cpu-smollm2 --mode sync --out out/train/sync
    envgym train --recipe cpu-smollm2 --mode async --max-staleness 2 --out out/train/async
    envgym train --recipe cpu-smollm2 --mode both --out out/train/cpu      # sync, then async (staleness 2), + plot
    envgym train --config my.json --set lr=1e-5 --set steps=50 --out DIR    # any TrainConfig field
    envgym train --plot sync=out/train/sync async=out/train/async --out out/train/curves
    envgym train --recipe cpu-smollm2 --ray auto --proxy-host 10.0.0.5 --out DIR   # rollouts on Ray hosts
    envgym train --recipe cpu-smollm2 --generator tool-retail-gen --curriculum solve-rate --out DIR  # fresh tasks

Rerunning a command on the same ``--out`` resumes from its newest checkpoint (``--fresh`` starts over).
Ctrl-C saves a checkpoint of the last finished step and exits 130. A bad config prints one line naming
the field and exits 2. ``add_parser(subparsers)`` is its ``envgym.cli`` entry point.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from envgym._lazy import LazyConsole
from envgym._outputs import output_dir, output_file
from envgym.errors import SpecError

console = LazyConsole(stderr=True)  # rich, asyncio and the trainer load when a command runs, not for --help


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def resolve_config(args: argparse.Namespace, **forced: Any) -> Any:
    """The TrainConfig the arguments describe: recipe or config file, then ``--set``, then flags."""
    from envgym.rl.train.config import RECIPES, build_config

    values: dict[str, Any] = {}
    if args.recipe:
        if args.recipe not in RECIPES:
            raise SpecError(f"unknown recipe {args.recipe!r}; known: {', '.join(sorted(RECIPES))}", field="recipe")
        values.update(RECIPES[args.recipe])
    if args.config:
        try:
            loaded = json.loads(Path(args.config).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SpecError(f"cannot read the config file {args.config}: {exc}", field="config") from exc
        values.update(loaded.get("config", loaded))  # a run's config.json works too
    for item in args.set or ():
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise SpecError(f"--set takes KEY=VALUE, not {item!r}", field="set")
        values[key.strip()] = _parse_value(raw)
    for flag in ("mode", "max_staleness", "steps", "seed", "device"):
        value = getattr(args, flag)
        if value is not None:
            values[flag] = value
    if args.generator:  # instead of the suite: a recipe's suite filters do not apply to a stream
        values.update(generator=args.generator, task_tags=(), task_limit=None)
    if args.curriculum == "none":
        values["curriculum"] = None
    elif args.curriculum:  # the default solve-rate settings, unless the config or --set already tuned them
        given = values.get("curriculum")
        if not (isinstance(given, dict) and given.get("type", "solve_rate") == "solve_rate"):
            values["curriculum"] = {"type": "solve_rate"}
    values.update(forced)
    return build_config(values)


def _train(config: Any, out: Path, *, quiet: bool, fresh: bool, label: str = "", ray: str | None = None,
           proxy_host: str = "127.0.0.1") -> Any:
    import asyncio

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from envgym.rl.train.trainer import Trainer

    if fresh and out.exists():
        shutil.rmtree(out)
    output_dir(out)  # once the config is known good: below a file or unwritable is one line, exit 2
    progress = Progress(TextColumn(f"[bold]train{(' ' + label) if label else ''}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[info]}"),
                        console=console.get() if isinstance(console, LazyConsole) else console, disable=quiet)
    bar = progress.add_task("steps", total=config.steps, info="loading the model")

    def report(line: dict[str, Any]) -> None:
        stale = " ".join(f"{k}:{v}" for k, v in line["staleness"].items())
        info = (f"reward {line['reward_mean']:.3f}  kl {line['kl_rollout_trainer']:.2e}  "
                f"is p95 {line['is_ratio']['p95']:.3f}  staleness {stale}  {line['samples_per_s']:.2f} samples/s")
        progress.update(bar, completed=line["step"], info=info)
        if not quiet:
            progress.console.print(f"step {line['step']:>4}  {info}  ({line['step_s']:.1f}s)")

    with progress:
        return asyncio.run(Trainer(config, out, report=report, ray=ray, proxy_host=proxy_host).run())


def _cmd_train(args: argparse.Namespace) -> int:
    if args.plot:
        return _cmd_plot(args)
    if not args.out:
        raise SpecError("--out is required: the run folder (metrics, checkpoints)", field="out")
    out = Path(args.out)
    try:
        if args.mode == "both":
            staleness = args.max_staleness if args.max_staleness is not None else 2
            runs = {"sync": resolve_config(args, mode="sync", max_staleness=0),
                    f"async (staleness {staleness})": resolve_config(args, mode="async", max_staleness=staleness)}
            folders = {}
            for (label, config), name in zip(runs.items(), ("sync", "async"), strict=True):
                folders[label] = out / name
                _train(config, out / name, quiet=args.quiet, fresh=args.fresh, label=name, ray=args.ray,
                       proxy_host=args.proxy_host)
            from envgym.rl.train.plot import write_curves

            csv_path, png_path = write_curves(folders, out / "curves")
            console.print(f"wrote {csv_path} and {png_path}")
        else:
            config = resolve_config(args)
            result = _train(config, out, quiet=args.quiet, fresh=args.fresh, ray=args.ray, proxy_host=args.proxy_host)
            console.print(f"trained {result.steps_done} step(s); metrics in {out / 'metrics.jsonl'}")
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/]: the last finished step is checkpointed in {out / 'checkpoints'}")
        return 130
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from envgym.rl.train.plot import write_curves

    if not args.out:
        raise SpecError("--out is required with --plot: where curves.csv/.png go", field="out")
    runs = {}
    for item in args.plot:
        label, sep, folder = item.partition("=")
        runs[label if sep else Path(item).name] = folder if sep else item
    csv_path, png_path = write_curves(runs, output_file(args.out))
    console.print(f"wrote {csv_path} and {png_path}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``envgym train`` to the ``envgym`` command line."""
    p = subparsers.add_parser("train", help="train a policy with the bundled async GRPO trainer")
    p.add_argument("--recipe", help="a preset: cpu-smollm2, gpu-smollm2, tiny (see envgym/rl/train/README.md)")
    p.add_argument("--config", help="a JSON file of TrainConfig fields (or a run's config.json)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one config field (repeatable)")
    p.add_argument("--mode", choices=("sync", "async", "both"), help="both: sync then async, and a plot")
    p.add_argument("--max-staleness", type=int, help="async: how many versions old a trained token may be")
    p.add_argument("--steps", type=int, help="training steps (default: the recipe's)")
    p.add_argument("--seed", type=int, help="run seed (default: the recipe's)")
    p.add_argument("--device", help="torch device (cpu, cuda)")
    p.add_argument("--generator", metavar="NAME", help="train on fresh tasks: an endless seeded stream from this task "
                   "generator instead of the suite (envgym tasks generate --list)")
    p.add_argument("--curriculum", choices=("solve-rate", "none"), help="with --generator: solve-rate moves the "
                   "level to keep the recent solve rate near 0.5 (tune with --set curriculum='{...}')")
    p.add_argument("--out", help="run folder (rerun the same command to resume)")
    p.add_argument("--fresh", action="store_true", help="delete --out first instead of resuming")
    p.add_argument("--plot", nargs="+", metavar="[LABEL=]RUN_DIR", help="only plot these runs' reward curves")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--ray", metavar="ADDRESS|auto", help="play the rollouts on a Ray cluster's envgym hosts "
                   "(README: Run on many hosts); the policy stays here behind the recording proxy")
    p.add_argument("--proxy-host", default="127.0.0.1", help="address the recording proxy listens on: one the "
                   "Ray hosts reach (loopback suits only a one-machine cluster)")
    p.set_defaults(fn=_cmd_train)
    return p
