"""``envgym eval --workers N``: a run's episodes spread over N worker processes, one writer.

Envs whose work is Python on the CPU (the tool family: SQLite, grading) leave every core but one idle in
a single process. :func:`run_in_workers` starts N fresh interpreters (multiprocessing's ``forkserver``
where there is one, else ``spawn``), each running its own event loop and
:class:`~envgym.vector.pool.EpisodePool` with its share of the run's ``concurrency``, and hands them jobs
over a socket pair; each worker sends back, per finished episode, its trajectory line, record line and outcome.
This process stays the only writer of the run directory (:class:`envgym._eval_records.Recorder`: a record counts
only once durable), so ``envgym eval``'s guarantees hold unchanged:

- **Exactly once.** Every job yields one record. A worker that dies (killed, crashed) costs only the
  episodes it had in flight: they are sent to another worker (a replacement is started); a job lost with
  :data:`MAX_ATTEMPTS` workers becomes an ``infra_error`` record (:class:`WorkerLost`), which the next
  resume retries. A worker that dies before it is ready (it could not import or unpickle the agent) is a
  :class:`WorkerFailed` error of the run, not retried.
- **Cancellation.** Ctrl-C reaches only this process (workers ignore SIGINT); it closes the sockets, and
  each worker cancels its episodes, closes its envs and exits (killed after ``close_timeout_s``). Results
  that were on their way are dropped, never half-written: those episodes run again on resume.
- Workers build agents from the run's ``AgentConfig``, or from the caller's factory, which must pickle;
  envs come from ``envgym.make`` (registered through entry points: a registration made only in this
  process's memory does not reach the workers).

A worker holds at most its slots plus a few prefetched jobs. It reports the jobs it starts and ends in
batches (one frame per :data:`FLUSH_S` at most, or sooner when it runs short of jobs): a frame per episode woke
this process for every start and end, and on two cores the three processes then spent a third of their time
switching. What a dead worker's jobs had reached is on a shared board instead (:class:`_Board`, one byte per
job that the worker sets as it starts and as it ends each episode, before any frame): a job lost with a worker
counts an attempt only if it was running (started, not ended); one whose episode had ended runs again free.

Each of a worker's slots plays its jobs one after another, and writes an episode's record lines and marks its end
on the board before it takes the next job. After each episode a slot gives the loop a turn, which the worker's
other slots share: episodes that never wait (a tool env's work is all inline) cost one turn of the loop per round
of slots, not one per episode. Until 2026-12-03 every job went through the pool's job stream (an async generator
behind a lock, a queue to a consumer), a turn of the loop per episode: c=32, 2 workers, runs=40 ran 1,953-1,971
episodes/s against 2,021-2,041 in 4 alternating pairs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import mmap
import multiprocessing
import os
import pickle
import signal
import socket
import struct
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import envgym._eval_records as eval_records
from envgym._eval_config import EvalConfig, env_maker, episode_seed, run_heap
from envgym._eval_records import EpisodeKey, Recorder, RecordLine
from envgym._forkserver import PRELOAD
from envgym._progress import RunProgress
from envgym.agent import AgentFactory
from envgym.agents import AgentConfig, build_factory
from envgym.errors import EnvgymError, SpecError
from envgym.record import json_line
from envgym.registry import spec
from envgym.task import TaskSpec
from envgym.types import Outcome
from envgym.vector.pool import EpisodePool, Job, failed_trajectory

MAX_ATTEMPTS = 3
"""Workers a job may be lost with before it is recorded as ``infra_error``."""
FLUSH_S = 0.015
"""The longest a worker holds the news of a started or ended episode before it sends it (checked as each episode
starts and ends, and by a timer for a worker whose episodes are all waiting). 15 ms, not 5: the
send of each frame (the finished episodes' lines, ~6 KB each, and a wake-up of this process) was 5% of a tool
worker's time; c=32, 2 workers, runs=40 ran 1,015-1,305 episodes/s against 930-1,168 in 4 alternating pairs
(30 ms gained nothing more). A worker short of jobs still sends at once."""
_HEADER = struct.Struct("!I")


class WorkerLost(EnvgymError, ConnectionError):
    """The worker process running the episode died, on every attempt."""

    blame = "infra"


class WorkerFailed(EnvgymError, RuntimeError):
    """A worker process could not start, or its pool failed outside any episode: the run stops."""


@dataclass(frozen=True)
class _Init:
    """What a worker is told once: everything it needs to turn job numbers into records."""

    config: EvalConfig
    meta: dict[str, Any]
    agents: AgentConfig | AgentFactory
    """The run's agent config, or the caller's factory (which must pickle)."""
    slots: int
    board: str
    """The path of the run's :class:`_Board`."""


@dataclass
class _Worker:
    slots: int
    lane: int
    process: Any = None
    writer: asyncio.StreamWriter | None = None
    ready: bool = False
    dead: bool = False
    start_error: Exception | None = None
    """Why its process could not be started, if it could not."""
    reaped: asyncio.Future[str] | None = None
    outstanding: dict[int, _Outstanding] = field(default_factory=dict)
    sent: set[int] = field(default_factory=set)
    """The tasks (their numbers) this worker has been sent: each goes with the first batch holding one of its jobs."""


@dataclass
class _Outstanding:
    job: tuple[Any, ...]  # (jid, task index, suite, run index, attempt): the worker works out the seed
    attempts: int = 0
    """Workers that died while running it."""
    running: bool = False


class _Board:
    """One byte per job of the run, in a file in memory (``/dev/shm`` where there is one) that every worker
    maps: :data:`STARTED` as a worker starts the job's episode, :data:`ENDED` once it has its record, both before
    the episode's news is sent. The bytes survive the worker's death; this process reads them then."""

    STARTED, ENDED = 1, 2

    def __init__(self, path: str, size: int, *, owner: bool) -> None:
        self.path, self.owner = path, owner
        fd = os.open(path, os.O_RDWR)
        try:
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)

    @classmethod
    def create(cls, jobs: int) -> _Board:
        folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="envgym-eval-", dir=folder)
        try:
            os.ftruncate(fd, max(1, jobs))
        finally:
            os.close(fd)
        return cls(path, max(1, jobs), owner=True)

    def __getitem__(self, jid: int) -> int:
        return self.map[jid]

    def __setitem__(self, jid: int, value: int) -> None:
        self.map[jid] = value

    def close(self) -> None:
        self.map.close()
        if self.owner:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def _frame(payload: Any) -> bytes:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    size = _HEADER.unpack(await reader.readexactly(_HEADER.size))[0]
    return pickle.loads(await reader.readexactly(size))


