"""``envgym osworld import`` (an OSWorld checkout -> a suite folder) and ``envgym osworld setup`` (desktop-env).

:func:`import_suite` writes into ``out`` (default: the suite ``gui-osworld``'s folder as the registry knows
it) ``tasks.jsonl`` (tasks with a reference), ``without-reference/tasks.jsonl``, ``import-report.json``
(the source repository and commit, whether a cache was given, counts overall and per OSWorld domain, every
skipped id with its reason) and copies the repository's ``LICENSE``.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envgym.plugin import ExtraMissing, SpecError
from envgym_gui.osworld._common import SUITE
from envgym_gui.osworld._importer import import_tasks

if TYPE_CHECKING:
    from envgym.plugin import TaskSpec

_NOT_COUNTED = ("download", "network", "windows", "malformed", "unfinished")
"""Skip reasons of tasks not counted as needing no download (malformed files and examples without a metric
are counted nowhere)."""


def import_suite(source: str | Path, out: str | Path | None = None, *, commit: str | None = None,
                 cache: str | Path | None = None, repository: str | None = None) -> dict[str, Any]:
    """Import ``source`` (with OSWorld's ``cache`` folder, when given) into the folder ``out``; return the report
    written. ``repository`` and ``commit`` default to what the checkout's git says (its remote, its HEAD)."""
    import json

    from envgym.plugin import suites_root, write_suite
    from envgym.plugin.cli import output_dir

    if cache is not None and not Path(cache).is_dir():
        raise SpecError(f"--cache {cache}: not a folder (OSWorld's cache: <cache>/<task id>/<file>)")
    tasks, skipped = import_tasks(source, cache=cache)
    out = output_dir(suites_root(SUITE) if out is None else out)
    with_ref = [t for t in tasks if t.solution]
    without = [t for t in tasks if not t.solution]
    write_suite(SUITE, with_ref, folder=out, log=None)
    if without:
        write_suite(SUITE, without, file="without-reference/tasks.jsonl", folder=out, log=None)
    root = Path(source)
    licence = root / "LICENSE"
    if licence.is_file():
        (out / "LICENSE").write_bytes(licence.read_bytes())
    in_test_all = _test_all(root)
    report = {
        "source": repository or _git(root, "config", "--get", "remote.origin.url") or str(root.resolve()),
        "commit": commit or _git(root, "rev-parse", "HEAD"),
        "cache": cache is not None,
        "total": len(tasks) + len(skipped),
        "no_download": len(tasks) + sum(not r.startswith(_NOT_COUNTED) for _, r in skipped),
        "imported": len(tasks), "with_reference": len(with_ref),
        "skipped_by_reason": dict(sorted(Counter(r.split(":", 1)[0] for _, r in skipped).items())),
        "by_domain": _by_domain(tasks, skipped),
        "test_all": _test_all_counts(in_test_all, tasks, skipped) if in_test_all else None,
        "imported_tasks": [_key(t) for t in tasks],
        "skipped": [{"id": i, "reason": r} for i, r in skipped],
    }
    (out / "import-report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report


def _git(root: Path, *args: str) -> str | None:
    where = root if root.is_dir() else root.parent
    try:
        done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def _by_domain(tasks: list[TaskSpec], skipped: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Per OSWorld domain: imported, and skipped by reason (a skipped id is ``<domain>/<id>``)."""
    out: dict[str, dict[str, Any]] = {}
    for task in tasks:
        out.setdefault(task.metadata["osworld"]["domain"], {"imported": 0, "skipped": Counter()})["imported"] += 1
    for key, why in skipped:
        domain = key.split("/", 1)[0] if "/" in key and not key.startswith("/") else "?"
        out.setdefault(domain, {"imported": 0, "skipped": Counter()})["skipped"][why.split(":", 1)[0]] += 1
    return {d: {"imported": v["imported"], "skipped": dict(sorted(v["skipped"].items()))}
            for d, v in sorted(out.items())}


def _test_all(root: Path) -> set[str]:
    import json

    for path in (root / "evaluation_examples" / "test_all.json", root.parent / "test_all.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return {f"{domain}/{i}" for domain, ids in data.items() for i in ids}
        except (OSError, ValueError, AttributeError, TypeError):
            continue
    return set()


def _key(task: TaskSpec) -> str:
    return f"{task.metadata['osworld']['domain']}/{task.metadata['osworld']['id']}"


def _test_all_counts(ids: set[str], tasks: list[TaskSpec], skipped: list[tuple[str, str]]) -> dict[str, int]:
    """The same counts over OSWorld's benchmark set (``test_all.json``)."""
    mine = [t for t in tasks if _key(t) in ids]
    out = [r for i, r in skipped if i in ids]
    return {"total": len(mine) + len(out),
            "no_download": len(mine) + sum(not r.startswith(_NOT_COUNTED) for r in out),
            "imported": len(mine), "with_reference": sum(bool(t.solution) for t in mine)}


def write_suite(source: str | Path, out: str | Path, *, commit: str | None = None) -> dict[str, Any]:
    """Deprecated: :func:`import_suite` (``envgym.plugin.write_suite`` is the one function that writes a suite)."""
    import warnings

    warnings.warn("envgym_gui.osworld.write_suite moved to envgym_gui.osworld.import_suite "
                  "(since 0.2; the alias goes in 0.3)", DeprecationWarning, stacklevel=2)
    return import_suite(source, out, commit=commit)


def _cmd_import(args: argparse.Namespace) -> int:
    try:
        report = import_suite(args.osworld_dir, args.out, commit=args.commit, cache=args.cache,
                              repository=args.repository)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.verbose:
        for entry in report["skipped"]:
            print(f"skipped {entry['id']}: {entry['reason']}")
    print(f"OSWorld tasks: {report['total']}, needing no download: {report['no_download']}, imported: "
          f"{report['imported']}, with a reference: {report['with_reference']} -> {args.out or SUITE}")
    print("skipped: " + ", ".join(f"{k} {v}" for k, v in report["skipped_by_reason"].items()))
    return 0 if report["imported"] else 1


def _cmd_setup(args: argparse.Namespace) -> int:
    from envgym_gui.osworld.install import REQUIREMENT, VERSION, found, problem

    reason = problem()
    if reason is None:
        print(f"{REQUIREMENT} is installed and its metric modules import: OSWorld grading is ready")
        return 0
    if args.check or found() == VERSION:  # installed as pinned: pip would change nothing, the extra is missing
        raise ExtraMissing(reason)
    command = [sys.executable, "-m", "pip", "install", "--no-deps", REQUIREMENT]
    print(f"installing {REQUIREMENT} without its pinned dependencies: {' '.join(command)}")
    if subprocess.run(command, check=False).returncode != 0:
        print(f"pip could not install {REQUIREMENT} (its message is above)")
        return 1
    importlib.invalidate_caches()
    reason = problem()
    if reason is not None:
        raise ExtraMissing(reason)
    print(f"{REQUIREMENT} is installed and its metric modules import: OSWorld grading is ready")
    return 0


def _add_commands(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser("import", help="an OSWorld checkout -> a task suite folder (tasks.jsonl + report)")
    i.add_argument("osworld_dir", help="OSWorld checkout, its evaluation_examples/examples folder, or a JSON file")
    i.add_argument("--cache", help="OSWorld's cache folder (<cache>/<task id>/<file>: what its download steps and "
                                   "cloud_file getters fetched); without it, tasks that download stay out")
    i.add_argument("--out", help=f"output folder (default: suite {SUITE}'s folder, where envgym finds it)")
    i.add_argument("--commit", help="the source commit, recorded in the report (default: git HEAD of the folder)")
    i.add_argument("--repository", help="the source repository, recorded in the report (default: the folder's "
                                        "git remote, else its path)")
    i.add_argument("--verbose", "-v", action="store_true", help="print every skipped task with its reason")
    i.set_defaults(fn=_cmd_import)
    s = sub.add_parser("setup", help="install desktop-env (OSWorld's metrics) with --no-deps, then check that its "
                                     "metric modules import (after pip install 'envgym[osworld]')")
    s.add_argument("--check", action="store_true", help="only check; exit 2 naming what to run when not ready")
    s.set_defaults(fn=_cmd_setup)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``osworld import`` and ``osworld setup`` to the ``envgym`` command line (entry point ``envgym.cli``)."""
    p = subparsers.add_parser("osworld", help="import OSWorld task JSON as gui/osworld-v1 tasks; install its metrics")
    _add_commands(p.add_subparsers(dest="osworld_command", required=True))
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m envgym_gui.osworld import OSWORLD_DIR ...``"""
    parser = argparse.ArgumentParser(prog="python -m envgym_gui.osworld",
                                     description="import OSWorld task JSON as gui/osworld-v1 tasks")
    _add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except ExtraMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
