"""The episode's store: a real SQLite database file created from the task's initial state.

``initial_state`` maps table names to lists of row objects; unknown tables or columns are a task error.
``SqliteState`` is the :class:`~envgym.verify.context.StateView` verifiers read (snapshot, query).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from envgym.errors import SpecError


def connect(path: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def create(path: str | Path, schema_sql: str, initial_state: dict[str, Any],
           *, journal: str = "MEMORY") -> sqlite3.Connection:
    """Create the store at ``path`` (``:memory:`` allowed) and load the initial rows in one transaction."""
    conn = connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("PRAGMA synchronous = OFF")
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
                    conn.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', list(row.values()))
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

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        tables = [r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {t: sorted((dict(r) for r in self.conn.execute(f'SELECT * FROM "{t}"')), key=repr) for t in tables}

    def query(self, sql: str) -> list[dict[str, Any]]:
        if not sql.lstrip().lower().startswith(("select", "with")):
            raise ValueError("verifier queries must be read-only (SELECT/WITH)")
        return [dict(r) for r in self.conn.execute(sql).fetchall()]
