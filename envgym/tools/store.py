"""A SQLite store made from a task's initial state, what an episode wrote to it, and the view verifiers read.

``image(schema_sql, initial_state, key=...)`` builds a database holding the initial rows and returns its
serialised image (bytes); ``initial_state`` maps table names to lists of row objects, and an unknown table
or column is a :class:`~envgym.errors.SpecError` naming it. With a ``key`` (e.g. domain name and task hash)
the image is kept (at most 256) and ``template(key)`` hands it back without a rebuild. ``clone(image)``
opens an episode's store from an image: in memory by default (``sqlite3`` deserialisation, no file), or
written to ``path`` when a task needs a file. The image is immutable bytes and every clone is a copy of it,
so an episode starts from a state no earlier episode touched. ``create(path, schema_sql, initial_state)`` is
the two in one.

:class:`Changes` records which tables a connection's statements may write while it records (``start(conn)``
to ``stop()``; SQLite's authorizer sees every statement when it is compiled, including trigger bodies and
foreign-key actions), so grading reads only those tables (:meth:`Changes.tables`); a statement the tracker
cannot place (DDL, a pragma that sets a value, an attach) makes it report None: everything may have
changed. It over-approximates (a rolled-back write still counts). It sees a statement compiled while it
records: ``start`` makes SQLite recompile the connection's cached statements (so start it once, on a fresh
connection, not per call or per episode), and a statement compiled while stopped and cached is not seen
again (the tool env records from the moment it opens a connection). A connection kept for another episode
keeps its cached statements, which run again unseen: ``reload(image)`` replaces its database with a copy of
an image (``deserialize``) and ``begin()``s an episode, and from then ``tables()`` is empty while no row has
changed (``total_changes``) and, once one has, names every table a statement compiled on the connection
while recording may write. While it records, only one thread may use the connection (the tool env serves a
verifier's worker thread from a copy): the authorizer is Python called from inside SQLite, and two threads on
the connection deadlock on the GIL. Statements run inside ``unrecorded()`` are not recorded (the env's own,
which change no row and leave nothing behind).

:class:`TablePages` finds, in an image, each table whose rows all lie on its b-tree's pages (none on an overflow
page), so another image holding those very pages is known to hold the same rows without reading them.

:class:`SqliteState` is the :class:`~envgym.verify.state.StateView` of a connection: ``snapshot()`` (every
table but SQLite's own, or the named ones, rows sorted as the state contract says; ``rows(table)``: one),
``columns()`` (every table's columns, from the schema) and read-only ``query()``. The tool env and the web
apps keep their stores this way.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from itertools import groupby
from pathlib import Path
from typing import Any

from envgym.errors import SpecError
from envgym.verify.state import Rows, Snapshot, sort_rows

__all__ = ["Changes", "SqliteState", "TablePages", "clone", "connect", "create", "image", "template"]


def connect(path: str | Path) -> sqlite3.Connection:
    """A connection in autocommit mode (callers open transactions), rows as :class:`sqlite3.Row`."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


_templates: OrderedDict[Any, bytes] = OrderedDict()
_templates_lock = threading.Lock()  # images are built in worker threads while the loop reads them


def template(key: Any) -> bytes | None:
    """The image kept under ``key`` by :func:`image`, or None (nothing is built)."""
    with _templates_lock:
        found = _templates.get(key)
        if found is not None:
            _templates.move_to_end(key)
    return found


def image(schema_sql: str, initial_state: dict[str, Any], *, key: Any = None) -> bytes:
    """The serialised database holding ``initial_state`` (kept under ``key`` when given: built once)."""
    found = template(key) if key is not None else None
    if found is not None:
        return found
    built = _build(schema_sql, initial_state)
    try:
        found = built.serialize()
    finally:
        built.close()
    if key is not None:
        with _templates_lock:
            _templates[key] = found
            while len(_templates) > 256:
                _templates.popitem(last=False)
    return found


def clone(data: bytes, path: str | Path = ":memory:") -> sqlite3.Connection:
    """An episode's store from an :func:`image`: in memory, or a file at ``path`` (written from the image)."""
    if str(path) == ":memory:":
        conn = connect(":memory:")
        conn.deserialize(data)  # foreign_keys, a setting of the connection, stays on
        return conn
    Path(path).write_bytes(data)
    conn = connect(path)
    conn.execute("PRAGMA journal_mode = MEMORY")
    conn.execute("PRAGMA synchronous = OFF")
    return conn


def create(path: str | Path, schema_sql: str, initial_state: dict[str, Any], *,
           template_key: Any = None) -> sqlite3.Connection:
    """A store at ``path`` (``":memory:"`` allowed) holding the initial rows: ``clone(image(...), path)``."""
    return clone(image(schema_sql, initial_state, key=template_key), path)


_schemas: dict[str, tuple[bytes, frozenset[str]]] = {}
"""Per schema (at most :data:`MAX_SCHEMAS`): the image of an empty database holding it, and its tables."""
MAX_SCHEMAS = 64


