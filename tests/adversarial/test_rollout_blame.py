"""Every exception is attributed once, by the rollout: only what the agent could not cause is infra_error."""

import asyncio
import json

import pytest

import envgym
from envgym.errors import AgentFault, JudgeUnavailable, VerifierError
from envgym.rl.proxy import _canonical
from envgym.rollout import blame_of, run_episode
from envgym.sandbox.errors import DaemonUnavailable, ExecTimeout, ImageMissing, SandboxCrashed
from envgym.tamper import DeepArguments
from envgym.tools.args import ArgumentsError, decode_arguments
from envgym.types import Action, Blame, Outcome
from envgym.vector import EpisodePool
from envgym.vector.pool import Job

from fakes import ScriptedAgent

DEEP = '{"a": ' * 100_000 + "1" + "}" * 100_000


def raising(exc):
    async def method(*args, **kwargs):
        raise exc
    return method


async def episode(notes, monkeypatch, *, step=None, reset=None, verify=None, agent=None, task=None):
    task = task or notes[0]
    async with envgym.make("test/notes-v1") as env:
        if step is not None:
            monkeypatch.setattr(env.unwrapped, "step", raising(step))
        if reset is not None:
            monkeypatch.setattr(env.unwrapped, "reset", raising(reset))
        if verify is not None:  # grading fails: the kernel grades through what the env reports
            monkeypatch.setattr(env.unwrapped, "verify_context", raising(verify))
        return await run_episode(env, agent or ScriptedAgent([Action.call("list_notes")]), task)


@pytest.mark.parametrize("exc", [SandboxCrashed("container abc is exited (died during the command)"),
                                 AgentFault("the agent's command exhausted the pids limit")])
async def test_the_agents_broken_sandbox_is_its_failure(notes, monkeypatch, exc):
    # `kill 1` in its own container: the old rollout recorded SandboxCrashed as infra_error (out of the denominator)
    trajectory = await episode(notes, monkeypatch, step=exc)
    assert trajectory.outcome is Outcome.FAILURE and trajectory.blame is Blame.AGENT
    assert trajectory.reward == 0.0 and not trajectory.verdict.passed
    assert type(exc).__name__ in trajectory.verdict.evidence["cause"]


async def test_an_unstoppable_command_is_not_the_episode_deadline(notes, monkeypatch):
    # ExecTimeout is a TimeoutError (viewing a FIFO): the old rollout took it for the episode deadline,
    # recorded `truncated` and dropped the error
    trajectory = await episode(notes, monkeypatch, step=ExecTimeout("container abc is paused: no answer"))
    assert trajectory.outcome is Outcome.FAILURE and trajectory.blame is Blame.AGENT
    assert trajectory.error_type == "ExecTimeout" and "no answer" in trajectory.error


@pytest.mark.parametrize("exc", [DaemonUnavailable("no Docker engine answers"), ImageMissing("image x")])
async def test_the_engine_is_infrastructure_even_mid_episode(notes, monkeypatch, exc):
    trajectory = await episode(notes, monkeypatch, step=exc)
    assert trajectory.outcome is Outcome.INFRA_ERROR and trajectory.blame is Blame.INFRA
    assert trajectory.verdict is None


async def test_a_sandbox_that_fails_before_the_agent_acted_is_infrastructure(notes, monkeypatch):
    trajectory = await episode(notes, monkeypatch, reset=SandboxCrashed("could not start"))
    assert trajectory.outcome is Outcome.INFRA_ERROR and trajectory.blame is Blame.INFRA


async def test_grading_errors_at_the_deadline_are_blamed_once(notes, monkeypatch):
    limits = notes[0].limits.model_copy(update={"episode_timeout_s": 0.2, "step_timeout_s": None})
    task = notes[0].model_copy(update={"limits": limits})
    slow = ScriptedAgent([Action.call("list_notes")] * 100, delay=0.05)
    broken = await episode(notes, monkeypatch, verify=VerifierError("bad check"), agent=slow, task=task)
    assert broken.outcome is Outcome.FAILURE and broken.blame is Blame.VERIFIER
    slow = ScriptedAgent([Action.call("list_notes")] * 100, delay=0.05)
    judge = await episode(notes, monkeypatch, verify=JudgeUnavailable("judge down"), agent=slow, task=task)
    assert judge.outcome is Outcome.INFRA_ERROR and judge.blame is Blame.INFRA


async def test_a_grading_bug_when_the_episode_ends_is_the_verifiers(notes, monkeypatch):
    # graded inside the final step (the Grading wrapper): a bare exception there was blamed on the env
    trajectory = await episode(notes, monkeypatch, verify=RecursionError("maximum recursion depth exceeded"),
                               agent=ScriptedAgent([Action.say("done")]))
    assert trajectory.outcome is Outcome.FAILURE and trajectory.blame is Blame.VERIFIER
    assert trajectory.error_type == "VerifierError" and "grading raised RecursionError" in trajectory.error


def test_blame_table():
    assert blame_of(ValueError("x"), "env") is Blame.ENV
    assert blame_of(ValueError("x"), "agent") is Blame.AGENT
    assert blame_of(ValueError("x"), "reset") is Blame.INFRA
    assert blame_of(SandboxCrashed("x"), "verify") is Blame.AGENT
    exc = SandboxCrashed("the grading container would not start")
    exc.blame = "infra"  # a family that knows better says so on the instance
    assert blame_of(exc, "env") is Blame.INFRA


def test_arguments_nested_past_the_recursion_limit_are_an_arguments_error():
    with pytest.raises(ArgumentsError, match="nest too deeply"):
        decode_arguments("bash", DEEP)
    with pytest.raises(ArgumentsError, match="nest too deeply"):
        decode_arguments("bash", "[" * 100_000 + "]" * 100_000)


def test_the_proxy_renders_deep_arguments_as_text():
    rendered = _canonical("", [{"id": "c1", "function": {"name": "bash", "arguments": DEEP}}])
    assert rendered.startswith("<tool_call>") and json.loads(rendered.removeprefix("<tool_call>")
                                                            .removesuffix("</tool_call>"))["name"] == "bash"


async def test_deep_arguments_tamperer_scores_zero_without_infra_error(notes):
    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, DeepArguments(notes[0]), notes[0])
    assert trajectory.outcome is Outcome.FAILURE and trajectory.reward == 0.0 and trajectory.blame is None
    assert all(s.observation.last_action_error for s in trajectory.steps[:-1])


async def test_the_pool_never_reuses_an_env_that_raised(notes, monkeypatch):
    made = []

    def make_env(env_id):
        env = envgym.make(env_id)
        made.append(env)
        if len(made) == 1:
            monkeypatch.setattr(env.unwrapped, "step", raising(SandboxCrashed("gone")))
        return env

    async with EpisodePool(concurrency=1, make_env=make_env) as pool:
        jobs = [Job(task=notes[0], agent=ScriptedAgent([Action.call("list_notes")])) for _ in range(2)]
        results = [t async for t in pool.run(jobs)]
    assert [r.blame for r in results] == [Blame.AGENT, None] and len(made) == 2
    await asyncio.sleep(0)
