"""The timed suites: generated files up to date, paired variants, admission gates, interleaving pays."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.check import check, env_tasks
from envgym.rollout import run_episode
from envgym.types import Action, Outcome, ToolCall
from envgym_timed import SCENARIOS
from envgym_timed.authoring import FAMILIES, family_tasks, write_all

ENV_IDS = [f"timed/{name}-v1" for name in SCENARIOS]
ALL = [t for env_id in ENV_IDS for t in env_tasks(env_id)]


def test_committed_suites_equal_the_generators_output(tmp_path: Path):
    write_all(tmp_path)
    committed = Path(envgym.task.suites_root())
    for family in FAMILIES:
        for name in ("tasks.jsonl", "README.md"):
            generated = (tmp_path / f"timed-{family}" / name).read_text(encoding="utf-8")
            assert (committed / f"timed-{family}" / name).read_text(encoding="utf-8") == generated, (
                f"tasks/timed-{family}/{name} is stale: run python -m envgym_timed.authoring")


def test_at_least_45_tasks_in_sync_async_pairs_with_solutions():
    assert len(ALL) >= 45
    pairs = collections.defaultdict(dict)
    for task in ALL:
        assert task.solution, task.id
        pairs[task.metadata["pair"]][task.metadata["variant"]] = task
    for name, variants in pairs.items():
        assert set(variants) == {"sync", "async"}, name
        sync, async_ = variants["sync"], variants["async"]
        assert sync.instruction == async_.instruction and sync.verifiers == async_.verifiers, name
        assert sync.split == async_.split
    assert {t.env_id for t in ALL} == set(ENV_IDS)


@pytest.mark.parametrize("task", ALL, ids=lambda t: t.id)
async def test_oracle_passes_and_null_fails(task):
    async with envgym.make(task.env_id) as env:
        oracle = await run_episode(env, OracleAgent(task), task, seed=0)
        assert oracle.outcome is Outcome.SUCCESS and oracle.reward == 1.0, oracle.verdict
        null = await run_episode(env, NullAgent(), task, seed=0)
        assert null.outcome is Outcome.FAILURE and null.reward == 0.0


@pytest.mark.parametrize("env_id", ENV_IDS)
async def test_envgym_check_passes(env_id):
    report = await check(env_id, gymnasium_check=False)
    assert report.ok, (report.failed, report.gate_failures)


def _one_at_a_time(task) -> list[Action]:
    """The oracle's calls, but each lookup awaited before the next one starts: no interleaving."""
    actions, handle = [], 0
    for action in task.solution:
        calls = [c for c in action.tool_calls if c.name != "wait_for_notification"]
        if not action.tool_calls:
            actions.append(action)
        for call in calls:
            actions.append(Action(tool_calls=(call,)))
            if task.metadata["variant"] == "async" and call.name in (
                    "get_quote", "check_stock", "run_credit_check", "fetch_report"):
                handle += 1
                actions.append(Action(tool_calls=(ToolCall(name="wait_for_notification", arguments=json.dumps(
                    {"timeout": 900, "source": f"h{handle}"})),)))
    return actions


@pytest.mark.parametrize("variant", ["sync", "async"])
async def test_backoffice_deadlines_reward_interleaving_only_when_tools_are_slow(variant):
    from envgym_timed.replay import replay

    tasks = [t for t in family_tasks("backoffice") if t.metadata["variant"] == variant]
    for task in tasks:
        verdict, _ = await replay(task, _one_at_a_time(task))
        assert verdict.passed is (variant == "sync"), task.id
