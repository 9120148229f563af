"""The async vector layer: many episodes at once, none waiting for the slowest.

Three ways to run many episodes, one module each:

- **lockstep** (:class:`AsyncVectorEnv`, sync facade :class:`GymnasiumVectorEnv`): Gymnasium's
  ``VectorEnv`` API and autoreset semantics; every batched step waits for all sub-envs. Use it for
  Gymnasium code and RL loops that want fixed-shape batches.
- **pool** (:class:`EpisodePool`): the everlasting pool. Each episode runs with its own agent under the
  task's deadlines; a finished one is replaced from the task iterator at once and its trajectory streams
  out. Use it for evaluation (``envgym eval`` runs on it) and for rollouts with self-contained agents.
- **channel** (:class:`Channel`): send/recv for trainers that own the policy. Episodes run
  independently; ``recv`` returns whichever are waiting for an action, ``send`` answers them by id.
  Use it to batch model calls across episodes without lockstep's wait for the slowest.

On many hosts, :class:`envgym.vector.ray.RayEpisodePool` (``envgym[ray]``; imported from its module, since
Ray is optional) is the pool's interface over a Ray cluster: one actor per host runs that host's pool.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envgym.vector.channel import Batch, Channel, Ready, UnknownEpisode
    from envgym.vector.lockstep import AsyncVectorEnv, GymnasiumVectorEnv
    from envgym.vector.pool import EpisodePool, Finished, Job

_HOMES = {"Batch": "channel", "Channel": "channel", "Ready": "channel", "UnknownEpisode": "channel",
          "AsyncVectorEnv": "lockstep", "GymnasiumVectorEnv": "lockstep",
          "EpisodePool": "pool", "Finished": "pool", "Job": "pool"}
"""Each name's module, imported when the name is first asked for: ``envgym.vector.pool`` alone (what ``envgym
eval`` and its worker processes use) does not bring in Gymnasium, which the Channel and lockstep modules import
and which registers every installed env with it (every family's plug-in loaded: ~0.3 s a process)."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'envgym.vector' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"envgym.vector.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AsyncVectorEnv",
    "Batch",
    "Channel",
    "EpisodePool",
    "Finished",
    "GymnasiumVectorEnv",
    "Job",
    "Ready",
    "UnknownEpisode",
]
