"""Building the leaderboard: result records of evaluation runs aggregated per suite and agent.

Input is a list of run directories written by ``envgym eval``: ``DIR/run.json`` (an object with at least
``run_id``) and ``DIR/records.jsonl`` (:class:`~envgym.record.ResultRecord` lines). Within one run the last
attempt per ``(task_hash, run_index)`` wins (:func:`~envgym.record.latest`), so a rerun infra error is
superseded; a torn last line (a run still writing, or crashed) is ignored, never repaired here. Records
are grouped by their ``suite`` field, then by ``agent_id`` across all run directories: two runs of one
agent pool their episodes, so a task run three times in each counts six episodes.

Only runs over the same tasks are ranked together. A run's *task set* for a suite is the hash that
``envgym eval`` wrote in ``run.json`` (``task_sets``: the hash of the planned tasks' hashes), else the
same hash over the task hashes its records hold. When runs of one suite differ (tasks edited, another
``--limit`` or ``--split``), each task set gets its own table, named ``SUITE (task set XXXXXXXX)``, and
:attr:`Leaderboard.warnings` says which runs went where.

Per suite and agent an :class:`Entry` reports:

- **episodes**, **successes**, **success_rate** = successes / episodes with a Wilson 95% interval
  (``ci_low``, ``ci_high``). *Episodes are graded episodes only*: records with outcome ``infra_error``
  are counted apart in **infra_errors** and are in no denominator, mean or total. ``success`` is outcome
  ``success``; ``failure`` and ``truncated`` count as failures.
- **pass_at_k** / **pass_hat_k** for k = 1..K, only when K > 1. Per task, with n graded episodes of
  which c succeeded, the unbiased estimators of :mod:`envgym.leaderboard.stats` are averaged over tasks (tasks
  weigh equally, so pass@1 is a macro average and may differ from the pooled success rate). K is the
  smallest n over the tasks that have at least one graded episode: every reported pass@k then uses
  every such task, none dropped. An infra error that is not rerun lowers K for that agent; tasks whose
  every episode was an infra error take no part, as in the success rate.
- **mean_steps**, **mean_tokens** (prompt + completion), **mean_wall_s**: means over graded episodes
  (``None`` when there are none); **total_tokens** and **cost_usd**: sums over graded episodes.
- **n_tasks**: distinct tasks seen (graded or not); **runs**: the run ids pooled; **model**: the
  ``model`` of the agent dicts (records first, then run.json), several joined by ", ".

Entries are sorted by success rate, then by the lower CI bound (descending), then by agent id.
:func:`~envgym.leaderboard.render.write_leaderboard` writes ``leaderboard.json`` (the model),
``leaderboard.md`` and a static, self-contained ``index.html``. A missing run directory, or one
without ``records.jsonl`` or ``run.json``, is a :class:`~envgym.errors.SpecError` naming it.

This is a batch tool: reading is synchronous. Call it through ``asyncio.to_thread`` from async code.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from envgym.clock import Clock, SystemClock
from envgym.errors import SpecError
from envgym.leaderboard.models import Entry, Leaderboard
from envgym.leaderboard.stats import pass_at_k, pass_hat_k, wilson_interval
from envgym.record import ResultRecord, latest, read_records
from envgym.types import Outcome, content_hash

RUN_FILE = "run.json"
RECORDS_FILE = "records.jsonl"


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], list[ResultRecord]]:
    """A run directory's metadata (``run.json``) and its latest record per ``(task_hash, run_index)``."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise SpecError("run directory not found", path=str(run_dir))
    records_path, run_path = run_dir / RECORDS_FILE, run_dir / RUN_FILE
    if not records_path.is_file():
        raise SpecError(f"not a run directory: no {RECORDS_FILE}", path=str(run_dir))
    if not run_path.is_file():
        raise SpecError(f"not a run directory: no {RUN_FILE}", path=str(run_dir))
    try:
        meta = json.loads(run_path.read_bytes())
    except (ValueError, RecursionError) as exc:  # bad JSON, not UTF-8, nested too deep
        raise SpecError(f"invalid JSON ({type(exc).__name__})", path=str(run_path)) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("run_id"), str):
        raise SpecError("expected a JSON object with a string run_id", path=str(run_path), field="run_id")
    records, _torn = read_records(records_path, repair=False)  # a torn last line is left out, not cut
    return meta, latest(records)


