"""The bundled suites graded incrementally give the verdicts a whole-store comparison gives: the reference,
nothing, and episodes that drop some of the reference's calls and add writes taken from other tasks."""

from __future__ import annotations

import random

import pytest

import envgym
from envgym.verify import grade

SUITES = {"tool/retail-v1": "tool-retail", "tool/assistant-v1": "tool-assistant", "tool/telecom-v1": "tool-telecom"}


class WholeStore:
    """A view that cannot say which tables changed, so every table is read and diffed."""

    def __init__(self, view):
        self.view = view

    def snapshot(self):
        return self.view.snapshot()

    def columns(self):
        return self.view.columns()

    def query(self, sql):
        return self.view.query(sql)


@pytest.mark.parametrize("env_id", sorted(SUITES))
async def test_incremental_grading_gives_the_whole_store_verdict(env_id):
    rng = random.Random(env_id)
    tasks = envgym.load_suite(SUITES[env_id])
    writes = [a for t in tasks for a in t.solution or () if a.tool_calls]
    differing = 0
    async with envgym.make(env_id) as env:
        for task in tasks:
            kept = [a for a in task.solution[:-1] if rng.random() > 0.3] + rng.sample(writes, 2)
            rng.shuffle(kept)
            for actions in (task.solution[:-1], [], kept):
                await env.reset(task=task)
                for action in actions:
                    await env.step(action)
                ctx = await env.unwrapped.verify_context()
                verdict = await grade(task, ctx)
                ctx.state = WholeStore(ctx.state)
                ctx.expected_state = WholeStore(ctx.expected_state)
                assert await grade(task, ctx) == verdict, task.id
                differing += any(v.get("state_diff") for v in _evidence(verdict))
    assert differing >= len(tasks) // 2  # the perturbed episodes do leave stores that differ


def _evidence(verdict):
    yield verdict.evidence
    for child in verdict.evidence.get("verifiers", ()):
        if isinstance(child, dict):
            yield child


@pytest.mark.parametrize("pages", [True, False], ids=["pages", "rows"])
@pytest.mark.parametrize("env_id", ["tool/retail-v1", "tool/assistant-v1"])
async def test_the_state_built_from_rows_read_at_grading_is_the_store_read_afresh(env_id, pages, monkeypatch):
    from envgym.tools.store import SqliteState, TablePages
    from envgym.verify.state import drop_fields

    if not pages:  # no table told by its pages: every changed table read, as when its pages differ
        monkeypatch.setattr(TablePages, "same", lambda self, table, data: False)
    tasks = envgym.load_suite(SUITES[env_id])
    built = 0
    async with envgym.make(env_id) as env:
        for task in tasks:
            await env.reset(task=task)
            for action in task.solution or ():
                await env.step(action)
            inner = env.unwrapped
            ctx = await inner.verify_context()
            # the changed tables' rows read once to tell them from the template's, or told by their pages
            built += bool(ctx.state._raw) if not pages else bool(ctx.state._read)
            afresh = drop_fields(SqliteState(inner._conn).snapshot(), inner.domain.ignore_fields,
                                 columns=ctx.state.columns())
            assert ctx.state.snapshot() == afresh, task.id
            assert [list(map(repr, rows)) for rows in ctx.state.snapshot().values()] == \
                [list(map(repr, rows)) for rows in afresh.values()]  # the same values and order, types too
    assert built >= 2


@pytest.mark.parametrize("env_id", ["tool/retail-v1", "tool/assistant-v1"])
async def test_the_initial_and_expected_states_are_made_only_when_read_and_are_the_stores_read_afresh(env_id):
    from envgym.tools.env import execute_calls
    from envgym.tools.store import SqliteState
    from envgym.verify.state import drop_fields

    tasks = envgym.load_suite(SUITES[env_id])
    made = tables = 0
    async with envgym.make(env_id) as env:
        inner = env.unwrapped
        ignore = inner.domain.ignore_fields
        for task in tasks:
            # the task's states worked out afresh: its initial rows are shared with the suite's other tasks (one
            # initial state), whose snapshots the comparisons below make whole
            inner._initial_cache.clear()
            inner._states_cache.clear()
            await env.reset(task=task)
            for action in task.solution or ():
                await env.step(action)
            ctx = await inner.verify_context()
            assert (await grade(task, ctx)).passed, task.id
            made += len(ctx.initial_state.tables._made)  # the tables grading read, and those the reference changed
            tables += len(ctx.initial_state.columns())
            conn = inner._open_initial(task)  # the task's store read afresh, before and after its reference
            try:
                view = SqliteState(conn)
                initial = drop_fields(view.snapshot(), ignore, columns=view.columns())
                calls = []  # the episode's calls so far (retail's policy reads them)
                for action in task.solution or ():
                    execute_calls(inner.domain, conn, calls, action.tool_calls)
                expected = drop_fields(view.snapshot(), ignore, columns=view.columns())
            finally:
                conn.close()
            for state, afresh in ((ctx.initial_state, initial), (ctx.expected_state, expected)):
                assert state.snapshot() == afresh, task.id
                assert [list(map(repr, rows)) for rows in state.snapshot().values()] == \
                    [list(map(repr, rows)) for rows in afresh.values()]  # the same values and order, types too
    assert made < tables / 3  # most tables' rows were never made into snapshots
