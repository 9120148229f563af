"""The tool-use environment: function calling over a real SQLite store, under a written policy.

:class:`ToolEnv` serves any :class:`~envgym.tools.Domain` (an object, or a ``"package.module:DOMAIN"``
reference, so a registration's keyword arguments stay strings). Each episode gets its own store: a copy, in
memory, of a template built once per initial state (:mod:`envgym.tools.store`; tasks that start from the same
state, as a suite's tasks often do, share it), so no episode sees another's writes; a domain (or env) with
``on_disk`` gets a file in a fresh temporary directory instead.
An in-memory store's connection is kept for the env's next episode, its database replaced by the next template
copy (``deserialize``), so the tools' compiled statements stay cached; a connection on which a statement may
have changed more than rows (DDL, a pragma set, an attach: anything that outlives the database it ran on), or
that holds an open transaction, is closed and a fresh one opened. The store lives host-side; the agent reaches
it only through tool calls. ``reset`` shows the instruction; ``info`` carries the tools (OpenAI function
schemas), the policy, the task id and split. A step executes the action's tool calls in order, each in its own
transaction; a malformed call (bad JSON, unknown tool, wrong argument types, policy violation) becomes an
error result and ``last_action_error`` and changes nothing. A message without tool calls is the agent's final
answer: the episode terminates with reward 0 and the kernel's :class:`~envgym.wrappers.Grading` wrapper grades
it on :meth:`ToolEnv.verify_context`: the call log, the answer, the store as the agent left it (``state``,
queryable), the store before the episode (``initial_state``) and the store the reference solution produces
(``expected_state``, replayed on an in-memory copy). The last two are cached (the initial state's rows per
initial state, the reference's per task: one replay per task, however many episodes wait for it); the domain's
``ignore_fields`` are left out of every snapshot. A
verifier's ``query`` of the store runs on the episode's connection (read-only), or, from a verifier's worker
thread or once the env has moved on to another episode, on an in-memory copy taken when grading starts: the
rubric's SQL checks run it inline (``inline_queries``).
Grading is incremental: the store records which tables the episode's statements may have written
(:class:`~envgym.tools.store.Changes`) and the state views say so (``changed_tables``), so the final state
comparison reads only the tables the episode or the reference changed; of those, a table whose pages are,
byte for byte, the template's (unchanged) or those the reference leaves (the reference's rows) is not read
(:class:`~envgym.tools.store.TablePages`).

Where the work runs: building a task's template and replaying its reference (once per task) run inline for
a task of at most :data:`INLINE_ROWS` initial rows (milliseconds), else in a worker thread; creating and
deleting an on-disk store go to a worker thread; copying the template, tool calls and grading run
inline on the event loop. They are SQLite statements on a small in-memory database, tens of microseconds
each, less than a worker-thread hop costs; a hop per step cost a quarter of the throughput at 32
concurrent episodes (``benchmarks/eval_throughput.py``, ``benchmarks/kernel_overhead.py``). A domain whose
tools do real I/O must not be written this way.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import shutil
import sqlite3
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import envgym.tools.store as store
from envgym.clock import Clock
from envgym.env import Env, StepResult
from envgym.errors import EnvError
from envgym.task import TaskSpec
from envgym.tools.args import ArgumentsError, parse_arguments
from envgym.tools.domain import Domain, PolicyViolation, ToolContext, ToolFailure, load_domain
from envgym.types import Action, Observation, ToolCall, ToolResult
from envgym.verify.context import CallRecord, VerifyContext
from envgym.verify.state import Rows, Snapshot, drop_fields, sort_rows

__all__ = ["FrozenState", "ToolEnv", "execute_calls"]


def _dropped(ignore: Iterable[str]) -> dict[str, set[str]]:
    """The ``table.column`` entries (checked already, by :func:`drop_fields`) as each table's dropped columns."""
    drop: dict[str, set[str]] = {}
    for item in ignore:  # split on the last dot (envgym.verify.state)
        table, _, column = item.rpartition(".")
        drop.setdefault(table, set()).add(column)
    return drop


