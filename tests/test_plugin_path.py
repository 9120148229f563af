"""The kernel's half of the one plug-in path: grading in one place, run settings that leave tasks alone,
the judge contract, named suites, typed errors for the mistakes outsiders make."""

from __future__ import annotations

import json

import pytest

import envgym
from envgym.errors import EnvError, RegistryError, SpecError, TaskMismatch
from envgym.rollout import run_episode
from envgym.task import load_suite, write_tasks
from envgym.testing import CountdownEnv, ScriptedAgent, countdown_tasks
from envgym.types import Action, Outcome, ToolCall
from envgym.verify import JudgeConfig

NOT_FINAL = Action(tool_calls=(ToolCall(id="c1", name="wait", arguments="{}"),))
DEAD_JUDGE = JudgeConfig(base_url="http://127.0.0.1:9", model="judge", timeout_s=1, retries=0)


class CountingEnv(CountdownEnv):
    """Counts how often the kernel asks for the verify context (once per graded episode)."""

    contexts = 0

    async def verify_context(self):
        type(self).contexts += 1
        return await super().verify_context()


@pytest.fixture
def countdown(tmp_path):
    suite = tmp_path / "countdown.jsonl"
    write_tasks(suite, [t.model_copy(update={"split": "train" if i % 2 else "test"})
                        for i, t in enumerate(countdown_tasks(4))])
    with envgym.isolated():
        envgym.register("test/countdown-v1", "test_plugin_path:CountingEnv", suites=("countdown",))
        envgym.register_suite("countdown", suite)
        CountingEnv.contexts = 0
        yield load_suite("countdown")


async def test_an_episode_is_graded_exactly_once_whichever_way_it_ends(countdown):
    task = countdown[0]
    env = envgym.make("test/countdown-v1")
    ended = await run_episode(env, ScriptedAgent([Action.say("done")]), task)
    assert ended.outcome is Outcome.SUCCESS and CountingEnv.contexts == 1
    assert (await env.verify()).passed and CountingEnv.contexts == 1  # the same verdict, not a second grading
    truncated = await run_episode(env, ScriptedAgent([NOT_FINAL] * 5), task)
    assert truncated.outcome is Outcome.TRUNCATED and truncated.verdict is not None and CountingEnv.contexts == 2
    await env.close()


async def test_a_step_cap_is_a_run_setting_not_a_task_copy(countdown):
    task = countdown[0]
    async with envgym.make("test/countdown-v1") as env:
        capped = await run_episode(env, ScriptedAgent([NOT_FINAL] * 5), task, max_steps=1)
    assert len(capped.steps) == 1 and capped.outcome is Outcome.TRUNCATED and capped.verdict is not None
    assert capped.task_hash == task.hash and CountingEnv.contexts == 1


async def test_eval_max_steps_records_the_task_as_written(countdown, tmp_path):
    from envgym.agents import OracleConfig
    from envgym.eval import EvalConfig, evaluate

    config = EvalConfig(suites=("countdown",), split=None, agent=OracleConfig(), max_steps=1, step_timeout_s=5)
    await evaluate(config, tmp_path / "run", concurrency=2)
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert sorted(r["task_hash"] for r in records) == sorted(t.hash for t in countdown)
    assert {r["suite"] for r in records} == {"countdown"}


async def test_the_judge_goes_to_the_grader_never_to_the_constructor(countdown):
    env = envgym.make("test/countdown-v1", judge=DEAD_JUDGE)  # CountdownEnv takes no judge=
    trajectory = await run_episode(env, ScriptedAgent([Action.say("done")]), countdown[0])
    assert trajectory.outcome is Outcome.SUCCESS
    await env.close()


@pytest.mark.parametrize("suite", ["timed-kitchen", "tool-retail"])
async def test_judge_url_on_a_family_suite_is_not_an_infra_error(suite, tmp_path):
    """``--judge-url`` used to reach every constructor; TimedEnv did not take it (all infra_error)."""
    from envgym.agents import OracleConfig
    from envgym.eval import EvalConfig, JudgeSettings, evaluate

    config = EvalConfig(suites=(suite,), agent=OracleConfig(), limit=2,
                        judge=JudgeSettings(base_url=DEAD_JUDGE.base_url, model="judge"))
    summary = await evaluate(config, tmp_path / "run", concurrency=2)
    assert summary.outcomes.get("infra_error", 0) == 0 and summary.outcomes["success"] == 2


