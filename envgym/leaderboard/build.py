"""Building the leaderboard: result records of evaluation runs aggregated per suite and agent.

Input is a list of run directories written by ``envgym eval``: ``DIR/run.json`` (an object with at least
``run_id``) and ``DIR/records.jsonl`` (:class:`~envgym.record.ResultRecord` lines). Within one run the last
attempt per ``(task_hash, run_index)`` wins (:func:`~envgym.record.latest`), so a rerun infra error is
superseded; a torn last line (a run still writing, or crashed) is ignored, never repaired here. Records
are grouped by their ``suite`` field, then by ``agent_id`` and the run's *settings* across all run
directories: two runs of one agent under the same settings pool their episodes, so a task run three times
in each counts six episodes. The settings are the run.json ``config`` without ``suites`` and ``limit``
(:data:`SUITE_KEYS`: they choose which tasks run, and the task set keeps other tasks apart), so one agent
evaluated suite by suite is one row. Runs of one agent under *different* settings are never pooled: each
gets its own row, labelled by the settings that differ (``random [runs=3]``; ``AGENT [config XXXXXXXX]``
when run.json has no config, an older run, or the difference is long), the same label in every suite so
the overview's rows line up, and :attr:`Leaderboard.warnings` says so.

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
- **efficiency** (suites of timed envs, whose verdicts carry ``efficiency`` evidence; None elsewhere):
  means over the graded episodes that carry it of virtual time, thinking, waiting, idle and opportunity
  idle (over episodes whose world can say), and of time to goal over the episodes that reached it
  (``goal_reached`` counts them), in the timeline's unit (seconds or steps). *The unit is part of a
  row's identity*: when one row's runs report virtual time in different units (a world on a step clock
  in one run, on seconds in another), the row is split, one per unit, labelled ``AGENT [s]`` /
  ``AGENT [steps]`` in that suite, and :attr:`Leaderboard.warnings` says which runs went where; a record
  without efficiency evidence (an infra error) stays with its run's unit. Nothing is averaged across
  units, and the renderings draw one efficiency table per unit.
- **mean_score**: the mean verdict score over graded episodes (partial credit: a 0.8 rubric score
  counts 0.8 where success counts 0); ``None`` without graded episodes.
- **levels** (suites of generated tasks): per difficulty level, the row's distinct tasks, graded episodes,
  successes, success rate with its Wilson interval, and the mean reference-solution length
  (:mod:`envgym.leaderboard.levels`); empty without generated task ids.
- **tasks**: per task (sorted by id) its episodes, successes, infra errors, mean score and the paths of
  its trajectories rendered as text (``trajectories/RUN/TASK-HASH8-rINDEX.txt``, relative to the output
  folder; present when the run's ``trajectories.jsonl`` holds the episode: a trajectory is matched to its
  record by task hash, seed and outcome, the last such line winning, as the last attempt does).
- **settings**: the flat settings the row's runs share; **config_hash**: the records' config hash when
  they share one (else None); **label**: the row's name, as above.
- **n_tasks**: distinct tasks seen (graded or not); **runs**: the run ids pooled; **model**: the
  ``model`` of the agent dicts (records first, then run.json), several joined by ", ".

Per run, :class:`~envgym.leaderboard.models.RunInfo` keeps what the page's metadata block shows: envgym
version, date, host, split, seed, k, limit, step cap, the agent and its settings, model, config hash and
the per-suite task-set hashes (older run.json files lack some: those are None). The **overview** has one
row per label: its success rate per suite and the macro average over the suites it has graded episodes
in, with the interval of :func:`~envgym.leaderboard.stats.macro_interval`. **training** holds reward
curves read from ``envgym train`` output folders (``metrics.jsonl``, the last line per step winning).

:func:`publish` is what ``envgym leaderboard build`` runs: build, optionally merge into the leaderboard
already in the output folder (:func:`merge_leaderboards`: per suite id, rows of the same task set are
replaced by label and others kept; a suite measured on another task set replaces the old one, with a
warning), write the three files and ``tasks.html``, and the trajectory texts.

Entries are sorted by success rate, then by the lower CI bound (descending), then by label.
:func:`~envgym.leaderboard.render.write_leaderboard` writes ``leaderboard.json`` (the model),
``leaderboard.md``, a static, self-contained ``index.html`` and ``tasks.html``. A missing run directory, or one
without ``records.jsonl`` or ``run.json``, is a :class:`~envgym.errors.SpecError` naming it.

This is a batch tool: reading is synchronous. Call it through ``asyncio.to_thread`` from async code.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from envgym.clock import Clock, SystemClock
from envgym.errors import SpecError
from envgym.leaderboard.levels import level_results
from envgym.leaderboard.models import Efficiency, Entry, Leaderboard, OverviewRow, RunInfo, TaskResult, TrainCurve
from envgym.leaderboard.render import render_trajectory, write_leaderboard
from envgym.leaderboard.stats import macro_interval, pass_at_k, pass_hat_k, wilson_interval
from envgym.record import ResultRecord, latest, read_records
from envgym.trajectory import Trajectory
from envgym.types import Outcome, content_hash

RUN_FILE = "run.json"
RECORDS_FILE = "records.jsonl"
TRAJECTORIES_FILE = "trajectories.jsonl"
METRICS_FILE = "metrics.jsonl"
"""What ``envgym train`` writes per step into its output folder."""

_Slot = tuple[str, int | None, str]  # task hash, seed, outcome: how a record finds its trajectory


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


def is_train_dir(path: str | Path) -> bool:
    """An ``envgym train`` output folder (``metrics.jsonl``, no ``run.json``), or a metrics file itself."""
    path = Path(path)
    if path.is_file():
        return path.name.endswith(".jsonl") and path.name != RECORDS_FILE
    return (path / METRICS_FILE).is_file() and not (path / RUN_FILE).exists()


def load_train_curve(path: str | Path, label: str | None = None) -> TrainCurve:
    """The reward curve of an ``envgym train`` run: its folder or its ``metrics.jsonl``."""
    path = Path(path)
    file = path if path.is_file() else path / METRICS_FILE
    if not file.is_file():
        raise SpecError(f"no {METRICS_FILE}", path=str(path))
    by_step: dict[int, dict[str, Any]] = {}
    for number, raw in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            by_step[int(line["step"])] = line
        except (ValueError, KeyError, TypeError):
            raise SpecError(f"line {number} is not a metrics line (JSON with a step)", path=str(file)) from None
    lines = [by_step[k] for k in sorted(by_step)]
    return TrainCurve(
        label=label or (file.parent.name if file.name == METRICS_FILE else file.stem),
        config_hash=next((str(x["config_hash"]) for x in lines if x.get("config_hash")), None),
        steps=tuple(sorted(by_step)),
        reward_mean=tuple(float(x.get("reward_mean", 0.0)) for x in lines),
        success_rate=tuple(float(x.get("success_rate", 0.0)) for x in lines),
        wall_s=tuple(float(x.get("wall_s", 0.0)) for x in lines))


def trajectory_path(run_id: str, task_id: str, task_hash: str, run_index: int) -> str:
    """Where an episode's trajectory text goes, relative to the output folder (safe file names only)."""
    def safe(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:80] or "x"
    return f"trajectories/{safe(run_id)}/{safe(task_id)}-{task_hash.removeprefix('sha256:')[:8]}-r{run_index}.txt"