def _rows_of(table: str, raw: list[tuple[Any, ...]], columns: tuple[str, ...], drop: Iterable[str]) -> Rows:
    """``drop_fields(sort_rows(rows))`` of a table's raw rows (``SELECT *`` tuples in ``columns``' order): the
    snapshot a read of the table gives, the ``drop`` columns left out, sorted once."""
    keep = [(i, c) for i, c in enumerate(columns) if c not in drop]
    return sort_rows(table, ({c: row[i] for i, c in keep} for row in raw))


class _Snapshots(Mapping[str, Rows]):
    """Each table's snapshot (:func:`_rows_of`), made from its raw rows when it is first read: grading reads the
    tables an episode changed, so the others' rows are never dicts or sorted (a fifth of replaying a task)."""

    def __init__(self, raw: Mapping[str, list[tuple[Any, ...]]], columns: dict[str, tuple[str, ...]],
                 drop: dict[str, set[str]]) -> None:
        self._raw, self._columns, self._drop = raw, columns, drop
        self._made: dict[str, Rows] = {}

    def __getitem__(self, table: str) -> Rows:
        found = self._made.get(table)
        if found is None:
            raw = self._raw[table]  # KeyError for a table the store lacks
            found = self._made.setdefault(table, _rows_of(table, raw, self._columns[table], self._drop.get(table, ())))
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class FrozenState:
    """The store at one moment (before the episode, or as the reference leaves it) as a StateView.

    ``snapshot()`` and ``columns()`` are what was captured; ``query()`` runs on a fresh copy of the store
    when the state can be rebuilt (``reopen``), else it is refused (the expected state is a snapshot only).
    ``changed`` names the tables that differ from the task's initial state, where the env knows them (see
    ``changed_tables`` in :mod:`envgym.verify.state`).
    """

    def __init__(self, tables: Mapping[str, Rows], columns: dict[str, tuple[str, ...]],
                 reopen: Callable[[], sqlite3.Connection] | None = None,
                 changed: frozenset[str] | None = None, *, inline_queries: bool = False) -> None:
        self.tables, self._columns, self._reopen, self._changed = tables, columns, reopen, changed
        self.inline_queries = inline_queries
        self.left_out: tuple[str, ...] = ()
        """The ``table.column`` fields its snapshot never holds (see envgym.verify.state)."""
        """Whether ``reopen`` is cheap (an in-memory copy), so verifiers query inline (see envgym.verify.state)."""

    def snapshot(self, tables: Iterable[str] | None = None) -> Snapshot:
        if tables is None:
            return dict(self.tables)
        wanted = set(tables)
        return {t: self.tables[t] for t in self.tables if t in wanted}  # a lazy table is made only if asked for

    def columns(self) -> dict[str, tuple[str, ...]]:
        return self._columns

    def changed_tables(self) -> frozenset[str] | None:
        return self._changed

    def query(self, sql: str) -> list[dict[str, Any]]:
        if self._reopen is None:
            raise NotImplementedError("the expected state is a snapshot; query the actual state instead")
        conn = self._reopen()
        try:
            return store.SqliteState(conn).query(sql)
        finally:
            conn.close()


