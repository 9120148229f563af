"""The resumable parallel build: selection independent of workers, batches and interruptions; the journal.

The container side is replaced by a scripted runner here (the other side of the boundary); the driver itself
runs in real containers in ``test_inject_driver.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from envgym_swe import sources
from envgym_swe.inject.build import _plan
from envgym_swe.inject.parallel import (
    BaselineTimeout,
    BuildConfig,
    Journal,
    _Build,
    build_library,
    journal_path,
    replay,
)
from envgym_swe.inject.runner import RunResult

from .test_sources import make_sdist

TESTS = [f"tests/test_ops.py::test_{i}" for i in range(6)]
OPS = {
    "mini/__init__.py": "".join(
        f"def f{i}(a, b):\n    if a < b:\n        return a + b\n    return a - b if a > {i} else b\n\n\n"
        for i in range(16)),
    "tests/test_ops.py": "".join(f"def test_{i}():\n    assert True\n\n\n" for i in range(6)),
}


def fate(key: str) -> str:
    """What the scripted tests do with mutation ``key``: a fixed function of the key, like a real library."""
    return ["valid", "valid", "none", "flaky", "many"][int(hashlib.sha256(key.encode()).hexdigest(), 16) % 5]


class ScriptedRunner:
    """Answers ``run_batch`` as the driver would for a library whose tests react to each bug per :func:`fate`."""

    def __init__(self, seen: list[str], delay: random.Random | None = None) -> None:
        self.seen, self.delay = seen, delay

    async def run_batch(self, package: str, jobs: Sequence[Mapping[str, Any]], *,
                        timeout: float) -> dict[str, list[RunResult]]:  # noqa: ASYNC109 - the runner's signature
        if self.delay is not None:
            await asyncio.sleep(self.delay.random() / 200)
        out = {}
        for job in jobs:
            self.seen.append(job["key"])
            what = "clean" if job["key"] == "clean" else fate(job["key"])
            failing = {"valid": TESTS[:2], "flaky": TESTS[:1], "many": TESTS, "none": [], "clean": []}[what]
            first = RunResult(status={t: "failed" if t in failing else "passed" for t in TESTS}, exit_code=1)
            second = first if what != "flaky" else RunResult(status=dict.fromkeys(TESTS, "passed"), exit_code=0)
            out[job["key"]] = [first, second][:job["repeat"]]
        return out


@pytest.fixture
def plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    lib = make_sdist(tmp_path / "cache", OPS)
    monkeypatch.setitem(sources.LIBRARIES, "mini", lib)
    return _plan("mini", 0, tmp_path / "cache")


async def build(plan, cfg: BuildConfig, journal: Journal, *, workers: int, batch: int, seed: int | None,
                seen: list[str]) -> list[str]:
    state = _Build(plan, cfg, journal, batch, log=lambda _: None)
    delays = random.Random(seed) if seed is not None else None
    async with asyncio.TaskGroup() as group:
        for _ in range(workers):
            group.create_task(state.work(ScriptedRunner(seen, delays)))  # type: ignore[arg-type]
    return [m.key for m in replay(plan.pool, state.outcomes, cfg).selected]


def sequential(plan, cfg: BuildConfig) -> list[str]:
    """The one-at-a-time build's walk, written out: the reference every parallel build must equal."""
    kept: list[str] = []
    per_func: dict[tuple[str, str], int] = {}
    tried = 0
    for m in plan.pool:
        if len(kept) >= cfg.n or tried >= cfg.max_tries:
            break
        if per_func.get((m.path, m.function), 0) >= cfg.per_function:
            continue
        tried += 1
        if fate(m.key) == "valid":
            per_func[(m.path, m.function)] = per_func.get((m.path, m.function), 0) + 1
            kept.append(m.key)
    return kept


@pytest.mark.parametrize(("workers", "batch", "seed"), [(1, 1, None), (1, 8, None), (3, 2, 1), (4, 5, 2)])
async def test_selection_is_the_sequential_walk_whatever_the_workers_and_batches(
        plan, tmp_path: Path, workers: int, batch: int, seed: int | None) -> None:
    cfg = BuildConfig(n=12, per_function=2, max_tries=60, max_fail=3)
    expected = sequential(plan, cfg)
    assert 0 < len(expected) <= 12 and len(plan.pool) > 60  # the walk stops on n or max_tries, not the pool
    seen: list[str] = []
    got = await build(plan, cfg, Journal(tmp_path / "j.jsonl"), workers=workers, batch=batch, seed=seed, seen=seen)
    assert got == expected
    assert seen.count("clean") == 1 and len(set(seen)) == len(seen)  # one baseline, no candidate run twice


