"""The reaper: removes the containers whose owner is gone.

Every container envgym starts carries labels naming its run, its owner process and an expiry
(:mod:`envgym.sandbox.labels`, whose names this module re-exports). :func:`reap` removes the managed containers
whose expiry has passed or whose owner process on this host is gone. A :class:`~envgym.sandbox.pool.SandboxPool`
runs it when it starts; ``envgym sandbox gc`` runs it by hand. Independently, PID 1's child in each container is
a ``sleep`` of its lifetime, so even a container nobody reaps ends by itself.
"""

from __future__ import annotations

from envgym.sandbox.dockerengine import DockerEngine, remove
from envgym.sandbox.labels import (
    EXPIRES,
    EXPIRY_SLACK_S,
    MANAGED,
    OWNER_HOST,
    OWNER_PID,
    OWNER_START,
    RUN,
    default_run_id,
    orphan_reason,
    owner_labels,
    process_start,
)

__all__ = ["EXPIRES", "EXPIRY_SLACK_S", "MANAGED", "OWNER_HOST", "OWNER_PID", "OWNER_START", "RUN",
           "default_run_id", "orphan_reason", "owner_labels", "process_start", "reap"]


async def reap(engine: DockerEngine, *, now: float | None = None) -> list[tuple[str, str]]:
    """Remove orphaned envgym containers; returns (container id, reason) for each one removed."""
    containers = await engine.call("containers", all=True, filters={"label": f"{MANAGED}=1"})
    removed = []
    for c in containers:
        reason = orphan_reason(c.get("Labels") or {}, now=now)
        if reason is not None and await remove(engine, c["Id"]):
            removed.append((c["Id"][:12], reason))
    return removed