class _LiveState:
    """The store as the agent left it: each table read once, when a verifier asks, ignored fields left out.
    Reads and queries run on the episode's connection while ``current()`` says the env is still on this
    episode (its queries' ``query_only`` pragmas unrecorded: :class:`envgym.tools.store.SqliteState`), else
    (another thread, such as a verifier's worker thread, or after the env moved on) on a copy taken at grading.

    The columns are the initial store's unless a statement may have changed the schema; the changed tables
    are those :class:`envgym.tools.store.Changes` says the episode's tool calls may have written whose rows
    are not the template's, row for row. Its queries cost microseconds (the connection, or an in-memory copy),
    so verifiers run them inline (``inline_queries``). ``raw`` holds tables' rows the env has read already (as
    plain tuples in the columns' order, ``SELECT *``): their snapshot is made from them, ignored fields left out
    as it is built; ``known`` holds tables' snapshots the env already has (a table whose rows are the
    reference's, value for value and type for type, in the same order: the expected state's rows).
    """

    inline_queries = True

    def __init__(self, conn: sqlite3.Connection, changed: frozenset[str] | None, columns: dict[str, tuple[str, ...]],
                 ignore: tuple[str, ...], raw: dict[str, list[tuple[Any, ...]]] | None = None,
                 known: Snapshot | None = None, *, changes: store.Changes | None = None,
                 current: Callable[[], bool] = lambda: True, image: bytes | None = None) -> None:
        self._live, self._ignore, self._changed = store.SqliteState(conn, changes), ignore, changed
        self._current = current
        self.left_out = ignore  # every snapshot leaves the domain's ignored fields out (see envgym.verify.state)
        # another thread reads a copy: the connection is the loop's (store.Changes)
        self._image = conn.serialize() if image is None else image
        self._owner = threading.get_ident()
        self._columns = columns if self._changed is not None else self._live.columns()
        self._read: Snapshot = dict(known or {})
        drop_fields({}, ignore, columns=self._columns)  # a misspelt entry is loud even if no table is read
        self._raw = raw if raw is not None and changed is not None else {}  # the schema is the initial one
        self._drop = _dropped(ignore)

    def _from_raw(self, table: str) -> Rows:
        return _rows_of(table, self._raw[table], self._columns[table], self._drop.get(table, ()))

    def snapshot(self, tables: Iterable[str] | None = None) -> Snapshot:
        if tables is None:
            wanted = list(self._columns)
        else:
            named = set(tables)
            wanted = [t for t in self._columns if t in named]
        unread = [t for t in wanted if t not in self._read]
        for table in [t for t in unread if t in self._raw]:
            self._read[table] = self._from_raw(table)
        unread = [t for t in unread if t not in self._raw]
        if unread:  # the columns name every table the store has (re-read above if the schema may have changed)
            if self._on_connection():
                rows = {t: self._live.rows(t) for t in unread}
            else:
                with contextlib.closing(store.clone(self._image)) as copy:
                    rows = {t: store.SqliteState(copy).rows(t) for t in unread}
            self._read.update(drop_fields(rows, self._ignore, columns=self._columns))
        return {t: self._read[t] for t in wanted if t in self._read}

    def columns(self) -> dict[str, tuple[str, ...]]:
        return self._columns

    def changed_tables(self) -> frozenset[str] | None:
        return self._changed

    def query(self, sql: str) -> list[dict[str, Any]]:
        if self._on_connection():  # no copy to open: a tenth of the cost
            return self._live.query(sql)
        with contextlib.closing(store.clone(self._image)) as copy:
            return store.SqliteState(copy).query(sql)

    def _on_connection(self) -> bool:
        return threading.get_ident() == self._owner and self._current()


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


@dataclass(frozen=True)
class _Initial:
    """An initial state's rows as a replay reads them, shared by every task that starts from it (read only)."""

    raw: dict[str, list[tuple[Any, ...]]]
    snapshots: _Snapshots
    pages: store.TablePages


@dataclass(frozen=True)
class _TaskStates:
    """A task's store before any episode and as its reference solution leaves it, ignored fields left out."""

    initial: Mapping[str, Rows]
    raw: dict[str, list[tuple[Any, ...]]]
    """Each table's rows as the template holds them, in the order a full scan reads them."""
    columns: dict[str, tuple[str, ...]]
    expected: Mapping[str, Rows] | None
    expected_columns: dict[str, tuple[str, ...]]
    changed: frozenset[str] | None
    """The tables the reference changes (None: it changed the schema)."""
    expected_raw: dict[str, _Rows]
    """The raw rows (:func:`_raw_rows`) of each table the reference changes, as it leaves them (see :class:`_Rows`)."""
    initial_pages: store.TablePages | None = None
    """The template's tables' pages: an episode's table on the very same pages is not read (unchanged)."""
    expected_pages: store.TablePages | None = None
    """The pages of the tables the reference changes, as it leaves them: an episode's table on the very same
    pages holds the reference's rows (not read either)."""


