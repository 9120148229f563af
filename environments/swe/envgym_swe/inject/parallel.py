"""A resumable, parallel suite build: candidates validated in batches by N containers, outcomes journaled.

:func:`build_library` does what :func:`envgym_swe.inject.build.build_suite` promises (same candidates, same
acceptance rules, same selection) at scale:

* **Batches.** Each worker owns one long-lived container (:class:`.runner.TestRunner`) and validates
  ``batch`` candidates per ``docker exec`` through the in-container driver (:mod:`._driver`): pytest is
  imported once and forked per run, and the second buggy run happens only when the first could be kept.
* **Baselines once.** The clean runs (two) of each set of test files happen once per library and are
  journaled; every worker uses the same ones.
* **Journal.** Every outcome (a baseline, or a candidate's verdict with its FAIL_TO_PASS, PASS_TO_PASS and
  failure details) is appended to ``CACHE/inject/<lib>-<version>-<hash>.jsonl`` and fsync'd before it
  counts; the hash covers only what an outcome depends on (:meth:`BuildConfig.outcome_digest`), so a build
  asking for more instances later goes on from the same journal. A killed build (Ctrl-C, SIGTERM: the
  containers are removed on the way out) resumes where it stopped: journaled candidates are not run again.
* **Deterministic selection.** Workers run candidates ahead in seeded order; which ones become instances is
  decided only by :func:`replay`, which walks that order over the journal exactly as the one-at-a-time build
  did (at most ``per_function`` per function, stop at ``n`` kept or ``max_tries`` tried). The output does
  not depend on the number of workers or on how often the build was interrupted.

Task commits and problem statements are made at the end, in candidate order (host work).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym_swe.inject.build import BuildReport, _judge, _Plan, _plan, _record, test_files_for
from envgym_swe.inject.mutations import Mutation
from envgym_swe.inject.runner import RunResult, TestRunner
from envgym_swe.sources import CACHE, Library, SourceError


class BaselineTimeout(SourceError):
    """A clean run of a library's tests overran its limit: a fact about the host's load or the limit, not an
    outcome, so nothing is journaled (a journaled broken baseline would reject every candidate of those test
    files for good). Raise ``--test-timeout`` or deselect the slow tests (:attr:`Library.deselect`)."""


@dataclass(frozen=True)
class BuildConfig:
    """What a build asks for; :meth:`outcome_digest` names its journal."""

    n: int = 25
    seed: int = 0
    max_fail: int = 20
    per_function: int = 1
    test_timeout: float = 60
    max_tries: int = 400

    def outcome_digest(self, lib: Library) -> str:
        """What a candidate's outcome depends on: the library's definition (its test files), ``max_fail`` and
        ``test_timeout``. Not ``n``, ``max_tries``, ``per_function`` or the seed, which only choose which
        candidates run: a later build asking for more reuses every outcome journaled so far."""
        deselect = [list(lib.deselect)] if lib.deselect else []  # absent when empty: older digests unchanged
        key = json.dumps([repr(lib), self.max_fail, float(self.test_timeout), *deselect])
        return hashlib.sha256(key.encode()).hexdigest()[:10]


class Journal:
    """Append-only JSONL of one library build's outcomes; each line fsync'd."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> tuple[dict[tuple[str, ...], dict[str, Any]], dict[str, dict[str, Any]]]:
        """(test files -> baseline record, candidate key -> outcome record) written so far."""
        baselines: dict[tuple[str, ...], dict[str, Any]] = {}
        outcomes: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:  # a line cut short by a kill: that outcome is simply redone
                    continue
                if rec.get("type") == "baseline":
                    baselines[tuple(rec["tests"])] = rec
                elif rec.get("type") == "candidate":
                    outcomes[rec["key"]] = rec
        return baselines, outcomes

    def append(self, records: Sequence[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records))
            f.flush()
            os.fsync(f.fileno())


def journal_path(plan: _Plan, cfg: BuildConfig, cache: Path = CACHE) -> Path:
    return cache / "inject" / f"{plan.lib.slug}-{cfg.outcome_digest(plan.lib)}.jsonl"


@dataclass
class Replay:
    selected: list[Mutation]
    tried: int
    rejected: Counter[str]
    complete: bool
    """False while some candidate the walk needs has no outcome yet."""


