import asyncio

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.rollout import run_episode
from envgym.types import Action, Blame, Outcome

from fakes import BrokenAgent, ScriptedAgent


async def test_oracle_succeeds_null_fails(notes):
    async with envgym.make("test/notes-v1") as env:
        for task in notes:
            good = await run_episode(env, OracleAgent(task), task)
            assert good.outcome is Outcome.SUCCESS and good.reward == 1.0
            assert good.task_hash == task.hash and len(good.steps) == len(task.solution)
            bad = await run_episode(env, NullAgent(), task)
            assert bad.outcome is Outcome.FAILURE and bad.reward == 0.0


async def test_agent_failure_is_infra_error_and_agent_closed(notes):
    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, BrokenAgent(), notes[0])
    assert trajectory.outcome is Outcome.INFRA_ERROR
    assert trajectory.error_type == "PolicyError" and "unreachable" in trajectory.error
    assert trajectory.blame is Blame.INFRA and trajectory.verdict is None


async def test_agent_step_timeout_is_the_agents_failure(notes):
    task = notes[0].model_copy(update={"limits": notes[0].limits.model_copy(update={"step_timeout_s": 0.05})})
    agent = ScriptedAgent([Action.say("late")], delay=1.0)
    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, agent, task)
    assert trajectory.outcome is Outcome.FAILURE and trajectory.error_type == "PolicyTimeout"
    assert trajectory.blame is Blame.AGENT and trajectory.verdict.evidence["blame"] == "agent"
    assert agent.closed


class SlowThirdCall(ScriptedAgent):
    async def act(self, observation):
        if len(self.seen) == 2:
            await asyncio.sleep(0.5)
        return await super().act(observation)


async def test_step_deadline_is_per_call_and_rearmed_each_call(notes):
    # each call takes 60% of the step deadline, the episode several deadlines: nothing times out
    task = notes[0].model_copy(update={"limits": notes[0].limits.model_copy(update={"step_timeout_s": 0.1})})
    solution = list(task.solution)
    agent = ScriptedAgent(solution, delay=0.06)
    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, agent, task)
        assert trajectory.outcome is Outcome.SUCCESS and trajectory.timing.wall_s > 0.1
        # a late call after fast ones still times out, attributed to the agent
        slow = SlowThirdCall([Action.call("list_notes"), Action.call("list_notes"), Action.say("late")])
        late = await run_episode(env, slow, task)
    assert late.outcome is Outcome.FAILURE and late.error_type == "PolicyTimeout" and len(late.steps) == 2
    assert late.blame is Blame.AGENT
    await asyncio.sleep(0.15)  # the episode's deadline timer is gone: nothing fires after the episode


async def test_episode_deadline_truncates_and_grades(notes):
    limits = notes[0].limits.model_copy(update={"episode_timeout_s": 0.3, "step_timeout_s": None})
    task = notes[0].model_copy(update={"limits": limits})
    agent = ScriptedAgent([Action.call("delete_note", note_id=1)] + [Action.call("list_notes")] * 50, delay=0.05)
    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, agent, task)
    # the deadline hit before a final answer; the write was right, so the graded state passes
    assert trajectory.outcome is Outcome.SUCCESS and trajectory.verdict.passed
    assert 1 <= len(trajectory.steps) < 10


async def test_cancellation_propagates_and_closes_agent(notes):
    agent = ScriptedAgent([Action.call("list_notes")] * 100, delay=0.05)
    async with envgym.make("test/notes-v1") as env:
        episode = asyncio.create_task(run_episode(env, agent, notes[0]))
        await asyncio.sleep(0.12)
        episode.cancel()
        try:
            await episode
            raise AssertionError("cancellation was swallowed")
        except asyncio.CancelledError:
            pass
    assert agent.closed


async def test_env_bug_is_a_failure_blamed_on_the_env(notes, monkeypatch):
    async with envgym.make("test/notes-v1") as env:
        async def broken_step(action):
            raise ZeroDivisionError("bug in env")

        monkeypatch.setattr(env.unwrapped, "step", broken_step)
        trajectory = await run_episode(env, ScriptedAgent([Action.say("x")]), notes[0])
    assert trajectory.outcome is Outcome.FAILURE and "ZeroDivisionError" in trajectory.error
    assert trajectory.blame is Blame.ENV and trajectory.reward == 0.0


async def test_step_records_are_what_model_construct_and_validation_build(notes):
    from envgym.trajectory import StepRecord

    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, OracleAgent(notes[0]), notes[0])
    assert trajectory.steps
    for step in trajectory.steps:
        fields = {name: getattr(step, name) for name in StepRecord.model_fields}
        built = StepRecord.model_construct(**fields)
        assert step == built and step.model_fields_set == built.model_fields_set
        assert step.__pydantic_extra__ is built.__pydantic_extra__ and step.__pydantic_private__ is None
        assert StepRecord.model_validate_json(step.model_dump_json()) == step
        assert step.model_copy(update={"index": 99}).index == 99 and step.index != 99


class ReturnsNotAnAction(ScriptedAgent):
    async def act(self, observation):
        await super().act(observation)
        return "delete the groceries note"


async def test_an_agent_that_returns_no_action_fails_as_the_agent(notes):
    # a str where an Action belongs is the agent's malformed output, found at the agent stage, not an
    # AttributeError from somewhere inside the env blamed on the env
    agent = ReturnsNotAnAction([Action.say("x")])
    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, agent, notes[0])
    assert trajectory.outcome is Outcome.FAILURE and trajectory.blame is Blame.AGENT
    assert trajectory.error_type == "AgentFault" and not trajectory.steps
    assert trajectory.error == "AgentFault: the agent returned str, not an Action"
    assert trajectory.verdict.evidence["stage"] == "agent" and agent.closed
