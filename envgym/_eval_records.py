"""An eval run's finished episodes, made durable records: the one way a record is written and reported.

:func:`record_of` turns an episode's trajectory into its :class:`~envgym.record.ResultRecord` wherever the
episode ran (this process's pool, a Ray host, a worker process). :class:`Recorder` is the run directory's
only writer: it group-commits each episode's trajectory and record lines (:class:`~envgym.record.GroupWriter`:
``trajectories.jsonl`` then ``records.jsonl``, one sync per file per batch) and only once they are durable
reports the episode done: the exporters (in the writer's thread, in order), the run's summary, its
progress and ``on_record``. An episode that ran elsewhere arrives as its two lines, written as they are, its
record as a :class:`RecordLine`: the summary and progress count its suite and outcome, and its line is parsed
back into a :class:`~envgym.record.ResultRecord` only for what reads the whole record (``on_record``, an
exporter, an infra error's cause): parsing was a third of the writing process's time per episode with
``--workers``. The exporters get a trajectory parsed back from its line only if they read it.
:class:`EvalSummary` is what the recorder counts (:mod:`envgym.eval` returns it and re-exports it): outcomes, and
beside them whose error ended each episode that ended in one (:func:`blame_of`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym import __version__ as _version
from envgym._progress import RunProgress, cause_of
from envgym.export import Exporter, needs_trajectory, wants_record
from envgym.record import GroupWriter, ResultRecord, json_line
from envgym.registry import parse_id
from envgym.task import TaskSpec
from envgym.trajectory import Trajectory
from envgym.types import Outcome

EpisodeKey = tuple[str, TaskSpec, int, int]
"""An episode of the run: (suite label, task, run index, attempt)."""


@dataclass
class EvalSummary:
    run_dir: Path
    run_id: str
    planned: int
    skipped: int
    outcomes: Counter[str] = field(default_factory=Counter)
    torn_repaired: bool = False
    infra_causes: Counter[str] = field(default_factory=Counter)
    """This invocation's infra errors by message (:func:`envgym._progress.cause_of`). Earlier infra errors
    are always retried, so these are all the run's."""
    blames: Counter[str] = field(default_factory=Counter)
    """This invocation's episodes that ended in an error, by whose it was (``agent``, ``env``, ``verifier``,
    ``infra``; :mod:`envgym.rollout`): a failure the verifier caused is not the agent's."""

    @property
    def ran(self) -> int:
        return sum(self.outcomes.values())


def record_of(meta: dict[str, Any], key: EpisodeKey, trajectory: Trajectory) -> ResultRecord:
    """The record of an episode's trajectory (wherever it ran). The config hash is the run's (``meta``):
    hashing the config is a dump of it, too slow to do per episode."""
    suite, task, run_index, attempt = key
    return ResultRecord.from_trajectory(
        trajectory, run_id=meta["run_id"], suite=suite, split=task.split, env_version=parse_id(task.env_id)[2],
        agent_id=meta["agent_id"], agent=meta["agent"], config_hash=meta["config_hash"], run_index=run_index,
        attempt=attempt, envgym_version=_version, created_at=time.time())


@dataclass
class RecordLine:
    """A record as its JSON line (written as it is), with its suite and outcome, which are all a run's summary and
    progress count of it: :attr:`record` parses the line (once) for whatever reads the rest."""

    line: bytes
    suite: str
    outcome: Outcome
    _record: ResultRecord | None = field(default=None, repr=False)

    @property
    def record(self) -> ResultRecord:
        if self._record is None:
            self._record = ResultRecord.model_validate_json(self.line)
        return self._record


Recorded = ResultRecord | RecordLine

_NO_ERROR = b'"error_type":null,"blame":null'
"""How a record line without an error reads (the fields are adjacent, in the model's order)."""


def blame_of(entry: Recorded) -> str | None:
    """Whose error ended the episode (:attr:`ResultRecord.blame`), or None. A worker's line is parsed only when it
    holds an error: a success never does, and an error-free record's line says so in two adjacent fields."""
    if isinstance(entry, RecordLine):
        if entry.outcome is Outcome.SUCCESS or _NO_ERROR in entry.line:
            return None
        entry = entry.record
    return entry.blame.value if entry.blame is not None else None


