"""Recording-proxy overhead per call versus calling the inference backend directly.

Episodes of a real tool conversation (the tool/retail-v1 system prompt, policy and tool schemas, about
2,950 prompt tokens, then one more user turn per call) are driven through the proxy on keep-alive
connections by two clients: ``lean`` (HTTP/1.1 over asyncio streams, JSON encoding included: what the
proxy itself costs) and ``httpx`` (the client envgym's ``openai`` agent uses; its own cost, about 1-4 ms a
request here, is the harness's, not the proxy's). The backend is the tiny random policy generating one
token (``--backend tiny``) or a backend that answers at once (``--backend instant``). Per call:

  direct   ``await backend.generate(prompt_ids, ...)`` on the same prompt ids, timed inside the proxy
  proxy    the client's round trip: JSON both ways, chat-template rendering, tokenising the new text,
           segment bookkeeping, tool-call parsing, the response
  overhead proxy - direct, paired per call

Prints p50/p90 per client, for first turns (a new session: the system turn's ids come from the proxy's
token cache after the first episode) and later turns (only the new messages are tokenised).
Target: overhead <= 2 ms.

    .venv/bin/python benchmarks/proxy_overhead.py [--episodes 40] [--turns 4] [--backend tiny|instant]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import httpx

import envgym
from envgym.agents.chat import Transcript, system_prompt
from envgym.rl.backends import Completion, TransformersBackend
from envgym.rl.models import load_tokenizer, tiny_policy
from envgym.rl.proxy import RecordingProxy


class InstantBackend:
    """Answers every prompt with one token, at once: what is left is the proxy."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.policy_version = 0

    async def generate(self, prompt_ids, *, max_new_tokens, temperature=1.0, top_p=1.0, seed=None, stop=None):
        return Completion([self.tokenizer.eos_token_id], [-0.1], "stop", 0)

    async def update_weights(self, state_dict_or_path, version):
        self.policy_version = version

    async def aclose(self):
        pass


async def first_messages():
    task = envgym.load_suite("tool-retail", split="test")[0]
    async with envgym.make("tool/retail-v1") as env:
        obs, info = await env.reset(task=task)
    transcript = Transcript(system_prompt(info.get("policy", "")), tools=info.get("tools"))
    transcript.observe(obs)
    return transcript.messages, transcript.tools


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def main(args) -> None:
    if args.backend == "tiny":
        model, tokenizer = tiny_policy()
        backend = TransformersBackend(model, tokenizer)
    else:
        tokenizer = load_tokenizer()
        backend = InstantBackend(tokenizer)
    messages, tools = await first_messages()
    lengths: list[int] = []
    results = {}
    async with RecordingProxy(backend) as proxy:
        for name, client in (("lean", LeanClient(proxy.port)), ("httpx", HttpxClient())):
            rows: dict[str, list[tuple[float, float]]] = {"first turn": [], "later turns": []}
            for episode in range(args.episodes + 2):  # two warm-up episodes
                key = f"{name}{episode}"
                path = f"/s/{key}/v1/chat/completions"
                history = list(messages)
                for turn in range(args.turns):
                    body = {"messages": history, "tools": tools, "max_tokens": 1, "temperature": 0}
                    started = time.perf_counter()
                    data = await client.post(proxy.port, path, body)
                    wall = time.perf_counter() - started
                    reply = data["choices"][0]["message"]
                    lengths.append(data["usage"]["prompt_tokens"])
                    direct = proxy.session(key).calls[-1].seconds
                    if episode >= 2:
                        rows["first turn" if turn == 0 else "later turns"].append((direct * 1e3, wall * 1e3))
                    history = [*history, reply, {"role": "user", "content": f"Order ord_10{turn}, turn {turn}."}]
                proxy.close_session(key)
            await client.aclose()
            results[name] = rows
    await backend.aclose()
    print(f"backend: {args.backend}; {args.episodes} episodes x {args.turns} turns per client; prompts of "
          f"{min(lengths)}-{max(lengths)} tokens")
    print(f"{'client':<7} {'calls':<12} {'n':>4} {'direct p50':>11} {'proxy p50':>10} {'overhead p50':>13} "
          f"{'overhead p90':>13}")
    for name, rows in results.items():
        for calls, pairs in [*rows.items(), ("all", [x for group in rows.values() for x in group])]:
            overhead = [p - d for d, p in pairs]
            print(f"{name:<7} {calls:<12} {len(pairs):>4} {statistics.median(d for d, _ in pairs):>9.2f}ms "
                  f"{statistics.median(p for _, p in pairs):>8.2f}ms {pct(overhead, 0.5):>11.2f}ms "
                  f"{pct(overhead, 0.9):>11.2f}ms")
    lean = [p - d for pairs in results["lean"].values() for d, p in pairs]
    verdict = "meets" if pct(lean, 0.5) <= 2.0 else "misses"
    print(f"proxy overhead (lean client): p50 {pct(lean, 0.5):.2f} ms, p90 {pct(lean, 0.9):.2f} ms "
          f"({verdict} the 2 ms target)")


class LeanClient:
    """HTTP/1.1 with keep-alive over asyncio streams: JSON in, JSON out, nothing else."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, port: int, path: str, body: dict) -> dict:
        if self.streams is None:
            self.streams = await asyncio.open_connection("127.0.0.1", port)
        reader, writer = self.streams
        payload = json.dumps(body).encode()
        writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        if not head.startswith("HTTP/1.1 200"):
            raise SystemExit(f"the proxy answered {head.splitlines()[0]}")
        length = int(head.lower().split("content-length:")[1].split("\r\n")[0])
        return json.loads(await reader.readexactly(length))

    async def aclose(self) -> None:
        if self.streams is not None:
            self.streams[1].close()


class HttpxClient:
    def __init__(self) -> None:
        self.client = httpx.AsyncClient()

    async def post(self, port: int, path: str, body: dict) -> dict:
        response = await self.client.post(f"http://127.0.0.1:{port}{path}", json=body)
        response.raise_for_status()
        return response.json()

    async def aclose(self) -> None:
        await self.client.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--backend", choices=["tiny", "instant"], default="tiny")
    asyncio.run(main(parser.parse_args()))