def replay(pool: Sequence[Mutation], outcomes: dict[str, dict[str, Any]], cfg: BuildConfig) -> Replay:
    """Walk ``pool`` in order over the known outcomes as the one-at-a-time build would."""
    per_func: Counter[tuple[str, str]] = Counter()
    out = Replay([], 0, Counter(), True)
    for m in pool:
        if len(out.selected) >= cfg.n or out.tried >= cfg.max_tries:
            return out
        if per_func[(m.path, m.function)] >= cfg.per_function:
            continue
        rec = outcomes.get(m.key)
        if rec is None:
            out.complete = False
            return out
        out.tried += 1
        if rec["verdict"] == "valid":
            per_func[(m.path, m.function)] += 1
            out.selected.append(m)
        else:
            out.rejected[rec["verdict"]] += 1
    return out


class _Build:
    """Shared state of one library's build: the dispatch cursor, baselines and outcomes."""

    def __init__(self, plan: _Plan, cfg: BuildConfig, journal: Journal, batch: int,
                 log: Callable[[str], None]) -> None:
        self.plan, self.cfg, self.journal, self.batch, self.log = plan, cfg, journal, batch, log
        loaded_baselines, self.outcomes = journal.load()
        self.baselines: dict[tuple[str, ...], asyncio.Future[dict[str, Any]]] = {}
        for files, rec in loaded_baselines.items():
            self.baselines[files] = asyncio.get_running_loop().create_future()
            self.baselines[files].set_result(rec)
        self.position = {m.key: i for i, m in enumerate(plan.pool)}
        self.valid_at: dict[tuple[str, str], list[int]] = {}
        for key, rec in self.outcomes.items():
            if rec["verdict"] == "valid" and key in self.position:
                m = plan.pool[self.position[key]]
                self.valid_at.setdefault((m.path, m.function), []).append(self.position[key])
        self.cursor = 0
        self.in_flight: set[str] = set()
        self.ran = 0
        self.started = time.monotonic()
        self.files_for: dict[str, tuple[str, ...]] = {}

    def files(self, m: Mutation) -> tuple[str, ...]:
        if m.path not in self.files_for:
            self.files_for[m.path] = tuple(test_files_for(self.plan.lib, self.plan.repo, m.path))
        return self.files_for[m.path]

    def take(self) -> list[Mutation]:
        """The next candidates to run, in seeded order, or [] when the walk needs nothing more."""
        if replay(self.plan.pool, self.outcomes, self.cfg).complete:
            return []
        batch: list[Mutation] = []
        while self.cursor < len(self.plan.pool) and len(batch) < self.batch:
            i, m = self.cursor, self.plan.pool[self.cursor]
            self.cursor += 1
            if m.key in self.outcomes or m.key in self.in_flight:
                continue
            earlier_valid = [p for p in self.valid_at.get((m.path, m.function), []) if p < i]
            if len(earlier_valid) >= self.cfg.per_function:
                continue  # the replay skips it whatever happens later
            batch.append(m)
        self.in_flight.update(m.key for m in batch)
        return batch

    async def baseline(self, runner: TestRunner, files: tuple[str, ...]) -> dict[str, Any]:
        """The clean runs of ``files`` (twice; only tests passing both times count), made once."""
        if files not in self.baselines:
            future = self.baselines[files] = asyncio.get_running_loop().create_future()
            try:
                job = {"key": "clean", "tests": list(files), "files": {}, "repeat": 2,
                       "timeout": self.cfg.test_timeout * 2}
                runs = (await runner.run_batch(self.plan.lib.package, [job],
                                               timeout=self.cfg.test_timeout * 4 + 60))["clean"]
                rec: dict[str, Any] = {"type": "baseline", "tests": list(files)}
                if any(r.timed_out for r in runs):
                    raise BaselineTimeout(f"{self.plan.lib.name}: the clean run of {' '.join(files)} overran "
                                          f"{self.cfg.test_timeout * 2:.0f}s; nothing journaled: raise --test-timeout "
                                          f"or deselect its slow tests. Last output: {runs[0].output[-300:]}")
                if any(r.broken for r in runs):
                    rec["broken"] = runs[0].output[-1500:]
                    self.log(f"{self.plan.lib.name}: the clean run of {' '.join(files)} is broken: "
                             f"{runs[0].output[-300:]}")
                else:
                    rec["passed"] = sorted(runs[0].passed() & runs[1].passed())
                await asyncio.to_thread(self.journal.append, [rec])
                future.set_result(rec)
            except BaseException as exc:
                del self.baselines[files]
                future.set_exception(exc)
                future.exception()  # retrieved: waiters re-raise it themselves
                raise
        return await asyncio.shield(self.baselines[files])

    def verdict(self, m: Mutation, base: dict[str, Any], runs: list[RunResult]) -> dict[str, Any]:
        rec: dict[str, Any] = {"type": "candidate", "key": m.key}
        if "broken" in base:
            return {**rec, "verdict": "clean run broken"}
        baseline = set(base["passed"])
        if runs and runs[0].stopped_early and not runs[0].timed_out:
            return {**rec, "verdict": f"more than {self.cfg.max_fail} tests fail"}
        first = _judge(runs[0], baseline, self.cfg.max_fail)
        if isinstance(first, str):
            return {**rec, "verdict": first}
        if len(runs) < 2 or _judge(runs[1], baseline, self.cfg.max_fail) != first:
            return {**rec, "verdict": "flaky"}
        f2p, p2p = first
        return {**rec, "verdict": "valid", "f2p": f2p, "p2p": p2p,
                "details": {t: runs[0].details.get(t, {}) for t in f2p}}

    async def work(self, runner: TestRunner) -> None:
        while batch := self.take():
            try:
                bases = {files: await self.baseline(runner, files) for files in {self.files(m) for m in batch}}
                jobs = [{"key": m.key, "tests": list(self.files(m)),
                         "files": {m.path: m.apply(self.plan.sources[m.path])}, "repeat": 2,
                         "baseline": bases[self.files(m)].get("passed", []), "max_fail": self.cfg.max_fail,
                         "timeout": self.cfg.test_timeout}
                        for m in batch if "broken" not in bases[self.files(m)]]
                batch_started = time.monotonic()
                results = await runner.run_batch(self.plan.lib.package, jobs,
                                                 timeout=len(jobs) * 2 * self.cfg.test_timeout + 60) if jobs else {}
                each = round((time.monotonic() - batch_started) / len(batch), 3)
                records = [{**self.verdict(m, bases[self.files(m)], results.get(m.key, [])), "seconds": each}
                           for m in batch]
                await asyncio.to_thread(self.journal.append, records)
            finally:
                self.in_flight.difference_update(m.key for m in batch)
            for m, rec in zip(batch, records, strict=True):
                self.outcomes[m.key] = rec
                if rec["verdict"] == "valid":
                    self.valid_at.setdefault((m.path, m.function), []).append(self.position[m.key])
            self.ran += len(batch)
            now = replay(self.plan.pool, self.outcomes, self.cfg)
            elapsed = time.monotonic() - self.started
            self.log(f"{self.plan.lib.name}: {len(now.selected)}/{self.cfg.n} kept, {now.tried} tried "
                     f"({len(self.outcomes)} journaled of {len(self.plan.pool)} candidates; this run "
                     f"{self.ran} in {elapsed:.0f}s, {elapsed / max(self.ran, 1):.2f}s each)")