@pytest.mark.browser
async def test_judge_url_on_miniwob_is_not_an_infra_error(tmp_path):
    from envgym.agents import OracleConfig
    from envgym.eval import EvalConfig, JudgeSettings, evaluate

    config = EvalConfig(suites=("web-miniwob",), agent=OracleConfig(), limit=1,
                        judge=JudgeSettings(base_url=DEAD_JUDGE.base_url, model="judge"))
    summary = await evaluate(config, tmp_path / "run", concurrency=1)
    assert summary.outcomes.get("infra_error", 0) == 0 and summary.outcomes["success"] == 1


async def test_reset_by_task_id_by_split_and_what_was_drawn(countdown):
    async with envgym.make("test/countdown-v1") as env:
        obs, info = await env.reset(task=countdown[2].id)
        assert info["task_id"] == countdown[2].id and obs.text == countdown[2].instruction
        for seed in range(6):
            _, info = await env.reset(seed=seed, options={"split": "train"})
            assert info["split"] == "train"
        with pytest.raises(EnvError, match=r"no task 'countdown-0009'.*did you mean"):
            await env.reset(task="countdown-0009")
        with pytest.raises(EnvError, match=r"unknown split 'tset'; the splits are train, test, dev"):
            await env.reset(options={"split": "tset"})
        other = countdown[0].model_copy(update={"env_id": "test/other-v1"})
        with pytest.raises(TaskMismatch, match=r"is for 'test/other-v1', not 'test/countdown-v1'"):
            await env.reset(task=other)


def test_load_suite_refuses_an_unknown_split(countdown):
    with pytest.raises(SpecError, match=r"unknown split 'tset'; the splits are train, test, dev"):
        load_suite("countdown", split="tset")


def test_an_unknown_suite_says_how_to_name_one(countdown):
    with pytest.raises(SpecError, match=r"unknown suite 'countdwn'; did you mean 'countdown'.*register_suite"):
        load_suite("countdwn")


def test_registrations_are_checked(countdown, tmp_path):
    with pytest.raises(RegistryError, match="malformed suite name"):
        envgym.register_suite("Bad Name", tmp_path)
    with pytest.raises(RegistryError, match="already registered"):
        envgym.register_suite("countdown", tmp_path)
    with pytest.raises(RegistryError, match="built in"):
        envgym.register_verifier("answer", object, lambda: None)
    with pytest.raises(RegistryError, match=r"test/countdown-v1.*unexpected keyword argument 'domain'"):
        envgym.make("test/countdown-v1", domain="retail")


async def test_capability_flags_show_through_every_wrapper(countdown):
    class Timed(CountdownEnv):
        time_evolving = True
        multimodal = True
        sql_state = True

    with envgym.isolated():
        import test_plugin_path

        test_plugin_path.Timed = Timed
        envgym.register("test/timed-v1", "test_plugin_path:Timed")
        env = envgym.make("test/timed-v1")
        assert env.time_evolving and env.multimodal and env.sql_state and not env.needs_sandbox
        assert envgym.spec("test/timed-v1").capabilities == {
            "needs_sandbox": False, "time_evolving": True, "has_write_actions": False, "multimodal": True,
            "simulated_user": False, "virtual_time": False, "sql_state": True}
        await env.close()


def test_every_bundled_suite_is_a_named_suite():
    from envgym.task import suites_root

    bundled = sorted(p.name for p in suites_root().iterdir() if p.is_dir() and any(p.glob("*.jsonl")))
    assert set(bundled) <= set(envgym.list_suites())


async def test_run_episode_grades_a_bare_env_the_same_way(countdown):
    env = CountingEnv()  # not from make: no Grading wrapper
    trajectory = await run_episode(env, ScriptedAgent([Action.say("done")]), countdown[0])
    assert trajectory.outcome is Outcome.SUCCESS and trajectory.reward == 1.0 and CountingEnv.contexts == 1
