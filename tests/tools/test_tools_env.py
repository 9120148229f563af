"""The tool env's incremental grading: only the tables the episode or the reference changed are read, and
the verdict is the one a whole-store comparison gives (a table the expected state does not mention, a
collateral write, a deleted row, a cascade, a schema change, a write undone)."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from pydantic import BaseModel

from envgym.task import TaskSpec
from envgym.tools import Domain, ToolContext, ToolEnv, ToolFailure, tool
from envgym.types import Action
from envgym.verify.spec import ExpectedWrite, WriteActionSpec
from envgym.verify.state import diff_states, drop_fields

SCHEMA = """
CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER, note TEXT);
CREATE TABLE cards (id INTEGER PRIMARY KEY, account_id INTEGER REFERENCES accounts(id) ON DELETE CASCADE);
CREATE TABLE audit (id INTEGER PRIMARY KEY, entry TEXT);
CREATE TABLE rates (name TEXT, value REAL);
"""
STATE = {"accounts": [{"id": 1, "balance": 10, "note": "a"}, {"id": 2, "balance": 20, "note": "b"}],
         "cards": [{"id": 5, "account_id": 1}, {"id": 6, "account_id": 2}],
         "rates": [{"name": "base", "value": 1.5}]}


class SetBalance(BaseModel):
    id: int
    balance: int
    audit: str | None = None
    """Also writes an audit row: a table the reference never writes."""
    close: int | None = None
    """Also deletes this account (its cards go by cascade)."""
    note: str | None = None


class Sql(BaseModel):
    sql: str


@tool("write", "Set an account's balance.")
def set_balance(ctx: ToolContext, args: SetBalance) -> dict:
    ctx.conn.execute("UPDATE accounts SET balance = ? WHERE id = ?", (args.balance, args.id))
    if args.note is not None:
        ctx.conn.execute("UPDATE accounts SET note = ? WHERE id = ?", (args.note, args.id))
    if args.audit is not None:
        ctx.conn.execute("INSERT INTO audit (entry) VALUES (?)", (args.audit,))
    if args.close is not None:
        ctx.conn.execute("DELETE FROM accounts WHERE id = ?", (args.close,))
    return {"ok": True}


@tool("write", "Run statements (a test's back door to the store); one that fails refuses the call.")
def run_sql(ctx: ToolContext, args: Sql) -> dict:
    try:
        for statement in args.sql.split(";"):
            ctx.conn.execute(statement)
    except sqlite3.Error as exc:
        raise ToolFailure(str(exc)) from None
    return {"ok": True}


LEDGER = Domain(name="test-ledger", schema_sql=SCHEMA, tools=(set_balance, run_sql), policy="",
                ignore_fields=("accounts.note",))
TASK = TaskSpec(id="ledger-set", env_id="test/ledger-v1", instruction="Set account 1's balance to 50.",
                initial_state=STATE,
                verifiers=(WriteActionSpec(expected=(ExpectedWrite(tool="set_balance", args={"id": 1, "balance": 50}),),
                                           allow_collateral=True),),
                solution=(Action.call("set_balance", id=1, balance=50), Action.say("Done.")))


async def grade(*actions: Action):
    """The verdict of an episode of ``actions`` (then a final message), and the final-state diff a
    whole-store comparison gives."""
    env = ToolEnv(LEDGER)
    try:
        await env.reset(task=TASK)
        for action in (*actions, Action.say("Done.")):
            await env.step(action)
        ctx = await env.verify_context()
        verdict = await env.verify()
        whole = diff_states(ctx.state.snapshot(), drop_fields(ctx.expected_state.snapshot(), ()))
        return verdict, whole, ctx
    finally:
        await env.close()


def final_state(verdict):
    return next(c for c in verdict.criteria if c.name == "final_state")


async def test_the_reference_passes_reading_only_the_table_it_changed():
    verdict, whole, ctx = await grade(*TASK.solution[:-1])
    assert verdict.passed and whole == {} and verdict.evidence["state_diff"] == {}
    assert ctx.state.changed_tables() == {"accounts"} and ctx.expected_state.changed_tables() == {"accounts"}
    assert ctx.state.snapshot(["accounts"])["accounts"][0] == {"id": 1, "balance": 50}  # note left out


async def test_a_write_to_a_table_the_expected_state_does_not_mention_fails():
    verdict, whole, _ = await grade(Action.call("set_balance", id=1, balance=50, audit="done"))
    assert not verdict.passed and not final_state(verdict).passed
    assert final_state(verdict).detail == "differs in: audit"
    assert verdict.evidence["state_diff"] == whole == {"audit": {"unexpected": [{"id": 1, "entry": "done"}],
                                                                 "missing": []}}


async def test_a_collateral_write_to_a_row_the_reference_leaves_alone_fails():
    verdict, whole, _ = await grade(*TASK.solution[:-1], Action.call("set_balance", id=2, balance=99))
    assert not final_state(verdict).passed
    assert verdict.evidence["state_diff"] == whole == {
        "accounts": {"unexpected": [{"id": 2, "balance": 99}], "missing": [{"id": 2, "balance": 20}]}}


async def test_a_deleted_row_and_its_cascade_fail():
    verdict, whole, _ = await grade(Action.call("set_balance", id=1, balance=50, close=2))
    assert not final_state(verdict).passed
    assert verdict.evidence["state_diff"] == whole == {
        "accounts": {"unexpected": [], "missing": [{"id": 2, "balance": 20}]},
        "cards": {"unexpected": [], "missing": [{"id": 6, "account_id": 2}]}}


async def test_a_change_only_to_an_ignored_field_passes():
    verdict, whole, ctx = await grade(Action.call("set_balance", id=1, balance=50, note="changed"))
    assert ctx.state.changed_tables() == {"accounts"}
    assert verdict.passed and whole == {}


async def test_a_write_undone_and_a_refused_call_pass():
    verdict, _, ctx = await grade(Action.call("run_sql", sql="UPDATE rates SET value = 9"),
                                  Action.call("run_sql", sql="UPDATE rates SET value = 1.5"),
                                  Action.call("run_sql", sql="INSERT INTO audit (entry) VALUES ('x'); "
                                                              "INSERT INTO nowhere VALUES (1)"),
                                  *TASK.solution[:-1])
    # written, but each row as the template holds it again: not read by grading
    assert not {"rates", "audit"} & ctx.state.changed_tables()
    assert final_state(verdict).passed


@pytest.mark.parametrize("sql, table", [("CREATE TABLE extra (x INTEGER); INSERT INTO extra VALUES (1)", "extra"),
                                         ("DROP TABLE rates", "rates")])
async def test_a_schema_change_compares_the_whole_store(sql, table):
    verdict, whole, ctx = await grade(*TASK.solution[:-1], Action.call("run_sql", sql=sql))
    assert ctx.state.changed_tables() is None
    assert not final_state(verdict).passed and table in verdict.evidence["state_diff"]
    assert verdict.evidence["state_diff"] == whole


async def test_an_episode_starts_from_the_template_not_the_last_episode():
    env = ToolEnv(LEDGER)
    try:
        for _ in range(2):
            await env.reset(task=TASK)
            ctx = await env.verify_context()
            assert ctx.state.snapshot() == ctx.initial_state.snapshot()
            await env.step(Action.call("set_balance", id=2, balance=0, close=1, audit="x"))
    finally:
        await env.close()


async def test_the_next_episode_reuses_the_connection_from_the_template_and_sees_a_cached_write():
    env = ToolEnv(LEDGER)
    try:
        await env.reset(task=TASK)
        kept = env._conn
        await env.step(Action.call("set_balance", id=1, balance=50, audit="first"))
        assert (await env.verify_context()).state.changed_tables() == {"accounts", "audit"}
        await env.reset(task=TASK)  # the same statements again, cached: compiled while nothing recorded them
        assert env._conn is kept
        ctx = await env.verify_context()
        assert ctx.state.snapshot(["audit"]) == {"audit": []} and ctx.state.changed_tables() == frozenset()
        await env.step(Action.call("set_balance", id=2, balance=7, audit="second"))
        ctx = await env.verify_context()
        assert ctx.state.changed_tables() == {"accounts", "audit"}
        assert ctx.state.snapshot(["audit"])["audit"] == [{"id": 1, "entry": "second"}]
    finally:
        await env.close()


@pytest.mark.parametrize("sql", ["CREATE TEMP TABLE scratch (x)", "PRAGMA foreign_keys = OFF"])
async def test_a_connection_a_statement_may_have_changed_beyond_its_rows_is_not_kept(sql):
    env = ToolEnv(LEDGER)
    try:
        await env.reset(task=TASK)
        first = env._conn
        await env.step(Action.call("run_sql", sql=sql))
        await env.reset(task=TASK)
        assert env._conn is not first
        assert env._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert env._conn.execute("SELECT count(*) FROM temp.sqlite_master").fetchone()[0] == 0
    finally:
        await env.close()


async def test_slots_waiting_on_a_tasks_reference_replay_it_once(monkeypatch):
    task = TASK.model_copy(update={"id": "ledger-single-flight"})
    replays = []
    original = ToolEnv._replay

    def counted(self, spec):
        replays.append(spec.id)
        return original(self, spec)

    monkeypatch.setattr(ToolEnv, "_replay", counted)
    envs = [ToolEnv(LEDGER) for _ in range(4)]
    try:
        for env in envs:
            await env.reset(task=task)
        contexts = await asyncio.gather(*(env.verify_context() for env in envs))
        assert replays == [task.id] and all(c.expected_state is not None for c in contexts)
    finally:
        for env in envs:
            await env.close()


async def test_a_verifier_reading_the_state_from_a_worker_thread_reads_a_copy_of_the_same_rows():
    env = ToolEnv(LEDGER)
    try:
        await env.reset(task=TASK)
        await env.step(Action.call("set_balance", id=1, balance=50, audit="x"))
        on_loop = (await env.verify_context()).state.snapshot()
        in_thread = await asyncio.to_thread((await env.verify_context()).state.snapshot)
        assert in_thread == on_loop and on_loop["audit"] == [{"id": 1, "entry": "x"}]
    finally:
        await env.close()


async def test_a_verifier_query_runs_on_the_episode_connection_read_only_and_the_connection_is_kept():
    env = ToolEnv(LEDGER)
    try:
        await env.reset(task=TASK)
        kept = env._conn
        await env.step(Action.call("set_balance", id=1, balance=50))
        state = (await env.verify_context()).state
        assert state.query("SELECT balance FROM accounts WHERE id = 1") == [{"balance": 50}]
        with pytest.raises(ValueError, match="read-only"):
            state.query("WITH gone AS (SELECT 1) DELETE FROM accounts")
        assert state.query("SELECT count(*) AS n FROM accounts") == [{"n": 2}]
        assert state.changed_tables() == {"accounts"}  # the query_only pragmas were not recorded as the episode's
        await env.reset(task=TASK)
        assert env._conn is kept and not env._conn.execute("PRAGMA query_only").fetchone()[0]
    finally:
        await env.close()


async def test_a_state_graded_before_the_env_moved_on_still_shows_its_own_episode():
    env = ToolEnv(LEDGER)
    try:
        await env.reset(task=TASK)
        await env.step(Action.call("run_sql", sql="INSERT INTO audit (entry) VALUES ('first')"))
        state = (await env.verify_context()).state
        await env.reset(task=TASK)
        await env.step(Action.call("set_balance", id=1, balance=7, audit="second"))
        assert state.query("SELECT entry FROM audit") == [{"entry": "first"}]
        assert state.snapshot(["accounts"])["accounts"][0] == {"id": 1, "balance": 10}  # read now, from the copy
        await env.close()
        assert state.query("SELECT balance FROM accounts WHERE id = 1") == [{"balance": 10}]
    finally:
        await env.close()


async def test_tables_on_the_templates_or_the_references_own_page_are_not_read(monkeypatch):
    from envgym.tools import env as tool_env

    read = []
    original = tool_env._raw_rows
    monkeypatch.setattr(tool_env, "_raw_rows", lambda conn, table: read.append(table) or original(conn, table))
    env = ToolEnv(LEDGER)
    try:
        await env.reset(task=TASK)
        await env.verify_context()  # the task's reference replayed (its reads are not the episode's)
        for action in TASK.solution:
            await env.step(action)
        read.clear()
        ctx = await env.verify_context()
        assert read == [] and ctx.state.changed_tables() == {"accounts"}
        assert (await env.verify()).passed
        await env.reset(task=TASK)
        await env.step(Action.call("set_balance", id=1, balance=51))
        await env.step(Action.call("set_balance", id=2, balance=20, audit="x"))  # audit written; accounts too
        read.clear()
        verdict = await env.verify()
        assert sorted(read) == ["accounts", "audit"] and not final_state(verdict).passed
    finally:
        await env.close()


async def test_a_reference_that_changes_the_schema_gives_the_expected_state_its_columns():
    task = TASK.model_copy(update={"id": "ledger-ddl", "solution": (
        Action.call("run_sql", sql="ALTER TABLE rates ADD COLUMN unit TEXT; UPDATE rates SET unit = 'pct'"),
        Action.say("Done."))})
    env = ToolEnv(LEDGER)
    try:
        await env.reset(task=task)
        await env.step(task.solution[0])
        await env.step(Action.say("Done."))
        ctx = await env.verify_context()
        assert ctx.initial_state.columns()["rates"] == ("name", "value")  # the schema's, read once per schema
        assert ctx.expected_state.columns()["rates"] == ("name", "value", "unit")  # re-read: DDL ran
        assert ctx.expected_state.changed_tables() is None
        assert ctx.expected_state.snapshot(["rates"]) == {"rates": [{"name": "base", "value": 1.5, "unit": "pct"}]}
        assert final_state(await env.verify()).passed  # the store is the reference's, new column and all
    finally:
        await env.close()


async def test_tasks_that_start_from_the_same_state_share_one_template_and_one_read_of_it(monkeypatch):
    from envgym.tools import env as tool_env
    from envgym.tools import store

    state = {**STATE, "audit": [{"id": 1, "entry": "shared-state test"}]}  # a state no other test built
    first = TASK.model_copy(update={"id": "shared-1", "initial_state": state})
    second = first.model_copy(update={
        "id": "shared-2", "solution": (Action.call("set_balance", id=2, balance=5), Action.say("Done.")),
        "verifiers": (WriteActionSpec(expected=(ExpectedWrite(tool="set_balance", args={"id": 2, "balance": 5}),),
                                      allow_collateral=True),)})
    assert first.hash != second.hash and first.initial_state_hash == second.initial_state_hash
    built, read = [], []
    real_build, real_read = store._build, tool_env._raw_rows
    monkeypatch.setattr(store, "_build", lambda *a: built.append(1) or real_build(*a))
    monkeypatch.setattr(tool_env, "_raw_rows", lambda conn, table: read.append(table) or real_read(conn, table))
    env = ToolEnv(LEDGER)
    try:
        verdicts = []
        for task in (first, second):
            await env.reset(task=task)
            for action in task.solution:
                await env.step(action)
            verdicts.append((await env.verify()).passed)
            if task is first:
                assert sorted(read) == sorted(LEDGER_TABLES * 2)  # the initial rows, then the reference's
                read.clear()
        assert verdicts == [True, True]
        assert built == [1]  # one template for both (until 2026-12-03, one per task)
        assert sorted(read) == sorted(LEDGER_TABLES)  # only the second reference's rows: the initial ones were known
        initial = (await env.verify_context()).initial_state.snapshot(["audit"])
        assert initial == {"audit": [{"id": 1, "entry": "shared-state test"}]}
    finally:
        await env.close()


LEDGER_TABLES = ("accounts", "audit", "cards", "rates")


async def test_states_equal_in_python_but_not_in_the_store_get_their_own_templates():
    whole = TASK.model_copy(update={"id": "typed-1", "initial_state": {"audit": [{"id": 1, "entry": 1}]}})
    real = TASK.model_copy(update={"id": "typed-2", "initial_state": {"audit": [{"id": 1, "entry": 1.0}]}})
    assert whole.initial_state == real.initial_state  # 1 == 1.0: an == on the states would share a template
    assert whole.initial_state_hash != real.initial_state_hash
    env = ToolEnv(LEDGER)
    try:
        entries = []
        for task in (whole, real, whole):
            await env.reset(task=task)
            entries.append((await env.verify_context()).state.query("SELECT entry FROM audit")[0]["entry"])
        assert entries == ["1", "1.0", "1"]  # TEXT affinity keeps what each state said
    finally:
        await env.close()


def test_warming_the_env_class_loads_its_domain_and_schemas_without_building_an_env():
    domain = Domain(name="test-warm", schema_sql=SCHEMA, tools=(set_balance,), policy="")
    assert "schemas" not in domain.__dict__
    ToolEnv.warm(domain=domain)  # what the workers' fork server calls (envgym._forkserver_preload)
    assert domain.__dict__["schemas"][0]["function"]["name"] == "set_balance"
