"""The state a verifier reads: the :class:`StateView` contract, its snapshots, and how two are compared.

A view's ``snapshot()`` maps every table name to its rows, each row a dict of column -> value:

- **values** are JSON-able: None, bool, int, float, str, bytes, and lists / dicts of those (a JSON or blob
  column, decoded or not). They are compared as Python compares them (``1 == 1.0``; a dict's key order does
  not matter). A value that can be neither compared nor hashed (an arbitrary object) is a
  :class:`~envgym.errors.VerifierError` naming the table and column, never a bare ``TypeError``;
- **rows** come sorted by :func:`sort_rows` (deterministic for any JSON-able rows), but their order carries
  no meaning: :func:`diff_states` compares each table as a multiset of rows;
- a view may also offer ``columns() -> {table: (column, ...)}``: every table's columns, those of an empty
  table and those the env leaves out of the snapshot included. :func:`drop_fields` checks ``ignore_fields``
  entries against it (without it, against the columns its rows show);
- a view may answer SQL (:class:`SqlView`, its ``query(sql)``): the rubric's ``sql`` checks need one;
- a view whose ``query`` is cheap and safe to run on the event loop's thread (a private in-memory copy,
  microseconds) says so with a true ``inline_queries`` attribute; other views' queries run in a worker thread;
- a view whose snapshots never hold some ``table.column`` fields (it leaves them out itself) may name them
  in a ``left_out`` attribute: :func:`diff_views` then checks those ``ignore_fields`` entries without
  searching the rows for them;
- a view may also offer ``changed_tables() -> frozenset[str] | None``: every table whose rows or columns may
  differ from the task's initial state (a superset is fine; None: any may). A view that offers it takes
  ``snapshot(tables=...)`` (just those tables; a name the state lacks is left out), and the env promises
  that its ``state`` and ``expected_state`` start from the same initial state. :func:`diff_views` then reads
  and compares only the tables either side changed: every other table holds the initial rows on both.

``ignore_fields`` entries are ``"table.column"``, split on the **last** dot: a table name may hold dots, a
column name may not. An entry without a dot, or naming a table or column the state does not have, is a
:class:`~envgym.errors.VerifierError` naming the entry and what is known: a misspelt entry would otherwise
silently compare the very field it meant to leave out. An entry for a table with no rows and no
``columns()`` cannot be checked and has nothing to drop.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from envgym.errors import VerifierError

__all__ = ["Rows", "Snapshot", "SqlView", "StateView", "columns_of", "diff_states", "diff_views", "drop_fields",
           "row_sort_key", "sort_rows"]

Rows = list[dict[str, Any]]
Snapshot = dict[str, Rows]


@runtime_checkable
class StateView(Protocol):
    """What every state offers verifiers: its snapshot (see the module docstring for the contract)."""

    def snapshot(self) -> Snapshot:
        """Every table as a list of rows (sorted by :func:`sort_rows`)."""
        ...


@runtime_checkable
class SqlView(StateView, Protocol):
    """A state that also answers SQL (a SQLite store): what a rubric ``sql`` check reads. An env whose states
    are such views says so with ``sql_state = True`` (:class:`~envgym.env.Env`), and a task with a ``sql`` check
    is refused when its suite loads for an env that does not."""

    def query(self, sql: str) -> Rows:
        """Run a read-only query (SELECT / WITH)."""
        ...


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"$bytes": bytes(value).hex()}
    return {"$repr": repr(value)}  # outside the contract (a date, a Decimal): still a total, stable order


def row_sort_key(row: Mapping[str, Any]) -> str:
    """The key rows holding a list or dict sort by: the row as canonical JSON (columns in row order,
    nested keys sorted). A table of scalar rows (every SQLite table) sorts by ``repr``, which is as
    deterministic there and twice as fast."""
    return json.dumps(list(row.items()), sort_keys=True, ensure_ascii=False, default=_json_default)


_SCALARS = frozenset({type(None), bool, int, float, str, bytes})


def sort_rows(table: str, rows: Iterable[Mapping[str, Any]]) -> Rows:
    """``rows`` as dicts, sorted (see :func:`row_sort_key`); ``table`` names it in a VerifierError."""
    out = [dict(r) for r in rows]
    if all(_SCALARS.issuperset(map(type, row.values())) for row in out):
        return sorted(out, key=repr)
    try:
        return sorted(out, key=row_sort_key)
    except (TypeError, ValueError, RecursionError) as exc:  # a dict with non-string keys, a cycle
        raise VerifierError(f"state table {table!r}: rows cannot be ordered ({exc}); "
                            "values must be JSON-able (see envgym.verify.state)") from None


class _Tag:
    """Marks a frozen list, dict or set, so it never equals a tuple the store itself held."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_LIST, _DICT, _SET = _Tag("list"), _Tag("dict"), _Tag("set")