async def test_an_interrupted_build_resumes_from_its_journal_without_rerunning(plan, tmp_path: Path) -> None:
    cfg = BuildConfig(n=12, per_function=2, max_tries=60, max_fail=3)
    journal = Journal(journal_path(plan, cfg, tmp_path / "cache"))
    first: list[str] = []
    task = asyncio.ensure_future(build(plan, cfg, journal, workers=2, batch=3, seed=3, seen=first))
    while len(first) < 10:  # noqa: ASYNC110 - the scripted runner has no event to wait on
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # a runner call already in a worker thread when the build was cancelled still ends and journals its outcome
    # (a thread cannot be cancelled): wait until the journal stops growing (it did under make test's load)
    size, still = -1, 0
    for _ in range(200):
        now = journal.path.stat().st_size
        still, size = (still + 1 if now == size else 0), now
        if still >= 5:
            break
        await asyncio.sleep(0.05)
    journaled = {json.loads(line).get("key") for line in journal.path.read_text().splitlines()}
    assert 1 < len(journaled) < len(plan.pool)
    with journal.path.open("a") as f:
        f.write('{"type": "candidate", "key": "cut sh')  # a line a kill cut short is ignored
    # What is journaled can be written as it stands: the walk's known prefix, marked unfinished.
    partial = await build_library("mini", cfg, "no-image-needed", run=False, cache=tmp_path / "cache",
                                  log=lambda _: None)
    assert not partial.complete and partial.run == len(journaled - {None})
    expected = sequential(plan, cfg)
    keys = [i["instance_id"].rsplit("-", 1)[1] for i in partial.instances]
    assert keys == expected[:len(keys)]
    second: list[str] = []
    got = await build(plan, cfg, journal, workers=2, batch=3, seed=4, seen=second)
    assert got == sequential(plan, cfg)
    assert not journaled & set(second)  # nothing journaled ran again, the baseline included


def test_the_journal_is_named_by_what_an_outcome_depends_on(plan, tmp_path: Path) -> None:
    a = journal_path(plan, BuildConfig(n=10), tmp_path)
    assert a == journal_path(plan, BuildConfig(n=500, per_function=3, max_tries=9000, seed=4), tmp_path)
    assert a != journal_path(plan, BuildConfig(n=10, max_fail=5), tmp_path)
    assert a != journal_path(plan, BuildConfig(n=10, test_timeout=5), tmp_path)
    other = dataclasses.replace(plan, lib=dataclasses.replace(plan.lib, test_globs=("tests/test_ops.py",)))
    assert a != journal_path(other, BuildConfig(n=10), tmp_path)
    assert a.parent == tmp_path / "inject"
    deselected = dataclasses.replace(plan, lib=dataclasses.replace(plan.lib, deselect=("tests/test_ops.py::test_0",)))
    assert a != journal_path(deselected, BuildConfig(n=10), tmp_path)
    # no deselect: the digest of before the field existed, so the journals of earlier builds keep their names
    before = hashlib.sha256(json.dumps([repr(plan.lib), 20, 60.0]).encode()).hexdigest()[:10]
    assert a.name == f"{plan.lib.slug}-{before}.jsonl"


def test_a_higher_per_function_cap_keeps_every_instance_a_lower_one_kept(plan) -> None:
    outcomes = {m.key: {"verdict": "valid" if fate(m.key) == "valid" else "no test fails"} for m in plan.pool}
    walks = [replay(plan.pool, outcomes, BuildConfig(n=10**6, per_function=cap, max_tries=10**6)) for cap in (1, 2, 3)]
    kept = [{m.key for m in w.selected} for w in walks]
    assert kept[0] < kept[1] < kept[2]


def test_replay_waits_for_the_first_missing_outcome_and_applies_the_caps(plan) -> None:
    cfg = BuildConfig(n=3, per_function=1, max_tries=100)
    pool = plan.pool
    outcomes = {m.key: {"verdict": "valid"} for m in pool[:2]}
    partial = replay(pool, outcomes, cfg)
    assert not partial.complete and partial.tried <= 2
    every = {m.key: {"verdict": "valid"} for m in pool}
    done = replay(pool, every, cfg)
    assert done.complete and len(done.selected) == 3
    assert len({(m.path, m.function) for m in done.selected}) == 3  # one per function


class SlowCleanRunner(ScriptedRunner):
    """The clean run overruns its limit (a loaded host); candidates would run as scripted."""

    async def run_batch(self, package: str, jobs: Sequence[Mapping[str, Any]], *,
                        timeout: float) -> dict[str, list[RunResult]]:  # noqa: ASYNC109 - the runner's signature
        if jobs[0]["key"] != "clean":
            return await super().run_batch(package, jobs, timeout=timeout)
        self.seen.append("clean")
        return {"clean": [RunResult(timed_out=True, exit_code=-1, output="...") for _ in range(jobs[0]["repeat"])]}


async def test_a_clean_run_that_times_out_stops_the_library_and_journals_nothing(plan, tmp_path: Path) -> None:
    # Before, the broken baseline was journaled and every candidate of those files with it ("clean run broken"):
    # a build on a busy host rejected a whole library for good.
    cfg = BuildConfig(n=12, per_function=2, max_tries=60, max_fail=3)
    journal = Journal(tmp_path / "j.jsonl")
    state = _Build(plan, cfg, journal, 4, log=lambda _: None)
    seen: list[str] = []
    caught: list[BaseException] = []
    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(2):
                group.create_task(state.work(SlowCleanRunner(seen)))  # type: ignore[arg-type]
    except* BaselineTimeout as timeouts:
        caught.extend(timeouts.exceptions)
    assert caught and all("overran" in str(exc) for exc in caught)
    assert not journal.path.exists() or not journal.path.read_text()
    assert set(seen) == {"clean"}  # no candidate ran
