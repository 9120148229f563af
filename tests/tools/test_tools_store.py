"""The store: templates built once and cloned per episode (in memory, or a file), and the write tracker
grading relies on to skip tables (it must never miss a table a statement wrote)."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest

from envgym.errors import SpecError
from envgym.tools import store

SCHEMA = """
CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE);
CREATE TABLE log (entry TEXT);
CREATE TABLE untouched (x INTEGER);
CREATE TRIGGER parent_named AFTER UPDATE OF name ON parent BEGIN INSERT INTO log VALUES (new.name); END;
"""
STATE = {"parent": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
         "child": [{"id": 10, "parent_id": 1}, {"id": 20, "parent_id": 2}], "untouched": [{"x": 7}]}


@pytest.fixture
def conn():
    with contextlib.closing(store.clone(store.image(SCHEMA, STATE))) as connection:
        yield connection


def test_a_template_is_built_once_and_every_clone_is_a_copy(tmp_path):
    key = ("test-store", "clone")
    assert store.template(key) is None
    image = store.image(SCHEMA, STATE, key=key)
    assert store.template(key) is image and store.image(SCHEMA, {}, key=key) is image  # kept, not rebuilt
    first, second = store.clone(image), store.clone(image, tmp_path / "store.sqlite")
    try:
        first.execute("DELETE FROM parent")
        assert second.execute("SELECT count(*) FROM parent").fetchone()[0] == 2
        assert (tmp_path / "store.sqlite").read_bytes().startswith(b"SQLite format 3")
        with contextlib.closing(store.clone(image)) as third:  # the image itself is never written
            assert store.SqliteState(third).snapshot()["parent"] == STATE["parent"]
        assert first.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    finally:
        first.close()
        second.close()


def test_a_bad_initial_state_is_a_spec_error_naming_the_table():
    with pytest.raises(SpecError, match="unknown table 'nope'"):
        store.image(SCHEMA, {"nope": [{"x": 1}]})
    with pytest.raises(SpecError, match="bad row for table 'parent'"):
        store.image(SCHEMA, {"parent": [{"missing_column": 1}]})


def test_reads_change_nothing(conn):
    changes = store.Changes()
    changes.start(conn)
    conn.execute("SELECT * FROM parent JOIN child ON child.parent_id = parent.id").fetchall()
    conn.execute("PRAGMA table_info(parent)").fetchall()
    store.SqliteState(conn).columns()
    changes.stop()
    assert changes.tables() == frozenset()


def test_writes_name_their_tables_and_those_of_cascades_and_triggers(conn):
    changes = store.Changes()
    changes.start(conn)
    conn.execute("DELETE FROM parent WHERE id = 1")  # the child row goes by ON DELETE CASCADE
    changes.stop()
    assert changes.tables() == {"parent", "child"}
    changes = store.Changes()
    changes.start(conn)
    conn.execute("UPDATE parent SET name = 'c' WHERE id = 2")  # the trigger writes the log
    changes.stop()
    assert changes.tables() == {"parent", "log"}
    assert conn.execute("SELECT entry FROM log").fetchall()[0][0] == "c"


def test_a_rolled_back_write_still_counts_and_only_a_recording_counts(conn):
    changes = store.Changes()
    changes.start(conn)
    conn.execute("BEGIN")
    conn.execute("INSERT INTO log VALUES ('x')")
    conn.execute("ROLLBACK")
    changes.stop()
    conn.execute("DELETE FROM untouched")
    assert changes.tables() == {"log"}  # a superset is safe; a missed table is not


@pytest.mark.parametrize("statement", ["CREATE TABLE extra (y)", "ALTER TABLE untouched ADD COLUMN y",
                                       "DROP TABLE log", "PRAGMA foreign_keys = OFF"])
def test_a_statement_that_may_change_the_schema_makes_everything_changed(conn, statement):
    changes = store.Changes()
    changes.start(conn)
    conn.execute(statement)
    changes.stop()
    assert changes.tables() is None


def test_a_snapshot_of_named_tables_leaves_out_the_rest_and_unknown_names(conn):
    state = store.SqliteState(conn)
    assert state.snapshot(["child", "no_such_table"]) == {"child": STATE["child"]}
    assert list(state.snapshot()) == ["child", "log", "parent", "untouched"]


DEADLOCK = """
import asyncio, threading
from pydantic import BaseModel
from envgym.task import TaskSpec
from envgym.tools import Domain, ToolEnv, tool
from envgym.types import Action
from envgym.verify.spec import AnswerSpec

class Row(BaseModel):
    a: int

@tool("write", "Mark a row.")
def mark(ctx, args: Row) -> dict:
    ctx.conn.execute("UPDATE t SET b = 'x' WHERE a = ?", (args.a,))
    return {}

DOMAIN = Domain(name="deadlock", schema_sql="CREATE TABLE t (a, b);", tools=(mark,), policy="")
TASK = TaskSpec(id="deadlock", env_id="test/deadlock-v1", instruction="Mark row 1.",
                initial_state={"t": [{"a": i, "b": str(i)} for i in range(300)]},
                verifiers=(AnswerSpec(expected="done"),))

