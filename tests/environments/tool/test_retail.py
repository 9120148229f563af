"""The retail domain and its bundled suite: admission gates, bad calls, policy rules, collateral writes."""

from __future__ import annotations

import contextlib
import json
from collections import Counter

import pytest

import envgym
from envgym.task import suites_root, write_tasks
from envgym.tools import execute_calls, store
from envgym.types import Action, ToolCall
from envgym.verify.context import CallRecord
from envgym.verify.spec import AllOfSpec, CalledCheck, RubricSpec, WriteActionSpec
from envgym_tool.authoring.retail import KINDS, base_state, build
from envgym_tool.domains.retail import DOMAIN

from fakes import play, store_snapshot

TASKS = envgym.load_suite("tool-retail")
ENV_ID = "tool/retail-v1"
BY_SLUG = {t.id.split("-", 2)[2]: t for t in TASKS}


def run_calls(*calls: tuple[str, dict]) -> list[CallRecord]:
    """Execute calls on a fresh in-memory copy of the base store; return the call records."""
    records: list[CallRecord] = []
    with contextlib.closing(store.create(":memory:", DOMAIN.schema_sql, base_state())) as conn:
        execute_calls(DOMAIN, conn, records, tuple(ToolCall.of(name, **args) for name, args in calls))
    return records


# ------------------------------------------------------------------------------------------- the suite


