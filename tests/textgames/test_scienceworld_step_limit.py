"""text/scienceworld-v1 under the scienceworld package's own step limit (``step_limit``), on the real simulator.

envgym plays with no step limit by default; ``step_limit="package"`` (an env keyword) or a task's
``initial_state.step_limit`` ends the game once the simulator has counted more moves than the limit, as the
package's ``ScienceWorldEnv.step`` does, and the verdict's evidence says which limit the episode ran under.
"""

from __future__ import annotations

import json

import pytest

import envgym
from envgym.agents.baseline import OracleAgent
from envgym.errors import EnvError, SpecError
from envgym.rollout import run_episode
from envgym.task import load_suite, load_tasks

pytest.importorskip("scienceworld", reason="the scienceworld extra is not installed")

from envgym_textgames import build
from envgym_textgames.scienceworld import package_step_limit


def _with_limit(task, limit):
    return task.model_copy(update={"initial_state": {**task.initial_state, "step_limit": limit}})


def _shortest(tasks):
    return min(tasks, key=lambda t: len(t.solution or ()))


def test_the_package_limit_is_the_packages_own_default() -> None:
    import inspect

    from scienceworld import ScienceWorldEnv

    assert package_step_limit() == inspect.signature(ScienceWorldEnv).parameters["envStepLimit"].default


@pytest.mark.slow
async def test_a_gold_path_longer_than_the_package_limit_wins_only_without_it() -> None:
    limit = package_step_limit()
    # a gold path well over the limit (some commands, like look, take no move, and a few types' move counts
    # vary between loads: that it takes more moves than the limit is checked on the unlimited episode first)
    task = _shortest([t for t in load_suite("text-scienceworld") if len(t.solution or ()) > limit + limit // 4])
    async with envgym.make("text/scienceworld-v1") as env:
        free = await run_episode(env, OracleAgent(task), task, seed=0)
    assert free.verdict.evidence["scienceworld"]["moves"] > limit  # the whole path, played to its end
    async with envgym.make("text/scienceworld-v1", step_limit="package") as env:
        cut = await run_episode(env, OracleAgent(task), task, seed=0)
    row = cut.verdict.evidence["scienceworld"]
    assert not cut.verdict.passed and cut.reward == 0.0 and cut.outcome.value == "failure"
    assert row["step_limit"] == limit and row["out_of_moves"] and row["moves"] == limit + 1
    assert f"under a step limit of {limit} (reached)" in cut.verdict.criteria[0].detail
    last = [r.content for s in cut.steps for r in s.observation.tool_results][-1]
    assert f"step limit of {limit} moves is reached" in last
    assert free.verdict.passed and free.verdict.evidence["scienceworld"]["step_limit"] is None
    assert "with no step limit" in free.verdict.criteria[0].detail


@pytest.mark.slow
async def test_a_tasks_own_step_limit_wins_over_the_env_keyword() -> None:
    # far from the limit: a few types' move counts vary between loads (power-component once won in 6)
    task = _shortest([t for t in load_suite("text-scienceworld") if len(t.solution or ()) > 20])
    async with envgym.make("text/scienceworld-v1", step_limit=5) as env:
        unlimited = _with_limit(task, None)
        free = await run_episode(env, OracleAgent(unlimited), unlimited, seed=0)
        assert free.verdict.evidence["scienceworld"]["moves"] > 10
        cut = await run_episode(env, OracleAgent(task), task, seed=0)
    assert not cut.verdict.passed and cut.verdict.evidence["scienceworld"]["moves"] == 6
    assert len(cut.steps) < len(task.solution or ())  # the game ended: the rest of the path never ran
    assert free.verdict.passed and free.verdict.evidence["scienceworld"]["step_limit"] is None


@pytest.mark.parametrize("bad", [0, -3, "pakage", 2.5, True])
def test_a_bad_step_limit_keyword_is_a_spec_error_naming_it(bad) -> None:
    with pytest.raises(SpecError, match="step_limit must be null"):
        envgym.make("text/scienceworld-v1", step_limit=bad)


@pytest.mark.slow
async def test_a_bad_step_limit_in_a_task_is_an_env_error_naming_the_task() -> None:
    task = _with_limit(_shortest(load_suite("text-scienceworld")), "unlimited")
    async with envgym.make("text/scienceworld-v1") as env:
        with pytest.raises(EnvError, match=f"task {task.id}: step_limit must be null"):
            await env.reset(task=task)


def test_scienceworld_limit_writes_the_suite_with_the_limit_and_new_hashes(tmp_path, capsys) -> None:
    out = tmp_path / "limited.jsonl"
    assert build.main(["scienceworld-limit", "--step-limit", "package", "--out", str(out)]) == 0
    original, limited = load_suite("text-scienceworld"), load_tasks(out)
    assert [t.id for t in limited] == [t.id for t in original]
    assert all(t.initial_state["step_limit"] == "package" for t in limited)
    assert not {t.hash for t in limited} & {t.hash for t in original}  # a task set of its own
    assert json.loads(out.read_text().splitlines()[0])["initial_state"]["step_limit"] == "package"
    assert f"wrote {len(original)} tasks (step_limit package)" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "-1", "lots"])
def test_a_bad_step_limit_flag_exits_2(value, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        build.main(["scienceworld-limit", "--step-limit", value, "--out", str(tmp_path / "x.jsonl")])
    assert info.value.code == 2 and "argument --step-limit:" in capsys.readouterr().err