def _context(tasks: list[TaskSpec]) -> Any:
    """forkserver where there is one: workers fork from a server that imported envgym and the run's env
    modules once (only the first run of a process starts it), else spawn."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        modules = {spec(env_id).entry_point.partition(":")[0] for env_id in {t.env_id for t in tasks}}
        ctx.set_forkserver_preload([*PRELOAD, *sorted(modules)])  # if it is not running yet (envgym._forkserver)
    return ctx


# -- the parent ------------------------------------------------------------------------------------------


async def run_in_workers(config: EvalConfig, meta: dict[str, Any], agents: AgentConfig | AgentFactory,
                         todo: list[EpisodeKey], recorder: Recorder,
                         progress: RunProgress | None, *, workers: int, concurrency: int,
                         close_timeout_s: float = 60.0) -> None:
    """Run ``todo`` (:data:`envgym._eval_records.EpisodeKey` items) in ``workers`` processes; hand each finished
    episode's lines to ``recorder`` (an :class:`envgym._eval_records.Recorder`)."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise SpecError("a run with workers started while a worker process was importing the main script (each "
                        "worker imports it to find what it defines): put the script's run under "
                        "`if __name__ == \"__main__\":`", field="workers")
    try:
        pickle.dumps(agents)
    except Exception as exc:
        raise SpecError(f"workers build their own agents: the agent factory must pickle ({exc!r}); pass the "
                        "AgentConfig instead, or run with workers=1", field="workers") from None
    index: dict[str, int] = {}  # each task goes to a worker once; jobs name it by number
    tasks: list[TaskSpec] = []
    for _, task, _, _ in todo:
        if task.hash not in index:
            index[task.hash] = len(tasks)
            tasks.append(task)
    # no seeds here: a worker works out its episodes' (a hash each, tens of milliseconds for a run's thousands,
    # which the workers waited for)
    jobs = [(jid, index[task.hash], suite, run_index, attempt)
            for jid, (suite, task, run_index, attempt) in enumerate(todo)]
    pool = _ProcessPool(config, meta, agents, tasks, workers=workers, concurrency=concurrency,
                        close_timeout_s=close_timeout_s, jobs=len(jobs))
    if progress is not None:
        progress.in_flight_of = lambda: pool.in_flight
    started = None if progress is None else (lambda jid: progress.started(todo[jid][0]))
    try:
        async with contextlib.aclosing(pool.run(jobs, started)) as results:
            async for jid, result in results:
                if isinstance(result, BaseException):  # lost too often: the parent writes its infra_error
                    _, task, run_index, _ = todo[jid]
                    trajectory = failed_trajectory(Job(task, seed=episode_seed(config, task, run_index)), result)
                    await recorder.add(eval_records.record_of(meta, todo[jid], trajectory), trajectory)
                else:  # the record's line is parsed only if something reads the whole record (eval_records)
                    trajectory_line, record_line, outcome = result
                    await recorder.add(RecordLine(record_line, todo[jid][0], Outcome(outcome)), trajectory_line)
    finally:
        await pool.aclose()