def _trajectory_slots(run_dir: Path) -> dict[_Slot, int]:
    """Per (task hash, seed, outcome), the index of the last ``trajectories.jsonl`` line holding it."""
    file = run_dir / TRAJECTORIES_FILE
    slots: dict[_Slot, int] = {}
    if not file.is_file():
        return slots
    with open(file, encoding="utf-8", errors="replace") as handle:
        for index, raw in enumerate(handle):
            try:
                data = json.loads(raw)
                slots[(data["task_hash"], data.get("seed"), data["outcome"])] = index
            except (ValueError, KeyError, TypeError):
                continue  # a torn line: its episode has no record either
    return slots


def _slot(record: ResultRecord) -> _Slot:
    return record.task_hash, record.seed, record.outcome.value


def _iso(value: Any) -> str | None:
    if isinstance(value, int | float) and value > 0:
        return datetime.fromtimestamp(value, tz=UTC).isoformat(timespec="seconds")
    return value if isinstance(value, str) else None


def _run_info(meta: dict[str, Any]) -> RunInfo:
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    agent = meta.get("agent") if isinstance(meta.get("agent"), dict) else {}
    task_sets = meta.get("task_sets") if isinstance(meta.get("task_sets"), dict) else {}

    def whole(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return RunInfo(
        run_id=meta["run_id"], agent_id=meta.get("agent_id") if isinstance(meta.get("agent_id"), str) else None,
        agent=agent, model=str(agent["model"]) if agent.get("model") else None,
        config_hash=meta.get("config_hash") if isinstance(meta.get("config_hash"), str) else None,
        envgym_version=str(meta["envgym_version"]) if meta.get("envgym_version") else None,
        created_at=_iso(meta.get("created_at")), host=str(meta["host"]) if meta.get("host") else None,
        split=config.get("split") if isinstance(config.get("split"), str) else None,
        seed=whole(config.get("seed")), k=whole(config.get("runs")), limit=whole(config.get("limit")),
        max_steps=whole(config.get("max_steps")),
        suites=tuple(str(s) for s in meta.get("suites", ()) if isinstance(s, str)),
        task_sets={str(k): str(v) for k, v in task_sets.items() if isinstance(v, str)})


def build_leaderboard(run_dirs: list[Path], *, clock: Clock | None = None,
                      train_metrics: list[Path] | None = None) -> Leaderboard:
    """Read the run directories (and training metrics) and aggregate their records per suite and agent.

    A path in ``run_dirs`` that is an ``envgym train`` folder (:func:`is_train_dir`) is read as
    training metrics, as are the paths in ``train_metrics``.
    """
    train_paths = list(train_metrics or []) + [Path(d) for d in run_dirs if is_train_dir(d)]
    run_dirs = [Path(d) for d in run_dirs if not is_train_dir(d)]
    if not run_dirs and not train_paths:
        raise SpecError("no run directories given")
    seen: dict[str, Path] = {}
    infos: dict[str, RunInfo] = {}
    models: dict[str, list[str]] = defaultdict(list)  # agent_id -> models named in run.json
    groups: dict[tuple[str, str], dict[tuple[str, str], list[ResultRecord]]] = defaultdict(lambda: defaultdict(list))
    task_sets: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))  # suite -> set -> runs
    slots: dict[str, dict[_Slot, int]] = {}
    run_settings: dict[str, tuple[str, dict[str, Any]]] = {}
    for run_dir in run_dirs:
        meta, records = load_run(run_dir)
        run_id = meta["run_id"]
        if run_id in seen:
            # The same run twice would count every episode twice.
            raise SpecError(f"run {run_id!r} is also in {seen[run_id]}", path=str(run_dir))
        seen[run_id] = run_dir
        infos[run_id] = info = _run_info(meta)
        slots[run_id] = _trajectory_slots(run_dir)
        settings = _settings(meta)
        if settings:
            run_settings[run_id] = settings
        if info.model and info.agent_id:
            models[info.agent_id].append(info.model)
        by_suite: dict[str, list[ResultRecord]] = defaultdict(list)
        for record in records:
            by_suite[record.suite].append(record)
        for suite, recs in by_suite.items():
            task_set = info.task_sets.get(suite) or content_hash(sorted({r.task_hash for r in recs}))
            task_sets[suite][task_set].append(run_id)
            for record in recs:
                key = settings[0] if settings else record.config_hash
                groups[(suite, task_set)][(record.agent_id, key)].append(record)
    configs: dict[str, set[str]] = defaultdict(set)  # agent -> settings keys
    settings_of: dict[str, dict[str, Any]] = {}  # settings key -> the flat settings it hashes
    for agents in groups.values():
        for agent_id, key in agents:
            configs[agent_id].add(key)
    for key, flat in run_settings.values():
        settings_of.setdefault(key, flat)
    labels = {(agent_id, key): label for agent_id, keys in configs.items()
              for key, label in _labels(agent_id, sorted(keys), settings_of).items()}
    warnings, suites = [], {}
    for agent_id, found in sorted(configs.items()):
        if len(found) > 1:
            shown = "; ".join(labels[(agent_id, key)] for key in sorted(found))
            warnings.append(f"agent {agent_id!r} ran under {len(found)} different settings ({shown}): shown as "
                            "separate rows, never pooled")
    for (suite, task_set), agents in sorted(groups.items()):
        name = suite
        if len(task_sets[suite]) > 1:
            name = f"{suite} (task set {_short(task_set)})"
        entries = []
        for (agent_id, key), recs in agents.items():
            parts = _split_by_unit(recs)
            label = labels[(agent_id, key)]
            for unit, part in parts.items():
                shown = f"{label} [{_UNIT_WORDS.get(unit or '', unit or 'no timeline')}]" if len(parts) > 1 else label
                entries.append(_entry(agent_id, shown, settings_of.get(key, {}), task_set, part,
                                      models[agent_id], slots))
            if len(parts) > 1:
                where = "; ".join(f"{_UNIT_WORDS.get(unit or '', unit or 'no timeline')}: "
                                  f"{', '.join(sorted({r.run_id for r in part}))}" for unit, part in parts.items())
                warnings.append(f"suite {name!r}: the runs of {label!r} report virtual time in different units "
                                f"({where}): shown as separate rows, never averaged")
        suites[name] = _ranked(entries)
    for suite, sets in sorted(task_sets.items()):
        if len(sets) > 1:
            where = "; ".join(f"{_short(h)}: {', '.join(sorted(runs))}" for h, runs in sorted(sets.items()))
            warnings.append(f"suite {suite!r}: the runs cover {len(sets)} different task sets, ranked in separate "
                            f"tables ({where})")
    wall = (clock or SystemClock()).wall()
    generated_at = datetime.fromtimestamp(wall, tz=UTC).isoformat(timespec="seconds")
    return Leaderboard(generated_at=generated_at, runs=tuple(sorted(seen)), run_info=dict(sorted(infos.items())),
                       suites=suites, warnings=tuple(warnings), overview=overview(suites),
                       training=tuple(load_train_curve(p) for p in train_paths))


