"""Evaluation runs: fan episodes out under a concurrency bound, record each, resume after any stop.

A run lives in one directory::

    run.json            the run's id, its typed config and config hash, the agent's description
    records.jsonl       one ResultRecord per finished episode (append-only, fsync'd)
    trajectories.jsonl  the matching trajectories (actions, observations, verdicts) for re-grading
    predictions.jsonl   SWE-bench predictions (instance_id, model_name_or_path, model_patch): one per episode
                        whose verdict carries a ``model_patch`` (the ``tests`` verifier's final git diff)

Running the same command again resumes: episodes with a record are skipped, a torn last line is cut off
(kept beside as ``records.jsonl.torn``), episodes recorded as ``infra_error`` are retried as a new attempt
whose record supersedes the old one, and a record whose prediction a crash kept from being written gets
it (a prediction is derived from its record and written after it). A directory holding a run with another
config is refused rather than mixed. Ctrl-C cancels every episode, closes every env and the agent factory,
and leaves only whole records behind. ``run.json`` also keeps, per suite, the hash of the planned task set
(:func:`task_sets`), so the leaderboard never ranks runs over different tasks together.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from envgym import __version__ as _version
from envgym.agent import AgentFactory
from envgym.agents import AgentConfig, agent_id, build_factory
from envgym.errors import SpecError
from envgym.record import JsonlWriter, ResultRecord, latest, read_jsonl, read_records
from envgym.registry import make, parse_id, spec
from envgym.task import TaskSpec, load_suite
from envgym.trajectory import Trajectory
from envgym.types import FrozenModel, Outcome, content_hash
from envgym.vector.pool import EpisodePool, Job


class JudgeSettings(FrozenModel):
    base_url: str
    model: str
    api_key_env: str | None = None


class Prediction(FrozenModel):
    """A SWE-bench prediction: an episode's final diff, gradable by ``envgym swe grade``."""

    instance_id: str
    model_name_or_path: str
    model_patch: str
    run_index: int = 0


class EvalConfig(FrozenModel):
    """Everything that decides an evaluation's results (its hash goes into every record)."""

    suites: tuple[str, ...] = Field(min_length=1)
    split: str | None = "test"
    agent: AgentConfig
    runs: int = Field(default=1, ge=1)
    """K: episodes per task (pass@k / pass^k need K > 1)."""
    seed: int = 0
    limit: int | None = Field(default=None, ge=1)
    """Evaluate only the first N tasks of each suite."""
    judge: JudgeSettings | None = None
    max_steps: int | None = Field(default=None, ge=1)
    """Cap every task's step limit (slow local models); part of the config, so of the config hash."""
    step_timeout_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Override every task's per-step deadline (CPU models can need minutes per step)."""

    @property
    def hash(self) -> str:
        return content_hash(self.model_dump(mode="json"))


@dataclass
class EvalSummary:
    run_dir: Path
    run_id: str
    planned: int
    skipped: int
    outcomes: Counter[str] = field(default_factory=Counter)
    torn_repaired: bool = False

    @property
    def ran(self) -> int:
        return sum(self.outcomes.values())


ProgressHook = Callable[[ResultRecord], None]


def episode_task(config: EvalConfig, task: TaskSpec) -> TaskSpec:
    """The task as run: its limits tightened or relaxed by the config (the record keeps the original hash)."""
    changes: dict[str, Any] = {}
    if config.max_steps is not None and config.max_steps < task.limits.max_steps:
        changes["max_steps"] = config.max_steps
    if config.step_timeout_s is not None:
        changes["step_timeout_s"] = config.step_timeout_s
    return task.model_copy(update={"limits": task.limits.model_copy(update=changes)}) if changes else task


def _episode_seed(config: EvalConfig, task: TaskSpec, run_index: int) -> int:
    return int(content_hash([config.seed, task.hash, run_index]).removeprefix("sha256:")[:8], 16)


def task_sets(pairs: list[tuple[str, TaskSpec]]) -> dict[str, str]:
    """Per suite, the content hash of its planned tasks' hashes: runs of one suite compare only if equal."""
    hashes: dict[str, set[str]] = {}
    for suite, task in pairs:
        hashes.setdefault(suite, set()).add(task.hash)
    return {suite: content_hash(sorted(found)) for suite, found in hashes.items()}


