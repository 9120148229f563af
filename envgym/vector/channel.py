"""send/recv: the trainer owns the policy and batches it across episodes; the envs run independently.

A :class:`Channel` runs its tasks in an :class:`~envgym.vector.pool.EpisodePool` whose agent is the
channel itself: an episode that needs an action parks its observation and waits. ``recv`` hands the
trainer whichever episodes are waiting (a dynamic batch), ``send`` answers them by episode id, and each
episode resumes the moment its action arrives, whatever the others do (the EnvPool idea)::

    async with Channel(tasks, concurrency=64) as channel:
        while True:
            batch = await channel.recv(min_batch=16, max_wait=0.05)
            channel.send({r.episode_id: policy(r) for r in batch.ready})   # one batched model call
            for episode_id, trajectory in batch.finished.items(): ...
            if batch.done:
                break

``recv(min_batch, max_wait, max_batch)`` returns when ``min_batch`` episodes are ready, or when
``max_wait`` seconds have passed (then with what is ready, possibly nothing), or at once when fewer
than ``min_batch`` could ever become ready without the trainer (the rest are waiting on ``send``, or
the task iterator is exhausted). ``Ready`` carries the episode id, its task, the observation, the step
index and, at step 0 only, the reset info (``info["tools"]``: the OpenAI tool schemas). Ended episodes
arrive once, as trajectories in ``batch.finished`` (rewards and verdicts are there); ``batch.done``
means nothing more will ever arrive.

Deadlines are the pool's: the time an observation waits for its action counts against the task's
``step_timeout_s`` (the policy is slow), and an episode past it ends as ``infra_error``. ``send`` for
such an episode is ignored; ``send`` for an id never handed out raises :class:`UnknownEpisode`. Actions
are ``Action`` objects or the Gymnasium facade's text/JSON forms. Leaving ``async with`` (or cancelling)
cancels every episode and closes every env. Tasks may be :class:`~envgym.vector.pool.Job` objects (their
step cap, step deadline and seed are kept); a list of them with ``cost_hint`` starts longest first, as in
the pool.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from envgym.agent import Agent
from envgym.compose import make
from envgym.env import Env
from envgym.errors import EnvgymError
from envgym.gym import parse_action
from envgym.task import TaskSpec
from envgym.trajectory import Trajectory
from envgym.types import Action, Observation
from envgym.vector.pool import EpisodePool, Job, Jobs, _Source


class UnknownEpisode(EnvgymError, KeyError):
    """``send`` named an episode id that ``recv`` never handed out."""


@dataclass(frozen=True, slots=True)
class Ready:
    """An episode waiting for its next action."""

    episode_id: int
    task: TaskSpec
    observation: Observation
    step: int
    info: dict[str, Any] = field(default_factory=dict)
    """The reset info at step 0 (tools, policy); empty afterwards."""


@dataclass(frozen=True, slots=True)
class Batch:
    ready: list[Ready]
    finished: dict[int, Trajectory]
    done: bool
    """No episode is running or left to start, and every trajectory has been handed out."""


class Channel:
    """Episodes driven by ``send``/``recv``; see the module docstring."""

    def __init__(self, tasks: Jobs, *, concurrency: int = 8, make_env: Callable[[str], Env] = make,
                 grace_s: float = 60.0) -> None:
        self.pool = EpisodePool(concurrency=concurrency, make_env=make_env, grace_s=grace_s)
        self._source = _Source(tasks)
        self._ids = itertools.count()
        self._issued = 0
        self._live = 0  # episodes started and not yet finished
        self._waiting: dict[int, _ChannelAgent] = {}  # parked or handed out, awaiting send (each holds its future)
        self._ready: dict[int, Ready] = {}  # parked, not yet handed out
        self._finished: dict[int, Trajectory] = {}
        self._changed = asyncio.Event()
        self._pump_task: asyncio.Task[None] | None = None
        self._pump_done = False
        self._error: Exception | None = None

    async def __aenter__(self) -> Channel:
        self._pump_task = asyncio.create_task(self._pump(), name="envgym-channel")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Cancel every episode and close every env. Idempotent."""
        if self._pump_task is not None:
            self._pump_task.cancel()
            try:
                await self._pump_task
            except asyncio.CancelledError:
                if not self._pump_task.cancelled():
                    raise
        await self.pool.aclose()

    async def _pump(self) -> None:
        try:
            async for job, trajectory in self.pool.run_jobs(_ChannelJobs(self)):
                self._live -= 1
                self._finished[job.key] = trajectory
                self._changed.set()
        except Exception as exc:  # the task iterator failed: recv raises it
            self._error = exc
        finally:
            self._pump_done = True
            self._changed.set()

    async def recv(self, *, min_batch: int = 1, max_wait: float | None = None,
                   max_batch: int | None = None) -> Batch:
        """Wait for a batch of episodes needing actions; see the module docstring."""
        if self._pump_task is None:
            raise RuntimeError("use the channel as 'async with Channel(...) as channel'")
        loop = asyncio.get_running_loop()
        deadline = None if max_wait is None else loop.time() + max_wait
        await asyncio.sleep(0)  # always a yield point: a trainer polling in a loop must not starve the episodes
        while True:
            self._changed.clear()
            if self._error is not None:
                raise self._error
            could_start = 0 if self._pump_done or self._source._done else self.pool.concurrency - self._live
            handed_out = len(self._waiting) - len(self._ready)
            reachable = self._live + could_start - handed_out  # ready now, or may become ready without send
            if len(self._ready) >= max(1, min(min_batch, reachable)) or reachable <= 0:
                break
            if deadline is not None and loop.time() >= deadline:
                break
            try:
                async with asyncio.timeout_at(deadline):
                    await self._changed.wait()
            except TimeoutError:
                pass
        if max_batch is None or len(self._ready) <= max_batch:
            handed, self._ready = list(self._ready.values()), {}
        else:
            handed = list(self._ready.values())[:max_batch]
            for ready in handed:
                del self._ready[ready.episode_id]
        finished, self._finished = self._finished, {}
        done = self._pump_done and self._live == 0 and not self._ready
        return Batch(ready=handed, finished=finished, done=done)

    def send(self, actions: Mapping[int, Any]) -> None:
        """Answer handed-out episodes: ``{episode_id: action}``."""
        ready, waiting = self._ready, self._waiting
        for episode_id, action in actions.items():
            agent = None if episode_id in ready else waiting.pop(episode_id, None)
            if agent is None:
                if 0 <= episode_id < self._issued and episode_id not in ready:
                    continue  # answered already, or the episode ended meanwhile (deadline, crash)
                raise UnknownEpisode(f"episode {episode_id} was not handed out by recv()")
            future = agent.future
            if not future.done():
                future.set_result(action if type(action) is Action else parse_action(action, agent.step + 1))