def test_committed_suite_equals_build(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", build())
    committed = suites_root() / "tool-retail" / "tasks.jsonl"
    assert committed.read_bytes() == (tmp_path / "tasks.jsonl").read_bytes(), \
        "stale suite: run python -m envgym_tool.authoring.retail"
    assert [t.hash for t in build()] == [t.hash for t in TASKS]


def test_suite_shape():
    assert len(TASKS) >= 32
    assert len({t.id for t in TASKS}) == len(TASKS)
    assert all(t.env_id == "tool/retail-v1" and t.solution and t.solution[-1].is_final for t in TASKS)
    assert all(len(t.solution) <= t.limits.max_steps for t in TASKS)
    kinds = Counter(t.metadata["kind"] for t in TASKS)
    assert set(kinds) == set(KINDS) and min(kinds.values()) >= 5
    for kind in KINDS:
        splits = Counter(t.split for t in TASKS if t.metadata["kind"] == kind)
        assert splits["train"] > splits["test"] > 0, kind
    test_share = sum(t.split == "test" for t in TASKS) / len(TASKS)
    assert 0.35 <= test_share <= 0.45


def test_every_verifier_rejects_inaction_by_design():
    """Refusals and no-change tasks forbid every write and need an answer; refusals also a look-up."""
    for task in TASKS:
        kind = task.metadata["kind"]
        write_specs = [v for v in task.verifiers if isinstance(v, WriteActionSpec)]
        assert len(write_specs) == 1 and not write_specs[0].allow_collateral, task.id
        rubrics = [r for v in task.verifiers
                   for r in (v.verifiers if isinstance(v, AllOfSpec) else (v,)) if isinstance(r, RubricSpec)]
        if kind in ("refuse", "no-change"):
            assert write_specs[0].expected == (), task.id
            assert rubrics, task.id
        else:
            assert write_specs[0].expected, task.id
        if kind == "refuse" and task.id != "retail-040-identity-not-verified":
            assert any(isinstance(c.check, CalledCheck) for r in rubrics for c in r.criteria), task.id
        for rubric in rubrics:  # a look-up never earns credit beside an answer: they are graded apart
            kinds_here = {isinstance(c.check, CalledCheck) for c in rubric.criteria}
            assert len(kinds_here) == 1, task.id
    multi = [t for t in TASKS if t.metadata["kind"] == "multi-step"]
    assert any(v.ordered for t in multi for v in t.verifiers if isinstance(v, WriteActionSpec))
    assert max(len(v.expected) for t in multi for v in t.verifiers if isinstance(v, WriteActionSpec)) >= 3


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
async def test_reference_solution_passes(task):
    result, observations = await play(ENV_ID, task, task.solution)
    verdict = result.info["verdict"]
    assert result.terminated and result.reward == 1.0 and verdict.passed, verdict
    errors = [o.last_action_error for o in observations if o.last_action_error]
    # Only a refusal may show the agent trying what the policy then rejects.
    assert not errors or task.metadata["kind"] == "refuse", errors


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
async def test_null_agent_fails(task):
    result, _ = await play(ENV_ID, task, [Action(text="")])
    assert result.terminated and not result.info["verdict"].passed and result.reward == 0.0


# ------------------------------------------------------------------------------------ the environment


async def test_bad_calls_are_observations_and_change_nothing():
    task = BY_SLUG["cancel-pending"]
    env = envgym.make("tool/retail-v1", on_disk=True)  # the file is read behind the env's back
    try:
        await env.reset(task=task)
        before = store_snapshot(env.unwrapped.db_path)
        bad = Action(tool_calls=(
            ToolCall(name="cancel_order", arguments='{"order_id": "ord_1002", '),     # bad JSON
            ToolCall.of("delete_order", order_id="ord_1002"),                         # unknown tool
            ToolCall.of("cancel_order", order_id=1002, reason="no longer needed"),    # wrong type
            ToolCall.of("cancel_order", order_id="ord_1002", reason="bored"),         # not an allowed reason
            ToolCall.of("cancel_order", order_id="ord_1002", reason="no longer needed", refund=99),  # extra arg
            ToolCall.of("cancel_order", order_id="ord_1002", reason="no longer needed"),  # not verified yet
        ))
        result = await env.step(bad)
        assert not result.terminated and not result.truncated
        errors = [r.error for r in result.observation.tool_results]
        assert all(errors), errors
        assert "invalid JSON" in errors[0] and "unknown tool" in errors[1]
        assert "order_id" in errors[2] and "reason" in errors[3] and "refund" in errors[4]
        assert errors[5].startswith("policy violation") and "verified" in errors[5]
        assert result.observation.last_action_error
        assert store_snapshot(env.unwrapped.db_path) == before

        for action in task.solution:  # the episode goes on and is graded as usual
            result = await env.step(action)
        verdict = result.info["verdict"]
        assert verdict.passed and verdict.evidence["writes"] == [
            {"tool": "cancel_order", "args": {"order_id": "ord_1002", "reason": "no longer needed"}}]
    finally:
        await env.close()


async def test_collateral_write_is_named_in_the_evidence():
    task = BY_SLUG["cancel-one-of-two"]
    both = Action(tool_calls=(ToolCall.of("cancel_order", order_id="ord_1012", reason="found a better price"),
                              ToolCall.of("cancel_order", order_id="ord_1013", reason="found a better price")))
    result, _ = await play(ENV_ID, task, [Action.call("find_customer_by_email", email="tom.becker@example.com"), both,
                                  Action(text="Both orders are cancelled.")])
    verdict = result.info["verdict"]
    assert not verdict.passed and result.reward == 0.0
    assert verdict.evidence["collateral_writes"] == ["cancel_order"]
    assert verdict.evidence["missing_writes"] == []
    failed = {c.name for c in verdict.criteria if not c.passed}
    assert failed == {"no_collateral_writes", "final_state"}
    assert "orders" in verdict.evidence["state_diff"]


async def test_refusing_by_doing_the_wrong_thing_fails():
    """An over-helpful agent that refunds the item's price instead of the asked $80 writes collaterally."""
    task = BY_SLUG["refund-over-price"]
    refund = Action.call("issue_refund", order_id="ord_1025", item_id="itm_1025_1", amount=59.99,
                         reason="damaged item", payment_method_id="pm_010_disc")
    result, observations = await play(ENV_ID, task, [*task.solution[:-1], refund, task.solution[-1]])
    assert observations[-2].last_action_error is None
    assert not result.info["verdict"].passed
    assert result.info["verdict"].evidence["collateral_writes"] == ["issue_refund"]


async def test_the_store_is_in_memory_and_a_file_only_on_disk(tmp_path):
    async with envgym.make(ENV_ID, workdir=str(tmp_path)) as env:
        for _ in range(2):
            await env.reset(task=TASKS[0])
            await env.step(TASKS[0].solution[0])
            assert env.unwrapped.db_path is None and list(tmp_path.iterdir()) == []  # no file churn per episode

    env = envgym.make(ENV_ID, on_disk=True, workdir=str(tmp_path))
    await env.reset(task=TASKS[0])
    path = env.unwrapped.db_path
    assert path.is_file() and path.stat().st_size > 0 and path.parent.parent == tmp_path
    assert store_snapshot(path)["meta"] == [{"key": "today", "value": "2024-06-15"}]
    await env.step(TASKS[0].solution[0])
    assert path.is_file()
    await env.reset(task=TASKS[0])  # the next episode's file is a fresh one; the last one's is gone
    assert not path.parent.exists() and env.unwrapped.db_path.is_file()
    path = env.unwrapped.db_path
    await env.close()
    assert not path.exists() and not path.parent.exists()


# ------------------------------------------------------------------------------------------ the tools


def test_tool_schemas_document_every_argument():
    kinds = Counter(t.kind for t in DOMAIN.tools)
    assert kinds == {"read": 7, "write": 7}
    for tool in DOMAIN.tools:
        schema = tool.schema()["function"]
        assert schema["description"].startswith(f"[{tool.kind}] ")
        params = schema["parameters"]
        assert params["additionalProperties"] is False
        for name, prop in params["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


VERIFY_AVA = ("find_customer_by_email", {"email": "Ava.Chen@example.com "})
VERIFY_NOAH = ("find_customer_by_name_zip", {"first_name": "noah", "last_name": "PATEL", "zip": "85004"})


@pytest.mark.parametrize(("calls", "error"), [
    ([("cancel_order", {"order_id": "ord_1001", "reason": "ordered by mistake"})],
     "policy violation: order ord_1001 does not belong to a verified customer"),
    ([VERIFY_NOAH, ("cancel_order", {"order_id": "ord_1007", "reason": "ordered by mistake"})],
     "does not belong to a verified customer"),
    ([("find_customer_by_email", {"email": "marcus.reed@example.com"}),
      ("cancel_order", {"order_id": "ord_1004", "reason": "no longer needed"})],
     "policy violation: order ord_1004 is shipped"),
    ([("find_customer_by_email", {"email": "hannah.kim@example.com"}),
      ("cancel_order", {"order_id": "ord_1011", "reason": "no longer needed"})], "is cancelled"),
    ([VERIFY_AVA, ("create_return", {"order_id": "ord_1001", "item_ids": ["itm_1001_1"],
                                     "reason": "no longer needed", "payment_method_id": "pm_001_visa"})],
     "only delivered orders"),
    ([("find_customer_by_name_zip", {"first_name": "Emma", "last_name": "Larsen", "zip": "80202"}),
      ("create_return", {"order_id": "ord_1018", "item_ids": ["itm_1018_1"], "reason": "no longer needed",
                         "payment_method_id": "pm_009_visa"})], "more than 30 days ago"),
    ([("find_customer_by_email", {"email": "diego.alvarez@example.com"}),
      ("create_return", {"order_id": "ord_1008", "item_ids": ["itm_1008_2", "itm_1008_1"],
                         "reason": "does not fit", "payment_method_id": "pm_004_amex"})], "final-sale"),
    ([VERIFY_AVA, ("create_return", {"order_id": "ord_1003", "item_ids": ["itm_1003_1"],
                                     "reason": "no longer needed", "payment_method_id": "pm_001_gift"})],
     "original payment method"),
    ([VERIFY_NOAH, ("issue_refund", {"order_id": "ord_1025", "item_id": "itm_1025_1", "amount": 80,
                                     "reason": "damaged item", "payment_method_id": "pm_010_disc"})],
     "at most 59.99"),
    ([("find_customer_by_email", {"email": "grace.liu@example.com"}),
      ("issue_refund", {"order_id": "ord_1021", "item_id": "itm_1021_1", "amount": 33.01,
                        "reason": "damaged item", "payment_method_id": "pm_011_paypal"})], "at most 33.00"),
    ([VERIFY_AVA, ("modify_order_item", {"order_id": "ord_1001", "item_id": "itm_1001_1",
                                         "new_variant_id": "var_0103"})], "same price"),
    ([VERIFY_AVA, ("modify_order_item", {"order_id": "ord_1001", "item_id": "itm_1001_1",
                                         "new_variant_id": "var_0501"})], "not a variant of"),
    ([("find_customer_by_email", {"email": "diego.alvarez@example.com"}),
      ("modify_order_item", {"order_id": "ord_1009", "item_id": "itm_1009_1", "new_variant_id": "var_0204"})],
     "out of stock"),
    ([("find_customer_by_email", {"email": "omar.haddad@example.com"}),
      ("update_customer_email", {"customer_id": "cus_012", "new_email": "HADDAD.family@example.com"})],
     "belongs to another account"),
    ([("find_customer_by_name_zip", {"first_name": "Ava", "last_name": "Chen", "zip": "90210"})],
     "no customer matches"),
])
def test_policy_rules_reject_and_explain(calls, error):
    records = run_calls(*calls)
    assert all(r.ok for r in records[:-1]), [r.error for r in records]
    assert not records[-1].ok and error in records[-1].error


def test_lookup_by_old_email_or_zip_still_verifies_after_a_change():
    records = run_calls(
        ("find_customer_by_email", {"email": "sam.okafor@example.com"}),
        ("update_customer_email", {"customer_id": "cus_008", "new_email": "samuel@mail.example"}),
        ("update_customer_address", {"customer_id": "cus_008", "line1": "1 A St", "city": "Atlanta",
                                     "state": "GA", "zip": "30312"}),
        ("cancel_order", {"order_id": "ord_1017", "reason": "delivery too slow"}),
    )
    assert [r.ok for r in records] == [True, True, True, True], [r.error for r in records]


def test_ids_and_amounts_come_from_the_store():
    records: list[CallRecord] = []
    with contextlib.closing(store.create(":memory:", DOMAIN.schema_sql, base_state())) as conn:
        results = execute_calls(DOMAIN, conn, records, (
            ToolCall.of("find_customer_by_email", email="grace.liu@example.com"),
            ToolCall.of("create_return", order_id="ord_1021", item_ids=["itm_1021_1", "itm_1021_2"],
                        reason="no longer needed", payment_method_id="pm_011_paypal"),
        ))
        assert [r.error for r in results] == [None, None]
        created = json.loads(results[1].content)
        # 48.00 blanket less the 15.00 already refunded for it, plus the 35.00 mat; shipping is kept.
        assert created["return_id"] == "ret_1021_1" and created["refund_amount"] == 68.0
        refund = conn.execute("SELECT id, amount FROM refunds WHERE return_id = 'ret_1021_1'").fetchone()
        assert tuple(refund) == ("ref_ret_1021_1", 68.0)