def _load_or_create_run(run_dir: Path, config: EvalConfig, factory: AgentFactory,
                        pairs: list[tuple[str, TaskSpec]]) -> dict[str, Any]:
    meta_path = run_dir / "run.json"
    if run_dir.exists() and not run_dir.is_dir():
        raise SpecError("--out names a file, not a run directory", path=str(run_dir))
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_bytes())
        except (ValueError, RecursionError) as exc:  # bad JSON, not UTF-8, nested too deep
            raise SpecError(f"corrupt run metadata ({type(exc).__name__}); choose another --out or delete it",
                            path=str(meta_path)) from None
        if not isinstance(meta, dict) or not isinstance(meta.get("run_id"), str):
            raise SpecError("corrupt run metadata: expected an object with a string run_id", path=str(meta_path),
                            field="run_id")
        if meta.get("config_hash") != config.hash:
            raise SpecError(f"{run_dir} holds a run with a different configuration "
                            f"({meta.get('config_hash')} != {config.hash}); choose another --out or delete it")
        return meta
    run_dir.mkdir(parents=True, exist_ok=True)
    meta = {"run_id": uuid.uuid4().hex[:12], "config": config.model_dump(mode="json"), "config_hash": config.hash,
            "agent_id": agent_id(config.agent), "agent": factory.describe(), "suites": list(config.suites),
            "task_sets": task_sets(pairs), "envgym_version": _version, "created_at": time.time()}
    tmp = meta_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta, indent=2))
    tmp.replace(meta_path)
    return meta


def plan(config: EvalConfig) -> list[tuple[str, TaskSpec]]:
    """(suite, task) pairs of the run, in order; raises SpecError for unknown suites or bad task files."""
    pairs: list[tuple[str, TaskSpec]] = []
    owner: dict[str, str] = {}  # task hash -> the suite that planned it
    for suite in config.suites:
        tasks = load_suite(suite, split=config.split)
        if config.limit is not None:
            tasks = tasks[: config.limit]
        if not tasks:
            raise SpecError(f"suite {suite!r} has no tasks in split {config.split!r}")
        for task in tasks:
            # records are keyed by task hash: a second copy would supersede the first one's record
            if task.hash in owner:
                raise SpecError(f"task {task.id!r} is in suite {owner[task.hash]!r} and in suite {suite!r}; "
                                "name each suite once", field="suites")
            owner[task.hash] = suite
        pairs.extend((Path(suite).stem if suite.endswith(".jsonl") else suite, t) for t in tasks)
    for env_id in sorted({t.env_id for _, t in pairs}):
        try:
            spec(env_id)
        except KeyError as exc:
            raise SpecError(f"a task names env {env_id!r}: {exc}") from exc
    return pairs


def _prediction(meta: dict[str, Any], task: TaskSpec | None, record: ResultRecord) -> Prediction | None:
    """The SWE-bench prediction of a recorded episode: its verdict's ``model_patch``, if it has one."""
    patch = record.verdict.evidence.get("model_patch") if record.verdict else None
    if not isinstance(patch, str):
        return None
    iid = str(task.metadata.get("instance_id", task.id)) if task is not None else record.task_id
    return Prediction(instance_id=iid, model_name_or_path=meta["agent_id"], model_patch=patch,
                      run_index=record.run_index)


def _repair_predictions(run_dir: Path, meta: dict[str, Any], pairs: list[tuple[str, TaskSpec]],
                        records: list[ResultRecord]) -> None:
    """Append the prediction of every record that lacks one: a crash can fall between the two writes."""
    by_hash = {task.hash: task for _, task in pairs}
    wanted = [p for p in (_prediction(meta, by_hash.get(r.task_hash), r) for r in records) if p is not None]
    if not wanted:
        return
    path = run_dir / "predictions.jsonl"
    rows, _ = read_jsonl(path, repair=True)
    have = {(row.get("instance_id"), row.get("run_index", 0)) for row in rows}
    missing = [p for p in wanted if (p.instance_id, p.run_index) not in have]
    if missing:
        writer = JsonlWriter(path)
        try:
            for prediction in missing:
                writer.write_sync(prediction)
        finally:
            writer.close()