async def main():
    env = ToolEnv(DOMAIN)
    await env.reset(task=TASK)
    await env.step(Action.call("mark", a=1))
    state = (await env.verify_context()).state

    def hammer(offset):
        for i in range(1000):
            state.query(f"SELECT a, {i + offset} FROM t WHERE a > 3")

    worker = threading.Thread(target=hammer, args=(10**6,))
    worker.start()
    hammer(0)
    worker.join()
    print("done", sorted(state.changed_tables()))
    await env.close()

asyncio.run(main())
"""


def test_a_verifier_querying_from_a_worker_thread_does_not_deadlock():
    """A Python authorizer left on the connection deadlocked two threads querying it (one holding SQLite's
    mutex waiting for the GIL, the other the reverse): the tool env stops recording before grading."""
    result = subprocess.run([sys.executable, "-c", DEADLOCK], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "done ['t']", result.stderr[-2000:]


def test_a_verifier_query_cannot_write_even_through_with(conn):
    state = store.SqliteState(conn)
    before = state.snapshot()
    with pytest.raises(ValueError, match="read-only"):
        state.query("UPDATE parent SET name = 'x'")
    with pytest.raises(ValueError, match="read-only"):  # passes the prefix check; SQLite refuses it
        state.query("WITH doomed AS (SELECT 1) DELETE FROM child")
    assert state.snapshot() == before
    assert state.query("WITH n AS (SELECT count(*) AS c FROM child) SELECT c FROM n") == [{"c": 2}]
    conn.execute("DELETE FROM child")  # the connection itself is writable again afterwards
    assert state.snapshot()["child"] == []


def test_a_reloaded_connection_counts_its_cached_statements_once_a_row_changes(conn):
    image = store.image(SCHEMA, STATE)
    changes = store.Changes()
    changes.start(conn)
    changes.begin()
    conn.execute("UPDATE parent SET name = 'c' WHERE id = 2")
    assert changes.tables() == {"parent", "log"}
    changes.reload(image)  # the attach deserialize runs is not the episode's: nothing unknown
    assert changes.tables() == frozenset()
    assert conn.execute("SELECT count(*) FROM log").fetchone()[0] == 0  # the image's rows again
    conn.execute("UPDATE parent SET name = 'c' WHERE id = 2")  # cached: the authorizer does not see it again
    assert changes.tables() == {"parent", "log"}
    changes.stop()
    assert changes.tables() == {"parent", "log"}  # still readable once the connection is closed


def test_table_pages_tell_a_table_on_the_very_same_pages_and_leave_out_overflowing_ones(conn):
    conn.execute("CREATE TABLE blob (x)")
    conn.execute("INSERT INTO blob VALUES (?)", ("y" * 5000,))  # one row spilling to an overflow page
    conn.execute("CREATE TABLE wide (id INTEGER PRIMARY KEY, x)")
    conn.executemany("INSERT INTO wide VALUES (?, ?)", [(i, "z" * 500) for i in range(40)])  # several pages
    before = store.TablePages(conn)
    assert set(before.pages) == {"parent", "child", "log", "untouched", "wide"} and len(before.pages["wide"]) > 3
    image = conn.serialize()
    assert all(before.same(t, image) for t in before.pages) and not before.same("blob", image)
    conn.execute("UPDATE parent SET name = 'A' WHERE id = 1")
    conn.execute("UPDATE child SET parent_id = 1 WHERE id = 20")
    conn.execute("UPDATE child SET parent_id = 2 WHERE id = 20")  # written, and back as it was
    conn.execute("UPDATE wide SET x = 'w' || substr(x, 2) WHERE id = 39")  # one leaf of several
    after = conn.serialize()
    assert not before.same("parent", after) and before.same("untouched", after)
    assert before.same("child", after)  # the same bytes: the same rows, whatever was written
    assert not before.same("wide", after)
    conn.execute("CREATE TABLE loose (x)")  # no type affinity: 7.0 stays a REAL
    conn.execute("INSERT INTO loose VALUES (7)")
    loose = store.TablePages(conn)
    conn.execute("UPDATE loose SET x = 7.0")  # 7 == 7.0, but not the same value: another page
    assert not loose.same("loose", conn.serialize())


def test_templates_after_a_schemas_first_start_from_its_image_and_a_schema_setting_a_pragma_does_not():
    schema = SCHEMA + "CREATE INDEX parent_name ON parent (name);"
    store._schemas.pop(schema, None)
    store.image(schema, STATE)
    assert schema in store._schemas  # the empty schema's image, kept
    with contextlib.closing(store.clone(store.image(schema, {"parent": [{"id": 3, "name": "c"}]}))) as conn:
        assert [tuple(r) for r in conn.execute("SELECT id, name FROM parent")] == [(3, "c")]
        assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master")} >= {"parent_name", "parent_named"}
        conn.execute("UPDATE parent SET name = 'd'")  # the trigger came with the image
        assert [tuple(r) for r in conn.execute("SELECT entry FROM log")] == [("d",)]
    with pytest.raises(SpecError, match="unknown table 'nope'"):  # the image's tables are checked as before
        store.image(schema, {"nope": [{"x": 1}]})
    pragma = "PRAGMA recursive_triggers = ON;" + SCHEMA
    store.image(pragma, STATE)
    assert pragma not in store._schemas  # a connection's setting would not travel in an image
