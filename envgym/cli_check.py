"""``envgym list`` and ``envgym check``: what is registered, and the contract checks and admission gates on it.

``check`` runs :func:`envgym.check.check` on each env id given (or :func:`envgym.check_generator.check_generator` on
a task generator's name), or with ``--all`` on every env envgym and the installed plug-ins ship (:func:`_shipped`)
and every generator, and prints one table per name; with several names its last line names every one that failed,
and it exits 1 if any did.

``--jobs N`` checks N names at once, each in a process of its own: two checks then share no event loop, warm pool,
warnings filter or module state, and most of a check's time is spent waiting on containers, which the others fill.
Two names of one family never run at once (a GUI check already runs a pool of desktops), and when a check ends the
next of its family starts first, so the longest family runs as one chain beside the others. Each table prints whole
when its check ends (so in the order they ended), the stderr of that check before it; the exit status and the last
line are those of the same names checked one by one. An unknown env id stops the run before any check starts; a name
whose check stops on other bad input (exit 2 at the end, its line printed) or crashes counts as failed, and the rest
still run.

Output goes through :data:`envgym.cli.out` and :data:`envgym.cli.console`, looked up at each print.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from envgym import cli
from envgym.errors import EnvgymError, ExtraMissing, RegistryError

_CHILD = "import sys; from envgym.cli_check import _child; sys.exit(_child(sys.argv[1]))"


def _cmd_list(args: argparse.Namespace) -> int:
    from envgym.registry import generator_spec, list_envs, list_generators, spec, suite_spec
    from envgym.task import list_suites, load_suite

    table = cli._table("environments", "id", "suites", "description")
    for env_id in list_envs(args.family):
        s = spec(env_id)
        table.add_row(env_id, ", ".join(s.suites), s.description)
    cli.out.print(table)
    suites = cli._table("suites", "suite", "tasks", "train", "test", "description")
    for name in list_suites():  # every named suite: bundled, and those any installed plug-in registers
        tasks = load_suite(name)
        registered = suite_spec(name)
        suites.add_row(name, str(len(tasks)), str(sum(t.split == "train" for t in tasks)),
                       str(sum(t.split == "test" for t in tasks)), registered.description if registered else "")
    cli.out.print(suites)
    gens = cli._table("task generators (a suite by name, NAME@START:STOP[:level=L][:split=S])", "generator", "env",
                      "levels", "splits", "description")
    for name in list_generators():  # made on demand, never read from disk: `envgym tasks generate --list`
        g = generator_spec(name)
        if g is not None and (args.family is None or g.family == args.family):
            gens.add_row(name, g.env_id, ", ".join(map(str, g.levels)), ", ".join(g.splits), g.description)
    cli.out.print(gens)
    return 0


def _shipped(env_ids: list[str]) -> list[str]:
    """``check --all`` checks what envgym and the installed plug-ins ship: an env whose every suite the user made on
    this machine (``SuiteSpec.user``, e.g. ``envgym swe import``) is left out, and the run says which."""
    from envgym.registry import spec, suite_spec

    kept: list[str] = []
    mine: list[str] = []
    for env_id in env_ids:
        try:
            suites = [suite_spec(name) for name in spec(env_id).suites]
        except RegistryError:  # not registered after all: check says so for it
            suites = []
        (mine if suites and all(s is not None and s.user for s in suites) else kept).append(env_id)
    if mine:
        cli.out.print(f"--all: left out {len(mine)} env(s) whose suites were imported or mined on this machine "
                      f"(check them by id): {', '.join(mine)}", markup=False)
    return kept


def _cmd_check(args: argparse.Namespace) -> int:
    from envgym.registry import list_envs, list_generators

    ids = [*_shipped(list_envs()), *list_generators()] if args.all else args.env_ids
    if not ids:
        raise EnvgymError("name an env id (or a task generator) or pass --all")
    if args.seed is not None and args.sample is None and any("/" in name for name in ids):
        # a generator's sample (--generator-sample) is seeded by --seed too; an env's tasks only with --sample
        raise EnvgymError("--seed S seeds --sample N: give --sample N with it (or --limit N for the first N tasks)")
    if args.all_tasks and (args.limit or args.sample):
        which = "--limit" if args.limit else "--sample"
        raise EnvgymError(f"--all-tasks gates every task and {which} a few of them: give one")
    if args.jobs > 1 and len(ids) > 1:
        from envgym.registry import spec

        for name in ids:  # an unknown id stops the run before any check starts (one by one: when it is reached)
            if "/" in name:
                spec(name)
        checked = _in_processes(ids, args)
    else:
        checked = ((_one(name, args), 0) for name in ids)
    failed, codes = [], set()
    for failure, code in checked:
        codes.add(code)
        if failure is not None:
            failed.append(failure)
    if failed and len(ids) > 1:  # the last lines of a long --all run say which envs failed
        cli.out.print(f"[red]check failed[/] for {len(failed)} of {len(ids)} envs: " + ", ".join(failed))
    return 2 if 2 in codes else 1 if failed else 0


def _one(env_id: str, args: argparse.Namespace) -> str | None:
    """Check one name and print its table; returns what failed (``"ID (what)"``), or None."""
    import asyncio

    try:
        report = asyncio.run(_check_one(env_id, args))
    except ExtraMissing as exc:
        if not args.all:
            raise
        cli.out.print(f"{env_id}: skipped: {exc}", markup=False)  # --all checks what this install can run
        return None
    failure = None
    if not report.ok:
        what = [name for name, _ in report.failed]
        what += [f"{len(report.gate_failures)} gate(s) failed"] if report.gate_failures else []
        what += [f"{len(report.tamper_failures)} probe(s) forged"] if report.tamper_failures else []
        failure = f"{env_id} ({'; '.join(what)})"
    title = f"{env_id}: {report.tasks} tasks"
    if report.selection:
        title = f"{env_id}: {report.checked} of {report.tasks} tasks checked ({report.selection})"
    table = cli._table(title, "check", "result")
    for name in report.passed:
        table.add_row(name, "[green]ok[/]")
    for name, detail in report.failed:
        table.add_row(name, f"[red]FAILED[/] {detail}")
    gates = "[green]all pass[/]" if not report.gate_failures else f"[red]{len(report.gate_failures)} failed[/]"
    if not args.no_gates:
        sampled = f" on {report.gated} of {report.tasks} tasks" if report.gated < report.tasks else ""
        inverted = f"; null 1 on {len(report.null_accepted)} declared" if report.null_accepted else ""
        table.add_row(f"admission gates (oracle 1, null 0{inverted}){sampled}", gates)
        runs = ", ".join(f"{name} x{n}" for name, n in sorted(report.tamper_runs.items())) or "none ran"
        table.add_row("hack probes score 0 (" + runs + ")", "[green]all 0[/]" if not report.tamper_failures
                      else f"[red]{len(report.tamper_failures)} forged[/]")
    cli.out.print(table)
    for task_id, why in report.gate_failures + report.tamper_failures:
        cli.out.print(f"  [red]gate failed[/] {task_id}: {why}")
    for task_id, why in report.reset_retries:
        cli.out.print(f"  [yellow]reset failed, run again[/] {task_id}: {why}")
    for note in report.deprecated:
        cli.out.print(f"  [yellow]deprecated[/] {note}")
    return failure


async def _check_one(name: str, args: argparse.Namespace) -> Any:
    """``envgym check``'s report on an env id, or on a task generator (a name without ``/``: a seeded sample of
    ``--sample`` or ``--generator-sample`` tasks)."""
    from envgym.check import check
    from envgym.check_generator import check_generator

    common = {"gates": not args.no_gates, "concurrency": args.concurrency, "tamper": args.tamper_sample,
              "limit": args.limit, "seed": args.seed or 0}
    if "/" not in name:
        return await check_generator(name, sample=args.sample or args.generator_sample, **common)
    return await check(name, all_tasks=args.all_tasks, sample=args.sample, **common)


def _family(name: str) -> str:
    """An env id's family, or a task generator's (a name that is neither: itself)."""
    from envgym.registry import generator_spec

    if "/" in name:
        return name.partition("/")[0]
    registered = generator_spec(name.partition("@")[0])
    return registered.family if registered is not None else name


def _in_processes(ids: list[str], args: argparse.Namespace) -> Iterator[tuple[str | None, int]]:
    """:func:`_one` on each name in a process of its own, ``args.jobs`` at once, never two of one family at once (two
    GUI checks side by side would each run a pool of desktops on the same cores); yields what failed and the
    process's exit status as each ends, after printing its output whole."""
    fields = {key: value for key, value in vars(args).items() if key != "fn"}
    env = {**os.environ, "COLUMNS": str(cli.out.width)}  # tables as wide as here, in colour where this prints it
    if cli.out.is_terminal:
        env["FORCE_COLOR"] = "1"
    family = {name: _family(name) for name in ids}
    pending, busy = list(ids), set()
    ended: queue.Queue[tuple[str, int, str, str]] = queue.Queue()
    running: list[subprocess.Popen[str]] = []

    def run(name: str, result: Path) -> None:
        payload = json.dumps({"name": name, "args": fields, "result": str(result)})
        try:
            with subprocess.Popen([sys.executable, "-c", _CHILD, payload], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
                running.append(proc)
                stdout, stderr = proc.communicate()
            ended.put((name, proc.returncode, stdout, stderr))
        except BaseException as exc:  # that name's failure, never lost in a thread
            ended.put((name, -1, "", f"{type(exc).__name__}: {exc}"))

    with tempfile.TemporaryDirectory(prefix="envgym-check-") as folder:
        results = {name: Path(folder) / f"{i}.json" for i, name in enumerate(ids)}
        last = ""  # the family whose check just ended goes on first: a long family (GUI) runs as one chain
        try:
            while pending or busy:
                for name in sorted(pending, key=lambda n: family[n] != last):  # stable: list order otherwise
                    if len(busy) < args.jobs and family[name] not in {family[b] for b in busy}:
                        pending.remove(name)
                        busy.add(name)
                        threading.Thread(target=run, args=(name, results[name]), daemon=True).start()
                name, code, stdout, stderr = ended.get()
                busy.discard(name)
                last = family[name]
                _echo(cli.console, stderr)
                _echo(cli.out, stdout)
                if code == 0 and results[name].exists():
                    yield json.loads(results[name].read_text(encoding="utf-8"))["failure"], 0
                else:
                    yield f"{name} (its check exited {code}" + (": bad input)" if code == 2 else ")"), code
        finally:  # stopped (Ctrl-C, an error printing): the checks still running stop too
            for proc in running:
                if proc.poll() is None:
                    proc.terminate()
            for proc in running:
                proc.wait()


def _echo(console: Any, text: str) -> None:
    from rich.text import Text

    if text.strip():
        console.print(Text.from_ansi(text.rstrip("\n")), soft_wrap=True, highlight=False)


def _child(payload: str) -> int:
    """One name of a ``--jobs`` run, in its own process: prints as :func:`_one` does, writes what failed."""
    job = json.loads(payload)
    try:
        failure = _one(job["name"], argparse.Namespace(**job["args"]))
    except EnvgymError as exc:
        cli.console.print(f"[red]error:[/] {cli.escape(str(exc))}", soft_wrap=True, highlight=False)
        return 2
    Path(job["result"]).write_text(json.dumps({"failure": failure}), encoding="utf-8")
    return 0


def add_list(sub: argparse._SubParsersAction) -> None:
    """The ``list`` subcommand (entry point ``envgym.cli: list``)."""
    p = sub.add_parser("list", help="list environments and suites")
    p.add_argument("--family", help="only this family's environments (tool, web, gui, swe, timed, ...)")
    p.set_defaults(fn=_cmd_list)


def add_check(sub: argparse._SubParsersAction) -> None:
    """The ``check`` subcommand (entry point ``envgym.cli: check``)."""
    p = sub.add_parser("check", help="contract checks and admission gates")
    p.add_argument("env_ids", nargs="*", metavar="ENV_ID",
                   help="environment ids to check (family/name-vN), or task generators (NAME, NAME@START:STOP...)")
    p.add_argument("--all", action="store_true", help="check every registered env and task generator")
    p.add_argument("--no-gates", action="store_true", help="skip the oracle/null gates and the hack probes")
    p.add_argument("--all-tasks", action="store_true",
                   help="gate every task, also of envs that gate a sample (Env.gate_sample: desktop containers)")
    p.add_argument("--tamper-sample", type=int, default=2, metavar="N",
                   help="tasks per env each tampering agent runs on (0 skips the hack probes)")
    p.add_argument("--concurrency", type=cli.positive_int, default=8, help="episodes in flight at once (>= 1)")
    few = p.add_mutually_exclusive_group()
    few.add_argument("--limit", type=cli.positive_int, metavar="N",
                     help="check on the first N tasks only (every check that plays episodes; default: all)")
    few.add_argument("--sample", type=cli.positive_int, metavar="N",
                     help="check on N tasks drawn at random with --seed (the same seed, the same tasks)")
    p.add_argument("--seed", type=int, metavar="S", help="seed of --sample (default 0)")
    p.add_argument("--generator-sample", type=cli.positive_int, default=200, metavar="N",
                   help="tasks sampled (with --seed) from each task generator checked, unless --sample or --limit")
    p.add_argument("--jobs", type=cli.positive_int, default=1, metavar="N",
                   help="names checked at once (never two of one family), each in a process of its own; each table "
                        "prints when its check ends")
    p.set_defaults(fn=_cmd_check)