class _Lanes:
    """The jobs not yet sent, in a lane per worker: a task's runs go to one worker, which works out what its env
    caches per task (a template store, the reference's replay: ~3-5 ms for a tool task) once. A lane plays its
    tasks in turn (run-major, as the run's jobs come).

    Lanes are kept level: when a worker's lane is empty, or holds ``balance`` jobs fewer than the fullest, it
    takes jobs of one task from the fullest lane, half the difference at most: of a task it was sent already if
    there is one, else of the task with the most jobs left, so that one working-out serves many episodes. Until
    2026-12-03 a worker took single jobs from the other lane's end once its own was empty, each of a task new to
    it, at the end of a run: the last 100-350 ms it finished ~3 episodes per 18 ms against ~14 (c=32, 2 workers,
    runs=40)."""

    def __init__(self, lanes: int, balance: int) -> None:
        self.lanes = [collections.OrderedDict[int, collections.deque[_Outstanding]]() for _ in range(lanes)]
        self.sizes = [0] * lanes
        self.balance = balance

    def __bool__(self) -> bool:
        return any(self.sizes)

    def add(self, item: _Outstanding) -> None:
        task = item.job[1]
        lane = task % len(self.lanes)
        self.lanes[lane].setdefault(task, collections.deque()).append(item)
        self.sizes[lane] += 1

    def take(self, lane: int, sent: set[int]) -> _Outstanding | None:
        """The next job for the worker of ``lane``, which has been sent the tasks ``sent``; None when none is left."""
        own = self.lanes[lane]
        fullest = max(range(len(self.lanes)), key=self.sizes.__getitem__)
        gap = self.sizes[fullest] - self.sizes[lane]
        if gap and (not own or gap > self.balance):
            self._move(fullest, lane, sent, max(1, gap // 2))
        if not own:
            return None
        task, jobs = next(iter(own.items()))
        item = jobs.popleft()
        if jobs:
            own.move_to_end(task)  # the lane's next task next: one run of each in turn
        else:
            del own[task]
        self.sizes[lane] -= 1
        return item

    def _move(self, source: int, lane: int, sent: set[int], most: int) -> None:
        tasks = self.lanes[source]
        task = next((t for t in tasks if t in sent), None)
        if task is None:
            task = max(tasks, key=lambda t: len(tasks[t]))
        jobs = tasks[task]
        count = min(most, len(jobs))
        self.lanes[lane].setdefault(task, collections.deque()).extend(jobs.pop() for _ in range(count))  # last runs
        if not jobs:
            del tasks[task]
        self.sizes[source] -= count
        self.sizes[lane] += count


class _ProcessPool:
    """Worker processes fed with jobs; see the module docstring."""

    def __init__(self, config: EvalConfig, meta: dict[str, Any], agents: AgentConfig | AgentFactory,
                 tasks: list[TaskSpec], *, workers: int, concurrency: int, close_timeout_s: float, jobs: int) -> None:
        self.config, self.meta, self.agents, self.tasks = config, meta, agents, tasks
        self.board = _Board.create(jobs)
        self.close_timeout_s = close_timeout_s
        self.shares = [concurrency // workers + (i < concurrency % workers) for i in range(workers)]
        self.workers: list[_Worker] = []
        self.events: asyncio.Queue[tuple[str, _Worker, Any]] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._ctx = _context(tasks)
        self._closing = False
        self.lost = 0

    @property
    def in_flight(self) -> int:
        """Episodes running in the workers (started, not finished)."""
        return sum(item.running for w in self.workers if not w.dead for item in w.outstanding.values())

    def _start(self, slots: int, lane: int) -> None:
        worker = _Worker(slots, lane)
        self.workers.append(worker)
        task = asyncio.get_running_loop().create_task(self._serve(worker), name="envgym-eval-worker")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, worker: _Worker) -> None:
        """Start one worker, send its init, then post its frames as events until it is gone."""
        try:
            sock, theirs = socket.socketpair()
            try:
                worker.process = self._ctx.Process(target=worker_main, args=(theirs,), name="envgym-eval-worker",
                                                   daemon=True)
                # in a thread: the first start waits for the fork server to import envgym
                await asyncio.to_thread(worker.process.start)
            except Exception as exc:  # the run's error (WorkerFailed, naming it), not a task's lost exception
                worker.start_error = exc
                return
            finally:
                theirs.close()
            reader, worker.writer = await asyncio.open_connection(sock=sock)
            if self._closing:  # the run ended while this worker started: it reads EOF at once and exits
                worker.writer.close()
            worker.writer.write(self._init_frame(worker.slots))
            while True:
                kind, body = await _read_frame(reader)
                self.events.put_nowait((kind, worker, body))
        except (asyncio.IncompleteReadError, ConnectionError, OSError, EOFError, pickle.UnpicklingError):
            pass
        finally:
            self.events.put_nowait(("gone", worker, None))

    def _init_frame(self, slots: int) -> bytes:
        """A worker's :class:`_Init`. It holds no task: each goes with the first batch of jobs that needs it
        (:meth:`_batch_frame`)."""
        return _frame(_Init(self.config, self.meta, self.agents, slots, self.board.path))

    def _batch_frame(self, worker: _Worker, batch: list[tuple[Any, ...]]) -> bytes:
        """A batch of jobs, with the tasks of theirs that ``worker`` has not been sent yet. Until 2026-12-03 every
        worker was sent every task at its start (~1 MB, ~20 ms to pickle and 15-60 ms to unpickle for the 77 tool
        tasks), before its first episode; a worker now unpickles only the tasks of the jobs it is given (mostly
        its lane's), as they come."""
        new = {job[1]: self.tasks[job[1]] for job in batch if job[1] not in worker.sent}
        worker.sent.update(new)
        return _frame(("jobs", batch, new))

    @staticmethod
    def _cap(slots: int) -> int:
        """The jobs a worker holds at most: its slots and a few prefetched (news comes in batches: enough to go
        on with)."""
        return slots + max(4, slots // 2)

    async def run(self, jobs: list[tuple[Any, ...]],
                  started: Callable[[int], None] | None = None) -> AsyncIterator[tuple[int, Any]]:
        """Yield ``(jid, (trajectory line, record line, outcome))`` per job, or ``(jid, WorkerLost)`` once lost too
        often."""
        lanes = _Lanes(len(self.shares), balance=self._cap(max(self.shares)) // 2)
        for job in jobs:
            lanes.add(_Outstanding(job))
        retry = collections.deque[_Outstanding]()  # lost with a worker: sent again first
        left = len(jobs)
        for lane, share in enumerate(self.shares):
            self._start(share, lane)
        while left:
            for worker in self.workers:  # top every ready worker up to its slots plus a few prefetched
                cap = self._cap(worker.slots)
                if not worker.ready or worker.dead or len(worker.outstanding) >= cap:
                    continue
                batch = []
                while len(worker.outstanding) < cap:
                    item = retry.popleft() if retry else lanes.take(worker.lane, worker.sent)
                    if item is None:
                        break
                    worker.outstanding[item.job[0]] = item
                    batch.append(item.job)
                if batch:
                    assert worker.writer is not None
                    worker.writer.write(self._batch_frame(worker, batch))
            kind, worker, body = await self.events.get()
            if kind == "events":
                began, done = body
                for jid in began:
                    if (item := worker.outstanding.get(jid)) is not None:
                        item.running = True
                        if started is not None and item.attempts == 0:
                            started(jid)
                for jid, lines in done:
                    if worker.outstanding.pop(jid, None) is not None:
                        left -= 1
                        yield jid, lines
            elif kind == "ready":
                worker.ready = True
            elif kind == "error":
                raise WorkerFailed(f"an eval worker failed outside any episode: {body}")
            elif kind == "gone" and not worker.dead:
                worker.dead = True
                code = await self._reap(worker)
                if worker.start_error is not None:
                    raise WorkerFailed(f"an eval worker could not be started: {worker.start_error!r}")
                if not worker.ready:
                    raise WorkerFailed(f"an eval worker exited ({code}) before it was ready; its error is on stderr")
                self.lost += 1
                for item in worker.outstanding.values():  # only a job that was running costs an attempt
                    if self.board[item.job[0]] == _Board.STARTED:
                        item.attempts += 1
                    item.running = False
                    self.board[item.job[0]] = 0
                    if item.attempts < MAX_ATTEMPTS:
                        retry.append(item)
                    else:
                        left -= 1
                        yield item.job[0], WorkerLost(f"the worker process running it died ({code}); "
                                                      f"{item.attempts} workers were lost with it")
                worker.outstanding.clear()
                if retry or lanes:
                    self._start(worker.slots, worker.lane)

    def _reap(self, worker: _Worker) -> asyncio.Future[str]:
        """Wait (bounded) for a worker's process to end, killing it if it will not; how it ended (one waiter
        per worker, however many ask)."""
        if worker.reaped is None:
            worker.reaped = asyncio.ensure_future(self._reap_now(worker))
        return asyncio.shield(worker.reaped)

    async def _reap_now(self, worker: _Worker) -> str:
        process = worker.process
        if process is None or process.pid is None:
            return "it never started"
        if not await self._ended(process, self.close_timeout_s):
            process.kill()
            await self._ended(process, None)
        process.join()  # it has ended: this only reaps it
        code = process.exitcode
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    @staticmethod
    async def _ended(process: Any, wait_s: float | None) -> bool:
        loop = asyncio.get_running_loop()
        ended = loop.create_future()
        loop.add_reader(process.sentinel, lambda: ended.done() or ended.set_result(None))
        try:
            async with asyncio.timeout(wait_s):
                await asyncio.shield(ended)
            return True
        except TimeoutError:
            return False
        finally:
            loop.remove_reader(process.sentinel)

    async def aclose(self) -> None:
        """Close every worker's socket (it cancels its episodes and exits) and wait for it, even when cancelled."""
        self._closing = True
        for worker in self.workers:
            worker.dead = True
            if worker.writer is not None:
                worker.writer.close()

        async def closed() -> None:
            await asyncio.gather(*self._tasks, return_exceptions=True)  # each ends at EOF, or once started
            await asyncio.gather(*(self._reap(w) for w in self.workers), return_exceptions=True)

        waiting = asyncio.ensure_future(closed())
        interrupted = False
        while not waiting.done():
            try:
                await asyncio.shield(waiting)
            except asyncio.CancelledError:
                interrupted = True
        self.board.close()
        if interrupted:
            raise asyncio.CancelledError


# -- the worker ------------------------------------------------------------------------------------------


def worker_main(sock: socket.socket) -> None:
    """A worker process: serve jobs from the parent until it closes the socket."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_work(sock))


async def _work(sock: socket.socket) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    init: _Init = await _read_frame(reader)
    board = _Board(init.board, os.stat(init.board).st_size, owner=False)
    factory = init.agents if hasattr(init.agents, "create") else build_factory(init.agents)
    jobs: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    tasks: dict[int, TaskSpec] = {}  # by number, as the parent sends them (with the first job of each)
    began: list[int] = []
    done: list[tuple[int, tuple[bytes, bytes]]] = []
    main = asyncio.current_task()
    assert main is not None
    loop = asyncio.get_running_loop()

    async def receive() -> None:
        try:
            while True:
                _, batch, new = await _read_frame(reader)
                tasks.update(new)
                for job in batch:
                    jobs.put_nowait(job)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            main.cancel()  # the parent is done with us (or gone): stop every episode

    timer: asyncio.TimerHandle | None = None

    def flush() -> None:
        nonlocal timer
        if timer is not None:
            timer.cancel()
            timer = None
        if began or done:
            writer.write(_frame(("events", (began[:], done[:]))))
            began.clear()
            done.clear()

    since = 0.0  # when the oldest news not yet sent came

    def note() -> None:  # news waits up to FLUSH_S for more (see the module docstring)
        # checked here too, not only by the timer: a timer runs at a turn of the loop, which may come only once
        # every slot has played an episode
        nonlocal timer, since
        if timer is None:
            since = loop.time()
            timer = loop.call_later(FLUSH_S, flush)
        elif len(done) >= 64 or loop.time() - since >= FLUSH_S:
            flush()

    async def slot(pool: EpisodePool) -> None:
        """Play jobs one after another (see the module docstring): an episode is marked ended on the board before
        the slot starts another, which may kill the worker (a finished episode lost with it would be charged an
        attempt)."""
        config = init.config
        while True:
            if jobs.empty():  # short of jobs: the parent tops us up when it hears what ended
                flush()
            jid, task_index, suite, run_index, attempt = await jobs.get()
            task = tasks[task_index]
            key = (suite, task, run_index, attempt)
            # on the board before the episode runs: one that kills the worker before it first yields to the
            # loop (the env's work all inline) is known to have been running, and costs an attempt
            board[jid] = _Board.STARTED
            began.append(jid)
            note()
            trajectory = await pool.run_one(Job(task, seed=episode_seed(config, task, run_index), key=key,
                                                max_steps=config.max_steps, step_timeout_s=config.step_timeout_s))
            record = eval_records.record_of(init.meta, key, trajectory)  # the module's, as called (replaceable)
            done.append((jid, (json_line(trajectory), json_line(record), record.outcome.value)))
            board[jid] = _Board.ENDED  # lost with the worker now, it runs again free
            note()
            if writer.transport.get_write_buffer_size() > 1 << 20:
                await writer.drain()
            else:  # the loop's turn: frames in and out, timers; the other slots play meanwhile
                await asyncio.sleep(0)

    receiving = asyncio.create_task(receive())
    try:
        async with EpisodePool(factory, concurrency=init.slots, make_env=env_maker(init.config)) as pool:
            writer.write(_frame(("ready", None)))
            with run_heap():
                async with asyncio.TaskGroup() as group:
                    for _ in range(init.slots):
                        group.create_task(slot(pool))
    except asyncio.CancelledError:
        pass
    except Exception as exc:  # not an episode's failure (those are records): the run stops with it
        while isinstance(exc, ExceptionGroup):  # a slot's, through the task group
            exc = exc.exceptions[0]
        with contextlib.suppress(Exception):
            writer.write(_frame(("error", f"{type(exc).__name__}: {exc}")))
            await writer.drain()
    finally:
        receiving.cancel()
        with contextlib.suppress(BaseException):
            await receiving
        with contextlib.suppress(Exception):
            await factory.aclose()
        board.close()
        writer.close()
