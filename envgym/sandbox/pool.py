"""A warm pool: N started sandboxes kept ready, each handed out once and never reused.

::

    async with SandboxPool(tag_for("python"), size=8) as pool:     # reaps orphans, then fills
        async with pool.sandbox() as sb:                           # acquire ... stop
            await sb.session.exec("pytest -q")

``acquire`` returns a fresh, started sandbox (its session already open) and the pool refills in the
background; the caller owns what it acquired and stops it. A ready sandbox that died while it waited (killed,
its lifetime over) is stopped and discarded, never handed out (:meth:`Sandbox.alive`). A sandbox that fails
to start surfaces as the error of the next ``acquire`` (e.g. :class:`ImageMissing`), and the pool keeps
retrying with a backoff.
``close`` stops everything still ready or starting; nothing started by the pool outlives it.

``warm_up`` (an ``async fn(sandbox)``) runs on every sandbox after it started and before it is ready, e.g. to
bring up a desktop session or start an app, so that ``acquire`` hands out sandboxes already prepared; a
warm-up that raises fails that sandbox like a failed start.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from envgym.sandbox.base import Sandbox
from envgym.sandbox.docker import DockerSandbox
from envgym.sandbox.dockerengine import DockerEngine
from envgym.sandbox.errors import SandboxStateError
from envgym.sandbox.profile import DEFAULT, SandboxProfile
from envgym.sandbox.reaper import reap

RETRY_BACKOFF_S = 1.0


class SandboxPool:
    def __init__(self, image: str, size: int, profile: SandboxProfile = DEFAULT, *,
                 factory: Callable[[], Sandbox] | None = None, engine: DockerEngine | None = None,
                 run_id: str | None = None, reap: bool = True, warm_session: bool = True,
                 warm_up: Callable[[Sandbox], Awaitable[None]] | None = None) -> None:
        if size < 1:
            raise ValueError("a pool needs size >= 1")
        self.image, self.size, self.profile = image, size, profile
        self._engine = engine
        self._own_engine = factory is None and engine is None
        self._factory = factory
        self._run_id, self._reap, self._warm = run_id, reap, warm_session
        self._warm_up_fn = warm_up
        self._ready: asyncio.Queue[Sandbox | BaseException] = asyncio.Queue()
        self._starting: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._filler: asyncio.Task[None] | None = None
        self._closed = False
        self.reaped: list[tuple[str, str]] = []
        self.handed_out = 0
        self.discarded = 0
        """Ready sandboxes found dead at ``acquire`` and thrown away."""

    @property
    def ready(self) -> int:
        """Sandboxes started and waiting to be acquired."""
        return self._ready.qsize()

    def _make(self) -> Sandbox:
        if self._factory is not None:
            return self._factory()
        return DockerSandbox(self.image, self.profile, engine=self._engine, run_id=self._run_id)

    async def start(self) -> None:
        if self._filler is not None:
            return
        if self._factory is None:
            self._engine = self._engine or DockerEngine()
            if self._reap:
                self.reaped = await reap(self._engine)
        self._filler = asyncio.ensure_future(self._fill())

    async def _fill(self) -> None:
        while True:
            missing = self.size - self._ready.qsize() - len(self._starting)
            for _ in range(max(missing, 0)):
                task = asyncio.ensure_future(self._start_one())
                self._starting.add(task)
                task.add_done_callback(self._on_started)
            await self._wake.wait()
            self._wake.clear()

    def _on_started(self, task: asyncio.Task[None]) -> None:
        self._starting.discard(task)
        if not self._closed:
            self._wake.set()

    async def _start_one(self) -> None:
        sb = self._make()
        start = asyncio.ensure_future(self._warm_up(sb))
        try:
            await asyncio.shield(start)
        except asyncio.CancelledError:  # closing: let the start finish, then undo it
            with contextlib.suppress(BaseException):
                await start
            await sb.stop()
            raise
        except Exception as exc:
            await sb.stop()
            self._ready.put_nowait(exc)
            await asyncio.sleep(RETRY_BACKOFF_S)
            return
        if self._closed:
            await sb.stop()
            return
        self._ready.put_nowait(sb)

    async def _warm_up(self, sb: Sandbox) -> None:
        await sb.start()
        if self._warm:
            await sb.session.open()
        if self._warm_up_fn is not None:
            await self._warm_up_fn(sb)

    async def acquire(self) -> Sandbox:
        """A started sandbox that nobody else has used; the caller must ``stop`` it."""
        if self._closed:
            raise SandboxStateError("the sandbox pool is closed")
        await self.start()
        while True:
            item = await self._ready.get()
            self._wake.set()
            if isinstance(item, BaseException):
                raise item
            try:
                alive = await item.alive()
            except BaseException:  # cancelled while asking: taken from the queue, nobody else will stop it
                await item.stop()
                raise
            if alive:
                self.handed_out += 1
                return item
            self.discarded += 1
            await item.stop()

    @contextlib.asynccontextmanager
    async def sandbox(self) -> AsyncIterator[Sandbox]:
        sb = await self.acquire()
        try:
            yield sb
        finally:
            await sb.stop()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks = [t for t in (self._filler, *self._starting) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        while not self._ready.empty():
            item = self._ready.get_nowait()
            if isinstance(item, Sandbox):
                await item.stop()
        if self._own_engine and self._engine is not None:
            await self._engine.close()

    async def __aenter__(self) -> SandboxPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
