"""A SQLite store made from a task's initial state, and the state view verifiers read of it.

``create(path, schema_sql, initial_state)`` builds the database (a file, or ``":memory:"``) holding the
initial rows; ``initial_state`` maps table names to lists of row objects, and an unknown table or column is
a :class:`~envgym.errors.SpecError` naming it. With a ``template_key`` the first build is kept (a serialised
image, at most 256) and later stores of that key are a copy of it, not a reload. :class:`SqliteState` is the
:class:`~envgym.verify.state.StateView` of a connection: ``snapshot()`` (every table but SQLite's own, rows
sorted as the state contract says), ``columns()`` (every table's columns, from the schema) and read-only
``query()``. The tool env and the web apps both keep their stores this way.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from pathlib import Path
from typing import Any

from envgym.errors import SpecError
from envgym.verify.state import sort_rows

__all__ = ["SqliteState", "connect", "create"]


def connect(path: str | Path) -> sqlite3.Connection:
    """A connection in autocommit mode (callers open transactions), rows as :class:`sqlite3.Row`."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


_templates: OrderedDict[tuple[str, str], bytes] = OrderedDict()


def create(path: str | Path, schema_sql: str, initial_state: dict[str, Any], *,
           template_key: tuple[str, str] | None = None) -> sqlite3.Connection:
    """Create the store at ``path`` (``:memory:`` allowed) holding the initial rows.

    With a ``template_key`` (e.g. domain name and task hash) the first build is kept as a serialised
    database image and later stores with the same key are written from it: a file copy, not a reload.
    """
    image = _templates.get(template_key) if template_key else None
    if image is None:
        built = _build(":memory:", schema_sql, initial_state)
        image = built.serialize()
        built.close()
        if template_key:
            _templates[template_key] = image
            while len(_templates) > 256:
                _templates.popitem(last=False)
    if str(path) == ":memory:":
        conn = connect(":memory:")
        conn.deserialize(image)
    else:
        Path(path).write_bytes(image)
        conn = connect(path)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = MEMORY")
    conn.execute("PRAGMA synchronous = OFF")
    return conn


def _build(path: str | Path, schema_sql: str, initial_state: dict[str, Any]) -> sqlite3.Connection:
    conn = connect(path)
    conn.executescript(schema_sql)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.execute("BEGIN")
    try:
        for table, rows in initial_state.items():
            if table not in tables:
                raise SpecError(f"initial_state names unknown table {table!r}", field=f"initial_state.{table}")
            for row in rows:
                cols = ", ".join(f'"{c}"' for c in row)
                marks = ", ".join("?" for _ in row)
                try:
                    conn.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', tuple(row.values()))
                except sqlite3.Error as exc:
                    raise SpecError(f"bad row for table {table!r}: {exc}", field=f"initial_state.{table}") from exc
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        conn.close()
        raise
    return conn


class SqliteState:
    """Read access to a store for verifiers."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _tables(self) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {t: sort_rows(t, self.conn.execute(f'SELECT * FROM "{_quoted(t)}"')) for t in self._tables()}

    def columns(self) -> dict[str, tuple[str, ...]]:
        """Every table's column names, in schema order (empty tables included)."""
        return {t: tuple(r[1] for r in self.conn.execute(f'PRAGMA table_info("{_quoted(t)}")')) for t in self._tables()}

    def query(self, sql: str) -> list[dict[str, Any]]:
        if not sql.lstrip().lower().startswith(("select", "with")):
            raise ValueError("verifier queries must be read-only (SELECT/WITH)")
        return [dict(r) for r in self.conn.execute(sql).fetchall()]


def _quoted(name: str) -> str:
    return name.replace('"', '""')
