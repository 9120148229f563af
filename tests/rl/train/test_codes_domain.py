"""The CPU recipe's task family, ``tool/codes-v1``: the committed suite, partial credit, the look-up tool."""

from __future__ import annotations

import pytest

import envgym
from envgym.task import suites_root
from envgym.types import Action, ToolCall
from envgym_tool.domains.codes import build

from fakes import play

TASKS = envgym.load_suite("tool-codes")


def test_committed_suite_equals_build():
    committed = envgym.load_tasks(suites_root() / "tool-codes" / "tasks.jsonl")
    assert [t.model_dump(mode="json") for t in committed] == [t.model_dump(mode="json") for t in build()]
    assert {t.metadata["kind"] for t in TASKS} == {"echo", "given", "lookup"}


@pytest.mark.parametrize(("reply", "score"), [
    ("{code}", 1.0), ("The code is {code}.", 2 / 3), ("The code for that name is {code}, I think.", 1 / 3),
    ("I am sorry, I do not know it.", 0.0), ("Sorry, no idea.", 0.0), ("```javascript\n```", 0.0),
])
async def test_echo_answers_earn_partial_credit(reply, score):
    task = next(t for t in TASKS if "echo" in t.tags)
    code = task.solution[-1].text
    result, _ = await play("tool/codes-v1", task, [Action(text=reply.format(code=code))])
    assert result.reward == pytest.approx(score)


async def test_lookup_needs_the_tool():
    task = next(t for t in TASKS if "lookup" in t.tags)
    name = task.solution[0].tool_calls[0].arguments
    code = task.solution[-1].text
    assert code not in task.instruction
    call = Action(tool_calls=(ToolCall(name="get_code", arguments=name),))
    result, observations = await play("tool/codes-v1", task, [call, Action(text=code)])
    assert code in observations[0].tool_results[0].content and result.reward == 1.0
    guessed, _ = await play("tool/codes-v1", task, [Action(text=code)])
    assert guessed.reward == pytest.approx(3 / 4)  # right code, brief, exact, but never looked up
