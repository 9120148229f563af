"""``envgym swe``: mine and label a repository's history, import SWE-bench instances, build images, grade.

    envgym swe mine REPO_PATH --suite NAME [--since COMMIT|DATE] [--until COMMIT|DATE] [--limit N] [--runs 2]
                    [--repo-name OWNER/NAME]
    envgym swe label INSTANCES.jsonl --repo OWNER/NAME=PATH... [--runs 2] [--out LABELLED.jsonl]
    envgym swe import INSTANCES.jsonl --repo OWNER/NAME=PATH... [--suite NAME] [--out DIR] [--no-build]
    envgym swe forget SUITE [--delete]
    envgym swe build [--suite S...|--all] [--repo OWNER/NAME=PATH...] [--force]
    envgym swe grade PREDICTIONS.jsonl (--suite S | --instances FILE --repo OWNER/NAME=PATH...) [--out REPORT]

``mine`` is the whole pipeline in one command: candidates from the history (:mod:`envgym_swe.mine`),
labelled in containers (:mod:`envgym_swe.label`), imported, and validated (gold patch resolved, empty
patch not) through the verifier. ``mine`` and ``import`` write user suites under
``envgym_swe.importer.suites_dir()`` by default (``~/.local/share/envgym/swe/suites/<suite>``), never into
envgym's own tree; ``forget`` drops a remembered suite. ``build`` makes the images a suite's tasks name
when missing (a fresh machine, CI); a repository comes from ``--repo``, else from where it was last
imported, else (bundled suites) it is rebuilt from its pinned PyPI sdist and the tasks' stored patches
(``envgym_swe.sources.rebuild_repo``: the commit ids come out the same). Hooked into ``envgym`` as any
plug-in's subcommand is: the entry point ``swe = "envgym_swe.cli:add_parser"`` in the group ``envgym.cli``;
each command returns an exit code.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from envgym.plugin import EnvgymError, SpecError
from envgym.plugin.cli import LazyConsole, output_dir, output_file, positive_int, positive_seconds

out = LazyConsole(soft_wrap=True)  # rich loads when a command prints, not for envgym --help
CANDIDATES, LABELLED = "candidates.swebench.json", "instances.swebench.json"
"""What ``mine`` writes beside the suite's ``tasks.jsonl`` (JSON lists: every ``*.jsonl`` of a suite is tasks)."""
LABEL_RECORDS = "label"
"""The suite folder's subfolder where ``mine`` records each candidate's labels as they come (resume)."""


def _is_git(path: Path) -> bool:
    import subprocess

    return path.is_dir() and subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"],
                                            capture_output=True).returncode == 0


def _repos(pairs: list[str]) -> dict[str, Path]:
    repos = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or "/" not in name or not path:
            raise SpecError(f"--repo {pair!r}: expected OWNER/NAME=PATH")
        if not _is_git(Path(path).expanduser()):
            raise SpecError(f"--repo {pair!r}: {path} is not a git repository")
        repos[name] = Path(path).expanduser()
    return repos


def _cmd_import(args: argparse.Namespace) -> int:
    from envgym_swe.importer import import_instances, suites_dir

    suite = args.suite or "swe-" + re.sub(r"[^a-z0-9]+", "-", Path(args.instances).stem.lower()).strip("-")
    out_dir = output_dir(args.out, create=False) if args.out else suites_dir() / suite  # written only with tasks
    report = import_instances(args.instances, _repos(args.repo), suite, out_dir, build=not args.no_build,
                              test_timeout_s=args.test_timeout, log=out.print if args.verbose else lambda _: None)
    for tag, built in report.images:
        out.print(f"image {tag}  {'[green]built[/]' if built else 'up to date'}")
    for iid, why in report.skipped:
        out.print(f"[yellow]skipped[/] {iid}: {why}")
    for iid, note in report.adjusted:
        out.print(f"[yellow]adjusted[/] {iid}: {note}")
    where = f" -> {report.out_dir}" if report.out_dir else ""
    out.print(f"suite {suite}: {len(report.tasks)} tasks (env {report.env_id}), {len(report.skipped)} skipped{where}")
    return 0 if report.tasks else 1


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":  # beside a suite's tasks.jsonl: a JSON list, as bundled suites keep instances
        path.write_text(json.dumps(rows, indent=1) + "\n")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _say(text: str) -> None:
    """A progress line as it is (no rich markup: node ids and logs hold brackets)."""
    out.print(text, markup=False, highlight=False)


