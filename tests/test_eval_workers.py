"""``evaluate(workers=N)``: a run's episodes in worker processes, this process the only writer.

Workers are real processes (forkserver), so the agent factories here are module-level classes that pickle.
"""

import asyncio
import json
import multiprocessing
import os
from collections import Counter

import pytest

from envgym._eval_workers import MAX_ATTEMPTS, WorkerFailed
from envgym._progress import RunProgress
from envgym.agent import Agent
from envgym.agents import OracleConfig
from envgym.agents.baseline import OracleFactory
from envgym.errors import SpecError
from envgym.eval import EvalConfig, evaluate
from envgym.record import latest, read_records

from fakes import ScriptedAgent

pytestmark = pytest.mark.slow  # each run starts worker processes


def _config(**changes):
    return EvalConfig(suites=("tool-retail",), split=None, agent=OracleConfig(), **{"limit": 4, **changes})


def _results(run):
    """Per episode key: outcome, passed, score, seed; and the raw records."""
    records, torn = read_records(run / "records.jsonl")
    assert not torn
    return {r.key: (r.outcome.value, r.passed, r.score, r.seed) for r in latest(records)}, records


def _workers():
    return [p for p in multiprocessing.active_children() if p.name == "envgym-eval-worker"]


async def _first_record(run, task):
    written = run / "records.jsonl"
    for _ in range(1200):  # a loaded host can take seconds to start the workers
        await asyncio.sleep(0.05)
        if written.exists() and written.read_bytes().count(b"\n") >= 1:
            return
        assert not task.done(), task
    raise AssertionError("no record was written")


class SlowOracle(OracleFactory):
    def create(self, task):
        return ScriptedAgent(list(task.solution), delay=0.05)


async def test_workers_record_what_one_process_records(tmp_path):
    progress = RunProgress()
    one = await evaluate(_config(runs=2), tmp_path / "one", concurrency=4)
    two = await evaluate(_config(runs=2), tmp_path / "two", concurrency=4, workers=2, progress=progress)
    assert one.outcomes == two.outcomes == Counter(success=8)
    (mine, _), (theirs, records) = _results(tmp_path / "one"), _results(tmp_path / "two")
    assert theirs == mine and len(records) == 8
    assert (tmp_path / "two" / "trajectories.jsonl").read_bytes().count(b"\n") == 8
    assert progress.done == 8 and progress.in_flight == 0 and progress.ran == 8
    assert _workers() == []


async def test_interrupted_worker_run_resumes_without_duplicates(tmp_path):
    run = tmp_path / "run"
    task = asyncio.create_task(evaluate(_config(runs=3), run, concurrency=2, workers=2, factory=SlowOracle()))
    await _first_record(run, task)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _workers() == []  # every worker was told to stop and has exited
    partial, torn = read_records(run / "records.jsonl")
    assert 0 < len(partial) < 12 and not torn
    summary = await evaluate(_config(runs=3), run, concurrency=2, workers=2, factory=SlowOracle())
    results, records = _results(run)
    assert summary.skipped == len(partial) and summary.ran == 12 - len(partial)
    assert len(records) == 12 and len(results) == 12 and {r[0] for r in results.values()} == {"success"}


async def test_a_killed_workers_episodes_run_again(tmp_path):
    run = tmp_path / "run"
    task = asyncio.create_task(evaluate(_config(runs=3), run, concurrency=4, workers=2, factory=SlowOracle()))
    await _first_record(run, task)
    victim = _workers()[0]
    victim.kill()
    summary = await task
    results, records = _results(run)
    assert summary.outcomes == Counter(success=12)
    assert len(records) == 12 and len(results) == 12  # each episode recorded exactly once


class ExitAgent(Agent):
    async def act(self, observation):
        os._exit(3)  # the worker process dies under the episode


class PoisonOracle(OracleFactory):
    """The oracle, except that one task's agent kills the process it runs in."""

    def __init__(self, poison):
        self.poison = poison

    def create(self, task):
        return ExitAgent() if task.id == self.poison else super().create(task)


