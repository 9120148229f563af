"""The run directory's writer (:class:`envgym.eval_records.Recorder`) and what it hands the exporters."""

from __future__ import annotations

import asyncio

from envgym.agents import OracleConfig
from envgym.eval import EvalConfig, EvalSummary, evaluate
from envgym.eval_records import Recorder
from envgym.record import json_line, read_records
from envgym.trajectory import Trajectory


class Seen:
    def __init__(self, wants: bool | None) -> None:
        if wants is not None:
            self.needs_trajectory = wants
        self.got: list[object] = []

    def repair(self, records):
        pass

    def export(self, record, trajectory):
        self.got.append(trajectory)

    def close(self):
        pass


def _one_episode(tmp_path):
    config = EvalConfig(suites=("tool-retail",), split=None, agent=OracleConfig(), limit=1)
    asyncio.run(evaluate(config, tmp_path / "run", concurrency=1))
    (record,), _ = read_records(tmp_path / "run" / "records.jsonl")
    line = (tmp_path / "run" / "trajectories.jsonl").read_bytes()
    return record, line


def _recorder(tmp_path, exporters):
    summary = EvalSummary(run_dir=tmp_path, run_id="r", planned=1, skipped=0)
    return Recorder(tmp_path / "out", summary, None, None, exporters)


def test_a_workers_trajectory_line_is_parsed_only_for_an_exporter_that_reads_it(tmp_path, monkeypatch):
    record, line = _one_episode(tmp_path)
    reads, skips, default = Seen(True), Seen(False), Seen(None)
    _recorder(tmp_path, [reads, skips, default])._export([(record, line)])
    assert isinstance(reads.got[0], Trajectory) and reads.got[0].task_hash == record.task_hash
    assert default.got == reads.got  # no attribute: it reads the trajectory
    assert skips.got == [None]

    def refuse(*args, **kwargs):
        raise AssertionError("parsed a trajectory nobody reads")

    monkeypatch.setattr(Trajectory, "model_validate_json", refuse)
    only = Seen(False)
    _recorder(tmp_path, [only])._export([(record, line)])
    assert only.got == [None]


def test_an_exporter_that_reads_no_trajectory_gets_none_from_this_process_too(tmp_path):
    record, line = _one_episode(tmp_path)
    trajectory = Trajectory.model_validate_json(line)
    skips, reads = Seen(False), Seen(True)
    _recorder(tmp_path, [skips, reads])._export([(record, trajectory)])
    assert skips.got == [None] and reads.got == [trajectory]
    assert json_line(reads.got[0]) == line


def test_the_swe_predictions_exporter_reads_only_the_record():
    from envgym_swe.predictions import PredictionsExporter

    assert PredictionsExporter.needs_trajectory is False


def test_run_heap_raises_the_young_threshold_and_restores_the_collector_after():
    import gc

    from envgym.eval import run_heap

    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with run_heap():
        assert gc.get_threshold()[0] == 10_000
        assert gc.get_freeze_count() > 0  # what was loaded before the episodes is never traversed again
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_run_heap_keeps_what_its_caller_froze_frozen():
    import gc

    from envgym.eval import run_heap

    keep = [object()]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with run_heap():
            pass
        assert gc.get_freeze_count() >= frozen  # not unfrozen under the caller
    finally:
        gc.unfreeze()
    assert keep


def test_run_heap_walks_no_heap_before_its_first_episode(monkeypatch):
    import gc

    from envgym.eval import run_heap

    walks = []
    monkeypatch.setattr(gc, "collect", lambda *a: walks.append(a) or 0)  # 35-45 ms per process, a few dozen freed
    with run_heap():
        assert gc.get_freeze_count() > 0
    assert walks == []
