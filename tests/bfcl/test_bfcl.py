"""BFCL through envgym: BFCL's data and checker from the installed bfcl-eval
(``pip install 'envgym[bfcl]' && envgym bfcl setup``)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval", reason="needs bfcl-eval: pip install 'envgym[bfcl]' && envgym bfcl setup")

import envgym
from envgym.agents.baseline import OracleAgent
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.types import Action, Outcome, ToolCall
from envgym_bfcl import data
from envgym_bfcl.build import suite_name

SAMPLE = 3


@pytest.mark.parametrize("category", data.CATEGORIES)
async def test_the_gold_answers_score_1_through_envgym(category: str) -> None:
    tasks = load_suite(suite_name(category))[:SAMPLE]
    async with envgym.make(tasks[0].env_id) as env:
        for task in tasks:
            trajectory = await run_episode(env, OracleAgent(task), task, seed=0)
            assert trajectory.outcome is Outcome.SUCCESS, (task.id, trajectory.verdict, trajectory.error)


async def test_a_wrong_argument_fails_with_bfcls_error_type() -> None:
    task = load_suite("bfcl-simple-python")[0]
    [call] = task.solution[0].tool_calls
    args = json.loads(call.arguments)
    key = next(iter(args))
    wrong = call.model_copy(update={"arguments": json.dumps({**args, key: 123456})})
    async with envgym.make(task.env_id) as env:
        await env.reset(task=task)
        _, reward, terminated, _, info = await env.step(Action(tool_calls=(wrong,)))
    assert terminated and reward == 0.0
    assert info["verdict"].evidence["bfcl"]["error_type"].startswith(("value_error", "type_error"))


async def test_irrelevance_passes_without_a_call_and_fails_with_one() -> None:
    task = load_suite("bfcl-irrelevance")[0]
    async with envgym.make(task.env_id) as env:
        _, info = await env.reset(task=task)
        _, reward, *_ = await env.step(Action.say("No function fits."))
        assert reward == 1.0
        await env.reset(task=task)
        name = info["tools"][0]["function"]["name"]
        _, reward, *_ = await env.step(Action(tool_calls=(ToolCall(name=name, arguments="{}"),)))
    assert reward == 0.0


async def test_a_single_turn_answer_bfcl_cannot_decode_stands_and_fails() -> None:
    task = load_suite("bfcl-simple-python")[0]
    async with envgym.make(task.env_id) as env:
        await env.reset(task=task)
        obs, _, terminated, _, _ = await env.step(Action(tool_calls=(ToolCall(name="nope", arguments="{}"),)))
        assert not terminated and "unknown tool" in obs.last_action_error
        _, reward, terminated, _, _ = await env.step(task.solution[0])  # too late: the first answer stands
    assert terminated and reward == 0.0


async def test_multi_turn_calls_run_on_bfcls_simulators_and_agent_text_is_never_evaluated() -> None:
    task = load_suite("bfcl-multi-turn-base")[0]
    async with envgym.make(task.env_id) as env:
        await env.reset(task=task)
        for name, arguments in (("__import__('os').system", "{}"), ("cd", '{"folder=1,x": "a"}')):
            obs, *_ = await env.step(Action(tool_calls=(ToolCall(name=name, arguments=arguments),)))
            assert obs.last_action_error and not obs.tool_results[0].content.startswith("Error during execution")
        obs, *_ = await env.step(Action(tool_calls=(ToolCall.of("cd", folder="document"),)))
        assert obs.last_action_error is None and "document" in obs.tool_results[0].content
        obs, _, terminated, _, _ = await env.step(Action.say("Done with that."))
    second = data.entry("multi_turn_base", task.metadata["bfcl_id"])["question"][1]
    assert not terminated and obs.text == second[-1]["content"]  # the next turn's question


async def test_episodes_of_one_entry_do_not_share_simulator_state() -> None:
    task = load_suite("bfcl-multi-turn-base")[0]
    async with envgym.make(task.env_id) as env:
        first = await run_episode(env, OracleAgent(task), task, seed=0)
        second = await run_episode(env, OracleAgent(task), task, seed=0)
    assert first.reward == second.reward == 1.0


def test_dropping_instances_is_safe_while_graders_in_threads_add_theirs() -> None:
    import sys
    import threading

    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    from envgym_bfcl.env import drop_instances

    names = vars(multi_turn_utils)
    fillers = [f"envgym_filler_{k}_instance" for k in range(20000)]  # a long iteration: the race shows at once
    names.update(dict.fromkeys(fillers, 1))
    stop, errors = threading.Event(), []

    def grader() -> None:  # what BFCL's executor does in a grading thread: a global per simulator instance
        i = 0
        while not stop.is_set():
            names[f"envgym_other_{i}_instance"] = object()
            names.pop(f"envgym_other_{i - 50}_instance", None)
            i += 1

    interval = sys.getswitchinterval()
    thread = threading.Thread(target=grader)
    sys.setswitchinterval(1e-6)
    thread.start()
    try:
        for _ in range(150):
            try:
                drop_instances("envgym_mine")
            except RuntimeError as exc:  # dictionary changed size during iteration
                errors.append(exc)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
        drop_instances("envgym_filler")
        drop_instances("envgym_other")
    assert not errors and not any(n.startswith("envgym_filler") for n in names)