@dataclass(frozen=True)
class _Rows:
    """A table's raw rows, and where they hold numbers: :meth:`same` tells rows holding the same values of the
    same types in the same order (a number equal to another of the other type, ``1 == 1.0``, is the only value
    equal to one of another type that SQLite hands back), cheaper than comparing their ``repr``."""

    rows: list[tuple[Any, ...]]
    numbers: tuple[tuple[int, int, type], ...]

    @classmethod
    def of(cls, rows: list[tuple[Any, ...]]) -> _Rows:
        return cls(rows, tuple((i, j, type(v)) for i, row in enumerate(rows) for j, v in enumerate(row)
                               if type(v) in (int, float)))

    def same(self, rows: list[tuple[Any, ...]]) -> bool:
        return rows == self.rows and all(type(rows[i][j]) is kind for i, j, kind in self.numbers)


INLINE_ROWS = 2000
"""A task whose initial state holds at most this many rows has its template built and its reference replayed
inline, on the event loop (a few milliseconds); a larger one in a worker thread. Under the GIL a thread gains
nothing on this Python-bound work, and with many slots starting at once (concurrency 32) their threads
contended for it: thousands of context switches per run."""


def _small(task: TaskSpec) -> bool:
    return sum(len(rows) for rows in task.initial_state.values() if isinstance(rows, list)) <= INLINE_ROWS


def _raw_rows(conn: sqlite3.Connection, table: str) -> list[tuple[Any, ...]]:
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: compared, never shown
    quoted = table.replace('"', '""')
    return cursor.execute(f'SELECT * FROM "{quoted}"').fetchall()