def _persist(trajectories: JsonlWriter, trajectory: Trajectory, records: JsonlWriter, record: ResultRecord) -> None:
    trajectories.write_sync(trajectory)
    records.write_sync(record)


async def evaluate(config: EvalConfig, run_dir: str | Path, *, concurrency: int = 8,
                   factory: AgentFactory | None = None, on_record: ProgressHook | None = None,
                   on_plan: Callable[[int, int], None] | None = None) -> EvalSummary:
    """Run (or resume) an evaluation into ``run_dir``; returns what happened."""
    run_dir = Path(run_dir)
    if concurrency < 1:
        raise SpecError(f"concurrency must be at least 1, not {concurrency}", field="concurrency")
    pairs = plan(config)
    factory = factory or build_factory(config.agent)
    try:
        meta = _load_or_create_run(run_dir, config, factory, pairs)
        existing, torn = read_records(run_dir / "records.jsonl", repair=True)
        previous = {r.key: r for r in latest(existing)}
        _repair_predictions(run_dir, meta, pairs, list(previous.values()))
        todo: list[tuple[str, TaskSpec, int, int]] = []
        for suite, task in pairs:
            for k in range(config.runs):
                old = previous.get((task.hash, k))
                if old is None:
                    todo.append((suite, task, k, 1))
                elif old.outcome is Outcome.INFRA_ERROR:
                    todo.append((suite, task, k, old.attempt + 1))
        summary = EvalSummary(run_dir=run_dir, run_id=meta["run_id"], planned=len(pairs) * config.runs,
                              skipped=len(pairs) * config.runs - len(todo), torn_repaired=torn)
        if on_plan:
            on_plan(summary.planned, summary.skipped)
        await _run_jobs(config, meta, factory, todo, run_dir, concurrency, summary, on_record)
        return summary
    finally:
        await factory.aclose()


async def _run_jobs(config: EvalConfig, meta: dict[str, Any], factory: AgentFactory,
                    todo: list[tuple[str, TaskSpec, int, int]], run_dir: Path, concurrency: int,
                    summary: EvalSummary, on_record: ProgressHook | None) -> None:
    """Run the jobs in the everlasting pool; write each record (after its trajectory) as its episode ends."""
    judge_kwargs: dict[str, Any] = {}
    if config.judge is not None:
        import os

        from envgym.verify import JudgeConfig

        key = os.environ.get(config.judge.api_key_env) if config.judge.api_key_env else None
        judge_kwargs["judge"] = JudgeConfig(base_url=config.judge.base_url, model=config.judge.model, api_key=key)
    jobs = [Job(episode_task(config, task), seed=_episode_seed(config, task, run_index),
                key=(suite, task, run_index, attempt)) for suite, task, run_index, attempt in todo]
    records = JsonlWriter(run_dir / "records.jsonl")
    trajectories = JsonlWriter(run_dir / "trajectories.jsonl")
    predictions: JsonlWriter | None = None  # opened at the first verdict with a model patch (SWE suites)
    try:
        async with EpisodePool(factory, concurrency=max(1, min(concurrency, len(todo))),
                               make_env=lambda env_id: make(env_id, **judge_kwargs)) as pool:
            async for job, trajectory in pool.run_jobs(jobs):
                suite, task, run_index, attempt = job.key
                trajectory = trajectory.model_copy(update={"task_hash": task.hash})
                record = ResultRecord.from_trajectory(
                    trajectory, run_id=meta["run_id"], suite=suite, split=task.split,
                    env_version=parse_id(task.env_id)[2], agent_id=meta["agent_id"], agent=meta["agent"],
                    config_hash=config.hash, run_index=run_index, attempt=attempt, envgym_version=_version,
                    created_at=time.time())
                # one thread hop; the record (the commit marker) after its trajectory
                await asyncio.to_thread(_persist, trajectories, trajectory, records, record)
                # derived from the record: a crash before it is written is repaired on resume
                prediction = _prediction(meta, task, record)
                if prediction is not None:
                    predictions = predictions or JsonlWriter(run_dir / "predictions.jsonl")
                    await asyncio.to_thread(predictions.write_sync, prediction)
                summary.outcomes[record.outcome.value] += 1
                if on_record:
                    on_record(record)
    finally:
        records.close()
        trajectories.close()
        if predictions is not None:
            predictions.close()
