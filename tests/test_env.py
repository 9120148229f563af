import pytest

import envgym
from envgym.errors import EnvClosed, ResetNeeded
from envgym.types import Action, ToolCall


async def test_step_before_reset_and_after_end(notes):
    async with envgym.make("test/notes-v1") as env:
        with pytest.raises(ResetNeeded, match="before reset"):
            await env.step(Action.say("hi"))
        await env.reset(task=notes[0])
        result = await env.step(Action.say("bye"))
        assert result.terminated and "verdict" in result.info
        with pytest.raises(ResetNeeded, match="after the episode ended"):
            await env.step(Action.say("again"))
    with pytest.raises(EnvClosed):
        await env.reset(task=notes[0])


async def test_time_limit_truncates_and_grades(notes):
    task = notes[0].model_copy(update={"limits": notes[0].limits.model_copy(update={"max_steps": 2})})
    async with envgym.make("test/notes-v1") as env:
        await env.reset(task=task)
        first = await env.step(Action.call("list_notes"))
        assert not first.truncated
        second = await env.step(Action.call("delete_note", note_id=1))
        assert second.truncated and not second.terminated
        assert second.info["verdict"].passed  # the write happened; the agent just never said so
        assert second.reward == 1.0


async def test_malformed_calls_are_observations(notes):
    async with envgym.make("test/notes-v1") as env:
        await env.reset(task=notes[0])
        bad = Action(tool_calls=(ToolCall(name="delete_note", arguments="{oops"),
                                 ToolCall(name="nope"),
                                 ToolCall.of("delete_note", note_id="one"),
                                 ToolCall.of("delete_note", note_id=2),
                                 ToolCall.of("delete_note", note_id=1, extra=True)))
        obs, reward, terminated, truncated, _ = await env.step(bad)
        assert not terminated and not truncated and reward == 0.0
        errors = [r.error for r in obs.tool_results]
        assert "invalid JSON" in errors[0]
        assert "unknown tool 'nope'" in errors[1]
        assert "invalid arguments" in errors[2] and "note_id" in errors[2]
        assert errors[3].startswith("policy violation")
        assert "unknown argument" in errors[4]
        assert obs.last_action_error is not None
        listing = await env.step(Action.call("list_notes"))
        assert '"id": 1' in listing.observation.tool_results[0].content  # nothing was deleted


async def test_reset_without_task_draws_from_suite_by_seed():
    async with envgym.make("test/notes-v1") as env:
        a, _ = await env.reset(seed=3)
        first = env.task
        b, _ = await env.reset(seed=3)
        assert env.task == first and a == b


async def test_an_on_disk_store_is_a_real_file_removed_on_close(notes):
    env = envgym.make("test/notes-v1", on_disk=True)
    await env.reset(task=notes[0])
    path = env.unwrapped.db_path
    assert path.exists() and path.read_bytes().startswith(b"SQLite format 3")
    await env.close()
    assert not path.exists()
    await env.close()  # idempotent
