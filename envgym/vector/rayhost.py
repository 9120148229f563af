"""The host side of :mod:`envgym.vector.ray`: the actor placed on each envgym host (a Ray node offering
:data:`HOST_RESOURCE`), which runs that host's own :class:`~envgym.vector.pool.EpisodePool` and builds its
agents there. The driver (:class:`~envgym.vector.ray.RayEpisodePool`) pushes jobs to it in batches and
collects finished trajectories in batches; the envs, their sandboxes and warm container pools never leave
the actor's process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from typing import Any

from envgym.agent import AgentFactory
from envgym.env import Env
from envgym.errors import SpecError
from envgym.trajectory import Trajectory
from envgym.vector.pool import EpisodePool, Job, _cancel_and_wait, failed_trajectory

HOST_RESOURCE = "envgym_host"
"""The custom resource that makes a Ray node an envgym host; its amount is the host's episode slots."""

AgentSource = Any
"""What hosts build their agents from: an ``AgentConfig``, a picklable ``AgentFactory``, a zero-argument
callable returning one, or None (every job brings a picklable agent)."""

def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise SpecError("the Ray backend needs Ray: pip install 'envgym[ray]'") from exc
    return ray


def _agent_factory(agents: AgentSource) -> AgentFactory | None:
    if agents is None or hasattr(agents, "create"):
        return agents
    from envgym.agents import build_factory
    from envgym.types import FrozenModel

    if isinstance(agents, FrozenModel):  # an AgentConfig
        return build_factory(agents)  # type: ignore[arg-type]
    if callable(agents):
        return agents()
    raise SpecError(f"agents must be an AgentConfig, an AgentFactory or a callable returning one, not "
                    f"{type(agents).__name__}", field="agents")

class _Host:
    """The actor on one host: its own EpisodePool (and agent factory); the envs never leave this process.

    Jobs arrive in batches (``push``) and finished trajectories leave in batches (``collect``, a long poll):
    one round trip carries as many episodes as finished meanwhile, so the per-episode cost stays far below a
    Ray call's when episodes are short and many."""

    def __init__(self, agents: AgentSource, make_env: Callable[[str], Env], slots: int, grace_s: float,
                 close_timeout_s: float) -> None:
        import ray

        self.label = f"{socket.gethostname()}:{ray.get_runtime_context().get_node_id()[:8]}"
        self.factory = _agent_factory(agents)
        self.pool = EpisodePool(self.factory, concurrency=slots, make_env=make_env, grace_s=grace_s,
                                close_timeout_s=close_timeout_s)
        self.running: dict[int, asyncio.Task[None]] = {}
        self.results: dict[int, Trajectory] = {}
        self.finished = asyncio.Event()
        self.episodes = 0

    async def info(self) -> dict[str, Any]:
        return {"label": self.label, "pid": os.getpid(), "slots": self.pool.concurrency}

    async def stats(self) -> dict[str, Any]:
        return {"in_flight": self.pool.in_flight, "open_envs": self.pool.open_envs, "episodes": self.episodes,
                "active": len(self.running), "uncollected": len(self.results)}

    async def push(self, jobs: list[tuple[int, Job]]) -> None:
        for jid, job in jobs:
            self.running[jid] = asyncio.ensure_future(self._run(jid, job))

    async def _run(self, jid: int, job: Job) -> None:
        try:
            trajectory = await self.pool.run_one(job)
        except Exception as exc:  # run_one makes every episode's failure a trajectory; this is a bug, still one
            trajectory = failed_trajectory(job, exc)
        finally:
            self.running.pop(jid, None)
        self.episodes += 1
        self.results[jid] = trajectory.model_copy(update={"host": self.label})
        self.finished.set()

    async def collect(self, wait_s: float) -> list[tuple[int, Trajectory]]:
        """Every trajectory finished since the last call; waits up to ``wait_s`` for one if there is none."""
        if not self.results:
            self.finished.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.finished.wait(), wait_s)
        done, self.results = list(self.results.items()), {}
        return done

    async def cancel(self, jids: list[int]) -> None:
        """Cancel these episodes (closing their envs) and forget their results."""
        await _cancel_and_wait([task for jid in jids if (task := self.running.get(jid)) is not None])
        for jid in jids:
            self.results.pop(jid, None)

    async def shutdown(self) -> dict[str, Any]:
        """Cancel every episode, close every env (so every sandbox) and the agent factory."""
        await _cancel_and_wait(list(self.running.values()))
        self.results.clear()
        await self.pool.aclose()
        if self.factory is not None:
            with contextlib.suppress(Exception):
                await self.factory.aclose()
        return await self.stats()
