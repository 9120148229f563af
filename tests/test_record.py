import asyncio
import signal
import subprocess
import sys

import pytest

from envgym.errors import RecordError
from envgym.record import GroupWriter, JsonlWriter, ResultRecord, latest, read_records, repair_tail
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


# -- group commit ------------------------------------------------------------------------------------------


def _lines(i):
    return (f'{{"trajectory": {i}}}\n'.encode(), _record(i).model_dump_json().encode() + b"\n")


async def test_group_writer_commits_batches_in_order_and_reports_only_durable_lines(tmp_path):
    paths = [tmp_path / "trajectories.jsonl", tmp_path / "records.jsonl"]
    reported = []

    def durable(items):  # by now every line of the batch is in both files
        on_disk = [p.read_bytes() for p in paths]
        assert all(_lines(i)[f] in on_disk[f] for i in items for f in (0, 1))
        reported.extend(items)

    async with GroupWriter(paths, durable) as writer:
        for i in range(300):
            await writer.submit(_lines(i), i)
            if i % 100 == 0:
                await asyncio.sleep(0)
    assert reported == list(range(300))
    assert 1 < writer.batches < 300  # entries queued during a sync share the next one
    records, torn = read_records(paths[1])
    assert [r.task_id for r in records] == [f"t{i}" for i in range(300)] and not torn
    assert paths[0].read_bytes().count(b"\n") == 300


async def test_group_writer_lets_entries_finishing_within_its_window_share_a_sync(tmp_path):
    async def batches(window_s):
        reported = []
        async with GroupWriter([tmp_path / f"{window_s}.jsonl"], reported.extend, window_s=window_s) as writer:
            for i in range(10):  # one at a time, as episodes finish at concurrency 1
                await writer.submit((b"%d\n" % i,), i)
                await asyncio.sleep(0.002)
        assert reported == list(range(10))
        return writer.batches

    assert await batches(0.5) == 1
    assert await batches(0) > 1


async def test_group_writer_closes_without_waiting_out_its_window(tmp_path):
    loop = asyncio.get_running_loop()
    reported = []
    writer = GroupWriter([tmp_path / "a.jsonl"], reported.extend, window_s=30)
    await writer.submit((b"1\n",), 1)
    await asyncio.sleep(0.01)  # the commit task is waiting in its window
    started = loop.time()
    await writer.aclose()
    assert reported == [1] and loop.time() - started < 5


async def test_group_writer_failure_is_raised_and_nothing_after_it_is_reported(tmp_path):
    reported = []

    def exporter(items):
        if 5 in items:
            raise RuntimeError("exporter broke")

    writer = GroupWriter([tmp_path / "a.jsonl"], reported.extend, in_thread=exporter)
    with pytest.raises(RuntimeError, match="exporter broke"):
        for i in range(10):
            await writer.submit((b"%d\n" % i,), i)
            await asyncio.sleep(0.01)
        await writer.aclose()
    with pytest.raises(RuntimeError, match="exporter broke"):
        await writer.aclose()
    assert 5 not in reported and reported == list(range(len(reported)))


async def test_group_writer_writes_what_is_queued_when_cancelled(tmp_path):
    path = tmp_path / "a.jsonl"
    reported = []

    async def run():
        async with GroupWriter([path], reported.extend) as writer:
            for i in range(50):
                await writer.submit((b"%d\n" % i,), i)
            await asyncio.sleep(30)

    task = asyncio.create_task(run())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert path.read_bytes() == b"".join(b"%d\n" % i for i in range(50)) and reported == list(range(50))


def test_repair_tail_cuts_only_a_torn_last_line(tmp_path):
    path = tmp_path / "t.jsonl"
    assert not repair_tail(path)
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    assert not repair_tail(path) and path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    path.write_bytes(b'{"a": 1}\n' + b"x" * 200_000)  # longer than one block read backwards
    assert repair_tail(path) and path.read_bytes() == b'{"a": 1}\n'
    assert (tmp_path / "t.jsonl.torn").read_bytes() == b"x" * 200_000 + b"\n"
    path.write_bytes(b'{"torn')
    assert repair_tail(path) and path.read_bytes() == b""


_CRASH_WRITER = """
import asyncio, sys
from envgym.record import GroupWriter, ResultRecord
from envgym.types import Outcome

def record(i):
    return ResultRecord(run_id="r", task_id=f"t{i}", task_hash=f"sha256:{i}", suite="s", split="test",
                        env_id="test/notes-v1", env_version=1, agent_id="oracle", config_hash="c",
                        outcome=Outcome.SUCCESS, score=1.0, passed=True, steps=2, error="x" * (i % 5000))

def acknowledged(items):
    sys.stdout.write("".join(f"{i}\\n" for i in items))
    sys.stdout.flush()

async def main(folder):
    async with GroupWriter([folder + "/trajectories.jsonl", folder + "/records.jsonl"], acknowledged) as writer:
        i = 0
        while True:
            line = record(i).model_dump_json().encode() + b"\\n"
            await writer.submit((line, line), i)
            i += 1
            if i % 64 == 0:
                await asyncio.sleep(0)

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.slow
def test_a_killed_writer_loses_nothing_it_acknowledged(tmp_path):
    acknowledged = []
    with subprocess.Popen([sys.executable, "-c", _CRASH_WRITER, str(tmp_path)], stdout=subprocess.PIPE) as child:
        try:
            while len(acknowledged) < 3000:
                line = child.stdout.readline()
                assert line, "the writer ended early"
                acknowledged.append(int(line))
            child.send_signal(signal.SIGKILL)  # mid-run: batches are being written and synced
            acknowledged.extend(int(line) for line in child.stdout.read().split())
        finally:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    records, _ = read_records(tmp_path / "records.jsonl", repair=True)  # at most a torn last line
    keys = {r.task_id for r in records}
    assert {f"t{i}" for i in acknowledged} <= keys
    assert len(records) == len(keys)  # nothing twice
    assert not repair_tail(tmp_path / "records.jsonl")
    repair_tail(tmp_path / "trajectories.jsonl")
    trajectories, torn = read_records(tmp_path / "trajectories.jsonl")
    assert not torn and keys <= {r.task_id for r in trajectories}  # no record without its trajectory
