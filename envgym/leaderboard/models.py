"""The leaderboard's data: :class:`Leaderboard` (entries per suite, best first), its :class:`Entry` rows,
the per-task cells of a row (:class:`TaskResult`), what each run was (:class:`RunInfo`) and the reward
curves of training runs (:class:`TrainCurve`), and the\noverview matrix (:class:`OverviewRow`).

Frozen pydantic models, the contents of ``leaderboard.json``. Every field is defined in the docstring of
:mod:`envgym.leaderboard.build`, which fills them; :mod:`envgym.leaderboard.render` only reads them. Fields
added after the first release have defaults, so an older ``leaderboard.json`` still loads.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from envgym.types import LEADERBOARD_SCHEMA_VERSION, FrozenModel


class TaskResult(FrozenModel):
    """One agent's episodes on one task of a suite."""

    task_id: str
    task_hash: str
    episodes: int
    """Graded episodes (infra errors are apart)."""
    successes: int
    infra_errors: int = 0
    mean_score: float | None = None
    """Mean verdict score over graded episodes (partial credit); None without one."""
    trajectories: tuple[str, ...] = ()
    """Paths, relative to the output folder, of the episodes' trajectories rendered as text."""


class LevelResult(FrozenModel):
    """One agent's episodes on the tasks of one difficulty level of a generated suite
    (:mod:`envgym.leaderboard.levels`)."""

    level: int
    tasks: int
    """Distinct tasks of the level the agent ran."""
    episodes: int
    """Graded episodes (infra errors are apart, as everywhere)."""
    successes: int
    success_rate: float
    ci_low: float
    ci_high: float
    reference_actions: float | None = None
    """Mean length of the tasks' reference solutions (actions the oracle plays), over the tasks whose generator
    is installed where the leaderboard was built and still makes the task that ran; None otherwise."""


class Efficiency(FrozenModel):
    """Means over an entry's graded episodes of the efficiency metrics a timed verdict carries
    (:meth:`envgym.timed.timeline.Timeline.metrics`), in virtual time (``unit``: seconds or steps)."""

    unit: str = "s"
    """``s`` or ``step``; an entry never averages over two units (its row is split instead). ``mixed`` only
    in a ``leaderboard.json`` built before that rule: its means are not shown."""
    episodes: int
    """Graded episodes that carried the metrics."""
    mean_virtual_time: float | None = None
    mean_thinking: float | None = None
    mean_waiting: float | None = None
    mean_idle: float | None = None
    mean_opportunity_idle: float | None = None
    """Over the episodes whose world could say when another action was available (None if none could)."""
    mean_time_to_goal: float | None = None
    """Over the episodes that reached their goal (``goal_reached`` of them)."""
    goal_reached: int = 0


class Entry(FrozenModel):
    """One agent (under one configuration) on one suite. Every field is defined in :mod:`envgym.leaderboard.build`."""

    agent_id: str
    label: str = ""
    """The row's name: the agent id, plus the settings that differ (``random [runs=3]``, or
    ``[config XXXXXXXX]``) when the agent ran under several."""
    config_hash: str | None = None
    """The records' config hash when they share one (runs of other suite lists pool with other hashes)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The run settings the row's runs share (their config without suites and limit, flattened)."""
    task_set: str | None = None
    """The content hash of the suite's tasks this row was measured on."""
    model: str | None = None
    runs: tuple[str, ...]
    n_tasks: int
    episodes: int
    """Graded episodes: every latest record whose outcome is not ``infra_error``."""
    infra_errors: int
    successes: int
    success_rate: float
    ci_low: float
    ci_high: float
    mean_score: float | None = None
    """Mean verdict score over graded episodes: partial credit (a 0.8 rubric score counts 0.8)."""
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    pass_hat_k: dict[int, float] = Field(default_factory=dict)
    mean_steps: float | None = None
    mean_tokens: float | None = None
    total_tokens: int = 0
    mean_wall_s: float | None = None
    cost_usd: float = 0.0
    efficiency: Efficiency | None = None
    """Virtual-time efficiency, for suites of timed envs (their verdicts carry it); None elsewhere."""
    tasks: tuple[TaskResult, ...] = ()
    """Per task, sorted by task id."""
    levels: tuple[LevelResult, ...] = ()
    """Per difficulty level, easiest first, for the suite's generated tasks (ids ``NAME.SPLIT.lLEVEL.sSEED``);
    empty when it has none."""

    @property
    def name(self) -> str:
        return self.label or self.agent_id


class RunInfo(FrozenModel):
    """What one evaluation run was, from its ``run.json`` (fields an older run lacks are None)."""

    run_id: str
    agent_id: str | None = None
    agent: dict[str, Any] = Field(default_factory=dict)
    """The agent and its settings, as the agent factory described itself."""
    model: str | None = None
    config_hash: str | None = None
    envgym_version: str | None = None
    created_at: str | None = None
    """ISO 8601 (UTC) time the run was created."""
    host: str | None = None
    split: str | None = None
    seed: int | None = None
    k: int | None = None
    """Episodes per task (``--runs``)."""
    limit: int | None = None
    max_steps: int | None = None
    suites: tuple[str, ...] = ()
    task_sets: dict[str, str] = Field(default_factory=dict)
    """Per suite, the content hash of the run's planned tasks."""


class TrainCurve(FrozenModel):
    """The per-step metrics of one ``envgym train`` run that a reward curve needs."""

    label: str
    config_hash: str | None = None
    steps: tuple[int, ...] = ()
    reward_mean: tuple[float, ...] = ()
    success_rate: tuple[float, ...] = ()
    wall_s: tuple[float, ...] = ()


class OverviewRow(FrozenModel):
    """One row of the overview matrix: an agent (under one config) across suites, with the macro average."""

    label: str
    success: dict[str, float] = Field(default_factory=dict)
    """Per suite (table name) where the row has graded episodes, its success rate."""
    mean_score: dict[str, float] = Field(default_factory=dict)
    macro: float | None = None
    """Unweighted mean of ``success`` over the suites it holds."""
    macro_low: float | None = None
    macro_high: float | None = None
    """The macro average's 95% interval (:func:`envgym.leaderboard.stats.macro_interval`)."""


class Leaderboard(FrozenModel):
    """Entries per suite id, best first."""

    schema_version: Literal[1] = LEADERBOARD_SCHEMA_VERSION
    generated_at: str
    """ISO 8601 time (UTC) the leaderboard was built."""
    runs: tuple[str, ...] = ()
    """Every run id that was read, sorted."""
    run_info: dict[str, RunInfo] = Field(default_factory=dict)
    """Per run id, what the run was (the metadata block of the page)."""
    suites: dict[str, tuple[Entry, ...]]
    warnings: tuple[str, ...] = ()
    """Why some suites were split into several tables, or one agent's runs shown in several rows."""
    overview: tuple[OverviewRow, ...] = ()
    """Agents x suites, best macro average first."""
    training: tuple[TrainCurve, ...] = ()