def _whole(entry: Recorded) -> ResultRecord:
    """The record itself (a :class:`RecordLine` parsed, once)."""
    return entry.record if isinstance(entry, RecordLine) else entry


WINDOW_S = 0.025
WINDOW_MIN = 128
"""The records' group commit (:class:`~envgym.record.GroupWriter`): a batch of fewer than ``WINDOW_MIN`` episodes
waits up to ``WINDOW_S`` for more before its two syncs. Worker processes send their finished episodes in frames
of ~10 every 15 ms (:data:`envgym._eval_workers.FLUSH_S`); with the writer's defaults (4 ms, 16) nearly every frame
was a batch of its own, two syncs each (~0.3 ms of CPU apiece here), so this process spent 0.05-0.07 ms of
system time per episode; 25 ms and 128 halve that (0.024-0.033 in 4 alternating runs, c=32, 2 workers, runs=40),
and its user time fell too (0.10-0.13 ms against 0.13-0.17). An episode is reported done only after its sync,
so it waits up to 25 ms longer to be counted; none is lost that was reported.
"""


class Recorder:
    """Makes finished episodes durable records (group commit, :class:`~envgym.record.GroupWriter`), then
    reports each one done: exporters (in the writer's thread), the summary, ``progress``, ``on_record``."""

    def __init__(self, run_dir: Path, summary: EvalSummary, progress: RunProgress | None,
                 on_record: Callable[[ResultRecord], None] | None, exporters: list[Exporter]) -> None:
        self.summary, self.progress, self.on_record, self.exporters = summary, progress, on_record, exporters
        self.writer: GroupWriter[tuple[Recorded, Trajectory | bytes]] = GroupWriter(
            [run_dir / "trajectories.jsonl", run_dir / "records.jsonl"], self._durable,
            in_thread=self._export if exporters else None, window_s=WINDOW_S, window_min=WINDOW_MIN)

    async def add(self, record: Recorded, trajectory: Trajectory | bytes) -> None:
        """Queue an episode: its trajectory (or its line) and record (or its :class:`RecordLine`)."""
        trajectory_line = json_line(trajectory) if isinstance(trajectory, Trajectory) else trajectory
        record_line = record.line if isinstance(record, RecordLine) else json_line(record)
        await self.writer.submit((trajectory_line, record_line), (record, trajectory))

    def _export(self, items: list[tuple[Recorded, Trajectory | bytes]]) -> None:
        every = [(exporter, needs_trajectory(exporter)) for exporter in self.exporters]
        for entry, trajectory in items:  # derived from the record: a crash before they are written is repaired
            targets = every
            if isinstance(entry, RecordLine):  # from a worker process: parsed only for an exporter that wants it
                targets = [(exporter, reads) for exporter, reads in every if wants_record(exporter, entry.line)]
                if not targets:
                    continue
            record = _whole(entry)
            parsed: Trajectory | None = None
            if isinstance(trajectory, Trajectory):
                parsed = trajectory
            elif any(reads for _, reads in targets):  # a worker's line: parsed only for an exporter that reads it
                parsed = Trajectory.model_validate_json(trajectory)
            for exporter, reads in targets:
                exporter.export(record, parsed if reads else None)

    def _durable(self, items: list[tuple[Recorded, Trajectory | bytes]]) -> None:
        summary, progress, on_record = self.summary, self.progress, self.on_record
        for entry, _ in items:
            outcome = entry.outcome
            summary.outcomes[outcome.value] += 1
            blame = blame_of(entry)
            if blame is not None:
                summary.blames[blame] += 1
            cause = None
            if outcome is Outcome.INFRA_ERROR:
                cause = cause_of(_whole(entry))
                summary.infra_causes[cause] += 1
            if progress is not None:
                progress.counted(entry.suite, outcome, cause)
            if on_record:
                on_record(_whole(entry))