def _freeze(value: Any) -> Any:
    """A hashable value equal to another's frozen form exactly when the values are equal."""
    if isinstance(value, list | tuple):
        frozen = tuple(_freeze(v) for v in value)
        return (_LIST, frozen) if isinstance(value, list) else frozen
    if isinstance(value, dict):
        return (_DICT, frozenset((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return (_SET, frozenset(_freeze(v) for v in value))
    hash(value)  # TypeError for an unhashable object outside the contract
    return value


def _row_identity(table: str, row: Mapping[str, Any]) -> frozenset[tuple[str, Any]]:
    """A hashable form of ``row``, equal exactly when the rows are equal."""
    frozen = []
    for column, value in row.items():
        try:
            frozen.append((column, _freeze(value)))
        except (TypeError, RecursionError):
            raise VerifierError(f"state table {table!r}, column {column!r}: a {type(value).__name__} value "
                                f"({str(value)[:80]!r}) cannot be compared; values must be JSON-able "
                                "(see envgym.verify.state)") from None
    return frozenset(frozen)


def diff_states(actual: Snapshot, expected: Snapshot, *, limit: int = 10) -> dict[str, Any]:
    """Per table: rows only in the actual store and rows only in the expected one (at most ``limit``)."""
    if actual == expected:
        return {}
    diff: dict[str, Any] = {}
    for table in sorted(set(actual) | set(expected)):
        a_rows, e_rows = actual.get(table, []), expected.get(table, [])
        rows: dict[frozenset[tuple[str, Any]], dict[str, Any]] = {}
        a: Counter[frozenset[tuple[str, Any]]] = Counter()
        e: Counter[frozenset[tuple[str, Any]]] = Counter()
        for counter, side in ((a, a_rows), (e, e_rows)):
            for row in side:
                key = _row_identity(table, row)
                counter[key] += 1
                rows.setdefault(key, row)
        if a == e:
            continue
        extra = [rows[k] for k in (a - e).elements()]
        missing = [rows[k] for k in (e - a).elements()]
        diff[table] = {"unexpected": extra[:limit], "missing": missing[:limit]}
    return diff


def columns_of(view: Any) -> dict[str, tuple[str, ...]] | None:
    """The view's ``columns()`` if it offers one (see the module docstring), else None."""
    columns = getattr(view, "columns", None)
    return dict(columns()) if callable(columns) else None


def drop_fields(snapshot: Snapshot, ignore: Iterable[str], *,
                columns: Mapping[str, Iterable[str]] | None = None, left_out: Iterable[str] = ()) -> Snapshot:
    """The snapshot without the ``table.column`` fields in ``ignore``, rows re-sorted (a table holding none
    of them is returned as it is: its rows are sorted already).

    Each entry is checked (see the module docstring) against ``columns`` (a view's ``columns()``) where it
    names the table, else against the columns the table's rows show; a bad entry is a VerifierError.
    ``left_out`` names fields the snapshot is known not to hold (a view's ``left_out``): still checked, but
    no table's rows are searched for them alone.
    """
    ignore = tuple(ignore)
    if not ignore:
        return snapshot
    gone = frozenset(left_out)
    tables = sorted(set(snapshot) | set(columns or {}))
    drop: dict[str, set[str]] = {}
    for item in ignore:
        table, dot, column = item.rpartition(".")
        if not dot or not table or not column:
            raise VerifierError(f"ignore_fields entry {item!r} is not 'table.column'")
        if table not in tables:
            raise VerifierError(f"ignore_fields entry {item!r} names no table of the state; "
                                f"tables: {', '.join(tables) or 'none'}")
        if columns is not None and table in columns:
            known = set(columns[table])
        else:
            known = {c for row in snapshot.get(table, ()) for c in row}
        if known and column not in known:
            raise VerifierError(f"ignore_fields entry {item!r} names no column of table {table!r}; "
                                f"its columns: {', '.join(sorted(known))}")
        if item not in gone:
            drop.setdefault(table, set()).add(column)
    return {table: _without(table, rows, drop[table]) if table in drop else rows for table, rows in snapshot.items()}


def _without(table: str, rows: Rows, columns: set[str]) -> Rows:
    if not any(column in row for row in rows for column in columns):
        return rows  # already without them (a store that left them out): sorted as the contract says
    return sort_rows(table, ({k: v for k, v in row.items() if k not in columns} for row in rows))


def _changed_tables(actual: Any, expected: Any) -> list[str] | None:
    """The tables either view may have changed since their shared initial state, or None if one cannot say."""
    found = []
    for view in (actual, expected):
        changed = getattr(view, "changed_tables", None)
        tables = changed() if callable(changed) else None
        if tables is None:
            return None
        found.append(tables)
    return sorted(set().union(*found))


def diff_views(actual: StateView, expected: StateView, ignore: Iterable[str] = (), *,
               limit: int = 10) -> dict[str, Any]:
    """:func:`diff_states` of the two views' snapshots, the ``ignore`` fields dropped from both.

    When both views offer ``columns()`` and ``changed_tables()`` (see the module docstring), only the tables
    either side changed are read and compared; the diff is the same, since every other table holds the
    initial rows on both sides.
    """
    a_columns, e_columns = columns_of(actual), columns_of(expected)
    tables = _changed_tables(actual, expected) if a_columns is not None and e_columns is not None else None
    if tables is None:
        a_rows, e_rows = actual.snapshot(), expected.snapshot()
    else:
        a_rows, e_rows = actual.snapshot(tables=tables), expected.snapshot(tables=tables)  # type: ignore[call-arg]
    return diff_states(drop_fields(a_rows, ignore, columns=a_columns, left_out=getattr(actual, "left_out", ())),
                       drop_fields(e_rows, ignore, columns=e_columns, left_out=getattr(expected, "left_out", ())),
                       limit=limit)