class ToolEnv(Env):
    """A tool-use env over ``domain`` (see the module docstring); register one per domain::

        envgym.register("mine/shop-v1", "envgym.tools:ToolEnv", kwargs={"domain": "my_pkg.shop:DOMAIN"},
                        suites=("mine-shop",), max_episode_steps=30)

    ``on_disk`` (default: the domain's :attr:`~envgym.tools.Domain.on_disk`) keeps each episode's store in a
    file under a fresh temporary directory (in ``workdir``), deleted when the next episode starts or on close.
    """

    sql_state: ClassVar[bool] = True  # rubric sql checks query its store
    has_write_actions: ClassVar[bool] = True
    _states_cache: ClassVar[OrderedDict[tuple[str, str], _TaskStates]] = OrderedDict()
    _replaying: ClassVar[dict[tuple[str, str], asyncio.Future[_TaskStates]]] = {}
    _schema_columns: ClassVar[dict[str, dict[str, tuple[str, ...]]]] = {}
    """Each schema's tables' columns, as its templates hold them (read once per schema, not per task)."""
    _initial_cache: ClassVar[OrderedDict[tuple[str, str], _Initial]] = OrderedDict()
    """Per initial state (:meth:`_state_key`): its rows as a replay reads them, once for every task starting there."""

    def __init__(self, domain: Domain | str, *, workdir: str | None = None, on_disk: bool | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.domain = load_domain(domain)
        self.on_disk = self.domain.on_disk if on_disk is None else on_disk
        self._workdir_root = workdir
        self._dir: Path | None = None
        self._conn: sqlite3.Connection | None = None
        self._changes = store.Changes()
        self._calls: list[CallRecord] = []
        self._final_answer: str | None = None
        self._episode = 0
        """Counts resets and closes: a live state graded earlier reads its copy once the env moved on."""
        self.tool_schemas = self.domain.schemas

    @classmethod
    def warm(cls, *, domain: Domain | str, **_: Any) -> None:
        """The domain's module and its tools' schemas (:meth:`envgym.env.Env.warm`): ~25 ms of a worker's first
        episode for a bundled domain."""
        load_domain(domain).schemas  # noqa: B018 - computed once and kept by the domain

    @property
    def db_path(self) -> Path | None:
        """The episode's store file (None when the store is in memory)."""
        return self._dir / "store.sqlite" if self._dir else None

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        self._episode += 1
        key = self._state_key(chosen)
        image = store.template(key)
        if image is None:  # the state's first episode in this process: build its template (off the loop if large)
            build = functools.partial(store.image, self.domain.schema_sql, chosen.initial_state, key=key)
            image = build() if _small(chosen) else await asyncio.to_thread(build)
        if self.on_disk:
            self._conn, self._dir = await asyncio.to_thread(self._file_store, image)
            self._changes = store.Changes()
            self._changes.start(self._conn)  # a fresh connection: nothing compiled yet to recompile
            self._changes.begin()
        elif not self._reuse(image):  # a copy of the template in memory: microseconds, no file, no thread hop
            self._release_sync()
            self._conn = store.clone(image)
            self._changes = store.Changes()
            self._changes.start(self._conn)
            self._changes.begin()
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
        task = self.task
        states = await self._task_states(task)
        changed = self._changes.tables()
        image = self._conn.serialize()
        raw: dict[str, list[tuple[Any, ...]]] = {}
        known: Snapshot = {}
        if changed:
            changed, known = self._unread(states, changed, image)
            raw = {t: _raw_rows(self._conn, t) for t in changed if t not in known}
            # a table whose rows are the template's, in the same order, was not changed
            changed = frozenset(t for t in changed if t in known or raw[t] != states.raw.get(t))
            if states.expected is not None:  # a table left as the reference leaves it: its rows known
                known.update({t: states.expected[t] for t in raw
                              if t in changed and t in states.expected_raw and states.expected_raw[t].same(raw[t])})
        episode = self._episode
        actual = _LiveState(self._conn, changed, states.columns, self.domain.ignore_fields, raw, known,
                            changes=self._changes, current=lambda: self._episode == episode, image=image)
        initial = FrozenState(states.initial, states.columns, reopen=lambda: self._open_initial(task),
                              changed=frozenset(), inline_queries=True)
        expected = None if states.expected is None else \
            FrozenState(states.expected, states.expected_columns, changed=states.changed)
        for view in (initial, expected):  # both snapshots were taken with the domain's ignored fields left out
            if view is not None:
                view.left_out = self.domain.ignore_fields
        return VerifyContext(calls=list(self._calls), final_answer=self._final_answer, state=actual,
                             expected_state=expected, task=task, initial_state=initial)

    @staticmethod
    def _unread(states: _TaskStates, changed: frozenset[str], image: bytes) -> tuple[frozenset[str], Snapshot]:
        """``changed`` less the tables whose pages in ``image`` are the template's, and the snapshots of those
        whose pages are the reference's (see :class:`envgym.tools.store.TablePages`): none of them is read."""
        if states.initial_pages is not None:
            changed = frozenset(t for t in changed if not states.initial_pages.same(t, image))
        known: Snapshot = {}
        if states.expected_pages is not None and states.expected is not None:
            known = {t: states.expected[t] for t in changed if states.expected_pages.same(t, image)}
        return changed, known

    def _reuse(self, image: bytes) -> bool:
        """Put a copy of ``image`` in the kept in-memory connection, if it is clean enough to keep (above)."""
        conn = self._conn
        if conn is None or self._dir is not None or conn.in_transaction or self._changes.tables() is None:
            return False
        try:
            self._changes.reload(image)
        except sqlite3.Error:  # e.g. a statement a tool left unfinished: a fresh connection instead
            return False
        return True

    async def _task_states(self, task: TaskSpec) -> _TaskStates:
        key = (self.domain.name, task.hash)
        cached = self._states_cache.get(key)
        if cached is not None:
            return cached
        loop = asyncio.get_running_loop()
        pending = self._replaying.get(key)
        if (pending is None or pending.get_loop() is not loop) and _small(task):  # inline: nothing to wait for
            states = self._replay(task)
            self._remember(key, states)
            return states
        if pending is None or pending.get_loop() is not loop:  # one replay per task: the other slots wait
            pending = self._replaying[key] = loop.create_task(asyncio.to_thread(self._replay, task))
            pending.add_done_callback(lambda done: self._replayed(key, done))
        return await asyncio.shield(pending)  # a waiter cancelled leaves the replay to the others

    @classmethod
    def _replayed(cls, key: tuple[str, str], done: asyncio.Future[_TaskStates]) -> None:
        if cls._replaying.get(key) is done:
            del cls._replaying[key]
        if done.cancelled() or done.exception() is not None:
            return  # the exception reached its waiters (retrieved here too, so none is logged as lost)
        cls._remember(key, done.result())

    @classmethod
    def _remember(cls, key: tuple[str, str], states: _TaskStates) -> None:
        cls._states_cache[key] = states
        while len(cls._states_cache) > 512:
            cls._states_cache.popitem(last=False)

    def _replay(self, task: TaskSpec) -> _TaskStates:
        """Snapshot the initial store, replay the reference solution on it (if any), snapshot again."""
        conn = self._open_initial(task)
        try:
            view, ignore = store.SqliteState(conn), self.domain.ignore_fields
            columns = self._schema_columns.get(self.domain.schema_sql)  # a template holds the schema's: the same
            if columns is None:
                columns = self._schema_columns.setdefault(self.domain.schema_sql, view.columns())
            version = conn.execute("PRAGMA schema_version").fetchone()[0]
            drop_fields({}, ignore, columns=columns)  # a misspelt entry is loud here, though no table is read yet
            drop = _dropped(ignore)
            key = self._state_key(task)
            known = self._initial_cache.get(key)
            if known is None:  # the first task from this state: its rows read once for every task that shares it
                raw = {t: _raw_rows(conn, t) for t in columns}
                known = _Initial(raw, _Snapshots(raw, columns, drop), store.TablePages(conn))
                self._initial_cache[key] = known
                while len(self._initial_cache) > 64:
                    self._initial_cache.popitem(last=False)
            raw, initial, pages = known.raw, known.snapshots, known.pages
            if task.solution is None:
                return _TaskStates(initial, raw, columns, None, columns, frozenset(), {}, pages)
            calls: list[CallRecord] = []
            for action in task.solution:
                execute_calls(self.domain, conn, calls, action.tool_calls)
            same = conn.execute("PRAGMA schema_version").fetchone()[0] == version  # no DDL ran
            expected_columns = columns if same else view.columns()
            if expected_columns != columns:  # the reference changed the schema: every table read again
                expected = drop_fields(view.snapshot(), ignore, columns=expected_columns)
                return _TaskStates(initial, raw, columns, expected, expected_columns, None, {}, pages)
            after = {t: _raw_rows(conn, t) for t in columns}
            differ = [t for t in columns if after[t] != raw[t]]  # the others hold the initial rows
            expected = _Snapshots({**raw, **{t: after[t] for t in differ}}, columns, drop)
            changed = frozenset(t for t in differ if initial[t] != expected[t])
            after_pages = store.TablePages(conn)
            after_pages.pages = {t: page for t, page in after_pages.pages.items() if t in differ}
            return _TaskStates(initial, raw, columns, expected, expected_columns, changed,
                               {t: _Rows.of(after[t]) for t in differ}, pages, after_pages)
        finally:
            conn.close()

    def _state_key(self, task: TaskSpec) -> tuple[str, str]:
        """What keys a task's template and its initial rows: the domain (its schema) and the initial state's content
        hash, which tells ``1`` from ``1.0`` and ``true`` (each a different SQLite value), as ``==`` would not.
        Until 2026-12-03 they were keyed by the task: the 77 tool tasks of the throughput benchmark built 77
        templates of their two initial states, ~1 ms of a worker's CPU each."""
        return self.domain.name, task.initial_state_hash

    def _open_initial(self, task: TaskSpec) -> sqlite3.Connection:
        return store.create(":memory:", self.domain.schema_sql, task.initial_state, template_key=self._state_key(task))

    def _file_store(self, image: bytes) -> tuple[sqlite3.Connection, Path]:
        self._release_sync()
        directory = Path(tempfile.mkdtemp(prefix="envgym-tool-", dir=self._workdir_root))
        try:
            return store.clone(image, directory / "store.sqlite"), directory
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise

    def _release_sync(self) -> None:
        self._episode += 1
        conn, directory = self._conn, self._dir
        self._conn = self._dir = None
        if conn is not None:
            self._changes.stop()  # what it says stays readable after the connection closes
            conn.close()
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    async def close(self) -> None:
        if self._dir is not None:
            await asyncio.to_thread(self._release_sync)
        else:
            self._release_sync()
