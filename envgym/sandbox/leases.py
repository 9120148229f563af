"""Loop-shared warm pools: fresh sandboxes leased to envs, one pool per kind of sandbox and event loop.

Envs that run every episode in a container of their own (a fresh one each reset, never reused) share one
:class:`~envgym.sandbox.pool.SandboxPool` per ``key`` (an image tag, or the image plus what its start does)
on the running loop::

    await leases.hold(key, factory)                 # from the env's first reset: keep the pool warm for it
    sandbox = await leases.lease(key, factory)      # a started sandbox nobody used (the pool refills)
    await leases.release(key, sandbox)              # stopped in the background, never handed out again
    await leases.unhold(key)                        # at the env's close; the last use closes the pool

``factory(engine)`` makes one unstarted sandbox on the pool's :class:`~envgym.sandbox.docker.DockerEngine`;
a subclass whose ``start`` does more (fills a workdir, brings up a desktop) makes the pool hand out sandboxes
already prepared, the preparation paid in the background. Each holder adds :data:`SPARE_PER_HOLDER` started
spares, capped at :data:`MAX_SPARE`. The first lease of a key reaps orphans of dead runs first. A released
sandbox is stopped :data:`STOP_DELAY_S` later: a release is usually followed at once by the next reset, and
the removal's work on the engine would slow it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from envgym.sandbox.dockerengine import DockerEngine
from envgym.sandbox.pool import SandboxPool
from envgym.sandbox.reaper import reap

if TYPE_CHECKING:
    from envgym.sandbox.base import Sandbox

Factory = Callable[["DockerEngine"], "Sandbox"]
SPARE_PER_HOLDER = 2
MAX_SPARE = 12
STOP_DELAY_S = 0.25


class _Shared:
    def __init__(self, key: str, factory: Factory) -> None:
        self.engine = DockerEngine()
        self.pool = SandboxPool(key, size=SPARE_PER_HOLDER, factory=lambda: factory(self.engine))
        self.users = self.holders = 0
        self.stopping: set[asyncio.Task[None]] = set()
        self.hurry = asyncio.Event()
        self.reaped: asyncio.Future[object] = asyncio.ensure_future(reap(self.engine))

    def resize(self, spare_per_holder: int) -> None:
        self.pool.size = max(1, min(MAX_SPARE, spare_per_holder * self.holders))


_shared: dict[tuple[int, str], _Shared] = {}


def _use(key: str, factory: Factory) -> tuple[tuple[int, str], _Shared]:
    full = (id(asyncio.get_running_loop()), key)
    shared = _shared.get(full)
    if shared is None:
        shared = _shared[full] = _Shared(key, factory)
    shared.users += 1
    return full, shared


async def hold(key: str, factory: Factory, *, spare: int = SPARE_PER_HOLDER) -> None:
    """Keep ``key``'s pool open, with ``spare`` more started sandboxes, until :func:`unhold`."""
    _, shared = _use(key, factory)
    shared.holders += 1
    shared.resize(spare)


async def unhold(key: str, *, spare: int = SPARE_PER_HOLDER) -> None:
    full = (id(asyncio.get_running_loop()), key)
    shared = _shared.get(full)
    if shared is not None:
        shared.holders -= 1
        shared.resize(spare)
    await _drop(full)


async def lease(key: str, factory: Factory) -> Sandbox:
    """A started sandbox of ``key`` that nobody used; give it back with :func:`release`."""
    full, shared = _use(key, factory)
    try:
        await asyncio.shield(shared.reaped)
        return await shared.pool.acquire()
    except BaseException:
        await _drop(full)
        raise


async def release(key: str, sandbox: Sandbox | None) -> None:
    """Stop ``sandbox`` in the background and drop one use of ``key``'s pool; the last use waits for every
    removal and closes the pool."""
    full = (id(asyncio.get_running_loop()), key)
    shared = _shared.get(full)
    try:
        if sandbox is not None:
            if shared is None:
                await sandbox.stop()
            else:
                task = asyncio.ensure_future(_stop_later(sandbox, shared.hurry))
                shared.stopping.add(task)
                task.add_done_callback(shared.stopping.discard)
    finally:
        await _drop(full)


@contextlib.asynccontextmanager
async def leased(key: str, factory: Factory) -> AsyncIterator[Sandbox]:
    """``lease`` ... ``release`` as a block."""
    sandbox = await lease(key, factory)
    try:
        yield sandbox
    finally:
        await release(key, sandbox)


def in_use() -> dict[str, int]:
    """Key -> users of the shared pools on any loop (for benchmarks and tests)."""
    return {key: shared.users for (_, key), shared in _shared.items()}


async def _stop_later(sandbox: Sandbox, hurry: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(hurry.wait(), STOP_DELAY_S)
    await sandbox.stop()


async def _drop(full: tuple[int, str]) -> None:
    shared = _shared.get(full)
    if shared is None:
        return
    shared.users -= 1
    if shared.users > 0:
        return
    del _shared[full]
    try:
        shared.hurry.set()
        await asyncio.gather(*shared.stopping, return_exceptions=True)
        await shared.pool.close()
    finally:
        with contextlib.suppress(BaseException):
            await shared.reaped
        await shared.engine.close()
