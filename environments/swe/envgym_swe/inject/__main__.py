"""``python -m envgym_swe.inject``: build, import and validate the bundled bug-injection suites.

::

    python -m envgym_swe.inject build --lib toolz --n 25 --seed 0     # find bugs, write tasks/swe-toolz/
    python -m envgym_swe.inject build --libs six,toml --workers 2     # several; resumable (journal), parallel
    python -m envgym_swe.inject import --lib toolz                    # rebuild repo from sdist, image, tasks.jsonl
    python -m envgym_swe.inject validate --suite swe-toolz --sample 5 # CI: ids + bug/fix re-checked in containers
    python -m envgym_swe.inject restate --lib toolz                   # rewrite problem statements only
    python -m envgym_swe.inject history --lib toolz DEST             # a repo whose history fixes each bug
    python -m envgym_swe.inject libraries                             # the pinned libraries
    python -m envgym_swe.inject export --lib six [--out FILE]         # the stored instances as plain JSON

``history`` is the bundled suites as ``envgym swe mine`` input (:func:`envgym_swe.sources.build_fix_history`).

Exit status: 0 when everything asked for held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time

from envgym_swe.sources import LIBRARIES, SCALED_LIBRARIES, library

KNOWN = sorted({*LIBRARIES, *SCALED_LIBRARIES})


def default_image() -> str:
    """The swe-python image (built when missing): the same Python and pytest as the graders use."""
    from envgym.plugin.sandbox import build_images, tag_for

    build_images(["swe-python"], log=lambda _: None)
    return tag_for("swe-python")


def import_suite(name: str, *, log=print) -> int:
    """Rebuild ``name``'s repository from the sdist (ids must match), build its image, write tasks.jsonl."""
    from envgym.plugin import TaskSpec
    from envgym_swe.importer import import_instances, write_import
    from envgym_swe.inject.build import load_instances, suite_dir, write_readme
    from envgym_swe.sources import rebuild_repo, repo_path

    lib = library(name)
    instances = load_instances(lib)
    made = rebuild_repo(lib, instances, repo_path(lib))
    wrong = [i["instance_id"] for i in instances if made[i["instance_id"]] != i["base_commit"]]
    if wrong:
        log(f"{lib.name}: {len(wrong)} rebuilt commit(s) differ from base_commit: {', '.join(wrong[:5])}")
        return 1
    suite = f"swe-{lib.name}"
    report = import_instances(instances, {lib.repo: repo_path(lib)}, suite, None, log=log)  # one image
    split = {i["instance_id"]: i["split"] for i in instances}
    report.tasks = [TaskSpec.model_validate({**t.model_dump(mode="json"), "split": split[t.metadata["instance_id"]]})
                    for t in report.tasks]
    out = write_import(report, suite_dir(lib))
    write_readme(lib, out)
    log(f"{suite}: {len(report.tasks)} tasks written to {out}; skipped {len(report.skipped)}; images "
        + ", ".join(f"{tag} ({'built' if built else 'cached'})" for tag, built in report.images))
    for iid, why in report.skipped:
        log(f"  skipped {iid}: {why}")
    return 0 if not report.skipped else 1


