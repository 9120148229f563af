"""The assistant domain and its bundled suite: admission gates, bad calls, policy, collateral writes."""

from __future__ import annotations

import contextlib
import json
from collections import Counter

import pytest

import envgym
from envgym.task import suites_root
from envgym.tools import execute_calls, store
from envgym.types import Action, ToolCall
from envgym.verify.context import CallRecord
from envgym_tool.authoring.assistant import KINDS, base_state, build
from envgym_tool.domains.assistant import DOMAIN

from fakes import play, store_snapshot

TASKS = envgym.load_suite("tool-assistant")
ENV_ID = "tool/assistant-v1"
BY_SLUG = {t.id.split("-", 2)[2]: t for t in TASKS}


def with_calls(*calls: ToolCall) -> Action:
    return Action(tool_calls=calls)


def test_committed_suite_equals_build():
    committed = envgym.load_tasks(suites_root() / "tool-assistant" / "tasks.jsonl")
    assert [t.model_dump(mode="json") for t in committed] == [t.model_dump(mode="json") for t in build()]
    assert [t.hash for t in build()] == [t.hash for t in build()]  # deterministic, call ids included


def test_suite_shape():
    assert len(TASKS) >= 32
    assert len({t.id for t in TASKS}) == len(TASKS)
    assert all(t.env_id == "tool/assistant-v1" and t.solution and t.solution[-1].is_final for t in TASKS)
    kinds = Counter(t.metadata["kind"] for t in TASKS)
    assert set(kinds) == set(KINDS) and min(kinds.values()) >= 5
    for kind in KINDS:
        of_kind = [t for t in TASKS if t.metadata["kind"] == kind]
        assert 0.25 <= sum(t.split == "test" for t in of_kind) / len(of_kind) <= 0.5, kind
    refusals = [t for t in TASKS if t.metadata["kind"] in ("refuse", "no-change")]
    assert all(not any(a.tool_calls and DOMAIN.by_name[c.name].kind == "write" for a in t.solution
                       for c in a.tool_calls) for t in refusals)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_reference_solution_passes(task):
    result, observations = await play(ENV_ID, task, task.solution)
    verdict = result.info["verdict"]
    assert result.terminated and verdict.passed and result.reward == 1.0, verdict.criteria
    assert all(o.last_action_error is None for o in observations)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_null_agent_fails(task):
    result, _ = await play(ENV_ID, task, [Action(text="")])
    assert not result.info["verdict"].passed
    assert result.reward == 0.0


async def test_bad_calls_are_observations_and_change_nothing():
    task = BY_SLUG["schedule-meeting"]
    env = envgym.make("tool/assistant-v1", on_disk=True)  # the file is read behind the env's back
    try:
        await env.reset(task=task)
        before = store_snapshot(env.unwrapped.db_path)
        bad = [
            ToolCall(id="a", name="create_event", arguments='{"title": "x", "start": '),
            ToolCall(id="b", name="delete_email", arguments='{"email_id": "em_3"}'),
            ToolCall.of("find_free_slots", date="2025-03-12", duration_minutes="60"),
            ToolCall.of("create_event", title="x", start="2025-02-30T10:00", end="2025-02-30T11:00"),
            ToolCall.of("create_event", title="x", start="2025-03-16T10:00", end="2025-03-16T11:00"),
            ToolCall.of("send_email", to=["stranger@example.com"], subject="hi", body="hello"),
            ToolCall.of("cancel_event", event_id="evt_99"),
            ToolCall.of("archive_email", email_id="em_3", force=True),
        ]
        result = await env.step(with_calls(*bad))
        errors = [r.error for r in result.observation.tool_results]
        assert not result.terminated and not result.truncated
        assert all(errors) and len(errors) == len(bad)
        assert "invalid JSON" in errors[0] and "unknown tool 'delete_email'" in errors[1]
        assert "duration_minutes" in errors[2] and "start" in errors[3]
        assert errors[4].startswith("policy violation") and "weekend" in errors[4]
        assert errors[5].startswith("policy violation") and "contacts" in errors[5]
        assert "no event evt_99" in errors[6] and "unknown argument" in errors[7]
        assert result.observation.last_action_error.count(";") >= len(bad) - 1
        assert store_snapshot(env.unwrapped.db_path) == before
        for action in task.solution:  # the episode goes on and can still be solved
            result = await env.step(action)
        assert result.info["verdict"].passed
    finally:
        await env.close()


