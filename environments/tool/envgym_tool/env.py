"""The tool-use environment: function calling over a real SQLite store, under a written policy.

Each episode gets its own database file, created from the task's initial state in a fresh temporary
directory and deleted on close. ``reset`` shows the instruction; ``info`` carries the tools (OpenAI
function schemas) and the policy. A step executes the action's tool calls in order, each in its own
transaction; a malformed call (bad JSON, unknown tool, wrong argument types, policy violation) becomes an
error result and ``last_action_error`` and changes nothing. A message without tool calls is the agent's
final answer: the episode terminates and is graded against the task's verifiers, with the store the
reference solution produces (replayed on an in-memory copy, cached per task) as the expected final state.

Where the work runs: creating and deleting an episode's store (filesystem work) goes to a worker thread;
tool calls and the grading snapshot run inline on the event loop. They are SQLite statements on a small
file in the page cache with ``synchronous=OFF``, tens of microseconds each, less than a worker-thread hop
costs; a hop per step cost a quarter of the throughput at 32 concurrent episodes
(``benchmarks/eval_throughput.py``, ``benchmarks/kernel_overhead.py``). A domain whose tools do real I/O
must not be written this way.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import shutil
import sqlite3
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from envgym.clock import Clock
from envgym.env import Env, StepResult
from envgym.errors import EnvError, SpecError
from envgym.tamper import TamperAgent
from envgym.task import TaskSpec
from envgym.tooling import ArgumentsError, decode_arguments
from envgym.types import Action, Observation, ToolCall, ToolResult, Verdict
from envgym.verify import CallRecord, JudgeConfig, VerifyContext, verify
from envgym.verify.context import drop_fields
from envgym_tool import store
from envgym_tool.tamper import TAMPER_AGENTS
from envgym_tool.toolkit import Domain, PolicyViolation, ToolContext, ToolFailure


def load_domain(name: str) -> Domain:
    try:
        module = importlib.import_module(f"envgym_tool.domains.{name}")
    except ModuleNotFoundError as exc:
        raise SpecError(f"unknown tool domain {name!r}") from exc
    return module.DOMAIN


class Snapshot:
    """A frozen copy of a store, for the expected final state."""

    def __init__(self, tables: dict[str, list[dict[str, Any]]]) -> None:
        self.tables = tables

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return self.tables

    def query(self, sql: str) -> list[dict[str, Any]]:
        raise NotImplementedError("the expected state is a snapshot; query the actual state instead")


class CapturedState(Snapshot):
    """The actual final state: a snapshot taken off the event loop, plus queries on the live store."""

    def __init__(self, tables: dict[str, list[dict[str, Any]]], conn: sqlite3.Connection) -> None:
        super().__init__(tables)
        self._live = store.SqliteState(conn)

    def query(self, sql: str) -> list[dict[str, Any]]:
        return self._live.query(sql)


def execute_calls(domain: Domain, conn: sqlite3.Connection, calls: list[CallRecord],
                  tool_calls: tuple[ToolCall, ...]) -> list[ToolResult]:
    """Run tool calls in order (blocking; call it in a worker thread). Appends to ``calls``."""
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
        raw = decode_arguments(call.name, call.arguments)
    except ArgumentsError as exc:
        return reject(tool.kind, None, str(exc))
    unknown = set(raw) - set(tool.args_model.model_fields)
    if unknown:
        return reject(tool.kind, raw, f"unknown argument(s) for {call.name}: {', '.join(sorted(unknown))}")
    try:
        args = tool.args_model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return reject(tool.kind, raw, f"invalid arguments for {call.name}: {problems}")
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


class ToolEnv(Env):
    """``tool/<domain>-vN``: see the module docstring."""

    has_write_actions: ClassVar[bool] = True
    tamper_agents: ClassVar[tuple[type[TamperAgent], ...]] = TAMPER_AGENTS
    _expected_cache: ClassVar[OrderedDict[tuple[str, str], dict[str, Any]]] = OrderedDict()

    def __init__(self, domain: str | Domain, *, judge: JudgeConfig | None = None, workdir: str | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.domain = load_domain(domain) if isinstance(domain, str) else domain
        self.judge = judge
        self._workdir_root = workdir
        self._dir: Path | None = None
        self._conn: sqlite3.Connection | None = None
        self._calls: list[CallRecord] = []
        self._final_answer: str | None = None
        self.tool_schemas = self.domain.schemas

    @property
    def db_path(self) -> Path | None:
        return self._dir / "store.sqlite" if self._dir else None

    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self._choose_task(task, seed)
        # One worker-thread hop per reset: drop the last episode's store, create this one's.
        self._conn, self._dir = await asyncio.to_thread(self._fresh_store, chosen)
        self.task = chosen
        self._calls = []
        self._final_answer = None
        info = {"tools": self.tool_schemas, "policy": self.domain.policy, "task_id": chosen.id,
                "task_hash": chosen.hash, "env_id": chosen.env_id}
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
        verdict = await self.verify()
        return StepResult(Observation(text="Episode finished."), verdict.score, True, False, {"verdict": verdict})

    async def verify(self) -> Verdict:
        if self._conn is None or self.task is None:
            raise EnvError("verify() without an open episode")
        task, conn = self.task, self._conn
        ignore = self.domain.ignore_fields
        actual = CapturedState(drop_fields(store.SqliteState(conn).snapshot(), ignore), conn)
        expected = await self._expected_state(task)
        ctx = VerifyContext(calls=list(self._calls), final_answer=self._final_answer, state=actual,
                            expected_state=expected, judge=self.judge)
        return await verify(task.verifiers, ctx)

    async def _expected_state(self, task: TaskSpec) -> Snapshot | None:
        if task.solution is None:
            return None
        key = (self.domain.name, task.hash)
        cached = self._expected_cache.get(key)
        if cached is None:
            cached = await asyncio.to_thread(self._replay_solution, task)
            self._expected_cache[key] = cached
            while len(self._expected_cache) > 512:
                self._expected_cache.popitem(last=False)
        return Snapshot(drop_fields(cached, self.domain.ignore_fields))

    def _replay_solution(self, task: TaskSpec) -> dict[str, Any]:
        conn = store.create(":memory:", self.domain.schema_sql, task.initial_state,
                            template_key=(self.domain.name, task.hash))
        try:
            calls: list[CallRecord] = []
            for action in task.solution or ():
                execute_calls(self.domain, conn, calls, action.tool_calls)
            return store.SqliteState(conn).snapshot()
        finally:
            conn.close()

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