def _print_label(report) -> None:
    """What the progress lines did not say: the flaky tests of skipped instances."""
    for res in report.results:
        if res.reason and res.flaky:
            out.print(f"  flaky in {res.instance_id} (left out): {', '.join(res.flaky)}", markup=False)


class _Stopped(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _run_stoppable(coro):
    """``asyncio.run(coro)``; Ctrl-C or SIGTERM cancels it (its containers are stopped in its ``finally`` blocks)
    and raises :class:`_Stopped` with the shell's exit code for the signal (130, 143)."""
    import asyncio
    import contextlib
    import signal

    termed = []

    async def main():
        loop, task = asyncio.get_running_loop(), asyncio.current_task()

        def on_term() -> None:
            termed.append(True)
            task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop.add_signal_handler(signal.SIGTERM, on_term)
        try:
            return await coro
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        _remove_own_containers()
        raise _Stopped(130) from None
    except asyncio.CancelledError:
        if termed:
            _remove_own_containers()
            raise _Stopped(143) from None
        raise


def _remove_own_containers() -> None:
    """Remove what this process started and an engine thread finished starting after the loop had stopped
    waiting (the run's ``finally`` blocks stopped the rest); the process ends now, so all of them are leftovers."""
    import contextlib
    import os

    from envgym.plugin.sandbox import connect

    with contextlib.suppress(Exception):  # the engine may be what broke; the reaper sweeps later anyway
        api = connect()
        try:
            for c in api.containers(all=True, filters={"label": f"envgym.owner_pid={os.getpid()}"}):
                api.remove_container(c["Id"], force=True)
        finally:
            api.close()


def _interrupted(code: int, where: Path) -> int:
    out.print(f"[yellow]interrupted[/]: every candidate finished is recorded in {where}; run the same command "
              "again to resume")
    return code


def _cmd_label(args: argparse.Namespace) -> int:
    from envgym_swe.instances import read_jsonl
    from envgym_swe.label import label_instances

    path = output_file(args.out) if args.out else Path(args.instances).with_suffix(".labelled.jsonl")
    records = path.with_suffix(".label")  # rerun the same command to resume (as `envgym eval --out`)
    try:
        report = _run_stoppable(label_instances(
            read_jsonl(args.instances), _repos(args.repo), runs=args.runs, concurrency=args.concurrency,
            test_timeout_s=args.test_timeout, record_dir=records, progress=_say,
            log=_say if args.verbose else lambda _: None))
    except _Stopped as stop:
        return _interrupted(stop.code, records)
    _print_label(report)
    _write_jsonl(path, report.rows)
    out.print(f"{len(report.rows)} of {len(report.results)} instances labelled ({args.runs} runs a side) -> {path}")
    return 0 if report.rows else 1


def _cmd_mine(args: argparse.Namespace) -> int:
    import asyncio  # here, not at the top: `envgym --help` imports this module
    import functools
    import time
    from collections import Counter

    from envgym_swe.environment import infer_environment, resolved_environment
    from envgym_swe.importer import import_instances, suites_dir, write_import
    from envgym_swe.label import label_instances, validate_tasks
    from envgym_swe.mine import mine_repository
    from envgym_swe.statements import readme_section

    started = time.monotonic()
    log = out.print if args.verbose else lambda _: None
    path = Path(args.repo_path).expanduser().resolve()
    if not _is_git(path):
        raise SpecError(f"{args.repo_path} is not a git repository")
    out_dir = output_dir(args.out) if args.out else suites_dir() / args.suite
    # A commit's requirements as its build backend reads them (in a sandbox), pinned as of its era's date; or,
    # with --no-resolve, read from the files on the host as they are (no sandbox, no package index).
    environment = infer_environment if args.no_resolve else functools.partial(resolved_environment, log=log)
    mined = mine_repository(path, repo=args.repo_name, since=args.since, until=args.until, limit=args.limit,
                            environment=environment, log=log)
    _write_jsonl(out_dir / CANDIDATES, mined.candidates)
    for commit, why in mined.skipped:
        out.print(f"[yellow]not a candidate[/] {commit[:12]}: {why}")
    if mined.dropped:  # the pre-filter: no container was spent on these
        reasons = Counter(why for _, why in mined.dropped)
        out.print(f"dropped as no fix (AST pre-filter, -v lists them): {len(mined.dropped)}: "
                  + ", ".join(f"{n} {why}" for why, n in reasons.most_common()))
    for r in mined.ranges:
        env = r.environment
        out.print(f"environment {r.version}: {r.count} candidate(s), base {r.first[:12]}..{r.last[:12]}; layout "
                  f"{env.layout}, python {env.python or 'any'}, install `{env.install}`, "
                  f"requirements: {', '.join(env.requirements) or 'none'}")
    mine_s = time.monotonic() - started
    out.print(f"{mined.commits_seen} commits read, {len(mined.candidates)} candidates ({mine_s:.1f}s) -> "
              f"{out_dir / CANDIDATES}")
    if args.no_label or not mined.candidates:
        return 0 if mined.candidates else 1
    repos = {mined.repo: path}
    try:  # results recorded as they come in out_dir/label/; the same command again resumes
        labelled = _run_stoppable(label_instances(mined.candidates, repos, runs=args.runs,
                                                  concurrency=args.concurrency, test_timeout_s=args.test_timeout,
                                                  record_dir=out_dir / LABEL_RECORDS, progress=_say, log=log))
    except _Stopped as stop:
        return _interrupted(stop.code, out_dir / LABEL_RECORDS)
    _print_label(labelled)
    _write_jsonl(out_dir / LABELLED, labelled.rows)
    label_s = time.monotonic() - started - mine_s
    ran = [r.seconds for r in labelled.results if r.seconds and not r.recorded]
    out.print(f"{len(labelled.rows)} of {len(mined.candidates)} candidates labelled ({label_s:.1f}s"
              + (f"; {sum(ran) / len(ran):.1f}s of test runs per candidate, no queueing" if ran else "")
              + (f"; {labelled.resumed} recorded before" if labelled.resumed else "") + ")")
    if not labelled.rows:
        return 1
    report = import_instances(labelled.rows, repos, args.suite, out_dir, test_timeout_s=args.test_timeout,
                              images=labelled.specs, log=log)
    for iid, why in report.skipped:
        out.print(f"[yellow]skipped[/] {iid}: {why}")
    valid = [] if args.no_validate else asyncio.run(validate_tasks(report.tasks, concurrency=args.concurrency))
    invalid = {v.instance_id: f"gold resolved {v.gold_resolved}, empty resolved {v.empty_resolved}; {v.detail}"
               for v in valid if not v.ok}
    for iid, why in invalid.items():
        out.print(f"[red]invalid, left out[/] {iid}: {why}")
    if invalid and report.out_dir is not None:  # the suite keeps only tasks that validate
        report.tasks = [t for t in report.tasks if t.metadata["instance_id"] not in invalid]
        report.skipped += [(iid, f"did not validate: {why}") for iid, why in invalid.items()]
        write_import(report, report.out_dir)
    if report.out_dir is not None:  # where each task's statement came from, below the importer's README
        kept = {t.metadata["instance_id"] for t in report.tasks}
        readme = report.out_dir / "README.md"
        readme.write_text(readme.read_text().rstrip("\n") + "\n\n" + readme_section(
            [c for c in mined.candidates if c["instance_id"] in kept]))
    total = time.monotonic() - started
    summary = (f"suite {args.suite}: {len(report.tasks)} tasks (env {report.env_id}) -> {report.out_dir}; "
               f"{len(mined.candidates)} candidates, {len(labelled.rows)} labelled")
    if valid:
        summary += (f"; gold resolved {sum(v.gold_resolved for v in valid)}/{len(valid)}, empty resolved "
                    f"{sum(v.empty_resolved for v in valid)}/{len(valid)}")
    per = (mine_s + label_s) / 60 / len(mined.candidates)
    out.print(summary + f"; {total / 60:.1f} min in all, mining + labelling {per:.2f} min per candidate")
    return 0 if report.tasks else 1


def _cmd_forget(args: argparse.Namespace) -> int:
    from envgym_swe.importer import forget_suite

    folder = forget_suite(args.suite, delete=args.delete)
    out.print(f"forgot {args.suite} ({'deleted' if args.delete else 'kept'} {folder})")
    return 0


def _suite_folder(suite: str) -> Path:
    """The folder of ``suite`` (a path to one, an imported suite's name, or a bundled one's)."""
    from envgym.plugin import suites_root
    from envgym_swe.importer import imported_suites

    if Path(suite).is_dir():
        return Path(suite)
    return Path(imported_suites().get(suite) or suites_root() / suite)


def _repo_for(name: str, tasks: list, given: dict[str, Path], folder: Path | None = None) -> Path | None:
    """The local repository of ``name``: given, the one the suite in ``folder`` was imported from, or rebuilt from
    its pinned sdist."""
    from envgym_swe import images, importer

    if name in given:
        return given[name]
    known = importer.known_repo(name, folder)
    commits = {str(t.initial_state["base_commit"]) for t in tasks}
    if known is not None and all(images.has_commit(known, c) for c in commits):
        return known
    from envgym_swe import sources  # the bundled suites: sdist + stored patches reproduce the commit ids

    lib = next((lib for lib in sources.LIBRARIES.values() if lib.repo == name), None)
    if lib is None:
        return None
    own = importer.STATE_DIR / "repos" / lib.slug  # rebuilt here, never in the sources' own working copy
    for path in (own, sources.repo_path(lib)):
        if path.is_dir() and all(images.has_commit(path, c) for c in commits):
            return path
    instances = [{"instance_id": t.metadata["instance_id"], "test_patch": t.verifiers[0].test_patch,
                  "patch": json.loads(t.solution[0].tool_calls[0].arguments)["content"]} for t in tasks]
    sources.rebuild_repo(lib, instances, own)
    return own


def build_suites(suites: list[str], repos: dict[str, Path], *, force: bool = False,
                 log=lambda _: None) -> list[tuple[str, bool]]:
    """Build (when missing) every image the suites' tasks name; returns (tag, built now?) per image."""
    from envgym.plugin import load_suite
    from envgym.plugin.sandbox import connect
    from envgym_swe.images import ImageSpec, ensure_image, exists, image_tag

    groups: dict[str, tuple[ImageSpec, list]] = {}
    folders: dict[str, Path] = {}
    for suite in suites:
        for task in load_suite(suite):
            spec = ImageSpec.model_validate(task.initial_state["image"])
            groups.setdefault(spec.model_dump_json(), (spec, []))[1].append(task)
            folders.setdefault(spec.model_dump_json(), _suite_folder(suite))
    done = []
    for key, (spec, tasks) in groups.items():
        api = connect()
        try:
            present = exists(api, image_tag(spec)) and not force
        finally:
            api.close()
        repo = None if present else _repo_for(spec.repo, tasks, repos, folders[key])
        done.append(ensure_image(spec, repo, force=force, log=log))
    return done


def _cmd_build(args: argparse.Namespace) -> int:
    from envgym.plugin import list_suites

    suites = [s for s in list_suites() if s.startswith("swe-")] if args.all else args.suite
    if not suites:
        raise EnvgymError("name a suite (--suite) or pass --all")
    for tag, built in build_suites(suites, _repos(args.repo), force=args.force,
                                   log=out.print if args.verbose else lambda _: None):
        out.print(f"{tag}  {'[green]built[/]' if built else 'up to date'}")
    return 0


def _cmd_grade(args: argparse.Namespace) -> int:
    import asyncio  # here, not at the top: `envgym --help` imports this module

    from envgym.plugin import load_suite
    from envgym_swe.grade import grade_predictions
    from envgym_swe.importer import import_instances
    from envgym_swe.instances import read_jsonl

    path = output_file(args.out) if args.out else Path(args.predictions).with_suffix(".report.json")
    predictions = read_jsonl(args.predictions)
    if args.suite:
        tasks = [t for s in args.suite for t in load_suite(s)]
    elif args.instances:
        report = import_instances(args.instances, _repos(args.repo), "swe-grade", None, remember=False)
        for iid, why in report.skipped:
            out.print(f"[yellow]skipped[/] {iid}: {why}")
        tasks = report.tasks
    else:
        raise EnvgymError("name the tasks: --suite S, or --instances FILE with --repo OWNER/NAME=PATH")
    report = asyncio.run(grade_predictions(predictions, tasks, concurrency=args.concurrency))
    path.write_text(json.dumps(report, indent=2))
    for iid, entry in report["instances"].items():
        colour = {"resolved": "green", "unresolved": "red", "patch_failed": "red"}.get(entry["status"], "yellow")
        why = f": {entry['reason'].splitlines()[0][:160]}" if entry.get("reason") else ""
        out.print(f"[{colour}]{entry['status']}[/] {iid}{why}")
    out.print(f"resolved {report['resolved_instances']} of {report['submitted_instances']} "
              f"(errors {report['error_instances']}, empty {report['empty_patch_instances']}); report: {path}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``swe mine``, ``label``, ``forget``, ``import``, ``build`` and ``grade`` to the ``envgym`` command line."""
    p = subparsers.add_parser("swe", help="SWE tasks: mine a repository, label, import, build images, grade")
    sub = p.add_subparsers(dest="swe_command", required=True)
    m = sub.add_parser("mine", help="a repository's history -> candidates, labelled, imported, validated suite")
    m.add_argument("repo_path", help="a local git repository")
    m.add_argument("--suite", required=True, help="suite name")
    m.add_argument("--since", metavar="COMMIT|DATE", help="history after this commit (excluded) or from this "
                   "date (committer date; YYYY-MM, YYYY-MM-DD or ISO time, UTC unless an offset)")
    m.add_argument("--until", metavar="COMMIT|DATE", help="history up to this commit (included) or through this "
                   "date (a month or day is whole); default HEAD")
    m.add_argument("--limit", type=positive_int, help="at most this many candidates (newest first)")
    m.add_argument("--repo-name", help="OWNER/NAME recorded in the instances (default local/<folder name>)")
    m.add_argument("--out", help="suite folder (default: the user data directory, see `envgym swe forget`)")
    m.add_argument("--runs", type=positive_int, default=2, help="test runs before and after the fix (default 2)")
    m.add_argument("--concurrency", type=positive_int, default=2, help="test runs at once")
    m.add_argument("--test-timeout", type=positive_seconds, default=300.0, help="seconds one test run may take")
    m.add_argument("--no-label", action="store_true", help="stop after writing candidates.swebench.json")
    m.add_argument("--no-resolve", action="store_true",
                   help="read requirements from the repository's files on the host only (no build backend in a "
                        "sandbox, no dated resolution against the package index)")
    m.add_argument("--no-validate", action="store_true", help="skip grading gold and empty patches after import")
    m.add_argument("--verbose", "-v", action="store_true", help="show each candidate, run and image build")
    m.set_defaults(fn=_cmd_mine)
    lab = sub.add_parser("label", help="find FAIL_TO_PASS / PASS_TO_PASS by running tests before and after the fix")
    lab.add_argument("instances", help="JSONL of SWE-bench instances (FAIL_TO_PASS may be empty)")
    lab.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH", help="a local git repository")
    lab.add_argument("--runs", type=positive_int, default=2, help="test runs before and after the fix (default 2)")
    lab.add_argument("--concurrency", type=positive_int, default=2, help="test runs at once")
    lab.add_argument("--test-timeout", type=positive_seconds, default=300.0, help="seconds one test run may take")
    lab.add_argument("--out", help="labelled JSONL (default: INSTANCES.labelled.jsonl)")
    lab.add_argument("--verbose", "-v", action="store_true", help="show image builds and each instance")
    lab.set_defaults(fn=_cmd_label)
    f = sub.add_parser("forget", help="drop an imported suite from the remembered ones (its env id unregisters)")
    f.add_argument("suite", help="suite name")
    f.add_argument("--delete", action="store_true", help="also delete its folder")
    f.set_defaults(fn=_cmd_forget)
    i = sub.add_parser("import", help="SWE-bench instances + local git repositories -> images and a task suite")
    i.add_argument("instances", help="JSONL of SWE-bench instances")
    i.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH", help="a local git repository")
    i.add_argument("--suite", help="suite name (default: swe-<file stem>)")
    i.add_argument("--out", help="output folder (default: the user data directory's suites/<suite>)")
    i.add_argument("--no-build", action="store_true", help="write the tasks without building images")
    i.add_argument("--test-timeout", type=positive_seconds, default=300.0, help="seconds the hidden tests may run")
    i.add_argument("--verbose", "-v", action="store_true", help="show image build output")
    i.set_defaults(fn=_cmd_import)
    b = sub.add_parser("build", help="build the repository images of SWE suites (skipped when present)")
    b.add_argument("--suite", action="append", default=[], help="suite name or folder (repeatable)")
    b.add_argument("--all", action="store_true", help="every bundled swe-* suite")
    b.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH", help="a local git repository")
    b.add_argument("--force", action="store_true", help="rebuild even when the tag exists")
    b.add_argument("--verbose", "-v", action="store_true", help="show image build output")
    b.set_defaults(fn=_cmd_build)
    g = sub.add_parser("grade", help="grade SWE-bench predictions (instance_id, model_patch) without an agent")
    g.add_argument("predictions", help="JSONL of predictions")
    g.add_argument("--suite", action="append", default=[], help="suite whose tasks the predictions answer")
    g.add_argument("--instances", help="SWE-bench instances instead of a suite (needs --repo)")
    g.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH", help="a local git repository")
    g.add_argument("--concurrency", type=positive_int, default=2, help="instances graded at once")
    g.add_argument("--out", help="report path (default: PREDICTIONS.report.json)")
    g.set_defaults(fn=_cmd_grade)
    return p

