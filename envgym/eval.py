"""Evaluation runs: fan episodes out under a concurrency bound, record each, resume after any stop.

A run lives in one directory::

    run.json            the run's id, its typed config and config hash, the agent's description
    records.jsonl       one ResultRecord per finished episode (append-only, group-committed)
    trajectories.jsonl  the matching trajectories (actions, observations, verdicts) for re-grading
    ...                 whatever the installed record exporters write (the SWE family: ``predictions.jsonl``)

Finished episodes go down in batches (:class:`~envgym.record.GroupWriter`): one write and one
``fdatasync`` per file covers every episode that finished while the previous batch was being written (a
batch of a few waits a few milliseconds for more), the trajectories before their records. An episode counts
as done (exporters, the summary, progress, ``on_record``, a resume's skipping) only once its record is
durable, so a crash loses nothing reported.
``workers=N`` runs the episodes in N worker processes (:mod:`envgym._eval_workers`) for envs whose work is
Python on the CPU; this process stays the only writer, with the same guarantees.
The run's config and what every episode derives from it (its seed, its env) are :mod:`envgym._eval_config`'s,
the records' writing :mod:`envgym._eval_records`'s: both sit below this module and the workers' (the names
:class:`EvalConfig`, :class:`JudgeSettings`, :class:`EvalSummary`, :func:`episode_seed`, :func:`env_maker` and
:func:`run_heap` are re-exported here).

Record exporters are plug-ins (entry-point group ``envgym.exporters``, contract in :mod:`envgym.export`):
each is opened once per run, called after every finished episode once its record is durable, and on
resume asked to repair what a crash between a record and its export kept from being written (an export
is derived from its record, so nothing is lost). The kernel writes no family's files itself.

Running the same command again resumes: episodes with a record are skipped, a torn last line is cut off
(kept beside as ``records.jsonl.torn``; a torn last trajectory line likewise), episodes recorded as
``infra_error`` are retried as a new attempt whose record supersedes the old one, and every exporter
repairs its files. A directory holding a run with
another config is refused rather than mixed. Ctrl-C cancels every episode, closes every env, the exporters
and the agent factory, and leaves only whole records behind. ``run.json`` also keeps, per suite, the hash
of the planned task set (:func:`task_sets`), so the leaderboard never ranks runs over different tasks together.
It also records the envgym version, the creation time and the host name, which the leaderboard's
metadata block shows.

A caller that shows progress passes a :class:`~envgym._progress.RunProgress`: :func:`evaluate` tells it what
is planned and already recorded per suite, each episode as the pool starts it (and the pool's count of
episodes in flight), and each record once written. :class:`EvalSummary` counts this invocation's infra
errors by cause; earlier ones are always retried, so those are the whole run's.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from envgym import __version__ as _version
from envgym import generate
from envgym._eval_config import EvalConfig, JudgeSettings, budget_kwargs, env_maker, episode_seed, run_heap
from envgym._eval_records import EpisodeKey, EvalSummary, Recorder, record_of
from envgym._eval_workers import run_in_workers
from envgym._forkserver import cpus
from envgym._forkserver import start as start_forkserver
from envgym._outputs import output_dir
from envgym._progress import RunProgress
from envgym.agent import AgentFactory
from envgym.agents import agent_id, build_factory
from envgym.errors import SpecError
from envgym.export import ExportContext, Exporter, close_exporters, open_exporters
from envgym.record import ResultRecord, latest, read_records, repair_tail
from envgym.registry import spec, suite_name_for, suite_spec
from envgym.task import SuiteTasks, TaskSpec, load_suite, numbered_suite
from envgym.types import Outcome, content_hash
from envgym.vector.pool import EpisodePool, Job

__all__ = ["EvalConfig", "EvalSummary", "JudgeSettings", "ProgressHook", "env_maker", "episode_seed", "evaluate",
           "plan", "resolve_workers", "run_heap", "suite_label", "task_sets"]


ProgressHook = Callable[[ResultRecord], None]


def suite_label(suite: str) -> str:
    """How records and leaderboards name a suite: its registered name (also when given by a path to it),
    else a file's stem or the path as given."""
    if suite_spec(suite) is not None:
        return suite
    named = suite_name_for(suite) if Path(suite).exists() else None
    if named is not None:
        return named
    return Path(suite).stem if suite.endswith(".jsonl") else suite


