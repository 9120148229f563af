"""envgym.testing: the kit a plug-in's tests use (fakes, scripted agents, isolated registry, pytest plugin).

The fixtures are imported from the plugin module here, as ``-p envgym.testing.pytest_plugin`` would load
them; one test also runs a plug-in's test file in a subprocess with exactly that flag.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import envgym
from envgym.rollout import run_episode
from envgym.testing import (
    COUNTDOWN_ID,
    BrokenAgent,
    CountdownEnv,
    FakeSandbox,
    ScriptedAgent,
    countdown_tasks,
    isolated_registry,
    play,
    pytest_plugin,
)
from envgym.types import Action, Blame, Outcome

envgym_registry, fake_sandbox, scripted_agent = (  # what -p envgym.testing.pytest_plugin would register
    pytest_plugin.envgym_registry, pytest_plugin.fake_sandbox, pytest_plugin.scripted_agent)

ENTRY = "envgym.testing:CountdownEnv"


def test_isolated_registry_is_empty_and_restores_the_previous_one():
    assert "test/notes-v1" in envgym.list_envs()  # the root conftest registers it
    with isolated_registry():
        assert envgym.list_envs() == []  # no entry-point plug-in loads inside
        envgym.register(COUNTDOWN_ID, ENTRY)
        assert envgym.list_envs() == [COUNTDOWN_ID]
    assert COUNTDOWN_ID not in envgym.list_envs()
    assert "test/notes-v1" in envgym.list_envs()


def test_registry_fixture_isolates(envgym_registry):
    envgym.register(COUNTDOWN_ID, ENTRY)
    assert envgym.list_envs() == [COUNTDOWN_ID]
    assert "test/notes-v1" not in envgym.list_envs()


async def test_countdown_env_is_graded_by_the_kernel(envgym_registry, scripted_agent):
    envgym.register(COUNTDOWN_ID, ENTRY)
    task = countdown_tasks(1)[0]
    right, wrong, silent = (scripted_agent([Action.say("done")]), ScriptedAgent([Action.say("nope")]),
                            ScriptedAgent([Action.call("x")] * 5))
    results = []
    for agent in (right, wrong, silent):
        async with envgym.make(COUNTDOWN_ID) as env:
            results.append(await run_episode(env, agent, task))
    assert [t.outcome for t in results] == [Outcome.SUCCESS, Outcome.FAILURE, Outcome.TRUNCATED]
    assert [t.verdict.passed for t in results] == [True, False, False]
    assert [len(t.steps) for t in results] == [1, 1, 3]
    assert right.seen[0].text == task.instruction and right.closed
    assert silent.seen[1].last_action_error  # a tool call in a tool-less env is an observation


async def test_play_returns_the_kernel_verdict(envgym_registry):
    envgym.register(COUNTDOWN_ID, ENTRY)
    task = countdown_tasks(1, steps=5)[0]
    result, observations = await play(COUNTDOWN_ID, task, [Action.call("x"), *task.solution])
    assert result.terminated and result.reward == 1.0 and result.info["verdict"].passed
    assert len(observations) == 2


async def test_broken_agent_is_an_infra_error(envgym_registry):
    envgym.register(COUNTDOWN_ID, ENTRY)
    async with envgym.make(COUNTDOWN_ID) as env:
        trajectory = await run_episode(env, BrokenAgent(), countdown_tasks(1)[0])
    assert trajectory.outcome is Outcome.INFRA_ERROR  # a dead model endpoint is nothing the agent's moves did
    assert trajectory.blame is Blame.INFRA and "endpoint unreachable" in trajectory.error


async def test_fake_sandbox_fixture_is_started(fake_sandbox):
    assert isinstance(fake_sandbox, FakeSandbox) and await fake_sandbox.alive()
    assert (await fake_sandbox.exec("echo hi")).stdout.strip() == "hi"


def test_countdown_env_declares_no_capabilities():
    assert not (CountdownEnv.needs_sandbox or CountdownEnv.time_evolving or CountdownEnv.has_write_actions)


PLUGIN_TEST = '''
import envgym
from envgym.rollout import run_episode
from envgym.testing import countdown_tasks

async def test_my_env(envgym_registry, scripted_agent, fake_sandbox):
    envgym.register("mine/echo-v1", "envgym.testing:CountdownEnv")
    task = countdown_tasks(1, env_id="mine/echo-v1")[0]
    async with envgym.make("mine/echo-v1") as env:
        trajectory = await run_episode(env, scripted_agent([*task.solution]), task)
    assert trajectory.verdict.passed
    assert (await fake_sandbox.exec("echo ok")).stdout.strip() == "ok"

def test_isolated_again(envgym_registry):
    assert envgym.list_envs() == []
'''


def test_pytest_plugin_loads_with_dash_p(tmp_path):
    (tmp_path / "test_plugin_env.py").write_text(textwrap.dedent(PLUGIN_TEST), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n", encoding="utf-8")  # not envgym's
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "envgym.testing.pytest_plugin",
                          "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
