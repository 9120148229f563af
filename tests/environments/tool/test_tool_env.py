"""The kernel's tool env (``envgym.tools``) as a third party uses it: a domain from any package, the grading
contract (the env reports, the kernel grades), the state before the episode, loud ignore_fields."""

from __future__ import annotations

import dataclasses

import pytest

import envgym
from envgym.errors import SpecError, VerifierError
from envgym.task import TaskSpec
from envgym.tools import Domain, ToolEnv, load_domain, store
from envgym.types import Action
from envgym.verify import JudgeConfig
from envgym.verify.spec import ExpectedWrite, WriteActionSpec
from envgym_tool.env import ToolEnv as BundledToolEnv
from envgym_tool.tamper import TAMPER_AGENTS

from fakes import NOTES, STATE

DELETE = TaskSpec(id="third-party-delete", env_id="mine/notes-v1", instruction="Delete the groceries note.",
                  initial_state=STATE,
                  verifiers=(WriteActionSpec(expected=(ExpectedWrite(tool="delete_note", args={"note_id": 1}),)),),
                  solution=(Action.call("delete_note", note_id=1), Action.say("Done.")))


def test_a_domain_is_an_object_or_a_package_module_reference():
    assert load_domain(NOTES) is NOTES
    assert load_domain("fakes:NOTES") is NOTES
    assert ToolEnv(domain="fakes:NOTES").domain is NOTES
    with pytest.raises(SpecError, match=r"'no_such_pkg\.shop:DOMAIN'.*'package\.module:DOMAIN'"):
        load_domain("no_such_pkg.shop:DOMAIN")
    with pytest.raises(SpecError, match=r"fakes\.STATE is dict, not an envgym\.tools\.Domain"):
        load_domain("fakes:STATE")
    with pytest.raises(SpecError, match=r"fakes\.DOMAIN is missing"):
        load_domain("fakes")


async def test_a_third_party_domain_registers_and_runs_through_make():
    envgym.register("mine/notes-v1", "envgym.tools:ToolEnv", kwargs={"domain": "fakes:NOTES"}, max_episode_steps=5)
    try:
        async with envgym.make("mine/notes-v1") as env:
            _, info = await env.reset(task=DELETE)
            assert [t["function"]["name"] for t in info["tools"]] == [t.name for t in NOTES.tools]
            assert info["split"] == "test" and info["task_id"] == DELETE.id
            await env.step(Action.call("delete_note", note_id=1))
            result = await env.step(Action.say("Done."))
        assert result.terminated and result.reward == 1.0 and result.info["verdict"].passed
    finally:
        envgym.registry._registry.pop("mine/notes-v1")


async def test_the_env_reports_and_never_grades_itself():
    env = ToolEnv(NOTES)
    try:
        await env.reset(task=DELETE)
        await env.step(Action.call("delete_note", note_id=1))
        result = await env.step(Action.say("Done."))
        assert result.terminated and result.reward == 0.0 and result.info == {}
        assert (await env.verify()).passed
    finally:
        await env.close()
    with pytest.raises(TypeError):
        ToolEnv(NOTES, judge=JudgeConfig(base_url="http://127.0.0.1:9", model="m"))  # make(judge=...) takes it


async def test_verify_context_has_the_task_and_the_store_before_the_episode():
    env = ToolEnv(NOTES)
    try:
        await env.reset(task=DELETE)
        await env.step(Action.call("delete_note", note_id=1))
        await env.step(Action.say("Done."))
        ctx = await env.verify_context()
        assert ctx.task is DELETE
        assert ctx.initial_state.snapshot() == {"notes": sorted(STATE["notes"], key=lambda r: r["id"])}
        assert ctx.initial_state.query("SELECT count(*) AS n FROM notes") == [{"n": 3}]
        assert ctx.state.query("SELECT count(*) AS n FROM notes") == [{"n": 2}]
        assert ctx.expected_state.snapshot() == ctx.state.snapshot()
        assert ctx.initial_state.columns() == {"notes": ("id", "title", "body", "pinned")}
        again = await env.verify_context()
        assert again.initial_state.snapshot()["notes"] is ctx.initial_state.snapshot()["notes"]  # cached per task
    finally:
        await env.close()


async def test_a_misspelt_domain_ignore_field_is_loud_when_graded():
    typo = dataclasses.replace(NOTES, name="notes-typo", ignore_fields=("notes.bdy",))
    env = ToolEnv(typo)
    try:
        await env.reset(task=DELETE)
        await env.step(Action.say("Done."))
        with pytest.raises(VerifierError, match=r"'notes\.bdy' names no column of table 'notes'"):
            await env.verify_context()
    finally:
        await env.close()


async def test_a_task_may_ignore_a_column_the_domain_already_leaves_out():
    quiet = dataclasses.replace(NOTES, name="notes-quiet", ignore_fields=("notes.body",))
    task = DELETE.model_copy(update={"verifiers": (WriteActionSpec(
        expected=DELETE.verifiers[0].expected, ignore_fields=("notes.body",)),)})
    env = ToolEnv(quiet)
    try:
        await env.reset(task=task)
        await env.step(Action.call("delete_note", note_id=1))
        await env.step(Action.say("Done."))
        assert (await env.verify()).passed
    finally:
        await env.close()


def test_sqlite_state_columns_include_empty_tables():
    conn = store.create(":memory:", "CREATE TABLE a (x INTEGER, y TEXT); CREATE TABLE b (z TEXT);", {"a": [{"x": 1}]})
    try:
        state = store.SqliteState(conn)
        assert state.columns() == {"a": ("x", "y"), "b": ("z",)}
        assert state.snapshot() == {"a": [{"x": 1, "y": None}], "b": []}
    finally:
        conn.close()


def test_the_family_adds_only_its_tamperers_and_short_names():
    assert issubclass(BundledToolEnv, ToolEnv) and BundledToolEnv.tamper_agents == TAMPER_AGENTS
    assert ToolEnv.tamper_agents == ()
    assert BundledToolEnv("retail").domain.name == "retail"
    assert isinstance(BundledToolEnv("envgym_tool.domains.codes:DOMAIN").domain, Domain)