def task_sets(pairs: list[tuple[str, TaskSpec]]) -> dict[str, str]:
    """Per suite, the content hash of its planned tasks' hashes: runs of one suite compare only if equal."""
    hashes: dict[str, set[str]] = {}
    for suite, task in pairs:
        hashes.setdefault(suite, set()).add(task.hash)
    return {suite: content_hash(sorted(found)) for suite, found in hashes.items()}


def _load_or_create_run(run_dir: Path, config: EvalConfig, factory: AgentFactory,
                        pairs: list[tuple[str, TaskSpec]]) -> dict[str, Any]:
    meta_path = output_dir(run_dir) / "run.json"  # a run folder nothing can be written in fails here, named
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
    meta = {"run_id": uuid.uuid4().hex[:12], "config": config.model_dump(mode="json"), "config_hash": config.hash,
            "agent_id": agent_id(config.agent), "agent": factory.describe(), "suites": list(config.suites),
            "task_sets": task_sets(pairs), "envgym_version": _version, "created_at": time.time(),
            "host": socket.gethostname()}  # the leaderboard's metadata block names where a run ran
    tmp = meta_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta, indent=2))
    tmp.replace(meta_path)
    return meta


def plan(config: EvalConfig) -> list[tuple[str, TaskSpec]]:
    """(suite, task) pairs of the run, in order; raises SpecError for unknown suites, bad task files, or a task its
    env cannot run (a rubric ``sql`` check on a state without SQL), naming the file and line."""
    pairs: list[tuple[str, TaskSpec]] = []
    owner: dict[str, str] = {}  # task hash -> the suite that planned it
    where: dict[str, tuple[Path, int]] = {}  # task hash -> its file and line (a generator's tasks have none)
    for suite in config.suites:
        tasks = load_suite(suite, split=config.split)
        if generate.parse_ref(suite) is None:
            where.update((t.hash, (path, line)) for path, line, t in numbered_suite(suite))
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
        pairs.extend((suite_label(suite), t) for t in tasks)
    for env_id in sorted({t.env_id for _, t in pairs}):
        try:
            source = SuiteTasks.of(spec(env_id))
        except KeyError as exc:
            raise SpecError(f"a task names env {env_id!r}: {exc}") from exc
        budget_kwargs(env_id, config)  # an env that cannot take the budget fails here, before anything runs
        for _, task in pairs:
            if task.env_id == env_id:
                source.admit(task, *where.get(task.hash, (None, None)))
    return pairs


def _open_exporters(run_dir: Path, meta: dict[str, Any], config: EvalConfig,
                    pairs: list[tuple[str, TaskSpec]]) -> list[Exporter]:
    ctx = ExportContext(run_dir=run_dir, run_id=meta["run_id"], agent_id=meta["agent_id"], config_hash=config.hash,
                        tasks={task.hash: task for _, task in pairs})
    return open_exporters(ctx)


def resolve_workers(workers: int | str) -> int:
    """``workers`` as a count: ``"auto"`` is the CPUs this process may run on."""
    if workers == "auto":
        return cpus()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SpecError(f"workers must be a whole number >= 1 or 'auto', not {workers!r}", field="workers")
    return workers