class _ChannelJobs:
    """The pool's job iterator: numbers each task and gives it the channel's agent (an async iterator,
    not an async generator, so nothing is left to finalise when a run is cancelled)."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def __aiter__(self) -> _ChannelJobs:
        return self

    async def __anext__(self) -> Job:
        channel = self._channel
        job = await channel._source.next()
        if job is None:
            raise StopAsyncIteration
        episode_id = next(channel._ids)
        channel._issued = episode_id + 1
        channel._live += 1
        return Job(job.task, seed=job.seed, key=episode_id, agent=_ChannelAgent(channel, episode_id, job.task),
                   max_steps=job.max_steps, step_timeout_s=job.step_timeout_s, cost_hint=job.cost_hint)


class _ChannelAgent(Agent):
    """The channel's stand-in agent for one episode: parks observations, returns what ``send`` gives.

    Per step (the channel's hot path): one future, one ``Ready``, one entry in each of the channel's two
    dicts, which ``recv`` and ``send`` remove on the way; only an episode ended while it waits (a deadline,
    cancellation) removes its own."""

    name = "channel"

    def __init__(self, channel: Channel, episode_id: int, task: TaskSpec) -> None:
        super().__init__()
        self._channel = channel
        self._episode_id = episode_id
        self._task = task
        self._info: dict[str, Any] = {}
        self.step = 0
        self.future: asyncio.Future[Action] | None = None

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        self._info = info

    async def act(self, observation: Observation) -> Action:
        channel, episode_id, step = self._channel, self._episode_id, self.step
        self.future = future = asyncio.get_running_loop().create_future()
        channel._ready[episode_id] = Ready(episode_id, self._task, observation, step, self._info if step == 0 else {})
        channel._waiting[episode_id] = self
        channel._changed.set()
        try:
            action = await future
        except BaseException:  # ended while waiting: nobody else will remove it
            channel._ready.pop(episode_id, None)
            channel._waiting.pop(episode_id, None)
            raise
        self.step = step + 1
        return action
