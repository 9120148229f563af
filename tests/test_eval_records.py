"""The run directory's writer (:class:`envgym._eval_records.Recorder`) and what it hands the exporters."""

from __future__ import annotations

import asyncio

from envgym._eval_records import Recorder
from envgym.agents import OracleConfig
from envgym.eval import EvalConfig, EvalSummary, evaluate
from envgym.record import json_line, read_records
from envgym.trajectory import Trajectory


class Seen:
    def __init__(self, wants: bool | None) -> None:
        if wants is not None:
            self.needs_trajectory = wants
        self.got: list[object] = []
        self.got_record: list[object] = []

    def repair(self, records):
        pass

    def export(self, record, trajectory):
        self.got.append(trajectory)
        self.got_record.append(record)

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


def _line_of(record):
    from envgym._eval_records import RecordLine

    return RecordLine(json_line(record), record.suite, record.outcome)


def test_a_workers_record_line_is_written_and_counted_without_being_parsed(tmp_path, monkeypatch):
    from envgym._progress import RunProgress
    from envgym.record import ResultRecord

    record, line = _one_episode(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("parsed a record line nobody reads whole")

    monkeypatch.setattr(ResultRecord, "model_validate_json", refuse)
    progress = RunProgress()
    summary = EvalSummary(run_dir=tmp_path, run_id="r", planned=1, skipped=0)
    recorder = Recorder(tmp_path / "out", summary, progress, None, [])

    async def write():
        await recorder.add(_line_of(record), line)
        await recorder.writer.aclose()

    asyncio.run(write())
    assert summary.outcomes == {record.outcome.value: 1}
    assert progress.suites[record.suite].outcomes == {record.outcome.value: 1}
    assert (tmp_path / "out" / "records.jsonl").read_bytes() == json_line(record)
    assert (tmp_path / "out" / "trajectories.jsonl").read_bytes() == line


def test_a_record_line_is_parsed_for_on_record_exporters_and_infra_causes(tmp_path):
    from envgym.types import Outcome

    record, line = _one_episode(tmp_path)
    got = []
    summary = EvalSummary(run_dir=tmp_path, run_id="r", planned=2, skipped=0)
    reads = Seen(False)
    recorder = Recorder(tmp_path / "out", summary, None, got.append, [reads])
    entry = _line_of(record)
    recorder._export([(entry, line)])
    recorder._durable([(entry, line)])
    assert got == [record] and got[0] is reads.got_record[0]
    failed = record.model_copy(update={"outcome": Outcome.INFRA_ERROR, "error": "the sandbox  vanished"})
    recorder._durable([(_line_of(failed), line)])
    assert summary.infra_causes == {"the sandbox vanished": 1}
    assert summary.outcomes == {record.outcome.value: 1, "infra_error": 1}


class Picky(Seen):
    def __init__(self, wanted: bytes) -> None:
        super().__init__(False)
        self.wanted = wanted

    def wants_record(self, line):
        return self.wanted in line


def test_a_record_line_no_exporter_wants_is_neither_parsed_nor_exported(tmp_path, monkeypatch):
    from envgym.record import ResultRecord

    record, line = _one_episode(tmp_path)
    picky, keen = Picky(b'"model_patch"'), Picky(record.task_hash.encode())
    with monkeypatch.context() as m:
        m.setattr(ResultRecord, "model_validate_json", lambda *a, **k: (_ for _ in ()).throw(AssertionError("parsed")))
        _recorder(tmp_path, [picky])._export([(_line_of(record), line)])
    assert picky.got_record == []
    _recorder(tmp_path, [picky, keen])._export([(_line_of(record), line)])  # parsed once, for the one that wants it
    assert picky.got_record == [] and keen.got_record == [record]
    _recorder(tmp_path, [picky])._export([(record, line)])  # a record made here: every exporter gets it
    assert picky.got_record == [record]


def test_the_swe_predictions_exporter_wants_exactly_the_lines_of_records_with_a_model_patch(tmp_path):
    from envgym.types import Verdict
    from envgym_swe.predictions import PredictionsExporter

    record, _ = _one_episode(tmp_path)
    assert not PredictionsExporter.wants_record(json_line(record))
    patched = record.model_copy(update={"verdict": Verdict(passed=False, score=0.0, evidence={"model_patch": "diff"})})
    assert PredictionsExporter.wants_record(json_line(patched))
    exporter = PredictionsExporter(type("Ctx", (), {"run_dir": tmp_path, "tasks": {}, "agent_id": "a"})())
    assert exporter.prediction(record) is None and exporter.prediction(patched) is not None


def test_the_frames_a_worker_sends_within_a_window_share_one_sync(tmp_path):
    """Workers send finished episodes in frames ~15 ms apart (eval_workers.FLUSH_S): three such frames of ten
    are one batch (two syncs), not three; with the writer's default window (4 ms) they were three."""
    from envgym._progress import RunProgress

    record, line = _one_episode(tmp_path)
    summary = EvalSummary(run_dir=tmp_path, run_id="r", planned=30, skipped=0)

    class Counted(RunProgress):
        def counted(self, suite, outcome, cause=None):
            super().counted(suite, outcome, cause)
            if sum(self.suites[suite].outcomes.values()) == 30:
                all_durable.set()

    async def write():
        nonlocal all_durable
        all_durable = asyncio.Event()
        recorder = Recorder(tmp_path / "out", summary, Counted(), None, [])
        for _ in range(3):
            for _ in range(10):
                await recorder.add(_line_of(record), line)
            await asyncio.sleep(0.008)
        await asyncio.wait_for(all_durable.wait(), 30)  # counted once durable, the writer still open
        batches = recorder.writer.batches
        await recorder.writer.aclose()
        return batches

    all_durable = None
    assert asyncio.run(write()) == 1
    assert (tmp_path / "out" / "records.jsonl").read_bytes() == json_line(record) * 30