async def build_library(name: str, cfg: BuildConfig, image: str, *, workers: int = 1, batch: int = 8,
                        cache: Path = CACHE, run: bool = True, cpu_shares: int | None = None,
                        log: Callable[[str], None] = print) -> BuildReport:
    """Build library ``name``'s instances with ``workers`` containers; see the module docstring.

    ``cpu_shares``: the containers' Docker CPU weight (:attr:`.runner.TestRunner.cpu_shares`); outcomes do not
    depend on it beyond what ``test_timeout`` already bounds.

    ``run=False`` validates nothing: the instances are those of the journal's longest prefix of the walk (what
    a build stopped there would have made; ``report.complete`` says whether the walk had finished).
    """
    started = time.monotonic()
    plan = await asyncio.to_thread(_plan, name, cfg.seed, cache)
    journal = Journal(journal_path(plan, cfg, cache))
    state = _Build(plan, cfg, journal, batch, log)
    log(f"{plan.lib.name}: {len(plan.pool)} candidates, {len(state.outcomes)} already journaled in {journal.path}")

    async def one_worker() -> None:
        if replay(plan.pool, state.outcomes, cfg).complete:
            return
        async with TestRunner(image, plan.repo, pythonpath=plan.lib.pythonpath, deselect=plan.lib.deselect,
                              cpu_shares=cpu_shares) as runner:
            await state.work(runner)

    if run:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(max(1, workers)):
                    group.create_task(one_worker())
        except* BaselineTimeout as timeouts:  # the callers catch the error itself, not a group of one
            raise timeouts.exceptions[0] from None
    result = replay(plan.pool, state.outcomes, cfg)
    report = BuildReport(plan.lib.name, tried=result.tried, rejected=result.rejected, run=len(state.outcomes),
                         complete=result.complete,
                         worker_seconds=sum(r.get("seconds", 0.0) for r in state.outcomes.values()))
    for m in result.selected:
        rec = state.outcomes[m.key]
        run = RunResult(details=rec["details"])
        report.instances.append(await asyncio.to_thread(_record, plan, m, run, rec["f2p"], rec["p2p"], cfg.seed))
    report.seconds = time.monotonic() - started
    return report
