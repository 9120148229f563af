"""SWE-bench predictions of an eval run: ``predictions.jsonl`` beside its records.

One :class:`Prediction` (``instance_id``, ``model_name_or_path``, ``model_patch``, ``run_index``) per
episode whose verdict carries a ``model_patch`` (the ``tests`` verifier's final git diff), whatever the
suite; ``envgym swe grade`` grades the file without an agent. :class:`PredictionsExporter` is the SWE
family's record exporter (entry-point group ``envgym.exporters``, see :mod:`envgym.export`): it writes a
prediction after its record, and on resume appends the prediction of every record that lacks one (a
crash can fall between the two writes), keyed by ``(instance_id, run_index)``. The file is opened only at
the first prediction, so runs of other families get none.
"""

from __future__ import annotations

from collections.abc import Sequence

from envgym.plugin import FrozenModel, Trajectory
from envgym.plugin.records import ExportContext, JsonlWriter, ResultRecord, read_jsonl

FILENAME = "predictions.jsonl"


class Prediction(FrozenModel):
    """A SWE-bench prediction: an episode's final diff, gradable by ``envgym swe grade``."""

    instance_id: str
    model_name_or_path: str
    model_patch: str
    run_index: int = 0


class PredictionsExporter:
    """Writes ``predictions.jsonl`` in the run directory (see the module docstring)."""

    needs_trajectory = False
    """A prediction comes from the record's verdict alone."""

    def __init__(self, ctx: ExportContext) -> None:
        self.ctx = ctx
        self.path = ctx.run_dir / FILENAME
        self._writer: JsonlWriter | None = None

    @staticmethod
    def wants_record(line: bytes) -> bool:
        """Only a record whose verdict carries a ``model_patch`` is exported, and its JSON line then holds the key
        (:mod:`envgym.export`: the other records of a run with workers are not parsed back for this exporter)."""
        return b'"model_patch"' in line

    def prediction(self, record: ResultRecord) -> Prediction | None:
        """The prediction of a recorded episode: its verdict's ``model_patch``, if it has one."""
        patch = record.verdict.evidence.get("model_patch") if record.verdict else None
        if not isinstance(patch, str):
            return None
        task = self.ctx.tasks.get(record.task_hash)
        iid = str(task.metadata.get("instance_id", task.id)) if task is not None else record.task_id
        return Prediction(instance_id=iid, model_name_or_path=self.ctx.agent_id, model_patch=patch,
                          run_index=record.run_index)

    def _write(self, predictions: Sequence[Prediction]) -> None:
        if not predictions:
            return
        if self._writer is None:
            self._writer = JsonlWriter(self.path)
        for prediction in predictions:
            self._writer.write_sync(prediction)

    def repair(self, records: Sequence[ResultRecord]) -> None:
        wanted = [p for p in map(self.prediction, records) if p is not None]
        if not wanted:
            return
        rows, _ = read_jsonl(self.path, repair=True)
        have = {(row.get("instance_id"), row.get("run_index", 0)) for row in rows}
        self._write([p for p in wanted if (p.instance_id, p.run_index) not in have])

    def export(self, record: ResultRecord, trajectory: Trajectory | None) -> None:
        prediction = self.prediction(record)
        if prediction is not None:
            self._write([prediction])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