async def evaluate(config: EvalConfig, run_dir: str | Path, *, concurrency: int = 8,
                   factory: AgentFactory | None = None, on_record: ProgressHook | None = None,
                   on_plan: Callable[[int, int], None] | None = None,
                   progress: RunProgress | None = None, ray: str | None = None,
                   workers: int | str = 1) -> EvalSummary:
    """Run (or resume) an evaluation into ``run_dir``; returns what happened.

    ``workers`` (a count or ``"auto"``: one per CPU) spreads the episodes over that many worker processes
    (:mod:`envgym._eval_workers`), ``concurrency`` episodes in flight in all of them together; this process
    stays the only writer of the run directory. Worth it when the envs' work is CPU-bound Python; each
    worker builds its agents from the config (or from ``factory``, which must then pickle).

    ``ray`` (a Ray address, or ``auto``) runs the episodes on the cluster's envgym hosts instead of here
    (:mod:`envgym.vector.ray`): the hosts' slots bound them rather than ``concurrency``, each host builds its
    agents from the config (or from ``factory``, which must then pickle), and every record names its host.

    ``progress`` (optional) is kept up to date: planned and skipped per suite, each episode as it starts
    and as its record is written. ``on_plan(planned, skipped)`` and ``on_record(record)`` are simpler hooks.
    """
    run_dir = Path(run_dir)
    if concurrency < 1:
        raise SpecError(f"concurrency must be at least 1, not {concurrency}", field="concurrency")
    workers = resolve_workers(workers)
    if workers > 1 and ray is not None:
        raise SpecError("workers and ray are two ways to spread episodes; choose one", field="workers")
    if workers > 1 and concurrency > 1:
        start_forkserver(config.suites)  # its imports run while this process plans (a no-op if started earlier)
    pairs = plan(config)
    hosts_agents = factory if factory is not None else config.agent  # what a Ray host or worker builds agents from
    factory = factory or build_factory(config.agent)
    exporters: list[Exporter] = []
    try:
        meta = _load_or_create_run(run_dir, config, factory, pairs)
        existing, torn = read_records(run_dir / "records.jsonl", repair=True)
        repair_tail(run_dir / "trajectories.jsonl")  # else the next line appended would join a torn one
        previous = {r.key: r for r in latest(existing)}
        exporters = _open_exporters(run_dir, meta, config, pairs)
        for exporter in exporters:  # a crash may have fallen between a record and its exports
            exporter.repair(list(previous.values()))
        todo: list[EpisodeKey] = []
        # run-major: the episodes in flight together play different tasks, so what an env works out once per
        # task (a replayed reference state) is not worked out by every slot at once; and a stopped run has
        # covered every task once before any twice
        for k in range(config.runs):
            for suite, task in pairs:
                old = previous.get((task.hash, k))
                if old is None:
                    todo.append((suite, task, k, 1))
                elif old.outcome is Outcome.INFRA_ERROR:
                    todo.append((suite, task, k, old.attempt + 1))
        summary = EvalSummary(run_dir=run_dir, run_id=meta["run_id"], planned=len(pairs) * config.runs,
                              skipped=len(pairs) * config.runs - len(todo), torn_repaired=torn)
        if on_plan:
            on_plan(summary.planned, summary.skipped)
        if progress is not None:
            planned = Counter(suite for suite, _ in pairs)
            left = Counter(suite for suite, *_ in todo)
            progress.plan({s: n * config.runs for s, n in planned.items()},
                          {s: n * config.runs - left[s] for s, n in planned.items()})
        recorder = Recorder(run_dir, summary, progress, on_record, exporters)
        async with recorder.writer:
            with run_heap():
                if min(workers, concurrency, len(todo)) > 1:
                    await run_in_workers(config, meta, hosts_agents, todo, recorder, progress,
                                         workers=min(workers, concurrency, len(todo)), concurrency=concurrency)
                else:
                    await _run_jobs(config, meta, factory, todo, concurrency, recorder, progress,
                                    ray=ray, hosts_agents=hosts_agents)
        return summary
    finally:
        try:
            close_exporters(exporters)
        finally:
            await factory.aclose()


def _episode_pool(factory: AgentFactory, hosts_agents: Any, ray: str | None, *, concurrency: int,
                  make_env: Callable[[str], Any]) -> Any:
    """The local pool, or with ``ray`` the Ray backend (its hosts' slots bound the episodes, not ``concurrency``)."""
    if ray is None:
        return EpisodePool(factory, concurrency=concurrency, make_env=make_env)
    from envgym.vector.ray import RayEpisodePool

    return RayEpisodePool(hosts_agents, address=ray, make_env=make_env)


async def _run_jobs(config: EvalConfig, meta: dict[str, Any], factory: AgentFactory, todo: list[EpisodeKey],
                    concurrency: int, recorder: Recorder, progress: RunProgress | None = None, *,
                    ray: str | None = None, hosts_agents: Any = None) -> None:
    """Run the jobs in this process's pool (or on Ray) and hand each finished episode to the recorder."""
    # the step cap and deadline are run settings: the task (and its hash) is run as written
    jobs = [Job(task, seed=episode_seed(config, task, run_index), key=(suite, task, run_index, attempt),
                max_steps=config.max_steps, step_timeout_s=config.step_timeout_s)
            for suite, task, run_index, attempt in todo]

    def pulled() -> Iterator[Job]:  # the pool pulls a job when a slot is free: that is when it starts
        for job in jobs:
            if progress is not None:
                progress.started(job.key[0])
            yield job

    async with _episode_pool(factory, hosts_agents, ray, concurrency=max(1, min(concurrency, len(todo))),
                             make_env=env_maker(config)) as pool:
        if progress is not None:
            progress.in_flight_of = lambda: pool.in_flight
        async for job, trajectory in pool.run_jobs(pulled()):
            await recorder.add(record_of(meta, job.key, trajectory), trajectory)
