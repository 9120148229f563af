"""An eval run's finished episodes, made durable records: the one way a record is written and reported.

:func:`record_of` turns an episode's trajectory into its :class:`~envgym.record.ResultRecord` wherever the
episode ran (this process's pool, a Ray host, a worker process). :class:`Recorder` is the run directory's
only writer: it group-commits each episode's trajectory and record lines (:class:`~envgym.record.GroupWriter`:
``trajectories.jsonl`` then ``records.jsonl``, one sync per file per batch) and only once they are durable
reports the episode done: the exporters (in the writer's thread, in order), the run's summary, its
progress and ``on_record``. An episode that ran elsewhere arrives as its two lines, written as they are;
the exporters then get its trajectory parsed back from its line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envgym import __version__ as _version
from envgym.export import Exporter, needs_trajectory
from envgym.progress import RunProgress, cause_of
from envgym.record import GroupWriter, ResultRecord, json_line
from envgym.registry import parse_id
from envgym.task import TaskSpec
from envgym.trajectory import Trajectory
from envgym.types import Outcome

if TYPE_CHECKING:
    from envgym.eval import EvalSummary

EpisodeKey = tuple[str, TaskSpec, int, int]
"""An episode of the run: (suite label, task, run index, attempt)."""


def record_of(meta: dict[str, Any], key: EpisodeKey, trajectory: Trajectory) -> ResultRecord:
    """The record of an episode's trajectory (wherever it ran). The config hash is the run's (``meta``):
    hashing the config is a dump of it, too slow to do per episode."""
    suite, task, run_index, attempt = key
    return ResultRecord.from_trajectory(
        trajectory, run_id=meta["run_id"], suite=suite, split=task.split, env_version=parse_id(task.env_id)[2],
        agent_id=meta["agent_id"], agent=meta["agent"], config_hash=meta["config_hash"], run_index=run_index,
        attempt=attempt, envgym_version=_version, created_at=time.time())


class Recorder:
    """Makes finished episodes durable records (group commit, :class:`~envgym.record.GroupWriter`), then
    reports each one done: exporters (in the writer's thread), the summary, ``progress``, ``on_record``."""

    def __init__(self, run_dir: Path, summary: EvalSummary, progress: RunProgress | None,
                 on_record: Callable[[ResultRecord], None] | None, exporters: list[Exporter]) -> None:
        self.summary, self.progress, self.on_record, self.exporters = summary, progress, on_record, exporters
        self.writer: GroupWriter[tuple[ResultRecord, Trajectory | bytes]] = GroupWriter(
            [run_dir / "trajectories.jsonl", run_dir / "records.jsonl"], self._durable,
            in_thread=self._export if exporters else None)

    async def add(self, record: ResultRecord, trajectory: Trajectory | bytes,
                  lines: tuple[bytes, bytes] | None = None) -> None:
        """Queue an episode: its trajectory (or trajectory line) and record, lines made here unless given."""
        if lines is None:
            assert isinstance(trajectory, Trajectory)
            lines = (json_line(trajectory), json_line(record))
        await self.writer.submit(lines, (record, trajectory))

    def _export(self, items: list[tuple[ResultRecord, Trajectory | bytes]]) -> None:
        wanted = [needs_trajectory(exporter) for exporter in self.exporters]
        for record, trajectory in items:  # derived from the record: a crash before they are written is repaired
            parsed: Trajectory | None = None
            if isinstance(trajectory, Trajectory):
                parsed = trajectory
            elif any(wanted):  # a line from a worker process: parsed only for an exporter that reads it
                parsed = Trajectory.model_validate_json(trajectory)
            for exporter, wants in zip(self.exporters, wanted, strict=True):
                exporter.export(record, parsed if wants else None)

    def _durable(self, items: list[tuple[ResultRecord, Trajectory | bytes]]) -> None:
        summary, progress, on_record = self.summary, self.progress, self.on_record
        for record, _ in items:
            summary.outcomes[record.outcome.value] += 1
            if record.outcome is Outcome.INFRA_ERROR:
                summary.infra_causes[cause_of(record)] += 1
            if progress is not None:
                progress.finished(record)
            if on_record:
                on_record(record)
