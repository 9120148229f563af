"""Recorded episodes: one envgym episode played through the recording proxy, as trajectory plus training samples.

Every trainer adapter runs episodes the same way::

    async with RecordingProxy(backend) as proxy:
        episode = await run_recorded_episode(proxy, task, group_id="step3:0", seed=7)
        episode.trajectory      # the envgym Trajectory (verdict, outcome, token_data attached)
        episode.samples         # TrainingSamples, one per token segment (envgym.rl.samples)
        episode.reward          # the envgym verdict's score (0.0 for an infra error)

The agent is envgym's own ``openai`` agent pointed at the proxy's per-episode session
(:class:`~envgym.rl.agents.RecordingAgentFactory`), so the policy sees
exactly what an evaluation shows it (system prompt with the env's policy, tools, tool results) and every
generated token is the backend's sampled token, never a re-tokenisation. The env comes from ``make_env``
(``envgym.make`` by default) and is closed after the episode; a failed episode is an ``infra_error``
trajectory (reward 0), never an exception.

:class:`LoopThread` runs an event loop in a daemon thread, for trainers whose loop is synchronous (TRL):
the proxy and the episodes live on it, the trainer blocks on :meth:`LoopThread.run`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from envgym.compose import make
from envgym.env import Env
from envgym.rollout import run_episode
from envgym.task import TaskSpec
from envgym.trajectory import Trajectory
from envgym.vector.pool import Job, failed_trajectory

if TYPE_CHECKING:
    from envgym.rl.proxy import RecordingProxy
    from envgym.rl.samples import TrainingSample

T = TypeVar("T")


@dataclass(frozen=True)
class RecordedEpisode:
    """One episode played through the proxy: what the env saw and what the trainer trains on."""

    trajectory: Trajectory
    samples: list[TrainingSample]
    session: str

    @property
    def reward(self) -> float:
        return self.trajectory.reward


async def run_recorded_episode(proxy: RecordingProxy, task: TaskSpec, *, group_id: str, seed: int | None = None,
                               temperature: float = 1.0, max_tokens: int | None = 256,
                               make_env: Callable[[str], Env] = make,
                               episode_id: str | None = None, images: bool = False) -> RecordedEpisode:
    """Play ``task`` with the proxy's policy and return the trajectory and its training samples; with
    ``images`` the agent sends the observations' screenshots (the proxy's backend must be a VLM's)."""
    from envgym.rl.agents import RecordingAgentFactory
    from envgym.rl.samples import samples_from_episode

    agent = RecordingAgentFactory(proxy, temperature=temperature, max_tokens=max_tokens, images=images).create(task)
    try:
        env = make_env(task.env_id)
    except Exception as exc:  # an env that cannot be built is an infra error, as in the pool
        await agent.close()
        trajectory = failed_trajectory(Job(task, seed=seed), exc)
    else:
        try:
            trajectory = await run_episode(env, agent, task, seed=seed)  # closes the agent and its session
        finally:
            await env.close()
    samples = samples_from_episode(trajectory, group_id=group_id, episode_id=episode_id or agent.session_key)
    return RecordedEpisode(trajectory=trajectory, samples=samples, session=agent.session_key)


class LoopThread:
    """An asyncio loop in a daemon thread; ``run(coro)`` blocks the caller until the coroutine is done."""

    def __init__(self, name: str = "envgym-adapter-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if not self._thread.is_alive():
            coro.close()
            raise RuntimeError("the adapter's event loop is closed")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the loop (after its pending callbacks) and join the thread. Idempotent."""
        if not self._thread.is_alive():
            return

        async def drain() -> None:
            await self.loop.shutdown_asyncgens()
            await self.loop.shutdown_default_executor()

        asyncio.run_coroutine_threadsafe(drain(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.loop.close()