def _empty(schema_sql: str) -> tuple[sqlite3.Connection, frozenset[str]]:
    """A database holding the schema and no rows, and its tables: from the schema's image once there is one
    (its CREATE statements are not run again for every task's template: a third of the template's cost)."""
    conn = connect(":memory:")
    found = _schemas.get(schema_sql)
    if found is not None:
        conn.deserialize(found[0])
        return conn, found[1]
    conn.executescript(schema_sql)
    tables = frozenset(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    if "pragma" not in schema_sql.lower():  # a pragma may set the connection, which an image would not carry
        while len(_schemas) >= MAX_SCHEMAS:
            _schemas.pop(next(iter(_schemas)))
        _schemas[schema_sql] = (conn.serialize(), tables)
    return conn, tables


def _build(schema_sql: str, initial_state: dict[str, Any]) -> sqlite3.Connection:
    conn, tables = _empty(schema_sql)
    conn.execute("BEGIN")
    try:
        for table, rows in initial_state.items():
            if table not in tables:
                raise SpecError(f"initial_state names unknown table {table!r}", field=f"initial_state.{table}")
            for names, run in groupby(rows, key=tuple):  # one executemany per run of rows naming the same columns
                values = [tuple(row.values()) for row in run]
                cols = ", ".join(f'"{c}"' for c in names)
                marks = ", ".join("?" for _ in names)
                try:
                    conn.executemany(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', values)
                except sqlite3.Error as exc:
                    raise SpecError(f"bad row for table {table!r}: {exc}", field=f"initial_state.{table}") from exc
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        conn.close()
        raise
    return conn


class TablePages:
    """Where a store's tables lie in its image (``conn.serialize()``): each table whose rows all sit on the
    pages of its b-tree (no cell spills to an overflow page; at most :data:`MAX_TABLE_PAGES` pages), with
    those pages' bytes. :meth:`same` tells whether another image of the same schema holds those very pages at
    the same places: then the table holds the same rows, value for value and type for type, in the same order,
    and nothing need be read. Pages that differ say nothing (the same rows may be laid out differently)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        data = conn.serialize()
        size = int.from_bytes(data[16:18], "big")
        self.size = 65536 if size == 1 else size
        usable = self.size - data[20]  # less the bytes reserved at the end of each page
        self.pages: dict[str, tuple[tuple[int, bytes], ...]] = {}
        for name, root in conn.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'table'"):
            if isinstance(root, int) and root >= 2:  # a virtual table has no b-tree; page 1 is the schema's
                found = _table_pages(data, root, self.size, usable)
                if found is not None:
                    self.pages[name] = found

    def same(self, table: str, data: bytes) -> bool:
        """Whether the image ``data`` holds ``table``'s pages, byte for byte, where this image held them."""
        found = self.pages.get(table)
        return found is not None and all(data[at:at + self.size] == page for at, page in found)


MAX_TABLE_PAGES = 64
""":class:`TablePages` keeps (a copy of) the pages of tables this small (256 KiB at 4 KiB a page)."""


def _table_pages(data: bytes, root: int, size: int, usable: int) -> tuple[tuple[int, bytes], ...] | None:
    """Each page of the table b-tree rooted at page ``root`` (where it starts, its bytes), root first; None if a
    cell spills to an overflow page, a page is not a table b-tree page, or there are too many (SQLite file
    format: interior pages (type 5) hold their children's page numbers, leaves (type 13) the rows)."""
    found: list[tuple[int, bytes]] = []
    todo = [root]
    while todo:
        number = todo.pop()
        start = (number - 1) * size
        page = data[start:start + size]
        if number < 2 or len(page) != size or len(found) >= MAX_TABLE_PAGES:
            return None
        if page[0] == 5:
            cells = int.from_bytes(page[3:5], "big")
            todo.append(int.from_bytes(page[8:12], "big"))  # the right-most child
            for i in range(cells):
                at = int.from_bytes(page[12 + 2 * i:14 + 2 * i], "big")
                todo.append(int.from_bytes(page[at:at + 4], "big"))
        elif not _leaf_without_overflow(page, usable):
            return None
        found.append((start, page))
    return tuple(found)


def _leaf_without_overflow(page: bytes, usable: int) -> bool:
    """A table b-tree leaf page (type 13) whose every cell holds its whole payload (SQLite file format)."""
    if page[0] != 13:
        return False
    cells = int.from_bytes(page[3:5], "big")
    for i in range(cells):
        at = int.from_bytes(page[8 + 2 * i:10 + 2 * i], "big")
        payload = 0
        for k in range(9):  # the payload size, a varint
            if at + k >= len(page):
                return False
            byte = page[at + k]
            if k == 8:
                payload = (payload << 8) | byte
                break
            payload = (payload << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        if payload > usable - 35:  # more than a table leaf keeps on the page: the rest overflows
            return False
    return True


_ROW_WRITES = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})
_HARMLESS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_TRANSACTION,
                       sqlite3.SQLITE_SAVEPOINT, sqlite3.SQLITE_RECURSIVE})
_READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
                           "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check"})


class Changes:
    """The tables a connection may have written while recording (see the module docstring)."""

    def __init__(self) -> None:
        self._tables: set[str] = set()
        self._unknown = False
        self._conn: sqlite3.Connection | None = None
        self._since: int | None = None  # the connection's total_changes when the episode began
        self._stopped: frozenset[str] = frozenset()  # what tables() said when recording stopped
        self._paused = False

    def tables(self) -> frozenset[str] | None:
        """Every table a statement may have written, or None when a statement may have changed anything."""
        if self._unknown:
            return None
        if self._conn is None:
            return self._stopped
        if self._since is not None and self._conn.total_changes == self._since:
            return frozenset()  # no row changed since begin(), whatever the cached statements could write
        return frozenset(self._tables)

    def begin(self) -> None:
        """An episode starts on the recording connection (see the module docstring)."""
        if self._conn is None:
            raise RuntimeError("Changes.begin() while not recording")
        self._since = self._conn.total_changes

    def reload(self, data: bytes) -> None:
        """Replace the recording connection's database with a copy of the image ``data`` and :meth:`begin`."""
        if self._conn is None:
            raise RuntimeError("Changes.reload() while not recording")
        with self.unrecorded():  # deserialize attaches the copy as main: not a statement of the episode
            self._conn.deserialize(data)
        self.begin()

    @contextlib.contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Statements compiled inside are not the episode's: they change no row and leave nothing behind
        (``reload``'s deserialize; the ``query_only`` pragma a verifier's query runs under, set back after)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def start(self, conn: sqlite3.Connection) -> None:
        """Record what ``conn``'s statements may write from now on (see the module docstring)."""
        if self._conn is not conn:
            self.stop()
            conn.set_authorizer(self._authorize)
            self._conn = conn

    def stop(self) -> None:
        """Stop recording (before another thread may use the connection)."""
        if self._conn is not None:
            self._stopped = self.tables() or frozenset()
            self._conn.set_authorizer(None)
            self._conn = None

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
        if self._paused:
            pass
        elif action in _ROW_WRITES and arg1 is not None and db in ("main", None):
            self._tables.add(arg1)
        elif action == sqlite3.SQLITE_PRAGMA and (arg2 is None or (arg1 or "").lower() in _READ_PRAGMAS):
            pass  # a pragma read (foreign_keys, table_info(t)): one given a value may change anything
        elif action not in _HARMLESS and not (action in _ROW_WRITES and db == "temp"):
            self._unknown = True  # DDL, a pragma set, an attach: the schema itself may differ
        return sqlite3.SQLITE_OK


class SqliteState:
    """Read access to a store for verifiers; with ``changes`` (recording on ``conn``), a query's ``query_only``
    pragmas are not recorded (:meth:`Changes.unrecorded`), so the connection stays fit to keep."""

    def __init__(self, conn: sqlite3.Connection, changes: Changes | None = None) -> None:
        self.conn = conn
        self._changes = changes

    def tables(self) -> list[str]:
        """The store's tables (SQLite's own left out), by name."""
        return [r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]

    def snapshot(self, tables: Iterable[str] | None = None) -> Snapshot:
        """Every table's rows, or those of ``tables`` that exist (a name the store lacks is left out)."""
        names = self.tables()
        if tables is not None:
            wanted = set(tables)
            names = [t for t in names if t in wanted]
        return {t: self.rows(t) for t in names}

    def rows(self, table: str) -> Rows:
        """One table's rows, sorted (:func:`~envgym.verify.state.sort_rows`)."""
        return sort_rows(table, self.conn.execute(f'SELECT * FROM "{_quoted(table)}"'))

    def columns(self) -> dict[str, tuple[str, ...]]:
        """Every table's column names, in schema order (empty tables included)."""
        return {t: tuple(r[1] for r in self.conn.execute(f'PRAGMA table_info("{_quoted(t)}")')) for t in self.tables()}

    def query(self, sql: str) -> list[dict[str, Any]]:
        if not sql.lstrip().lower().startswith(("select", "with")):
            raise ValueError("verifier queries must be read-only (SELECT/WITH)")
        # a WITH can still end in DELETE/UPDATE/INSERT: SQLite itself refuses writes while query_only is on
        self._pragma("PRAGMA query_only = ON")
        try:
            return [dict(r) for r in self.conn.execute(sql).fetchall()]
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise ValueError(f"verifier queries must be read-only: {exc}") from None
            raise
        finally:
            self._pragma("PRAGMA query_only = OFF")

    def _pragma(self, sql: str) -> None:
        with self._changes.unrecorded() if self._changes is not None else contextlib.nullcontext():
            self.conn.execute(sql)


def _quoted(name: str) -> str:
    return name.replace('"', '""')