def build_leaderboard(run_dirs: list[Path], *, clock: Clock | None = None) -> Leaderboard:
    """Read the run directories and aggregate their records per suite and agent."""
    if not run_dirs:
        raise SpecError("no run directories given")
    seen: dict[str, Path] = {}
    models: dict[str, list[str]] = defaultdict(list)  # agent_id -> models named in run.json
    groups: dict[tuple[str, str], dict[str, list[ResultRecord]]] = defaultdict(lambda: defaultdict(list))
    task_sets: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))  # suite -> set -> runs
    for run_dir in run_dirs:
        meta, records = load_run(run_dir)
        run_id = meta["run_id"]
        if run_id in seen:
            # The same run twice would count every episode twice.
            raise SpecError(f"run {run_id!r} is also in {seen[run_id]}", path=str(run_dir))
        seen[run_id] = Path(run_dir)
        agent = meta.get("agent")
        if isinstance(agent, dict) and agent.get("model") and isinstance(meta.get("agent_id"), str):
            models[meta["agent_id"]].append(str(agent["model"]))
        planned = meta.get("task_sets") if isinstance(meta.get("task_sets"), dict) else {}
        by_suite: dict[str, list[ResultRecord]] = defaultdict(list)
        for record in records:
            by_suite[record.suite].append(record)
        for suite, recs in by_suite.items():
            task_set = planned.get(suite)
            if not isinstance(task_set, str):
                task_set = content_hash(sorted({r.task_hash for r in recs}))
            task_sets[suite][task_set].append(run_id)
            for record in recs:
                groups[(suite, task_set)][record.agent_id].append(record)
    warnings, suites = [], {}
    for (suite, task_set), agents in sorted(groups.items()):
        name = suite
        if len(task_sets[suite]) > 1:
            name = f"{suite} (task set {task_set.removeprefix('sha256:')[:8]})"
        suites[name] = tuple(sorted((_entry(agent_id, recs, models[agent_id]) for agent_id, recs in agents.items()),
                                    key=lambda e: (-e.success_rate, -e.ci_low, e.agent_id)))
    for suite, sets in sorted(task_sets.items()):
        if len(sets) > 1:
            where = "; ".join(f"{h.removeprefix('sha256:')[:8]}: {', '.join(sorted(runs))}"
                              for h, runs in sorted(sets.items()))
            warnings.append(f"suite {suite!r}: the runs cover {len(sets)} different task sets, ranked in separate "
                            f"tables ({where})")
    wall = (clock or SystemClock()).wall()
    generated_at = datetime.fromtimestamp(wall, tz=UTC).isoformat(timespec="seconds")
    return Leaderboard(generated_at=generated_at, runs=tuple(sorted(seen)), suites=suites,
                       warnings=tuple(warnings))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _entry(agent_id: str, records: list[ResultRecord], run_models: list[str]) -> Entry:
    graded = [r for r in records if r.outcome is not Outcome.INFRA_ERROR]
    successes = sum(r.outcome is Outcome.SUCCESS for r in graded)
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # task_hash -> [n, c], graded only
    for record in graded:
        counts = per_task[record.task_hash]
        counts[0] += 1
        counts[1] += record.outcome is Outcome.SUCCESS
    at_k: dict[int, float] = {}
    hat_k: dict[int, float] = {}
    k_max = min((n for n, _ in per_task.values()), default=0)
    if k_max > 1:
        for k in range(1, k_max + 1):
            at_k[k] = sum(pass_at_k(n, c, k) for n, c in per_task.values()) / len(per_task)
            hat_k[k] = sum(pass_hat_k(n, c, k) for n, c in per_task.values()) / len(per_task)
    low, high = wilson_interval(successes, len(graded))
    named = [str(r.agent["model"]) for r in records if r.agent.get("model")] + run_models
    return Entry(
        agent_id=agent_id,
        model=", ".join(sorted(set(named))) or None,
        runs=tuple(sorted({r.run_id for r in records})),
        n_tasks=len({r.task_hash for r in records}),
        episodes=len(graded),
        infra_errors=len(records) - len(graded),
        successes=successes,
        success_rate=successes / len(graded) if graded else 0.0,
        ci_low=low,
        ci_high=high,
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        mean_steps=_mean([r.steps for r in graded]),
        mean_tokens=_mean([r.usage.total_tokens for r in graded]),
        total_tokens=sum(r.usage.total_tokens for r in graded),
        mean_wall_s=_mean([r.timing.wall_s for r in graded]),
        cost_usd=sum(r.usage.cost_usd for r in graded),
    )
