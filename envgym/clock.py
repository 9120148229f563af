"""Clocks, injected and never global.

``SystemClock`` reads the monotonic and wall clocks; ``SimClock`` is deterministic: its time only moves
when told to (``advance``) or when something sleeps on it, so timed environments and tests replay exactly.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on this clock's timeline (monotonic for SystemClock)."""
        ...

    def wall(self) -> float:
        """Seconds since the Unix epoch, for records."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class SimClock:
    """A deterministic clock starting at ``start``; ``sleep`` advances it instantly."""

    def __init__(self, start: float = 0.0, *, epoch: float = 1_767_225_600.0) -> None:
        self._now = start
        self._epoch = epoch

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._epoch + self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)
