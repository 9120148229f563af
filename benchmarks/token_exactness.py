"""Token exactness of the recording proxy over many multi-turn episodes, sampled at temperature 1.

Each episode is a tool/retail-v1 conversation (the env's system prompt, policy, tool schemas and the task's
request, about 2,950 tokens), driven through the proxy by an OpenAI-style harness over HTTP for ``--turns``
model calls: a reply with tool calls gets a ``tool`` result, any other reply a user follow-up. Episodes run
``--concurrency`` at a time (the backend micro-batches them). Then, per episode:

  decode   every segment's ids (prompt + completion) decode to the transcript, which the harness renders on
           its own from the messages it sent and the replies' token ids (``return_token_ids``)
  sampled  the model tokens of every segment (loss mask 1) are, in order, exactly the ids the backend
           sampled and returned: nothing generated is re-tokenised
  drift    how many segments (and tokens) a pipeline that re-tokenises the transcript text would have got
           wrong: the retokenisation drift the proxy avoids
  logprob  the rollout logprobs against a trainer-style recomputation (one full forward pass over
           prompt + completion, no KV cache, temperature 1): max and mean |delta| over model tokens

    .venv/bin/python benchmarks/token_exactness.py [--episodes 100] [--turns 4] [--model tiny|smollm2]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import httpx
import torch

import envgym
from envgym.agents.chat import Transcript, system_prompt
from envgym.agents.hf import render, tool_section
from envgym.rl.backends import TransformersBackend
from envgym.rl.models import load_smollm2, tiny_policy
from envgym.rl.proxy import RecordingProxy


async def opening(task):
    async with envgym.make("tool/retail-v1") as env:
        obs, info = await env.reset(task=task)
    transcript = Transcript(system_prompt(info.get("policy", "")), tools=info.get("tools"))
    transcript.observe(obs)
    return transcript.messages, transcript.tools


async def episode(client, proxy, key, messages, tools, args, replies):
    """Drive one episode; returns the harness's own rendering inputs: messages and the replies' raw texts."""
    url = proxy.base_url_for(key) + "/chat/completions"
    messages = list(messages)
    for turn in range(args.turns):
        body = {"messages": messages, "tools": tools, "max_tokens": args.max_tokens, "temperature": 1.0,
                "top_p": 1.0, "seed": 1000 * int(key[2:]) + turn, "return_token_ids": True}
        response = await client.post(url, json=body)
        response.raise_for_status()
        data = response.json()
        message = data["choices"][0]["message"]
        replies.append(data["choices"][0]["token_ids"])
        messages.append(message)
        if message.get("tool_calls"):
            for call in message["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": '{"error": "unavailable"}'})
        else:
            messages.append({"role": "user", "content": f"Thanks. Is there anything else? ({turn})"})
    return messages


def expected_text(tokenizer, messages, replies, n_calls):
    """The transcript of the first ``n_calls`` calls, rendered by the harness: template(messages) + last reply."""
    eos = tokenizer.eos_token_id
    raw = [tokenizer.decode(r[:-1] if r and r[-1] == eos else r, skip_special_tokens=False) for r in replies]
    # messages up to (not including) the n-th assistant reply
    seen, upto = 0, len(messages)
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            seen += 1
            if seen == n_calls:
                upto = i
                break
    turns = [{"role": m["role"], "content": m.get("content") or ""} for m in messages[:upto]]
    turns[0] = {"role": "system", "content": turns[0]["content"] + "\n\n" + tool_section(TOOLS)}
    prompt = tokenizer.apply_chat_template(render(turns, raw[: n_calls - 1]), tokenize=False,
                                           add_generation_prompt=True)
    return prompt + tokenizer.decode(replies[n_calls - 1], skip_special_tokens=False)


TOOLS: list = []


def recompute(model, tokens, prompt_len):
    device = next(model.parameters()).device
    with torch.no_grad():
        logits = model(torch.tensor([tokens], device=device)).logits[0, prompt_len - 1:-1].float()
    targets = torch.tensor(tokens[prompt_len:], device=device)[:, None]
    return torch.log_softmax(logits, -1).gather(-1, targets)[:, 0].cpu().tolist()


async def main(args) -> None:
    model, tokenizer = tiny_policy() if args.model == "tiny" else load_smollm2()
    backend = TransformersBackend(model, tokenizer, max_batch=args.concurrency)
    task = envgym.load_suite("tool-retail", split="test")[0]
    messages, tools = await opening(task)
    TOOLS[:] = tools
    gate = asyncio.Semaphore(args.concurrency)
    results = []
    started = time.perf_counter()
    async with RecordingProxy(backend, default_max_tokens=args.max_tokens) as proxy, \
            httpx.AsyncClient(timeout=600) as client:

        async def run(i):
            async with gate:
                replies: list[list[int]] = []
                final = await episode(client, proxy, f"ep{i}", messages, tools, args, replies)
                results.append((proxy.close_session(f"ep{i}"), final, replies))

        await asyncio.gather(*[run(i) for i in range(args.episodes)])
    rollout_s = time.perf_counter() - started
    await backend.aclose()

    calls = segments = model_tokens = env_tokens = 0
    decode_ok = sampled_ok = drift_segments = drift_tokens = tool_call_turns = 0
    deltas: list[float] = []
    for record, final, replies in results:
        calls += len(record.calls)
        tool_call_turns += sum(1 for m in final if m.get("tool_calls"))
        done = 0
        for segment in record.segments():
            segments += 1
            first_call, done = done, done + segment.calls
            tokens = segment.tokens
            model_tokens += sum(segment.loss_mask)
            env_tokens += len(segment.loss_mask) - sum(segment.loss_mask)
            text = tokenizer.decode(tokens, skip_special_tokens=False)
            decode_ok += text == expected_text(tokenizer, final, replies, done)
            generated = [t for t, m in zip(segment.completion_ids, segment.loss_mask, strict=True) if m]
            sampled_ok += generated == [t for r in replies[first_call:done] for t in r]
            retokenised = tokenizer.encode(text, add_special_tokens=False)
            if retokenised != tokens:
                drift_segments += 1
                drift_tokens += sum(a != b for a, b in zip(retokenised, tokens, strict=False)) + abs(
                    len(retokenised) - len(tokens))
            recomputed = recompute(model, tokens, len(segment.prompt_ids))
            deltas += [abs(a - b) for a, b, m in zip(recomputed, segment.logprobs, segment.loss_mask, strict=True)
                       if m]
    print(f"model: {args.model}; {args.episodes} episodes x {args.turns} turns, temperature 1, "
          f"max_tokens {args.max_tokens}, concurrency {args.concurrency}; rollouts took {rollout_s:.1f} s")
    rows = [
        ("episodes", f"{len(results)}"),
        ("calls (tool-call turns)", f"{calls} ({tool_call_turns})"),
        ("segments (per episode)", f"{segments} ({segments / max(1, len(results)):.2f})"),
        ("model / env tokens", f"{model_tokens} / {env_tokens}"),
        ("segments decoding to the transcript", f"{decode_ok}/{segments}"),
        ("segments whose model tokens are the sampled ids", f"{sampled_ok}/{segments}"),
        ("segments a re-tokenising pipeline would change", f"{drift_segments}/{segments} "
                                                            f"(~{drift_tokens} tokens)"),
        ("logprob max |delta| (trainer recompute)", f"{max(deltas):.2e}"),
        ("logprob mean |delta|", f"{sum(deltas) / len(deltas):.2e}"),
        ("backend batches (reusing a cached prefix)", f"{backend.batches} ({backend.prefix_hits})"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    asyncio.run(main(parser.parse_args()))
