"""Per-task preparation: heavy work a task needs before its episode, done once per task, off the event loop.

Some worlds need 20-50 s and gigabytes to build a task's goal or its engine state. That work belongs neither
on the event loop (it would stall every other episode) nor inside the reset deadline (it is not the
episode's). :class:`TaskCache` runs a plug-in's synchronous ``build(task)`` in a worker thread
(``asyncio.to_thread``) and keeps the result keyed by the task's content hash, so every later episode of the
same task (another seed, another run, ``--runs K``) reuses it; concurrent episodes of one task wait for
the one build in progress. Entries are evicted least recently used past ``max_entries``. A build that
raises is not cached (the next episode tries again).

The rollout calls :meth:`envgym.env.Env.prepare` before ``reset`` and outside the step deadlines;
:class:`~envgym.timed.env.TimedWorldEnv` implements it with this cache around its ``prepare_task``.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envgym.task import TaskSpec


class TaskCache:
    """Results of ``build(task)`` keyed by task hash (see the module docstring)."""

    def __init__(self, build: Callable[[TaskSpec], Any] | None = None, *, max_entries: int = 8) -> None:
        if max_entries < 1:
            raise ValueError("a task cache holds at least one entry")
        self.build = build
        self.max_entries = max_entries
        self._done: OrderedDict[str, Any] = OrderedDict()
        self._building: dict[str, asyncio.Future[Any]] = {}
        self.builds = 0
        """How many builds ran (a hit builds nothing): tests and benchmarks read it."""

    def __contains__(self, task_hash: str) -> bool:
        return task_hash in self._done

    def get(self, task: TaskSpec) -> Any:
        """The cached result for ``task`` (KeyError when it was never built or was evicted)."""
        value = self._done[task.hash]
        self._done.move_to_end(task.hash)
        return value

    async def prepare(self, task: TaskSpec, build: Callable[[TaskSpec], Any] | None = None) -> Any:
        """The result for ``task``: from the cache, from the build in progress, or built now in a thread by
        ``build`` (default: the cache's). A result must depend on the task alone: it is shared by hash."""
        build = build or self.build
        if build is None:
            raise TypeError("TaskCache.prepare needs a build function (none was given to the cache)")
        key = task.hash
        if key in self._done:
            return self.get(task)
        running = self._building.get(key)
        if running is not None and running.get_loop() is asyncio.get_running_loop():
            return await asyncio.shield(running)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._building[key] = future
        try:
            self.builds += 1
            value = await asyncio.to_thread(build, task)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            elif not future.done():
                future.set_exception(exc)
                future.exception()  # marked retrieved: waiters re-raise it, nobody else needs to
            raise
        finally:
            if self._building.get(key) is future:
                del self._building[key]
        future.set_result(value)
        self._done[key] = value
        self._done.move_to_end(key)
        while len(self._done) > self.max_entries:
            self._done.popitem(last=False)
        return value
