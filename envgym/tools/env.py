"""The tool-use environment: function calling over a real SQLite store, under a written policy.

:class:`ToolEnv` serves any :class:`~envgym.tools.Domain` (an object, or a ``"package.module:DOMAIN"``
reference, so a registration's keyword arguments stay strings). Each episode gets its own database file,
created from the task's initial state in a fresh temporary directory and deleted on close. ``reset`` shows
the instruction; ``info`` carries the tools (OpenAI function schemas), the policy, the task id and split. A
step executes the action's tool calls in order, each in its own transaction; a malformed call (bad JSON,
unknown tool, wrong argument types, policy violation) becomes an error result and ``last_action_error`` and
changes nothing. A message without tool calls is the agent's final answer: the episode terminates with
reward 0 and the kernel's :class:`~envgym.wrappers.Grading` wrapper grades it on :meth:`ToolEnv.verify_context`:
the call log, the answer, the store as the agent left it (``state``, queryable), the store before the
episode (``initial_state``) and the store the reference solution produces (``expected_state``, replayed on
an in-memory copy). The last two are cached per task; the domain's ``ignore_fields`` are left out of every
snapshot.

Where the work runs: creating and deleting an episode's store (filesystem work) goes to a worker thread;
tool calls and the grading snapshot run inline on the event loop. They are SQLite statements on a small
file in the page cache with ``synchronous=OFF``, tens of microseconds each, less than a worker-thread hop
costs; a hop per step cost a quarter of the throughput at 32 concurrent episodes
(``benchmarks/eval_throughput.py``, ``benchmarks/kernel_overhead.py``). A domain whose tools do real I/O
must not be written this way.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import tempfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from envgym.clock import Clock
from envgym.env import Env, StepResult
from envgym.errors import EnvError
from envgym.task import TaskSpec
from envgym.tools import store
from envgym.tools.args import ArgumentsError, parse_arguments
from envgym.tools.domain import Domain, PolicyViolation, ToolContext, ToolFailure, load_domain
from envgym.types import Action, Observation, ToolCall, ToolResult
from envgym.verify.context import CallRecord, VerifyContext
from envgym.verify.state import Snapshot, drop_fields

__all__ = ["FrozenState", "ToolEnv", "execute_calls"]


class FrozenState:
    """The store at one moment (before the episode, or as the reference leaves it) as a StateView.

    ``snapshot()`` and ``columns()`` are what was captured; ``query()`` runs on a fresh copy of the store
    when the state can be rebuilt (``reopen``), else it is refused (the expected state is a snapshot only).
    """

    def __init__(self, tables: Snapshot, columns: dict[str, tuple[str, ...]],
                 reopen: Callable[[], sqlite3.Connection] | None = None) -> None:
        self.tables, self._columns, self._reopen = tables, columns, reopen

    def snapshot(self) -> Snapshot:
        return self.tables

    def columns(self) -> dict[str, tuple[str, ...]]:
        return self._columns

    def query(self, sql: str) -> list[dict[str, Any]]:
        if self._reopen is None:
            raise NotImplementedError("the expected state is a snapshot; query the actual state instead")
        conn = self._reopen()
        try:
            return store.SqliteState(conn).query(sql)
        finally:
            conn.close()


class _LiveState(FrozenState):
    """The actual final state: a snapshot taken at grading time, plus queries on the live store."""

    def __init__(self, tables: Snapshot, conn: sqlite3.Connection) -> None:
        self._live = store.SqliteState(conn)
        super().__init__(tables, self._live.columns())

    def query(self, sql: str) -> list[dict[str, Any]]:
        return self._live.query(sql)


def execute_calls(domain: Domain, conn: sqlite3.Connection, calls: list[CallRecord],
                  tool_calls: tuple[ToolCall, ...]) -> list[ToolResult]:
    """Run tool calls of ``domain`` in order on ``conn`` (blocking), appending each one's record to ``calls``.

    Every call runs in its own transaction; a refused call (unknown tool, bad arguments,
    :class:`~envgym.tools.ToolFailure`, :class:`~envgym.tools.PolicyViolation`) is rolled back and its result
    carries the error; a tool that raises anything else is an :class:`~envgym.errors.EnvError`.
    """
    results = []
    for call in tool_calls:
        record, content = _execute(domain, conn, calls, call)
        calls.append(record)
        results.append(ToolResult(call_id=call.id, name=call.name, content=content, error=record.error))
    return results


def _execute(domain: Domain, conn: sqlite3.Connection, calls: list[CallRecord],
             call: ToolCall) -> tuple[CallRecord, str]:
    index = len(calls)

    def reject(kind: Any, args: dict[str, Any] | None, error: str) -> tuple[CallRecord, str]:
        return CallRecord(index=index, name=call.name, kind=kind, arguments=args, ok=False, error=error), error

    tool = domain.by_name.get(call.name)
    if tool is None:
        return reject("unknown", None, f"unknown tool {call.name!r}; available: {', '.join(sorted(domain.by_name))}")
    try:
        raw, args = parse_arguments(call.name, call.arguments, tool.args_model)
    except ArgumentsError as exc:
        return reject(tool.kind, exc.raw, str(exc))
    ctx = ToolContext(conn=conn, calls=calls)
    conn.execute("BEGIN")
    try:
        result = tool.fn(ctx, args)
    except PolicyViolation as exc:
        conn.execute("ROLLBACK")
        return reject(tool.kind, raw, f"policy violation: {exc}")
    except ToolFailure as exc:
        conn.execute("ROLLBACK")
        return reject(tool.kind, raw, str(exc))
    except Exception as exc:
        conn.execute("ROLLBACK")
        raise EnvError(f"tool {call.name} crashed: {exc!r}") from exc
    conn.execute("COMMIT")
    content = json.dumps(result, ensure_ascii=False, default=str, sort_keys=True)
    # Validated arguments (defaults filled in), so expected writes can match a default the agent left out.
    record = CallRecord(index=index, name=call.name, kind=tool.kind, arguments=args.model_dump(mode="json"), ok=True)
    return record, content


_Cached = tuple[Snapshot, dict[str, tuple[str, ...]]]


class ToolEnv(Env):
    """A tool-use env over ``domain`` (see the module docstring); register one per domain::

        envgym.register("mine/shop-v1", "envgym.tools:ToolEnv", kwargs={"domain": "my_pkg.shop:DOMAIN"},
                        suites=("mine-shop",), max_episode_steps=30)
    """

    has_write_actions: ClassVar[bool] = True
    _expected_cache: ClassVar[OrderedDict[tuple[str, str], _Cached]] = OrderedDict()
    _initial_cache: ClassVar[OrderedDict[tuple[str, str], _Cached]] = OrderedDict()

    def __init__(self, domain: Domain | str, *, workdir: str | None = None, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.domain = load_domain(domain)
        self._workdir_root = workdir
        self._dir: Path | None = None
        self._conn: sqlite3.Connection | None = None
        self._calls: list[CallRecord] = []
        self._final_answer: str | None = None
        self.tool_schemas = self.domain.schemas

    @property
    def db_path(self) -> Path | None:
        return self._dir / "store.sqlite" if self._dir else None

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        # One worker-thread hop per reset: drop the last episode's store, create this one's.
        self._conn, self._dir = await asyncio.to_thread(self._fresh_store, chosen)
        self.task = chosen
        self._calls = []
        self._final_answer = None
        info = {"tools": self.tool_schemas, "policy": self.domain.policy, "task_id": chosen.id,
                "task_hash": chosen.hash, "env_id": chosen.env_id, "split": chosen.split}
        return Observation(text=chosen.instruction), info

    async def step(self, action: Action) -> StepResult:
        if self._conn is None or self.task is None:
            raise EnvError("step() without an open episode")
        if action.tool_calls:
            results = execute_calls(self.domain, self._conn, self._calls, action.tool_calls)
            errors = [f"{r.name}: {r.error}" for r in results if r.error]
            obs = Observation(tool_results=tuple(results), last_action_error="; ".join(errors) or None)
            return StepResult(obs, 0.0, False, False, {})
        if action.text is None:
            obs = Observation(last_action_error="empty action: send tool calls or a final message")
            return StepResult(obs, 0.0, False, False, {})
        self._final_answer = action.text
        return StepResult(Observation(text="Episode finished."), 0.0, True, False, {})

    async def verify_context(self) -> VerifyContext:
        """The calls, the final answer, and the store now, before the episode and as the reference leaves it."""
        if self._conn is None or self.task is None:
            raise EnvError("verify() without an open episode")
        task, conn = self.task, self._conn
        live = store.SqliteState(conn)
        actual = _LiveState(drop_fields(live.snapshot(), self.domain.ignore_fields, columns=live.columns()), conn)
        initial = await self._cached(self._initial_cache, task, ())
        return VerifyContext(calls=list(self._calls), final_answer=self._final_answer, state=actual,
                             expected_state=await self._expected_state(task), task=task,
                             initial_state=FrozenState(*initial, reopen=lambda: self._open_initial(task)))

    async def _expected_state(self, task: TaskSpec) -> FrozenState | None:
        if task.solution is None:
            return None
        return FrozenState(*await self._cached(self._expected_cache, task, task.solution))

    async def _cached(self, cache: OrderedDict[tuple[str, str], _Cached], task: TaskSpec,
                      actions: tuple[Action, ...]) -> _Cached:
        """The store after ``actions`` from the task's initial state, the domain's ignored fields left out."""
        key = (self.domain.name, task.hash)
        cached = cache.get(key)
        if cached is None:
            cached = await asyncio.to_thread(self._replay, task, actions)
            cache[key] = cached
            while len(cache) > 512:
                cache.popitem(last=False)
        return cached

    def _replay(self, task: TaskSpec, actions: tuple[Action, ...]) -> _Cached:
        conn = self._open_initial(task)
        try:
            calls: list[CallRecord] = []
            for action in actions:
                execute_calls(self.domain, conn, calls, action.tool_calls)
            state = store.SqliteState(conn)
            columns = state.columns()
            return drop_fields(state.snapshot(), self.domain.ignore_fields, columns=columns), columns
        finally:
            conn.close()

    def _open_initial(self, task: TaskSpec) -> sqlite3.Connection:
        return store.create(":memory:", self.domain.schema_sql, task.initial_state,
                            template_key=(self.domain.name, task.hash))

    def _fresh_store(self, task: TaskSpec) -> tuple[sqlite3.Connection, Path]:
        self._release_sync()
        directory = Path(tempfile.mkdtemp(prefix="envgym-tool-", dir=self._workdir_root))
        try:
            conn = store.create(directory / "store.sqlite", self.domain.schema_sql, task.initial_state,
                                template_key=(self.domain.name, task.hash))
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return conn, directory

    def _release_sync(self) -> None:
        conn, directory = self._conn, self._dir
        self._conn = self._dir = None
        if conn is not None:
            conn.close()
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    async def close(self) -> None:
        if self._conn is not None or self._dir is not None:
            await asyncio.to_thread(self._release_sync)
