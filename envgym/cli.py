"""The ``envgym`` command line.

    envgym list                                  environments, bundled suites and task generators
    envgym check ENV_ID|GENERATOR... | --all     contract checks and admission gates (oracle 1, null 0)
    envgym tasks validate FILE...                validate task files (errors name file, line and field)
    envgym tasks generate NAME --n N --out F     write a task generator's tasks (JSONL or a datasets folder)
    envgym eval --suite S --agent A --out DIR    evaluate (resumable: rerun the same command)
    envgym leaderboard build RUN_DIR... --out DIR
    envgym sandbox build [NAME...|--all] | gc    container images and the reaper (envgym/sandbox/cli.py)
    envgym swe import | build | grade | mine     SWE-bench instances, repository images, predictions (envgym_swe/cli.py)
    envgym mcp serve ENV_ID | build SUITE...     an env's tools as an MCP server; MCP server images (envgym/mcp/cli.py)
    envgym bfcl setup [--check]                  add bfcl-eval without its pins (envgym_bfcl/cli.py)
    envgym train --recipe R --mode M --out DIR   the bundled async GRPO trainer (envgym/rl/train/cli.py)

Every subcommand comes in one way: an entry point in the group ``envgym.cli`` names a callable
``add_parser(subparsers)`` that adds one subcommand with ``subparsers.add_parser(NAME, ...)`` and
``set_defaults(fn=...)``; ``fn(args)`` returns the exit code. The kernel's own (``tasks``, ``eval``,
``leaderboard`` here, ``list`` and ``check`` in :mod:`envgym.cli_check`, ``sandbox``, ``train``, ``mcp``) and the
families' are registered in
pyproject.toml exactly as any installed package's. :func:`build_parser` calls the hooks
in entry-point name order; one that fails to import or raises costs only its own subcommand (a one-line
warning on stderr; ``envgym --help`` and every other subcommand still work); two that add the same name
are an error naming both entry points.

Errors a user can fix (bad ids, bad task files, unknown agents, out-of-range flags, an ``--out`` that is a
file, below a file or somewhere nothing can be written) print one clear line naming the file, line, field or
flag, and exit 2; never a traceback. Every subcommand's output flags, a plug-in's too, go through
:func:`output_dir` / :func:`output_file` (``envgym._outputs``), which make the folder ready or say why not.

``envgym --version`` prints the version. Every parser, a plug-in's too, is a :class:`Parser`: help shows
each argument's default (:class:`HelpFormatter`), and the top-level help ends with examples and the exit
codes. ``envgym eval`` shows its progress (:mod:`envgym._progress`: live on a terminal, plain lines in a
log, nothing with ``--quiet``) and exits :data:`EXIT_INFRA` (3), printing the most common causes, when more
than ``--max-infra-errors`` of the run's episodes, or all of them, ended as ``infra_error``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from envgym._deprecation import moved_attribute
from envgym._entry_points import installed
from envgym._lazy import LazyConsole
from envgym._outputs import output_dir as output_dir  # also for plug-in subcommands' output flags
from envgym._outputs import output_file as output_file
from envgym.errors import EnvgymError, ExtraMissing, PluginError, RegistryError, SpecError

if TYPE_CHECKING:
    from rich.console import Console

    from envgym._progress import RunProgress

CLI_ENTRY_POINT_GROUP = "envgym.cli"
T = TypeVar("T")


console: Console | LazyConsole = LazyConsole(stderr=True)
out: Console | LazyConsole = LazyConsole(soft_wrap=True)

# ``list`` and ``check`` live in envgym.cli_check (which prints through this module's ``out``); the entry points
# name them there. The old names warn until 0.3.
_MOVED_TO_CLI_CHECK = frozenset({"add_list", "add_check"})


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_CLI_CHECK:
        return moved_attribute(__name__, "envgym.cli_check", name, since="0.2", removal="0.3")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def escape(text: str) -> str:
    """rich's markup escape (imported on first use, like rich itself)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _table(title: str, *columns: str) -> Any:
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    return table


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (``--runs 0`` is refused, never silently raised to 1)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def workers_count(text: str) -> int | str:
    """An argparse type: ``auto`` or an integer >= 1 (``envgym eval --workers``)."""
    return "auto" if text == "auto" else positive_int(text)


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0 (no nan, inf or negatives)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """An argparse type: a finite number > 0 (a budget in seconds or steps, a factor)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def fraction(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


def _cmd_tasks_validate(args: argparse.Namespace) -> int:
    from envgym.registry import spec
    from envgym.task import load_tasks

    total = 0
    for path in args.files:
        tasks = load_tasks(path)
        for task in tasks:
            try:
                spec(task.env_id)
            except RegistryError as exc:
                raise SpecError(f"task {task.id!r}: {exc}", path=path, field="env_id") from None
        total += len(tasks)
        out.print(f"{path}: {len(tasks)} tasks ok")
    out.print(f"{total} tasks valid")
    return 0


def _cmd_tasks_generate(args: argparse.Namespace) -> int:
    import time

    from envgym.generate import GeneratedTasks, SuiteRef, distinct, find
    from envgym.registry import list_generators

    if args.list:
        for name in list_generators():
            g = find(name)
            splits = "; ".join(f"{split}: {', '.join(g.templates_of(split))}" for split in g.splits)
            out.print(f"{g.family}/{name}  levels {','.join(map(str, g.levels))}  {splits}  {g.description}",
                      markup=False, highlight=False)
        return 0
    if not args.name or not args.out or args.n is None:
        raise EnvgymError("envgym tasks generate NAME --n N --out FILE.jsonl|DIR (or --list)")
    if "@" in args.name:
        raise EnvgymError(f"NAME: {args.name!r}: give the generator's name; --seed, --n, --level and --split choose "
                          "its tasks")
    spec_ = find(args.name)  # an unknown name: a SpecError with a did-you-mean
    if args.level is not None and args.level not in spec_.levels:
        raise EnvgymError(f"--level {args.level}: generator {args.name!r} has levels "
                          f"{', '.join(map(str, spec_.levels))}")
    if args.split is not None and args.split not in spec_.splits:
        raise EnvgymError(f"--split {args.split}: generator {args.name!r} makes {', '.join(spec_.splits)} tasks")
    ref = SuiteRef(args.name, args.seed, args.seed + args.n, args.level, args.split)
    started = time.perf_counter()
    tasks = list(GeneratedTasks(ref)[: args.n])
    seconds = time.perf_counter() - started
    target = Path(args.out)
    if args.format == "hf":
        import importlib.util

        if importlib.util.find_spec("datasets") is None:
            raise ExtraMissing("--format hf needs the datasets package: pip install 'envgym[train]'")
        from envgym.datasets import save_to_disk

        path = output_dir(target)
        save_to_disk(tasks, path)
    else:
        from envgym.task import write_tasks

        path = output_file(target if target.suffix == ".jsonl" else output_dir(target) / "tasks.jsonl")
        write_tasks(path, tasks)
    counted = distinct(tasks)
    out.print(f"wrote {len(tasks)} tasks of {ref} to {path} ({counted.distinct} distinct by content and reference "
              f"solution; {_rate(len(tasks), seconds)})", markup=False, highlight=False)
    return 0


def _rate(n: int, seconds: float) -> str:
    """Generation throughput to three significant figures, and the seconds a task when it is under one a second
    (ScienceWorld's 0.05 tasks/s printed as "0 tasks/s" before)."""
    rate = n / max(seconds, 1e-9)
    if rate >= 100:
        return f"{rate:,.0f} tasks/s"
    if rate >= 1:
        return f"{rate:.3g} tasks/s"
    return f"{rate:.2g} tasks/s, {seconds / max(n, 1):.3g} s a task"


EXIT_INFRA = 3
# envgym.task.SPLITS and OpenAIConfig's default base_url, written out: importing either module would double
# envgym --help's time (pydantic and every verifier kind); tests/test_cli_help.py keeps them equal.
SPLITS = ("train", "test", "dev")
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
"""``envgym eval``'s exit code when the run's infra errors exceed ``--max-infra-errors`` (or all episodes are)."""


def _user(args: argparse.Namespace) -> Any:
    """The ``--user`` of conversational envs (None: each env's default, the scripted user)."""
    if args.user is None:
        return None
    from envgym.user import parse_user

    return parse_user(args.user, base_url=args.user_base_url, api_key_env=args.user_api_key_env)


def _cmd_eval(args: argparse.Namespace) -> int:
    if args.ray is None and args.concurrency > 1 and args.workers != 1:
        from envgym._forkserver import cpus, start

        if args.workers != "auto" or cpus() > 1:
            start(args.suite)  # the workers' fork server imports what they run while this process imports and plans
    import asyncio

    from pydantic import ValidationError

    from envgym._progress import RunProgress
    from envgym.agents import parse_agent
    from envgym.eval import EvalConfig, JudgeSettings, evaluate, plan

    agent = parse_agent(args.agent, base_url=args.base_url, api_key_env=args.api_key_env,
                        max_new_tokens=args.max_new_tokens)
    judge = JudgeSettings(base_url=args.judge_url, model=args.judge_model) if args.judge_url else None
    try:
        config = EvalConfig(suites=tuple(args.suite), split=None if args.split == "all" else args.split,
                            agent=agent, runs=args.runs, seed=args.seed, limit=args.limit, judge=judge,
                            max_steps=args.max_steps, step_timeout_s=args.step_timeout,
                            user=_user(args), max_virtual_time=args.max_virtual_time,
                            virtual_time_factor=args.virtual_time_factor)
    except ValidationError as exc:  # the flags' types catch the ranges first; this names whatever is left
        first = exc.errors()[0]
        raise EnvgymError(f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg']}") from None
    plan(config)  # bad suites, task files or env ids fail here, before anything starts
    output_dir(args.out, create=False)  # and an --out nothing can be written in; evaluate() makes the folder
    progress = RunProgress()

    def on_plan(planned: int, skipped: int) -> None:
        if skipped and not args.quiet:
            console.print(f"resuming: {skipped} of {planned} episodes already recorded")

    run = evaluate(config, args.out, concurrency=args.concurrency, on_plan=on_plan, progress=progress, ray=args.ray,
                   workers=args.workers)
    try:
        with _sigterm_as_ctrl_c() as terminated:
            summary = asyncio.run(run if args.quiet else _with_progress(run, progress, f"eval {args.agent}",
                                                                        args.progress_interval))
    except KeyboardInterrupt:
        console.print(f"[yellow]{'terminated' if terminated else 'interrupted'}[/]: finished episodes are "
                      f"recorded in {args.out}; run the same command again to resume")
        return 143 if terminated else 130
    if summary.torn_repaired:
        console.print("[yellow]repaired a torn last record line left by an earlier crash[/]")
    out.print(f"run {summary.run_id} in {summary.run_dir}: ran {summary.ran}, skipped {summary.skipped} "
              f"of {summary.planned}; " + ", ".join(f"{k} {v}" for k, v in sorted(summary.outcomes.items()))
              + ("; errors by blame: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.blames.items()))
                 if summary.blames else ""))
    infra = summary.outcomes["infra_error"]
    if summary.planned and (infra == summary.planned or infra / summary.planned > args.max_infra_errors):
        share = "every episode" if infra == summary.planned else f"{infra} of {summary.planned} episodes"
        console.print(f"[red]error:[/] {share} ended as infra_error (more than --max-infra-errors "
                      f"{args.max_infra_errors:g}); the results are not a measurement. Causes:",
                      soft_wrap=True, highlight=False)
        for cause, n in summary.infra_causes.most_common(5):
            console.print(f"  {n:>5} x {escape(cause)}", soft_wrap=True, highlight=False)
        if len(summary.infra_causes) > 5:
            console.print(f"  ... and {len(summary.infra_causes) - 5} other causes", highlight=False)
        console.print(f"fix the cause and rerun the same command: infra errors are retried (exit {EXIT_INFRA})",
                      highlight=False)
        return EXIT_INFRA
    return 0


@contextlib.contextmanager
def _sigterm_as_ctrl_c() -> Iterator[list[int]]:
    """SIGTERM (a scheduler's stop, ``kill``, ``timeout``) takes Ctrl-C's path: asyncio's runner cancels the run,
    which stops its episodes and sandboxes, and recorded episodes stay for a resume. Yields a list that holds the
    signal once it came (the caller exits 143, not Ctrl-C's 130). Only in the main thread (where signals land)."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    came: list[int] = []

    def on_term(signum: int, frame: object) -> None:
        came.append(signum)
        signal.raise_signal(signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


async def _with_progress(run: Coroutine[Any, Any, T], progress: RunProgress, title: str, interval_s: float) -> T:
    """Await ``run`` while showing ``progress``: live on a terminal, plain lines elsewhere (see envgym._progress).

    One ticker on the run's own loop refreshes the view, so nothing reads the state from another thread."""
    import asyncio

    from rich.live import Live

    from envgym._progress import PlainLines, live_view

    task = asyncio.ensure_future(run)
    try:
        if console.is_terminal:
            screen = console.get() if isinstance(console, LazyConsole) else console
            with Live(live_view(progress, title), console=screen, auto_refresh=False) as live:
                while not task.done():
                    await asyncio.wait([task], timeout=0.25)
                    live.update(live_view(progress, title), refresh=True)
            return task.result()
        lines = PlainLines(progress, lambda text: console.print(text, soft_wrap=True, highlight=False,
                                                                markup=False), interval_s=interval_s)
        while not task.done():
            await asyncio.wait([task], timeout=min(1.0, interval_s))
            lines.tick()
        result = task.result()
        lines.close()
        return result
    finally:
        if not task.done():  # we were cancelled (Ctrl-C): the run cleans up before we return
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def _cmd_leaderboard_build(args: argparse.Namespace) -> int:
    from envgym.leaderboard import publish

    if args.update and args.out and Path(args.out) != Path(args.update):
        raise EnvgymError("--update DIR writes into DIR: give --out only without --update")
    target = args.update or args.out
    if not target:
        raise EnvgymError("--out DIR (a new site) or --update DIR (merge into the published leaderboard) is required")
    out_dir = output_dir(target, "--update" if args.update else "--out", create=False)  # publish makes it
    board, paths = publish([Path(p) for p in args.run_dirs], out_dir,
                           train_metrics=[Path(p) for p in args.train_metrics or ()], update=bool(args.update))
    for warning in board.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True, highlight=False)
    for suite, entries in board.suites.items():
        table = _table(suite, "agent", "success", "95% CI", "mean score", "episodes", "infra errors", "mean steps")
        for e in entries:
            # an agent whose every episode was an infra error has no rate and no mean: a dash, not a crash
            table.add_row(escape(e.name), f"{e.success_rate:.1%}" if e.episodes else "—",
                          f"[{e.ci_low:.2f}, {e.ci_high:.2f}]",
                          "—" if e.mean_score is None else f"{e.mean_score:.3f}", str(e.episodes),
                          str(e.infra_errors), "—" if e.mean_steps is None else f"{e.mean_steps:.1f}")
        out.print(table)
    out.print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


EPILOG = """\
examples:
  envgym list                                             environments and suites
  envgym check tool/retail-v1                             contract checks and admission gates
  envgym eval --suite tool-retail --agent oracle --out runs/oracle
  envgym eval --suite tool-retail --agent random --runs 5 --out runs/random          pass@k, pass^k
  envgym eval --suite tool-retail --agent openai:MODEL --base-url http://127.0.0.1:8000/v1 --out runs/m
  envgym eval --suite tool-retail --agent my_agents:make --out runs/mine              your own agent
  envgym leaderboard build runs/* --out site/

Rerun an eval command to resume it. Exit codes: 0 ok, 1 checks failed, 2 bad input,
3 too many infra errors (envgym eval --max-infra-errors), 130 interrupted.
"""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after every help text; descriptions and epilogs keep their line breaks.

    An unset default (None, a flag's False) is not shown: the help text says what happens without it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or "(default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """Every (sub)parser, a plug-in's included, uses :class:`HelpFormatter` unless it names another."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    from envgym import __version__

    parser = Parser(prog="envgym", description="An agentic environment gym and benchmark suite.", epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"envgym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_plugin_commands(sub)
    return parser


def add_tasks(sub: argparse._SubParsersAction) -> None:
    """The ``tasks`` subcommand (entry point ``envgym.cli: tasks``)."""
    p = sub.add_parser("tasks", help="task files")
    tasks_sub = p.add_subparsers(dest="tasks_command", required=True, metavar="COMMAND")
    v = tasks_sub.add_parser("validate", help="validate JSONL task files")
    v.add_argument("files", nargs="+", metavar="FILE", help="JSONL task files (errors name file, line and field)")
    v.set_defaults(fn=_cmd_tasks_validate)
    g = tasks_sub.add_parser("generate", help="write a task generator's tasks (JSONL, or a datasets folder)",
                             description="Write tasks of a registered generator: seeds --seed .. --seed+N-1 (every "
                                         "split the generator has, interleaved, unless --split; levels mixed by "
                                         "seed unless --level). The same arguments write the same tasks.")
    g.add_argument("name", nargs="?", metavar="NAME", help="a registered generator (--list names them)")
    g.add_argument("--list", action="store_true", help="name every registered generator, one a line, family first")
    g.add_argument("--n", type=positive_int, metavar="N", help="how many tasks")
    g.add_argument("--seed", type=nonnegative_int, default=0, metavar="S", help="the first seed")
    g.add_argument("--level", type=nonnegative_int, metavar="L", help="one difficulty level (default: mixed)")
    g.add_argument("--split", choices=SPLITS, help="one split (default: every split the generator has)")
    g.add_argument("--format", choices=("jsonl", "hf"), default="jsonl",
                   help="jsonl: a task file (FILE.jsonl, or DIR/tasks.jsonl); hf: a Hugging Face datasets folder "
                        "(save_to_disk; envgym.datasets.load_from_disk reads it back, same hashes)")
    g.add_argument("--out", metavar="FILE.jsonl|DIR", help="where to write")
    g.set_defaults(fn=_cmd_tasks_generate)


def add_eval(sub: argparse._SubParsersAction) -> None:
    """The ``eval`` subcommand (entry point ``envgym.cli: eval``)."""
    p = sub.add_parser("eval", help="evaluate an agent on suites (resumable)",
                       description="Evaluate an agent on suites. Rerun the same command to resume.\n"
                                   f"Exits {EXIT_INFRA}, naming the causes, when more than --max-infra-errors "
                                   "of the episodes (or all of them) ended as infra_error.")
    p.add_argument("--suite", action="append", required=True,
                   help="a named suite (envgym list: bundled or from any installed plug-in), a folder or a JSONL "
                        "file (repeatable)")
    p.add_argument("--split", default="test", choices=(*SPLITS, "all"), help="which tasks of each suite")
    p.add_argument("--agent", required=True, help="oracle | null | random[:SEED] | openai:MODEL | hf[:GGUF] | "
                                                  "MODULE:CALLABLE | FILE.py:CALLABLE (your own agent)")
    p.add_argument("--base-url", default=DEFAULT_BASE_URL,
                   help="OpenAI-compatible endpoint for --agent openai:MODEL")
    p.add_argument("--api-key-env", help="environment variable holding the endpoint's API key; it must then be "
                                         "set (without it: OPENAI_API_KEY if set, else no key, for a keyless "
                                         "local server)")
    p.add_argument("--max-new-tokens", type=positive_int,
                   help="generation budget per step for --agent hf (default: the agent's, 128)")
    p.add_argument("--concurrency", type=positive_int, default=8, help="episodes in flight at once (>= 1)")
    p.add_argument("--workers", type=workers_count, default=1, metavar="N|auto",
                   help="spread the episodes over N worker processes (auto: one per CPU), --concurrency in all; "
                        "for envs whose work is Python on the CPU (the tool suites); default 1: this process")
    p.add_argument("--runs", type=positive_int, default=1, help="K episodes per task, >= 1 (pass@k, pass^k)")
    p.add_argument("--seed", type=int, default=0, help="run seed (each episode's seed derives from it)")
    p.add_argument("--limit", type=positive_int, help="only the first N tasks of each suite (default: all)")
    p.add_argument("--max-steps", type=positive_int, help="cap every task's step limit (default: the tasks')")
    p.add_argument("--step-timeout", type=positive_seconds,
                   help="per-step deadline in seconds, finite and > 0 (default: the tasks')")
    p.add_argument("--max-virtual-time", type=positive_number, metavar="BUDGET",
                   help="cap every timed task's budget of virtual time (seconds, or steps on a step clock); "
                        "the episode is truncated when its world's clock reaches it (default: the tasks')")
    p.add_argument("--virtual-time-factor", type=positive_number, metavar="FACTOR",
                   help="also cap it at FACTOR times the virtual time the task's reference solution takes "
                        "(1.0: an optimal agent's time)")
    p.add_argument("--user", help="simulated user of conversational suites (tool-telecom): scripted (default) | "
                   "openai:MODEL | hf[:MODEL_PATH] (hf alone: the embedded SmolLM2)")
    p.add_argument("--user-base-url", help="OpenAI-compatible endpoint of --user openai:MODEL")
    p.add_argument("--user-api-key-env", help="environment variable holding --user openai's API key")
    p.add_argument("--judge-url", help="OpenAI-compatible endpoint for LLM-judge criteria (default: no judge)")
    p.add_argument("--judge-model", default="judge", help="model name sent to --judge-url")
    p.add_argument("--out", required=True, help="run directory (rerun the same command to resume)")
    p.add_argument("--ray", metavar="ADDRESS|auto",
                   help="run the episodes on a Ray cluster's envgym hosts (nodes started with --resources "
                   "'{\"envgym_host\": SLOTS}'; their slots replace --concurrency); needs envgym[ray]")
    p.add_argument("--max-infra-errors", type=fraction, default=0.5, metavar="FRACTION",
                   help=f"exit {EXIT_INFRA} when more than this share of the run's episodes (or all of them) "
                        "ended as infra_error")
    p.add_argument("--progress-interval", type=positive_seconds, default=30.0, metavar="SECONDS",
                   help="without a terminal (CI logs, | tee): a progress line at every 10%% of the episodes "
                        "and at least this often")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(fn=_cmd_eval)


def add_leaderboard(sub: argparse._SubParsersAction) -> None:
    """The ``leaderboard`` subcommand (entry point ``envgym.cli: leaderboard``)."""
    p = sub.add_parser("leaderboard", help="build leaderboards from run directories")
    lb_sub = p.add_subparsers(dest="leaderboard_command", required=True)
    b = lb_sub.add_parser("build", help="aggregate runs into JSON, Markdown and HTML")
    b.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="run directories of envgym eval (envgym train folders holding metrics.jsonl are read "
                        "as reward curves)")
    b.add_argument("--out", help="output folder: leaderboard.json, leaderboard.md, index.html, tasks.html, "
                                 "trajectories/")
    b.add_argument("--update", metavar="DIR",
                   help="merge into the leaderboard published in DIR (e.g. leaderboard/), keyed by suite id")
    b.add_argument("--train-metrics", nargs="+", metavar="PATH",
                   help="envgym train metrics.jsonl files or their folders: reward curves on the page")
    b.set_defaults(fn=_cmd_leaderboard_build)


def _add_plugin_commands(sub: argparse._SubParsersAction) -> None:
    """Call every ``envgym.cli`` entry point's ``add_parser(subparsers)``, in name order.

    A hook that fails to import or to add its subcommand costs only that subcommand: a one-line warning,
    and any half-added subcommand is taken out again. Two hooks adding the same name is an error naming both.
    """
    owners: dict[str, str] = {}
    for ep in installed(CLI_ENTRY_POINT_GROUP):
        where = f"{ep.name} = {ep.value}"
        before = set(sub.choices)
        try:
            hook: Callable[[argparse._SubParsersAction], object] = ep.load()
            hook(sub)
        except argparse.ArgumentError as exc:
            clash = re.search(r"conflicting subparser(?: alias)?: (.+)$", str(exc))
            if clash:
                name = clash[1]
                _drop_subcommands(sub, set(sub.choices) - before)
                other = owners.get(name, "another entry point")
                raise PluginError(f"CLI plug-ins clash: subcommand {name!r} is added by {other} and by "
                                  f"{where} (entry-point group {CLI_ENTRY_POINT_GROUP})") from None
            _plugin_warning(sub, before, where, exc)
        except Exception as exc:
            _plugin_warning(sub, before, where, exc)
        else:
            owners.update(dict.fromkeys(set(sub.choices) - before, where))


def _plugin_warning(sub: argparse._SubParsersAction, before: set[str], where: str, exc: Exception) -> None:
    _drop_subcommands(sub, set(sub.choices) - before)
    message = f"CLI plug-in {where} failed to load, its subcommand is unavailable: {exc!r}"
    console.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True, highlight=False)


def _drop_subcommands(sub: argparse._SubParsersAction, names: set[str]) -> None:
    # argparse has no public removal; these two hold what --help lists and what parsing dispatches on
    for name in names:
        del sub._name_parser_map[name]
    sub._choices_actions[:] = [a for a in sub._choices_actions if a.dest not in names]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        fn = getattr(args, "fn", None)
        if fn is None:  # a plug-in's parser that forgot set_defaults(fn=...)
            raise PluginError(f"subcommand {args.command!r} has no handler: its add_parser must call "
                              "set_defaults(fn=...)")
        return int(fn(args))
    except EnvgymError as exc:  # one line, as written: a message may hold '[' (paths, JSON) or be long
        console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
