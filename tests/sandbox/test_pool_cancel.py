"""A pool's ``acquire`` cancelled while it checks a ready sandbox stops that sandbox (it is nobody's after)."""

from __future__ import annotations

import asyncio

import pytest

from envgym.sandbox import FakeSandbox, SandboxPool, SandboxState


async def test_acquire_cancelled_while_checking_a_sandbox_stops_it():
    asking = asyncio.Event()
    made: list[FakeSandbox] = []

    class Slow(FakeSandbox):
        async def _alive(self) -> bool:  # a Docker sandbox asks the engine: it takes a while
            asking.set()
            await asyncio.sleep(30)
            return True

    def factory() -> FakeSandbox:
        made.append(Slow())
        return made[-1]

    async with SandboxPool("fake", 1, factory=factory) as pool:
        taking = asyncio.create_task(pool.acquire())
        await asyncio.wait_for(asking.wait(), 5)
        taking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await taking
        assert made[0].state is SandboxState.STOPPED  # taken from the queue: close would never see it