async def test_collateral_write_is_named_in_the_evidence():
    task = BY_SLUG["archive-unread-from-carla"]
    extra = with_calls(ToolCall.of("archive_email", email_id="em_8"))  # read, so not asked for
    result, _ = await play(ENV_ID, task, [*task.solution[:-1], extra, task.solution[-1]])
    verdict = result.info["verdict"]
    assert not verdict.passed
    assert verdict.evidence["collateral_writes"] == ["archive_email"]
    assert "emails" in verdict.evidence["state_diff"]
    failed = {c.name for c in verdict.criteria if not c.passed}
    assert {"no_collateral_writes", "final_state"} <= failed


@pytest.mark.parametrize(("slug", "wrong"), [
    ("reply-sender-only", ToolCall.of("reply_email", email_id="em_2", reply_all=True, body="Thursday works.")),
    ("reschedule-this-week", ToolCall.of("reschedule_event", event_id="evt_16", start="2025-03-20T14:00",
                                         end="2025-03-20T15:00")),
    ("refuse-email-stranger", ToolCall.of("create_contact", name="Mark Weber",
                                          email="m.weber@weber-consulting.example")),
    ("refuse-delete-email", ToolCall.of("archive_email", email_id="em_3")),
])
async def test_plausible_wrong_paths_fail(slug, wrong):
    task = BY_SLUG[slug]
    result, _ = await play(ENV_ID, task, [*task.solution[:-1], with_calls(wrong), task.solution[-1]])
    assert not result.info["verdict"].passed
    assert result.info["verdict"].evidence["collateral_writes"]


async def test_refusal_after_a_rejected_attempt_passes():
    task = BY_SLUG["refuse-double-book"]
    attempt = with_calls(ToolCall.of("create_event", title="Vendor call", start="2025-03-11T10:00",
                                     end="2025-03-11T11:00", attendee_ids=["con_11"]))
    result, observations = await play(ENV_ID, task, [task.solution[0], attempt, task.solution[-1]])
    assert "double-booking" in observations[1].last_action_error
    assert result.info["verdict"].passed


def run_calls(*calls: ToolCall) -> tuple[list[CallRecord], list, dict]:
    """Execute calls on a fresh in-memory store; return the records, the results and the final snapshot."""
    with contextlib.closing(store.create(":memory:", DOMAIN.schema_sql, base_state())) as conn:
        records: list[CallRecord] = []
        results = execute_calls(DOMAIN, conn, records, calls)
        return records, results, store.SqliteState(conn).snapshot()


@pytest.mark.parametrize(("call", "reason"), [
    (ToolCall.of("create_event", title="x", start="2025-03-11T10:30", end="2025-03-11T11:30"), "double-booking"),
    (ToolCall.of("create_event", title="x", start="2025-03-15T10:00", end="2025-03-15T11:00"), "weekend"),
    (ToolCall.of("create_event", title="x", start="2025-03-11T18:30", end="2025-03-11T19:30"), "working hours"),
    (ToolCall.of("create_event", title="x", start="2025-03-11T07:00", end="2025-03-11T08:00"), "working hours"),
    (ToolCall.of("create_event", title="x", start="2025-03-10T08:00", end="2025-03-10T08:30"), "past"),
    (ToolCall.of("create_event", title="x", start="2025-03-11T12:00", end="2025-03-11T12:05"), "minutes"),
    (ToolCall.of("create_event", title="x", start="2025-03-11T12:00", end="2025-03-11T13:00",
                 attendee_ids=[f"con_{n}" for n in range(1, 10)]), "at most 8"),
    (ToolCall.of("reschedule_event", event_id="evt_1", start="2025-03-11T12:00", end="2025-03-11T13:00"), "past"),
    (ToolCall.of("reschedule_event", event_id="evt_8", start="2025-03-13T10:30", end="2025-03-13T11:30"),
     "Candidate interview"),
    (ToolCall.of("cancel_event", event_id="evt_1"), "past"),
    (ToolCall.of("reply_email", email_id="em_10", body="no", reply_all=False), "not in the owner's contacts"),
    (ToolCall.of("send_email", to=["alice.moreno@northwind.example"], cc=["x@y.example"], subject="s", body="b"),
     "x@y.example"),
])
def test_policy_violations_are_rejected(call, reason):
    records, results, after = run_calls(call)
    assert not records[0].ok and results[0].error.startswith("policy violation") and reason in results[0].error
    assert after == run_calls()[2]


