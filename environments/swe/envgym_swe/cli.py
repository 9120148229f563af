"""``envgym swe``: import SWE-bench instances, build repository images, grade predictions.

    envgym swe import INSTANCES.jsonl --repo OWNER/NAME=PATH... [--suite NAME] [--out DIR] [--no-build]
    envgym swe build [--suite S...|--all] [--repo OWNER/NAME=PATH...] [--force]
    envgym swe grade PREDICTIONS.jsonl (--suite S | --instances FILE --repo OWNER/NAME=PATH...) [--out REPORT]

``import`` writes ``tasks/<suite>/`` by default (so ``envgym eval --suite <suite>`` and ``envgym check
swe/<name>-v1`` find it). ``build`` makes the images a suite's tasks name when missing (a fresh machine,
CI); a repository comes from ``--repo``, else from where it was last imported, else (bundled suites) it is
rebuilt from its pinned PyPI sdist and the tasks' stored patches (``envgym_swe.sources.rebuild_repo``: the
commit ids come out the same). Hooked into ``envgym`` as any plug-in's subcommand is: the entry point
``swe = "envgym_swe.cli:add_parser"`` in the group ``envgym.cli``; each command returns an exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path

from rich.console import Console

from envgym.cli import positive_int, positive_seconds
from envgym.errors import EnvgymError, SpecError

out = Console(soft_wrap=True)


def _repos(pairs: list[str]) -> dict[str, Path]:
    repos = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or "/" not in name or not path:
            raise SpecError(f"--repo {pair!r}: expected OWNER/NAME=PATH")
        if not (Path(path).expanduser() / ".git").exists():
            raise SpecError(f"--repo {pair!r}: {path} is not a git repository")
        repos[name] = Path(path).expanduser()
    return repos


def _cmd_import(args: argparse.Namespace) -> int:
    from envgym.task import suites_root
    from envgym_swe.importer import import_instances

    suite = args.suite or "swe-" + re.sub(r"[^a-z0-9]+", "-", Path(args.instances).stem.lower()).strip("-")
    out_dir = Path(args.out) if args.out else suites_root() / suite
    report = import_instances(args.instances, _repos(args.repo), suite, out_dir, build=not args.no_build,
                              test_timeout_s=args.test_timeout, log=out.print if args.verbose else lambda _: None)
    for tag, built in report.images:
        out.print(f"image {tag}  {'[green]built[/]' if built else 'up to date'}")
    for iid, why in report.skipped:
        out.print(f"[yellow]skipped[/] {iid}: {why}")
    where = f" -> {report.out_dir}" if report.out_dir else ""
    out.print(f"suite {suite}: {len(report.tasks)} tasks (env {report.env_id}), {len(report.skipped)} skipped{where}")
    return 0 if report.tasks else 1


def _repo_for(name: str, tasks: list, given: dict[str, Path]) -> Path | None:
    """The local repository of ``name``: given, last imported from, or rebuilt from its pinned sdist."""
    from envgym_swe import images, importer

    if name in given:
        return given[name]
    known = importer.known_repo(name)
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
    from envgym.sandbox.docker import connect
    from envgym.task import load_suite
    from envgym_swe.images import ImageSpec, ensure_image, exists, image_tag

    groups: dict[str, tuple[ImageSpec, list]] = {}
    for suite in suites:
        for task in load_suite(suite):
            spec = ImageSpec.model_validate(task.initial_state["image"])
            groups.setdefault(spec.model_dump_json(), (spec, []))[1].append(task)
    done = []
    for spec, tasks in groups.values():
        api = connect()
        try:
            present = exists(api, image_tag(spec)) and not force
        finally:
            api.close()
        repo = None if present else _repo_for(spec.repo, tasks, repos)
        done.append(ensure_image(spec, repo, force=force, log=log))
    return done


def _cmd_build(args: argparse.Namespace) -> int:
    from envgym.task import list_suites

    suites = [s for s in list_suites() if s.startswith("swe-")] if args.all else args.suite
    if not suites:
        raise EnvgymError("name a suite (--suite) or pass --all")
    for tag, built in build_suites(suites, _repos(args.repo), force=args.force,
                                   log=out.print if args.verbose else lambda _: None):
        out.print(f"{tag}  {'[green]built[/]' if built else 'up to date'}")
    return 0


def _cmd_grade(args: argparse.Namespace) -> int:
    from envgym.task import load_suite
    from envgym_swe.grade import grade_predictions
    from envgym_swe.importer import import_instances
    from envgym_swe.instances import read_jsonl

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
    path = Path(args.out) if args.out else Path(args.predictions).with_suffix(".report.json")
    path.write_text(json.dumps(report, indent=2))
    for iid, entry in report["instances"].items():
        colour = {"resolved": "green", "unresolved": "red", "patch_failed": "red"}.get(entry["status"], "yellow")
        why = f": {entry['reason'].splitlines()[0][:160]}" if entry.get("reason") else ""
        out.print(f"[{colour}]{entry['status']}[/] {iid}{why}")
    out.print(f"resolved {report['resolved_instances']} of {report['submitted_instances']} "
              f"(errors {report['error_instances']}, empty {report['empty_patch_instances']}); report: {path}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``swe import``, ``swe build`` and ``swe grade`` to the ``envgym`` command line."""
    p = subparsers.add_parser("swe", help="SWE tasks: import SWE-bench instances, build images, grade predictions")
    sub = p.add_subparsers(dest="swe_command", required=True)
    i = sub.add_parser("import", help="SWE-bench instances + local git repositories -> images and a task suite")
    i.add_argument("instances", help="JSONL of SWE-bench instances")
    i.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH", help="a local git repository")
    i.add_argument("--suite", help="suite name (default: swe-<file stem>)")
    i.add_argument("--out", help="output folder (default: tasks/<suite>)")
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

