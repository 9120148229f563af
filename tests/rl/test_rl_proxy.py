"""The recording proxy over real HTTP: routes, tool calls, token-faithful segments, sessions, errors, and an
envgym episode end to end (openai agent -> proxy -> backend -> trajectory -> samples)."""

from __future__ import annotations

import asyncio
import json

import httpx
from rl_fakes import ScriptedBackend

import envgym
from envgym.rl.agents import RecordingAgentFactory
from envgym.rl.backends import TransformersBackend
from envgym.rl.proxy import RecordingProxy, Sampling
from envgym.rl.samples import samples_from_episode
from envgym.rollout import run_episode
from envgym.types import Limits, Outcome

TOOLS = [{"type": "function", "function": {"name": "get_order", "description": "Look up an order.",
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]
CALL = '<tool_call>{"name": "get_order", "arguments": {"order_id": "o1"}}</tool_call>'


async def post(client, url, body, **headers):
    response = await client.post(url, json=body, headers=headers)
    return response.status_code, response.json()


async def test_tool_calls_usage_and_a_token_faithful_multi_turn_session(tokenizer):
    backend = ScriptedBackend(tokenizer, [f"Let me look.\n{CALL}", "It ships  tomorrow."])
    async with RecordingProxy(backend) as proxy, httpx.AsyncClient(timeout=120) as client:
        url = proxy.base_url_for("ep1") + "/chat/completions"
        messages = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Where is o1?"}]
        status, data = await post(client, url, {"messages": messages, "tools": TOOLS, "return_token_ids": True})
        assert status == 200
        message = data["choices"][0]["message"]
        assert message["content"] == "Let me look."
        assert [c["function"] for c in message["tool_calls"]] == [
            {"name": "get_order", "arguments": '{"order_id": "o1"}'}]
        assert data["choices"][0]["finish_reason"] == "tool_calls"
        assert data["usage"]["completion_tokens"] == len(data["choices"][0]["token_ids"])
        assert data["usage"]["prompt_tokens"] == len(data["prompt_token_ids"])
        assert '"name":"get_order"' in tokenizer.decode(data["prompt_token_ids"])  # tools in the system turn
        messages += [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "late"}]
        status, second = await post(client, url, {"messages": messages, "tools": TOOLS, "logprobs": True})
        assert status == 200 and second["choices"][0]["message"]["content"] == "It ships  tomorrow."
        assert second["envgym"] == {"session": "ep1", "call": 1, "segment": 0, "policy_version": 0}
        assert second["choices"][0]["logprobs"]["content"][0]["logprob"] == -0.5

    record = proxy.session("ep1")
    first, again = record.calls
    assert again.prompt_ids[: len(first.prompt_ids) + len(first.completion_ids)] == \
        first.prompt_ids + first.completion_ids  # the generated ids are reused, never re-tokenised
    [segment] = record.segments()
    assert segment.loss_mask.count(1) == len(first.completion_ids) + len(again.completion_ids)
    env_tokens = [t for t, m in zip(segment.completion_ids, segment.loss_mask, strict=True) if not m]
    assert "<tool_response>\nlate\n</tool_response>" in tokenizer.decode(env_tokens)
    # The segment decodes to exactly the conversation the chat template renders.
    text = record.transcript(tokenizer)[0]
    assert text.startswith("<|im_start|>system\nBe kind.") and text.endswith("It ships  tomorrow.<|im_end|>")
    assert tokenizer.decode(backend.prompts[1], skip_special_tokens=False) + \
        "It ships  tomorrow.<|im_end|>" == text


async def test_rewritten_history_starts_a_new_segment(tokenizer):
    backend = ScriptedBackend(tokenizer, ["one", "two", "three"])
    async with RecordingProxy(backend) as proxy, httpx.AsyncClient(timeout=120) as client:
        url = proxy.base_url + "/chat/completions"
        auth = {"Authorization": "Bearer ep2"}
        user = {"role": "user", "content": "hi"}
        _, a = await post(client, url, {"messages": [user]}, **auth)
        turn = a["choices"][0]["message"]
        _, b = await post(client, url, {"messages": [user, turn, {"role": "user", "content": "more"}]}, **auth)
        edited = {"role": "assistant", "content": "something I never said"}
        _, c = await post(client, url, {"messages": [user, edited, {"role": "user", "content": "more"}]}, **auth)
    assert [r["envgym"]["segment"] for r in (a, b, c)] == [0, 0, 1]
    segments = proxy.close_session("ep2").segments()
    assert [s.calls for s in segments] == [2, 1]
    assert proxy.close_session("ep2") is None  # handed over once, then forgotten


async def test_pinned_sampling_and_limits(tokenizer):
    backend = ScriptedBackend(tokenizer, ["ok"])
    sampling = Sampling(temperature=1.0, top_p=1.0)
    async with RecordingProxy(backend, sampling=sampling, max_sessions=2) as proxy, httpx.AsyncClient() as client:
        for key in ("a", "b", "c"):
            body = {"messages": [{"role": "user", "content": key}], "temperature": 0.2, "max_tokens": 7}
            status, _ = await post(client, proxy.base_url_for(key) + "/chat/completions", body)
            assert status == 200
        assert backend.requests[0] == {"max_new_tokens": 7, "temperature": 1.0, "top_p": 1.0}
        assert proxy.sessions_dropped == 1 and proxy.close_session("a") is None and proxy.close_session("c")


async def test_seed_for_seeds_calls_without_a_seed_and_keeps_the_clients(tokenizer):
    backend = ScriptedBackend(tokenizer, ["ok"])
    seed_for = lambda session: 1000 * ord(session.key) + len(session.calls)  # noqa: E731
    async with RecordingProxy(backend, seed_for=seed_for) as proxy, httpx.AsyncClient() as client:
        for key, seed in (("a", None), ("a", None), ("b", None), ("b", 7)):
            body = {"messages": [{"role": "user", "content": key}]} | ({} if seed is None else {"seed": seed})
            status, _ = await post(client, proxy.base_url_for(key) + "/chat/completions", body)
            assert status == 200
    assert backend.seeds == [97_000, 97_001, 98_000, 7]


async def test_error_paths(tokenizer):
    async with RecordingProxy(ScriptedBackend(tokenizer, ["x"], fail=True)) as proxy, httpx.AsyncClient() as client:
        base, chat = proxy.base_url_for("s"), proxy.base_url_for("s") + "/chat/completions"
        ok = {"messages": [{"role": "user", "content": "hi"}]}
        status, data = await post(client, chat, ok)
        assert status == 502 and "crashed" in data["error"]["message"] and data["error"]["type"] == "server_error"
        assert (await post(client, chat, {**ok, "stream": True}))[1]["error"]["code"] == "stream_unsupported"
        assert (await post(client, chat, {**ok, "n": 2}))[0] == 400
        assert (await post(client, chat, {**ok, "max_tokens": "many"}))[1]["error"]["message"].startswith("bad")
        assert (await post(client, chat, {"messages": []}))[0] == 400
        assert (await post(client, chat, {"messages": [{"content": "no role"}]}))[0] == 400
        assert (await post(client, proxy.base_url + "/chat/completions", ok))[0] == 401
        assert (await client.post(chat, content=b"{not json")).status_code == 400
        assert (await client.get(base + "/nope")).status_code == 404
        models = (await client.get(base + "/models")).json()
        assert models["data"][0]["id"] == "envgym-policy"


async def test_sessions_stay_isolated_under_concurrency(tiny):
    backend = TransformersBackend(tiny.model, tiny.tokenizer, max_batch=8)

    async def episode(client, proxy, key):
        url = proxy.base_url_for(key) + "/chat/completions"
        messages = [{"role": "user", "content": f"I am {key}."}]
        for turn in range(3):
            _, data = await post(client, url, {"messages": messages, "max_tokens": 4, "seed": turn})
            messages += [data["choices"][0]["message"], {"role": "user", "content": f"{key} again"}]

    try:
        async with RecordingProxy(backend) as proxy, httpx.AsyncClient(timeout=120) as client:
            keys = [f"user{i}" for i in range(8)]
            await asyncio.gather(*[episode(client, proxy, k) for k in keys])
            assert backend.batches < 24  # requests of different sessions shared batches
            for key in keys:
                record = proxy.close_session(key)
                assert len(record.calls) == 3 and len(record.segments()) == 1
                [text] = record.transcript(tiny.tokenizer)
                assert f"I am {key}." in text and text.count(f"{key} again") == 2
                assert not any(f"I am {other}." in text for other in keys if other != key)
    finally:
        await backend.aclose()


def retail_task(steps):
    task = envgym.load_suite("tool-retail", split="test")[0]
    return task.model_copy(update={"limits": Limits(max_steps=steps)})


def script(task):
    """The task's reference solution as model text: one <tool_call> block per call, then the answer."""
    replies = []
    for action in task.solution:
        blocks = [f'<tool_call>{{"name": "{c.name}", "arguments": {c.arguments}}}</tool_call>'
                  for c in action.tool_calls]
        replies.append("\n".join([action.text or "", *blocks]).strip())
    return replies


async def test_an_envgym_episode_through_the_proxy_becomes_samples(tokenizer):
    task = retail_task(8)
    backend = ScriptedBackend(tokenizer, script(task))
    async with RecordingProxy(backend) as proxy, envgym.make("tool/retail-v1") as env:
        factory = RecordingAgentFactory(proxy, temperature=1.0)
        trajectory = await run_episode(env, factory.create(task), task, seed=0)
        assert proxy._sessions == {}  # the agent closed its session
    assert trajectory.outcome is Outcome.SUCCESS and trajectory.reward == 1.0
    assert len(trajectory.token_data) == len(task.solution) == len(trajectory.steps)
    [sample] = samples_from_episode(trajectory, group_id="g")
    assert (sample.reward, sample.status, sample.task_id) == (1.0, "success", task.id)
    model_text = tokenizer.decode([t for t, m in zip(sample.completion_ids, sample.loss_mask, strict=True) if m])
    assert model_text == "<|im_end|>".join(script(task)) + "<|im_end|>"
    text = tokenizer.decode(sample.prompt_ids + sample.completion_ids, skip_special_tokens=False)
    assert task.instruction in text and text.count("<tool_response>") == 3
    assert json.loads(trajectory.steps[0].action.tool_calls[0].arguments)["zip"] == "85004"


async def test_the_tiny_policy_on_a_real_env_re_decodes_to_its_transcript(tiny):
    task = retail_task(3)
    backend = TransformersBackend(tiny.model, tiny.tokenizer)
    try:
        async with RecordingProxy(backend) as proxy, envgym.make("tool/retail-v1") as env:
            factory = RecordingAgentFactory(proxy, temperature=1.0, max_tokens=16)
            trajectory = await run_episode(env, factory.create(task), task, seed=0)
    finally:
        await backend.aclose()
    assert trajectory.outcome is not Outcome.INFRA_ERROR, trajectory.error
    samples = samples_from_episode(trajectory, group_id="g")
    assert samples and samples[0].reward == trajectory.reward
    for sample, call in zip(samples, trajectory.token_data, strict=False):
        text = tiny.tokenizer.decode(sample.prompt_ids, skip_special_tokens=False)
        assert task.instruction in text and "find_customer_by_name_zip" in text  # tools in the system turn
        assert sample.completion_ids[: len(call["completion_ids"])] == call["completion_ids"]
    reply = trajectory.steps[0].action.text or ""
    assert reply and reply in tiny.tokenizer.decode(samples[0].completion_ids, skip_special_tokens=False)


def test_piecewise_encoding_equals_encoding_the_whole(tokenizer):
    from envgym.rl.proxy import ChunkEncoder

    encode = ChunkEncoder(tokenizer)
    text = ("<|im_start|>system\nTools: {\"a\":1}<|im_end|>\n<|im_start|>user\n  spaced   ünïcödé 🤖<tool_call>"
            "<|im_end|><|im_end|>\n<|im_start|>assistant\n\n<repo_name>x<|endoftext|>tail ")
    assert encode(text) == tokenizer.encode(text, add_special_tokens=False)
    assert encode(text) == encode(text)  # from the cache


async def test_a_backend_failure_makes_the_episode_an_infra_error(tokenizer):
    task = retail_task(3)
    async with RecordingProxy(ScriptedBackend(tokenizer, ["x"], fail=True)) as proxy, \
            envgym.make("tool/retail-v1") as env:
        trajectory = await run_episode(env, RecordingAgentFactory(proxy).create(task), task, seed=0)
    assert trajectory.outcome is Outcome.INFRA_ERROR and "502" in trajectory.error
    assert samples_from_episode(trajectory, group_id="g") == []