def test_business_errors_are_tool_failures():
    _, results, _ = run_calls(
        ToolCall.of("add_attendee", event_id="evt_12", contact_id="con_5"),
        ToolCall.of("add_attendee", event_id="evt_8", contact_id="con_2"),
        ToolCall.of("archive_email", email_id="em_19"),
        ToolCall.of("mark_read", email_id="em_4"),
        ToolCall.of("create_contact", name="Alice", email="ALICE.MORENO@northwind.example"),
        ToolCall.of("reply_email", email_id="em_13", body="again", reply_all=False),
    )
    errors = [r.error for r in results]
    assert all(e and not e.startswith("policy violation") for e in errors)
    assert "cancelled" in errors[0] and "already invited" in errors[1] and "not in the inbox" in errors[2]
    assert "already marked read" in errors[3] and "already exists" in errors[4] and "send_email" in errors[5]


def test_reads_leave_the_store_untouched_and_free_slots_skip_cancelled_events():
    records, results, after = run_calls(
        ToolCall.of("read_email", email_id="em_1"),
        ToolCall.of("search_emails", unread_only=True),
        ToolCall.of("find_free_slots", date="2025-03-14", duration_minutes=60),
        ToolCall.of("find_free_slots", date="2025-03-10", duration_minutes=30),
        ToolCall.of("get_profile"),
        ToolCall.of("search_emails", sender="Carla Jensen", unread_only=True),
        ToolCall.of("search_contacts"),
    )
    assert all(r.ok for r in records) and after == run_calls()[2]
    assert [e["id"] for e in json.loads(results[5].content)] == ["em_21", "em_7"]
    assert len(json.loads(results[6].content)) == 14
    assert json.loads(results[0].content)["is_read"] is False
    assert json.loads(results[2].content)["free"] == [{"start": "2025-03-14T08:00", "end": "2025-03-14T09:30"},
                                                      {"start": "2025-03-14T09:45", "end": "2025-03-14T19:00"}]
    today = json.loads(results[3].content)["free"]
    assert today[0] == {"start": "2025-03-10T09:00", "end": "2025-03-10T09:30"}  # nothing before now
    assert json.loads(results[4].content)["now"] == "2025-03-10T09:00"


def test_writes_are_deterministic():
    call = ToolCall.of("create_event", title="x", start="2025-03-11T12:00", end="2025-03-11T13:00",
                       attendee_ids=["con_2"])
    mail = ToolCall.of("reply_email", email_id="em_2", body="ok", reply_all=True)
    first, second = run_calls(call, mail), run_calls(call, mail)
    assert first[2] == second[2]
    assert json.loads(first[1][0].content)["id"] == "evt_18"
    reply = json.loads(first[1][1].content)
    assert reply == {"id": "em_22", "thread_id": "th_2", "to": ["david.kim@acme-logistics.example"],
                     "cc": ["grace.liu@acme-logistics.example", "maya.singh@acme-logistics.example"],
                     "sent_at": "2025-03-10T09:00"}
