"""Pool mode, the everlasting pool: every episode advances on its own, none waits for the slowest.

``EpisodePool`` keeps at most ``concurrency`` episodes in flight. Each slot pulls the next task from an
iterator (sync or async, pulled lazily) the moment its episode ends, runs it with
:func:`~envgym.rollout.run_episode` (the task's step and episode deadlines, its failure attribution) and
streams the trajectory out as soon as it exists::

    async with EpisodePool(OracleFactory(), concurrency=64) as pool:
        async for trajectory in pool.run(tasks):           # in finishing order
            ...
        async for done in pool.run_jobs(jobs):             # Job(task, seed, key, agent) -> Finished(job, trajectory)
            ...
        trajectory = await pool.run_one(job)               # one episode, under the same bound

Guarantees:

- Every task pulled from the iterator yields exactly one trajectory (unless the run is cancelled or the
  consumer stops early): an env that cannot be built, an agent that cannot be created, an env or agent
  that crashes or hangs past its deadline all become an ``infra_error`` trajectory, never a stopped pool.
- An env whose episode ended in ``infra_error`` is closed and replaced by a fresh one (built lazily by
  ``make_env(env_id)``, ``envgym.make`` by default); healthy envs are reused across episodes and runs.
- A watchdog backs the task's own deadlines: an episode still running ``grace_s`` after its
  ``episode_timeout_s`` is cancelled and recorded as ``infra_error``. Closing an env is bounded by
  ``close_timeout_s``.
- Cancellation (Ctrl-C under ``asyncio.run``) or leaving ``async with`` cancels every episode, closes
  every env (and so its sandbox) and leaves no asyncio task behind. A consumer that breaks out of
  ``async for`` early should hold the stream in ``contextlib.aclosing`` or exit the pool's ``async with``.
- Errors that are bugs rather than episodes (the task iterator raising) stop the run and propagate.

Order: an iterator (sync or async) is pulled lazily, in its own order. A list or tuple is known in full, so
when any of its jobs carries :attr:`Job.cost_hint` the pool starts them longest-processing-time-first
(:func:`longest_first`): a finite run ends with a drain, slots idling while the last episodes finish, and
a long episode started last stretches it by its whole length; started first, it overlaps the short ones.
Without a hint the given order is kept. Ordering changes nothing else: exactly one trajectory per job.

Agents come from ``agents.create(task)`` (an :class:`~envgym.agent.AgentFactory`, which the pool does not
close) unless a :class:`Job` brings its own. Several runs may share one pool; ``concurrency`` bounds the
episodes of all of them together.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from envgym.agent import Agent, AgentFactory
from envgym.compose import make
from envgym.env import Env
from envgym.errors import EnvError, EnvgymError, PolicyError, SpecError
from envgym.rollout import run_episode
from envgym.task import TaskSpec
from envgym.trajectory import Trajectory
from envgym.types import Blame, Outcome

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Job:
    """One episode to run: the task, its seed, a caller's ``key`` handed back with the result, optionally
    the agent to play it (otherwise the pool's factory builds one) and run settings for
    :func:`~envgym.rollout.run_episode` (a step cap, a per-step deadline) that leave the task as it is."""

    task: TaskSpec
    seed: int | None = None
    key: Any = None
    agent: Agent | None = None
    max_steps: int | None = None
    step_timeout_s: float | None = None
    cost_hint: float | None = None
    """How long the episode is expected to take, in any unit shared by the jobs of one run (seconds, steps,
    a previous attempt's wall time): only compared with other jobs' hints, to start the longest first when
    the jobs come as a list (see the module docstring). None: unknown."""

    def __post_init__(self) -> None:
        if self.cost_hint is not None and not 0 <= self.cost_hint < math.inf:
            raise SpecError(f"cost_hint must be a finite number >= 0, not {self.cost_hint!r}", field="cost_hint")


class Finished(NamedTuple):
    job: Job
    trajectory: Trajectory


Jobs = Iterable[TaskSpec | Job] | AsyncIterable[TaskSpec | Job]


def longest_first(jobs: Sequence[TaskSpec | Job]) -> Sequence[TaskSpec | Job]:
    """``jobs`` in the order a pool starts them: those with a :attr:`Job.cost_hint`, largest first, then
    those without; ties and unhinted jobs keep their given order. Without any hint, ``jobs`` itself."""
    if not any(isinstance(job, Job) and job.cost_hint is not None for job in jobs):
        return jobs
    return sorted(jobs, key=_hint_order)  # stable: equal keys keep their given order


def _hint_order(job: TaskSpec | Job) -> tuple[int, float]:
    hint = job.cost_hint if isinstance(job, Job) else None
    return (1, 0.0) if hint is None else (0, -hint)


def failed_trajectory(job: Job, error: BaseException) -> Trajectory:
    """The ``infra_error`` trajectory of an episode that could not run (or finish) at all."""
    task = job.task
    return Trajectory(task_id=task.id, task_hash=task.hash, env_id=task.env_id, seed=job.seed,
                      outcome=Outcome.INFRA_ERROR, error=f"{type(error).__name__}: {error}",
                      error_type=type(error).__name__, blame=Blame.INFRA)


class EpisodePool:
    """A bounded, self-refilling pool of episodes; see the module docstring."""

    def __init__(self, agents: AgentFactory | None = None, *, concurrency: int = 8,
                 make_env: Callable[[str], Env] = make, grace_s: float = 60.0, close_timeout_s: float = 30.0) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.agents = agents
        self.concurrency = concurrency
        self.make_env = make_env
        self.grace_s = grace_s
        self.close_timeout_s = close_timeout_s
        self.in_flight = 0
        self._slots = asyncio.Semaphore(concurrency)
        self._idle: dict[str, list[Env]] = {}
        self._open: set[Env] = set()
        self._workers: set[asyncio.Task[None]] = set()
        self._ids = itertools.count()

    @property
    def open_envs(self) -> int:
        """Envs built and not yet closed (busy or idle)."""
        return len(self._open)

    async def run(self, tasks: Jobs) -> AsyncIterator[Trajectory]:
        """Run every task; yield each trajectory as its episode ends."""
        async with contextlib.aclosing(self.run_jobs(tasks)) as stream:
            async for done in stream:
                yield done.trajectory

    async def run_jobs(self, jobs: Jobs) -> AsyncIterator[Finished]:
        """Run every job; yield ``Finished(job, trajectory)`` as each episode ends."""
        source = _Source(jobs)
        out: asyncio.Queue[Finished | BaseException | None] = asyncio.Queue(maxsize=self.concurrency)
        workers = [asyncio.create_task(self._worker(source, out), name=f"envgym-pool-{next(self._ids)}")
                   for _ in range(self.concurrency)]
        self._workers.update(workers)
        running = len(workers)
        try:
            while running:
                item = await out.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            await _cancel_and_wait(workers)
            self._workers.difference_update(workers)

    async def run_one(self, job: TaskSpec | Job) -> Trajectory:
        """Run one job under the pool's concurrency bound (waiting for a slot) and return its trajectory.
        Cancelling the call cancels the episode and closes its env; several calls may run at once."""
        job = job if isinstance(job, Job) else Job(job)
        async with self._slots:
            self.in_flight += 1
            try:
                return await self._episode(job)
            finally:
                self.in_flight -= 1

    async def _worker(self, source: _Source, out: asyncio.Queue[Finished | BaseException | None]) -> None:
        try:
            while (job := await source.next()) is not None:
                done = Finished(job, await self.run_one(job))
                await out.put(done)
        except Exception as exc:  # not an episode's failure (those are trajectories): stop the run with it
            await out.put(exc)
        else:
            await out.put(None)

    async def _episode(self, job: Job) -> Trajectory:
        env_id = job.task.env_id
        try:
            env = self._acquire(env_id)
        except Exception as exc:
            return failed_trajectory(job, exc if isinstance(exc, EnvgymError) else EnvError(
                f"could not build env {env_id!r}: {exc!r}"))
        healthy = False
        try:
            try:
                agent = job.agent or self._create_agent(job.task)
            except Exception as exc:
                healthy = True  # the env was never touched
                return failed_trajectory(job, exc)
            limit = job.task.limits.episode_timeout_s
            try:
                async with asyncio.timeout(None if limit is None else limit + self.grace_s):
                    trajectory = await run_episode(env, agent, job.task, seed=job.seed, max_steps=job.max_steps,
                                                   step_timeout_s=job.step_timeout_s)
            except TimeoutError:
                return failed_trajectory(job, EnvError(
                    f"episode did not end within its {limit:g}s deadline plus {self.grace_s:g}s grace"))
            except Exception as exc:  # e.g. an agent's close() raising after the episode
                return failed_trajectory(job, exc)
            healthy = trajectory.error is None  # whoever broke it, an env that raised is not handed out again
            return trajectory
        finally:
            if healthy:
                self._idle.setdefault(env_id, []).append(env)
            else:
                await self._discard(env)

    def _create_agent(self, task: TaskSpec) -> Agent:
        if self.agents is None:
            raise PolicyError("the pool has no agent factory and the job brings no agent")
        return self.agents.create(task)

    def _acquire(self, env_id: str) -> Env:
        idle = self._idle.get(env_id)
        if idle:
            return idle.pop()
        env = self.make_env(env_id)
        self._open.add(env)
        return env

    async def _discard(self, env: Env) -> None:
        self._open.discard(env)
        try:
            async with asyncio.timeout(self.close_timeout_s):
                await env.close()
        except Exception as exc:  # a broken env must not take the pool down; it is gone either way
            log.warning("closing %r failed: %r", env, exc)

    async def aclose(self) -> None:
        """Cancel every running episode and close every env. Idempotent; the pool stays usable."""
        await _cancel_and_wait(list(self._workers))
        idle = [env for envs in self._idle.values() for env in envs]
        self._idle.clear()
        for env in idle:
            await self._discard(env)

    async def __aenter__(self) -> EpisodePool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Source:
    """The shared job iterator: sync or async, pulled lazily (async ones one caller at a time); a list or
    tuple in :func:`longest_first` order."""

    def __init__(self, jobs: Jobs) -> None:
        if isinstance(jobs, list | tuple):
            jobs = longest_first(jobs)
        self._sync = iter(jobs) if isinstance(jobs, Iterable) else None
        self._async = None if isinstance(jobs, Iterable) else aiter(jobs)
        self._lock = asyncio.Lock()
        self._done = False

    async def next(self) -> Job | None:
        if self._done:
            return None
        if self._sync is not None:
            item = next(self._sync, None)
        else:
            async with self._lock:
                item = None if self._done else await anext(self._async, None)  # type: ignore[arg-type]
        if item is None:
            self._done = True
            return None
        return item if isinstance(item, Job) else Job(item)


async def _cancel_and_wait(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until all have finished their cleanup, even if we are cancelled meanwhile."""
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    interrupted = False
    while pending:
        try:
            await asyncio.wait(pending)
        except asyncio.CancelledError:
            interrupted = True
        pending = [t for t in pending if not t.done()]
    for task in tasks:  # retrieve results so none is reported as never retrieved
        if not task.cancelled():
            task.exception()
    if interrupted:
        raise asyncio.CancelledError
