import pytest

from envgym.errors import RecordError
from envgym.record import JsonlWriter, ResultRecord, latest, read_records
from envgym.types import Outcome


def _record(i, outcome=Outcome.SUCCESS, attempt=1):
    return ResultRecord(run_id="r", task_id=f"t{i}", task_hash=f"sha256:{i}", suite="s", split="test",
                        env_id="test/notes-v1", env_version=1, agent_id="oracle", config_hash="c",
                        outcome=outcome, score=1.0 if outcome is Outcome.SUCCESS else 0.0,
                        passed=outcome is Outcome.SUCCESS, steps=2, attempt=attempt)


async def test_append_and_read(tmp_path):
    writer = JsonlWriter(tmp_path / "records.jsonl")
    for i in range(3):
        await writer.append(_record(i))
    writer.close()
    records, torn = read_records(tmp_path / "records.jsonl")
    assert [r.task_id for r in records] == ["t0", "t1", "t2"] and not torn


async def test_torn_last_line_detected_and_repaired(tmp_path):
    path = tmp_path / "records.jsonl"
    writer = JsonlWriter(path)
    await writer.append(_record(0))
    writer.close()
    whole = path.read_bytes()
    path.write_bytes(whole + _record(1).model_dump_json().encode()[:40])  # a crash mid-write
    records, torn = read_records(path)
    assert torn and len(records) == 1
    records, torn = read_records(path, repair=True)
    assert torn and path.read_bytes() == whole
    assert (tmp_path / "records.jsonl.torn").exists()
    assert read_records(path) == ([records[0]], False)


def test_corrupt_middle_line_is_an_error(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(_record(0).model_dump_json() + "\n{garbage\n" + _record(1).model_dump_json() + "\n")
    with pytest.raises(RecordError, match="not a torn last line"):
        read_records(path)


def test_latest_attempt_supersedes():
    records = [_record(0, Outcome.INFRA_ERROR), _record(1), _record(0, Outcome.SUCCESS, attempt=2)]
    kept = {r.task_id: r for r in latest(records)}
    assert kept["t0"].attempt == 2 and kept["t0"].outcome is Outcome.SUCCESS and len(kept) == 2