SUITE_KEYS = ("suites", "limit")
"""Config fields that choose *which* tasks run, not *how*: left out of a row's settings (the task set
hash already keeps runs over other tasks apart), so one agent run suite by suite stays one row."""


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        return {k: v for key, sub in sorted(value.items()) for k, v in _flat(sub, f"{prefix}{key}.").items()}
    return {prefix.removesuffix("."): value}


def _settings(meta: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A run's settings that decide its results (its config without :data:`SUITE_KEYS`), flat, and their hash."""
    config = meta.get("config")
    if not isinstance(config, dict):
        return None  # an older run.json: its records' config hash stands in
    flat = _flat({k: v for k, v in config.items() if k not in SUITE_KEYS})
    return content_hash(flat), flat


def _labels(agent_id: str, keys: list[str], settings_of: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Row labels of one agent's settings: the bare id when it has one; else the settings that differ
    (``random [runs=3]``), or ``[config XXXXXXXX]`` when those are unknown (older runs) or too long."""
    if len(keys) == 1:
        return {keys[0]: agent_id}
    flats = [settings_of.get(key) for key in keys]
    labels = {key: f"{agent_id} [config {_short(key)}]" for key in keys}
    if all(flats):
        differ = sorted({k for flat in flats for k in flat if len({json.dumps(f.get(k)) for f in flats}) > 1})
        named = {key: ", ".join(f"{k}={flat.get(k)}" for k in differ) for key, flat in zip(keys, flats, strict=True)}
        if len(set(named.values())) == len(keys) and all(len(v) <= 60 for v in named.values()):
            labels = {key: f"{agent_id} [{named[key]}]" for key in keys}
    return labels


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:8]


def _ranked(entries: list[Entry]) -> tuple[Entry, ...]:
    return tuple(sorted(entries, key=lambda e: (-e.success_rate, -e.ci_low, e.name)))


def overview(suites: dict[str, tuple[Entry, ...]]) -> tuple[OverviewRow, ...]:
    """Agents x suites: per row label its success per suite and the macro average with its interval."""
    cells: dict[str, dict[str, Entry]] = defaultdict(dict)
    for suite, entries in suites.items():
        for entry in entries:
            if entry.episodes:
                cells[entry.name][suite] = entry
    rows = []
    for label, by_suite in cells.items():
        mean, low, high = macro_interval([(e.success_rate, e.ci_low, e.ci_high) for e in by_suite.values()])
        rows.append(OverviewRow(label=label, success={s: e.success_rate for s, e in by_suite.items()},
                                mean_score={s: e.mean_score for s, e in by_suite.items() if e.mean_score is not None},
                                macro=mean, macro_low=low, macro_high=high))
    return tuple(sorted(rows, key=lambda r: (-(r.macro or 0.0), -(r.macro_low or 0.0), r.label)))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _entry(agent_id: str, label: str, settings: dict[str, Any], task_set: str, records: list[ResultRecord],
           run_models: list[str], slots: dict[str, dict[_Slot, int]]) -> Entry:
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
        label=label,
        config_hash=configs.pop() if len(configs := {r.config_hash for r in records}) == 1 else None,
        settings=settings,
        task_set=task_set,
        model=", ".join(sorted(set(named))) or None,
        runs=tuple(sorted({r.run_id for r in records})),
        n_tasks=len({r.task_hash for r in records}),
        episodes=len(graded),
        infra_errors=len(records) - len(graded),
        successes=successes,
        success_rate=successes / len(graded) if graded else 0.0,
        ci_low=low,
        ci_high=high,
        mean_score=_mean([r.score for r in graded]),
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        mean_steps=_mean([r.steps for r in graded]),
        mean_tokens=_mean([r.usage.total_tokens for r in graded]),
        total_tokens=sum(r.usage.total_tokens for r in graded),
        mean_wall_s=_mean([r.timing.wall_s for r in graded]),
        cost_usd=sum(r.usage.cost_usd for r in graded),
        efficiency=_efficiency(graded),
        tasks=_tasks(records, slots),
        levels=level_results(records),
    )


_UNIT_WORDS = {"s": "s", "step": "steps"}
"""How a timeline unit (:attr:`envgym.timed.timeline.Timeline.unit`) is written in a label or a header."""


def _unit(record: ResultRecord) -> str | None:
    """The unit of virtual time of a record's efficiency evidence (None when it carries none)."""
    metrics = record.verdict.evidence.get("efficiency") if record.verdict is not None else None
    return str(metrics.get("unit", "s")) if isinstance(metrics, dict) else None


def _split_by_unit(records: list[ResultRecord]) -> dict[str | None, list[ResultRecord]]:
    """One row's records split by the unit of their virtual time, so no mean mixes seconds and steps.

    One part when they report at most one unit. Otherwise one part per unit; a record without
    efficiency evidence (an infra error) goes with its run's unit when its run reports one, else into
    a part of its own (key None).
    """
    per_run: dict[str, set[str]] = defaultdict(set)
    for record in records:
        if (unit := _unit(record)) is not None:
            per_run[record.run_id].add(unit)
    units = set().union(*per_run.values())
    if len(units) <= 1:
        return {next(iter(units), None): records}
    parts: dict[str | None, list[ResultRecord]] = defaultdict(list)
    for record in records:
        run_units = per_run.get(record.run_id, set())
        parts[_unit(record) or (next(iter(run_units)) if len(run_units) == 1 else None)].append(record)
    return dict(sorted(parts.items(), key=lambda item: (item[0] is None, item[0] or "")))


def _efficiency(graded: list[ResultRecord]) -> Efficiency | None:
    """The timed efficiency means of :class:`Entry` (see the module docstring); None without timed verdicts."""
    found = [m for r in graded if r.verdict is not None
             and isinstance(m := r.verdict.evidence.get("efficiency"), dict)]
    if not found:
        return None

    def mean(key: str) -> float | None:
        values = [float(m[key]) for m in found if isinstance(m.get(key), int | float)]
        return round(sum(values) / len(values), 3) if values else None

    units = {str(m.get("unit", "s")) for m in found}  # one, as rows are split by unit (_split_by_unit)
    return Efficiency(unit=units.pop() if len(units) == 1 else "mixed", episodes=len(found),
                      mean_virtual_time=mean("virtual_time_s"), mean_thinking=mean("thinking_s"),
                      mean_waiting=mean("waiting_s"), mean_idle=mean("idle_s"),
                      mean_opportunity_idle=mean("opportunity_idle_s"), mean_time_to_goal=mean("time_to_goal_s"),
                      goal_reached=sum(isinstance(m.get("time_to_goal_s"), int | float) for m in found))


def _tasks(records: list[ResultRecord], slots: dict[str, dict[_Slot, int]]) -> tuple[TaskResult, ...]:
    by_task: dict[tuple[str, str], list[ResultRecord]] = defaultdict(list)
    for record in records:
        by_task[(record.task_id, record.task_hash)].append(record)
    results = []
    for (task_id, task_hash), recs in sorted(by_task.items()):
        recs.sort(key=lambda r: (r.run_id, r.run_index))
        graded = [r for r in recs if r.outcome is not Outcome.INFRA_ERROR]
        results.append(TaskResult(
            task_id=task_id, task_hash=task_hash, episodes=len(graded),
            successes=sum(r.outcome is Outcome.SUCCESS for r in graded), infra_errors=len(recs) - len(graded),
            mean_score=_mean([r.score for r in graded]),
            trajectories=tuple(trajectory_path(r.run_id, r.task_id, r.task_hash, r.run_index) for r in recs
                               if _slot(r) in slots.get(r.run_id, {}))))
    return tuple(results)


def write_trajectories(run_dirs: list[Path], out_dir: str | Path) -> list[Path]:
    """Render every latest record's trajectory as text under ``out_dir`` (the paths :class:`TaskResult` names)."""
    out = Path(out_dir)
    written = []
    for run_dir in (Path(d) for d in run_dirs if not is_train_dir(d)):
        _meta, records = load_run(run_dir)
        wanted = {_slot(r): r for r in records}
        found = _trajectory_slots(run_dir)
        lines = {index: wanted[slot] for slot, index in found.items() if slot in wanted}
        if not lines:
            continue
        with open(run_dir / TRAJECTORIES_FILE, encoding="utf-8", errors="replace") as handle:
            for index, raw in enumerate(handle):
                record = lines.get(index)
                if record is None:
                    continue
                trajectory = Trajectory.model_validate_json(raw)
                path = out / trajectory_path(record.run_id, record.task_id, record.task_hash, record.run_index)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render_trajectory(trajectory, record), encoding="utf-8")
                written.append(path)
    return written


def merge_leaderboards(old: Leaderboard, new: Leaderboard) -> Leaderboard:
    """``new`` merged into ``old``, keyed by suite id (the published data, updated in place).

    A suite only in ``old`` is kept. A suite in both, measured on the same task set, keeps ``old``'s rows
    whose label ``new`` lacks and takes ``new``'s; on another task set ``new``'s table replaces the old one
    (rows over different tasks are never ranked together) and a warning says so.
    """
    suites = dict(old.suites)
    warnings = list(new.warnings)
    for suite, entries in new.suites.items():
        before = suites.get(suite, ())
        old_sets = {e.task_set for e in before}
        new_sets = {e.task_set for e in entries}
        if before and old_sets != new_sets:
            warnings.append(f"suite {suite!r}: the published table was measured on another task set "
                            f"({', '.join(sorted(_short(s or '') for s in old_sets))}); replaced, not merged")
            before = ()
        labels = {e.name for e in entries}
        suites[suite] = _ranked([e for e in before if e.name not in labels] + list(entries))
    suites = dict(sorted(suites.items()))
    used = {run for entries in suites.values() for e in entries for run in e.runs}
    infos = {run_id: info for run_id, info in {**old.run_info, **new.run_info}.items() if run_id in used}
    training = {c.label: c for c in old.training} | {c.label: c for c in new.training}
    return Leaderboard(generated_at=new.generated_at, runs=tuple(sorted(used)), run_info=dict(sorted(infos.items())),
                       suites=suites, warnings=tuple(warnings), overview=overview(suites),
                       training=tuple(training[k] for k in sorted(training)))


def publish(run_dirs: list[Path], out_dir: str | Path, *, train_metrics: list[Path] | None = None,
            update: bool = False, clock: Clock | None = None) -> tuple[Leaderboard, dict[str, Path]]:
    """Build, merge into ``out_dir/leaderboard.json`` when ``update``, write every output; returns both."""
    out = Path(out_dir)
    board = build_leaderboard(run_dirs, clock=clock, train_metrics=train_metrics)
    published = out / "leaderboard.json"
    if update and published.is_file():
        try:
            old = Leaderboard.model_validate_json(published.read_bytes())
        except ValueError as exc:
            raise SpecError(f"cannot update: not a leaderboard ({type(exc).__name__})", path=str(published)) from None
        board = merge_leaderboards(old, board)
    paths = write_leaderboard(board, out)
    write_trajectories(run_dirs, out)
    return board, paths