async def test_a_job_that_kills_every_worker_becomes_an_infra_error(tmp_path):
    config = _config(limit=3)
    from envgym.eval import episode_seed, plan

    poison = plan(config)[1][1].id
    summary = await evaluate(config, tmp_path / "run", concurrency=2, workers=2, factory=PoisonOracle(poison))
    assert summary.outcomes == Counter(success=2, infra_error=1)
    _, records = _results(tmp_path / "run")
    failed = [r for r in records if r.outcome.value == "infra_error"]
    assert [r.task_id for r in failed] == [poison] and failed[0].error_type == "WorkerLost"
    assert f"{MAX_ATTEMPTS} workers were lost" in failed[0].error
    tasks = {t.id: t for _, t in plan(config)}  # every record has its episode's seed, the lost one's too
    assert {r.task_id: r.seed for r in records} == {i: episode_seed(config, t, 0) for i, t in tasks.items()}


def _refuse_to_load():
    raise RuntimeError("this factory cannot be built in a worker")


class Unbuildable(OracleFactory):
    def __reduce__(self):
        return _refuse_to_load, ()


async def test_a_worker_that_cannot_start_fails_the_run(tmp_path):
    with pytest.raises(WorkerFailed, match="before it was ready"):
        await evaluate(_config(), tmp_path / "run", concurrency=2, workers=2, factory=Unbuildable())
    assert _workers() == []


class Unpicklable(OracleFactory):
    def __init__(self):
        self.hook = lambda: None


async def test_factory_that_does_not_pickle_is_refused(tmp_path):
    with pytest.raises(SpecError, match="must pickle"):
        await evaluate(_config(), tmp_path / "run", concurrency=2, workers=2, factory=Unpicklable())
    with pytest.raises(SpecError, match="workers"):
        await evaluate(_config(), tmp_path / "other", workers=0)


def test_cli_workers_flag(screen, tmp_path):
    from envgym import cli

    base = ["eval", "--suite", "tool-retail", "--split", "all", "--limit", "3", "--agent", "oracle"]
    assert cli.main([*base, "--workers", "2", "--out", str(tmp_path / "run")]) == 0
    assert "ran 3, skipped 0 of 3; success 3" in screen()[0]
    assert len(read_records(tmp_path / "run" / "records.jsonl")[0]) == 3
    with pytest.raises(SystemExit):
        cli.main([*base, "--workers", "0", "--out", str(tmp_path / "x")])
    assert cli.main([*base, "--workers", "2", "--ray", "auto", "--out", str(tmp_path / "y")]) == 2
    assert "choose one" in screen()[1]


async def test_cancelled_while_workers_start_leaves_no_worker(tmp_path):
    task = asyncio.create_task(evaluate(_config(), tmp_path / "run", concurrency=2, workers=2))
    for _ in range(400):  # until the workers are being started
        await asyncio.sleep(0.01)
        if _workers():
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _workers() == []
    assert not read_records(tmp_path / "run" / "records.jsonl")[1]


