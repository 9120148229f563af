"""Re-check a bundled suite from the sdist alone: same commits, and the tests still tell bug from fix.

:func:`validate_suite` rebuilds the library's repository from the pinned sdist and the stored gold patches
(:func:`envgym_swe.sources.rebuild_repo`) into a temporary folder and requires every instance's commit id
to come out equal to its ``base_commit``. Then, for a seeded sample of instances, in one container with
network ``none``: the test files holding FAIL_TO_PASS tests must be absent at ``base_commit``; that tree
with the test patch applied must fail every FAIL_TO_PASS test and pass every PASS_TO_PASS test; with the
gold patch applied on top, every test of both lists must pass.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym_swe.inject.build import load_instances
from envgym_swe.inject.runner import TestRunner
from envgym_swe.sources import git, library, patch_paths, rebuild_repo


@dataclass
class TaskCheck:
    instance_id: str
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class SuiteCheck:
    suite: str
    commits_ok: int = 0
    commits_total: int = 0
    commit_problems: list[str] = field(default_factory=list)
    tasks: list[TaskCheck] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.commit_problems and all(t.ok for t in self.tasks)


def _export(repo: Path, commit: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True,
                             check=True).stdout
    tar_path = dest.parent / f"{dest.name}.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data")
    tar_path.unlink()


def _apply(tree: Path, patch: str) -> None:
    subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=tree, input=patch.encode(), check=True,
                   capture_output=True)


def _texts(tree: Path, paths: list[str]) -> dict[str, str | None]:
    return {p: (tree / p).read_text() if (tree / p).is_file() else None for p in paths}


def _mismatch(statuses: dict[str, str], tests: list[str], want: str) -> list[str]:
    return [f"{t}: {statuses.get(t, 'missing')}" for t in tests if statuses.get(t, "missing") != want]


async def check_instance(runner: TestRunner, repo: Path, inst: dict[str, Any], work: Path, *,
                         timeout: float = 120) -> TaskCheck:  # noqa: ASYNC109 - the test run's own deadline
    """The two container runs of the module docstring for one instance."""
    started = time.monotonic()
    check = TaskCheck(inst["instance_id"])
    tree = work / inst["instance_id"]
    await asyncio.to_thread(_export, repo, inst["base_commit"], tree)
    hidden = sorted({t.split("::", 1)[0] for t in inst["FAIL_TO_PASS"]})
    check.problems += [f"hidden test file {f} is visible at base_commit" for f in hidden if (tree / f).exists()]
    await asyncio.to_thread(_apply, tree, inst["test_patch"])
    await runner.load(tree)
    f2p, p2p = list(inst["FAIL_TO_PASS"]), list(inst["PASS_TO_PASS"])
    files = sorted({t.split("::", 1)[0] for t in f2p + p2p})
    buggy = await runner.run(files, timeout=timeout)
    if buggy.timed_out:
        check.problems.append("with the bug: the test run timed out")
    check.problems += [f"with the bug, FAIL_TO_PASS {m}" for m in _mismatch(buggy.status, f2p, "failed")]
    check.problems += [f"with the bug, PASS_TO_PASS {m}" for m in _mismatch(buggy.status, p2p, "passed")]
    touched = patch_paths(inst["patch"])
    originals = await asyncio.to_thread(_texts, tree, touched)
    await asyncio.to_thread(_apply, tree, inst["patch"])
    fixed_files = {p: t for p, t in (await asyncio.to_thread(_texts, tree, touched)).items() if t is not None}
    fixed = await runner.run(files, fixed_files, originals=originals, timeout=timeout)
    check.problems += [f"with the gold patch, {m}" for m in _mismatch(fixed.status, f2p + p2p, "passed")]
    check.seconds = time.monotonic() - started
    return check


async def validate_suite(suite: str, image: str, *, sample: int | None = 5, seed: int = 0,
                         log: Callable[[str], None] = print) -> SuiteCheck:
    """Rebuild ``suite``'s repository from its sdist and re-check a sample of its tasks in containers."""
    lib = library(suite.removeprefix("swe-"))
    instances = load_instances(lib)
    started = time.monotonic()
    result = SuiteCheck(suite, commits_total=len(instances))
    with tempfile.TemporaryDirectory(prefix=f"envgym-validate-{lib.name}-") as tmp:
        repo = Path(tmp) / "repo"
        made = await asyncio.to_thread(rebuild_repo, lib, instances, repo)
        for inst in instances:
            if made[inst["instance_id"]] == inst["base_commit"]:
                result.commits_ok += 1
            else:
                result.commit_problems.append(f"{inst['instance_id']}: rebuilt commit {made[inst['instance_id']]} "
                                              f"!= base_commit {inst['base_commit']}")
        log(f"{suite}: {result.commits_ok}/{len(instances)} commits rebuilt identically from the sdist")
        chosen = instances if sample is None or sample >= len(instances) else \
            random.Random(seed).sample(instances, sample)
        await asyncio.to_thread(git, repo, "checkout", "-q", "--detach", "clean")
        async with TestRunner(image, repo, pythonpath=lib.pythonpath, deselect=lib.deselect) as runner:
            for inst in chosen:
                check = await check_instance(runner, repo, inst, Path(tmp) / "trees")
                result.tasks.append(check)
                log(f"{suite}: {check.instance_id} {'ok' if check.ok else 'FAILED'} ({check.seconds:.1f}s)"
                    + "".join(f"\n    {p}" for p in check.problems[:10]))
    result.seconds = time.monotonic() - started
    return result