def _build(names: list[str], args: argparse.Namespace, image: str) -> int:
    """Build ``names`` (resumable, see :mod:`.parallel`); each library's files are written as it completes."""
    from envgym_swe.inject.build import write_build, write_injected_readme, write_readme
    from envgym_swe.inject.parallel import BaselineTimeout, BuildConfig, build_library

    cfg = BuildConfig(n=args.n, seed=args.seed, max_fail=args.max_fail, per_function=args.per_function,
                      test_timeout=args.test_timeout, max_tries=args.max_tries)
    # One library: all workers on it. Several: one container each, ``workers`` libraries at a time.
    per_lib = args.workers if len(names) == 1 else 1
    status = 0

    async def one(name: str, slots: asyncio.Semaphore) -> None:
        nonlocal status
        async with slots:
            lib = library(name)
            try:
                report = await build_library(name, cfg, image, workers=per_lib, batch=args.batch,
                                             run=not args.from_journal, cpu_shares=args.cpu_shares)
            except BaselineTimeout as exc:  # this library stops; the others go on
                print(f"build: {exc}", file=sys.stderr, flush=True)
                status = 1
                return
            out = await asyncio.to_thread(write_build, lib, report, args.seed, per_function=args.per_function,
                                          max_fail=args.max_fail, test_timeout=args.test_timeout,
                                          from_journal=args.from_journal)
            await asyncio.to_thread(write_readme, lib, out)
            if lib.name in SCALED_LIBRARIES:
                await asyncio.to_thread(write_injected_readme)
            print(f"{lib.name}: kept {len(report.instances)} of {report.tried} tried in {report.seconds:.0f}s "
                  f"(dropped: {dict(report.rejected)}){'' if report.complete else ' [walk unfinished]'} -> {out}",
                  flush=True)
            if not args.no_import and await asyncio.to_thread(import_suite, lib.name):
                status = 1

    def stop() -> None:
        # Every task, not only the main one: a build once ran on after a SIGTERM that cancelled only the main
        # task (cause not pinned down); cancelling each task leaves nothing running to absorb it.
        for task in asyncio.all_tasks():
            task.cancel()

    async def run_all() -> None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        slots = asyncio.Semaphore(max(1, args.workers) if len(names) > 1 else 1)
        async with asyncio.TaskGroup() as group:
            for name in names:
                group.create_task(one(name, slots))

    try:
        asyncio.run(run_all())
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("build: stopped (containers removed); the same command resumes from the journal", file=sys.stderr)
        return 130
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envgym_swe.inject", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="inject bugs, keep the validated ones, write the suite (and import it)")
    which = b.add_mutually_exclusive_group(required=True)
    which.add_argument("--lib", choices=KNOWN)
    which.add_argument("--libs", help="comma-separated library names")
    which.add_argument("--all", action="store_true", help="every library of the scaled set (tasks/swe-injected)")
    b.add_argument("--n", type=int, default=25, help="instances to keep per library")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--max-fail", type=int, default=20, help="drop bugs that fail more tests than this")
    b.add_argument("--max-tries", type=int, default=400)
    b.add_argument("--per-function", type=int, default=1, help="at most this many bugs per function")
    b.add_argument("--test-timeout", type=float, default=60, help="seconds per test run")
    b.add_argument("--workers", type=int, default=1, help="containers validating at once")
    b.add_argument("--batch", type=int, default=8, help="candidates per container exec")
    b.add_argument("--image", help="test image (default: envgym/swe-python)")
    b.add_argument("--cpu-shares", type=int, default=None,
                   help="Docker CPU weight of the build's containers (default 1024): e.g. 256 yields the CPU to "
                        "other containers when the host is busy, and uses it when idle")
    b.add_argument("--no-import", action="store_true", help="write the instances only")
    b.add_argument("--from-journal", action="store_true",
                   help="validate nothing: write what the journal holds so far (the walk's longest known prefix)")
    i = sub.add_parser("import", help="rebuild the repository from the sdist and import the stored instances")
    i.add_argument("--lib", required=True, choices=KNOWN)
    v = sub.add_parser("validate", help="rebuild from the sdist and re-check a sample of tasks in containers")
    v.add_argument("--suite", required=True, help="swe-<lib>")
    v.add_argument("--sample", type=int, default=5, help="tasks to re-run (0: all)")
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--image")
    r = sub.add_parser("restate", help="rewrite the stored problem statements from a fresh run of each bug")
    r.add_argument("--lib", required=True, choices=KNOWN)
    r.add_argument("--image")
    h = sub.add_parser("history", help="a repository whose history fixes each bundled bug (envgym swe mine input)")
    h.add_argument("--lib", required=True, choices=KNOWN)
    h.add_argument("dest", help="folder for the repository (replaced)")
    sub.add_parser("libraries", help="list the pinned libraries")
    e = sub.add_parser("export", help="write a library's stored instances as plain JSON (the scaled set ships "
                                      "them xz-compressed)")
    e.add_argument("--lib", required=True, choices=KNOWN)
    e.add_argument("--out", default="-", help="file to write (default: standard output)")
    args = parser.parse_args(argv)

    if args.cmd == "export":
        import json
        from pathlib import Path

        from envgym_swe.inject.build import instances_file, load_instances, suite_dir

        lib = library(args.lib)
        if not instances_file(suite_dir(lib)).is_file():
            print(f"export: {lib.name} has no stored instances in {suite_dir(lib)}", file=sys.stderr)
            return 2
        text = json.dumps(load_instances(lib), indent=1) + "\n"
        if args.out == "-":
            sys.stdout.write(text)
        else:
            Path(args.out).write_text(text)
        return 0

    if args.cmd == "history":
        from pathlib import Path

        from envgym_swe.inject.build import load_instances
        from envgym_swe.sources import build_fix_history

        lib = library(args.lib)
        repo = build_fix_history(lib, load_instances(lib), Path(args.dest))
        print(f"envgym swe mine {repo} --suite swe-{lib.name}-mined --repo-name {lib.repo}")
        return 0

    if args.cmd == "libraries":
        for lib in [*LIBRARIES.values(), *SCALED_LIBRARIES.values()]:
            print(f"{lib.name:12} {lib.dist}=={lib.version}  {lib.repo}  sha256 {lib.sha256[:16]}...")
        return 0
    if args.cmd == "import":
        return import_suite(args.lib)
    if args.cmd == "build":
        names = sorted(SCALED_LIBRARIES) if args.all else [args.lib] if args.lib else args.libs.split(",")
        unknown = [n for n in names if n not in KNOWN]
        if unknown:
            print(f"build: unknown librar{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
                  f"(known: {', '.join(KNOWN)})", file=sys.stderr)
            return 2
        if args.workers < 1 or args.batch < 1:
            print("build: --workers and --batch must be at least 1", file=sys.stderr)
            return 2
        if args.cpu_shares is not None and not 2 <= args.cpu_shares <= 262144:
            print("build: --cpu-shares must be between 2 and 262144 (Docker's range; 1024 is the default weight)",
                  file=sys.stderr)
            return 2
        return _build(names, args, args.image or default_image())
    image = args.image or default_image()
    if args.cmd == "restate":
        from envgym_swe.inject.build import restate_suite

        asyncio.run(restate_suite(args.lib, image))
        return 0
    from envgym_swe.inject.validate import validate_suite

    started = time.monotonic()
    result = asyncio.run(validate_suite(args.suite, image, sample=args.sample or None, seed=args.seed))
    bad = [t for t in result.tasks if not t.ok]
    print(f"{args.suite}: commits {result.commits_ok}/{result.commits_total} identical; tasks "
          f"{len(result.tasks) - len(bad)}/{len(result.tasks)} valid; {time.monotonic() - started:.1f}s")
    for problem in result.commit_problems[:10]:
        print(f"  {problem}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