def test_a_script_without_a_main_guard_is_told_to_add_one(tmp_path):
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "unguarded.py"  # each worker imports the main script: this one would run again there
    script.write_text(textwrap.dedent(f"""
        import asyncio
        from envgym.agents import OracleConfig
        from envgym.eval import EvalConfig, evaluate
        config = EvalConfig(suites=("tool-retail",), split=None, agent=OracleConfig(), limit=2)
        asyncio.run(evaluate(config, {str(tmp_path / "run")!r} + str(__import__("os").getpid()), concurrency=2,
                             workers=2))
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert 'put the script\'s run under `if __name__ == "__main__":`' in proc.stderr
    assert "WorkerFailed" in proc.stderr
    assert "Task exception was never retrieved" not in proc.stderr  # a worker's start error is the run's


async def test_a_worker_is_sent_each_task_once_with_the_first_jobs_that_need_it(tmp_path, monkeypatch):
    import envgym._eval_workers as ew

    frames = []
    real = ew._frame

    def keeping(payload):
        if isinstance(payload, ew._Init):
            frames.append(("init", payload))
        elif isinstance(payload, tuple) and payload[0] == "jobs":
            frames.append(payload)
        return real(payload)

    monkeypatch.setattr(ew, "_frame", keeping)
    summary = await evaluate(_config(runs=3), tmp_path / "run", concurrency=4, workers=2)
    assert summary.outcomes["success"] == 12
    assert [f for f in frames if f[0] == "init"] and all(not hasattr(f[1], "tasks") for f in frames if f[0] == "init")
    batches = [f for f in frames if f[0] == "jobs"]
    jobs = [job for _, batch, _ in batches for job in batch]
    assert sorted(job[0] for job in jobs) == list(range(12))  # no worker died: each job sent once
    shipped = Counter(index for _, _, new in batches for index in new)
    assert set(shipped) == {job[1] for job in jobs} and max(shipped.values()) <= 2  # at most once per worker
    assert sum(shipped.values()) < len(jobs)  # not a task per job: 4 tasks, 12 jobs
    for _, batch, new in batches:  # only the tasks of the batch's own jobs
        assert set(new) <= {job[1] for job in batch}


class _InProcessWorker:
    """:func:`envgym._eval_workers._work` run in this process's loop, this test acting as its parent (its init, its
    job frames, its news), so the worker's loop can be watched."""

    def __init__(self, tmp_path, config, slots):
        from envgym.agents import build_factory
        from envgym.eval import _load_or_create_run, plan

        pairs = plan(config)
        self.tasks = [task for _, task in pairs]
        self.meta = _load_or_create_run(tmp_path / "run", config, build_factory(config.agent), pairs)
        self.config, self.slots = config, slots

    async def __aenter__(self):
        import socket

        import envgym._eval_workers as ew

        self.board = ew._Board.create(len(self.tasks) * self.config.runs)
        ours, theirs = socket.socketpair()
        self.worker = asyncio.create_task(ew._work(theirs))
        self.reader, self.writer = await asyncio.open_connection(sock=ours)
        self.writer.write(ew._frame(ew._Init(self.config, self.meta, self.config.agent, self.slots, self.board.path)))
        assert (await ew._read_frame(self.reader))[0] == "ready"
        return self

    async def play(self, jobs):
        """Send ``jobs`` (with every task) and wait for their news: the ended jobs' lines, by job number."""
        import envgym._eval_workers as ew

        self.writer.write(ew._frame(("jobs", jobs, dict(enumerate(self.tasks)))))
        ended = {}
        while len(ended) < len(jobs):
            kind, body = await asyncio.wait_for(ew._read_frame(self.reader), 60)
            assert kind == "events", body
            ended.update(body[1])
        return ended

    async def __aexit__(self, *exc):
        self.writer.close()  # the worker reads EOF, cancels its episodes and returns
        await asyncio.wait_for(self.worker, 60)
        self.board.close()


async def test_a_worker_whose_episodes_never_wait_turns_its_loop_once_per_round_of_slots(tmp_path):
    config = _config(runs=16)  # 4 tasks
    jobs = [(jid, jid % 4, "tool-retail", jid // 4, 1) for jid in range(64)]
    loop = asyncio.get_running_loop()
    turns = 0

    def tick():  # runs once at every turn of the loop (a callback that schedules itself again)
        nonlocal turns
        turns += 1
        if ticking:
            loop.call_soon(tick)

    async with _InProcessWorker(tmp_path, config, slots=8) as worker:
        await worker.play(jobs[:4])  # each task's first episode works out its caches (the env may use a thread)
        ticking = True
        loop.call_soon(tick)
        ended = await worker.play(jobs[4:])
        ticking = False
        board = [worker.board[jid] for jid in range(64)]
    assert sorted(ended) == list(range(4, 64))
    assert {json.loads(record)["outcome"] for _, record, _ in ended.values()} == {"success"}
    assert board == [2] * 64  # every episode marked ended on the board
    # 60 episodes, 8 slots: ~8 rounds and a few turns for the frames; until 2026-12-03 a turn per episode (each
    # job went through the pool's job stream), ~140 here
    assert turns < 30, turns


async def test_a_worker_failure_outside_any_episode_is_sent_as_itself(tmp_path, monkeypatch):
    import envgym._eval_records
    import envgym._eval_workers as ew

    def broken(*args):
        raise RuntimeError("the record could not be made")

    monkeypatch.setattr(envgym._eval_records, "record_of", broken)  # the worker imports it as it starts
    async with _InProcessWorker(tmp_path, _config(), slots=2) as worker:
        worker.writer.write(ew._frame(("jobs", [(0, 0, "tool-retail", 0, 1)], dict(enumerate(worker.tasks)))))
        frames = []
        while not frames or frames[-1][0] == "events":
            frames.append(await asyncio.wait_for(ew._read_frame(worker.reader), 60))
    assert frames[-1] == ("error", "RuntimeError: the record could not be made")  # not the task group's wrapper
