"""MCP tool-call round trip through ``envgym mcp serve`` versus a direct ``env.step``.

One read tool of ``tool/telecom-v1`` (``list_plans``: six rows from SQLite) is called N times each way:

  direct        ``await env.step(Action(tool_calls=...))`` on ``envgym.make(...)`` in this process
  memory        JSON-RPC messages into the SDK server of an EpisodeServer over in-memory streams: the
                server's own cost (SDK dispatch, validation, serialisation), no transport, no client
  stdio-raw     newline-delimited JSON-RPC written by hand -> ``envgym mcp serve --transport stdio``:
                the server and the pipe, without the SDK client's own cost
  http-inproc   the official MCP SDK client -> Streamable HTTP on 127.0.0.1 -> EpisodeServer in this process
  http          the SDK client -> ``envgym mcp serve --transport http`` in its own process
  stdio         the SDK client -> ``envgym mcp serve --transport stdio`` (the client starts it)

Prints p50/p90/mean per call in milliseconds, the overhead (p50 - direct p50) and the load average (the
rows that cross processes are dominated by scheduling on a loaded host). Target: <= 2 ms overhead (p50).
Needs the ``mcp`` extra (mcp>=2.3). Usage: ``python benchmarks/mcp_overhead.py [--calls 500]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

import envgym
from envgym.mcp.serve import EpisodeServer
from envgym.task import TaskSpec, load_suite, write_tasks
from envgym.types import Action, Limits, ToolCall

ENV_ID, TASK, TOOL = "tool/telecom-v1", "telecom-000-plan", "list_plans"
LONG = Path(tempfile.mkdtemp(prefix="mcp-overhead-")) / "task.jsonl"
"""The task with a step limit no run reaches (a served episode cannot be reset by its client)."""


def long_task() -> TaskSpec:
    task = next(t for t in load_suite("tool-telecom") if t.id == TASK)
    return task.model_copy(update={"limits": Limits(max_steps=1_000_000)})


async def timed(call: Callable[[], Awaitable[object]], n: int) -> list[float]:
    for _ in range(min(50, n)):  # warm-up
        await call()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - t) * 1000)
    return samples


async def direct(n: int) -> list[float]:
    async with envgym.make(ENV_ID) as env:
        await env.reset(task=long_task())
        action = Action(tool_calls=(ToolCall(name=TOOL),))
        return await timed(lambda: env.step(action), n)


async def via_client(client: Client, n: int) -> list[float]:
    async def call() -> object:
        result = await client.call_tool(TOOL, {})
        if result.is_error:
            raise RuntimeError(result.content)
        return result

    return await timed(call, n)


async def memory(n: int) -> list[float]:
    import anyio
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    def message(data: dict) -> SessionMessage:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", **data}))

    async with EpisodeServer(ENV_ID, task=long_task()) as episode:
        server = episode.server()
        client_out, server_in = anyio.create_memory_object_stream(16)
        server_out, client_in = anyio.create_memory_object_stream(16)
        async with anyio.create_task_group() as group:
            group.start_soon(server.run, server_in, server_out, server.create_initialization_options())
            await client_out.send(message({"id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}))
            await client_in.receive()
            await client_out.send(message({"method": "notifications/initialized"}))
            ids = iter(range(1, 10**9))

            async def call() -> object:
                await client_out.send(message({"id": next(ids), "method": "tools/call",
                                               "params": {"name": TOOL, "arguments": {}}}))
                return await client_in.receive()

            samples = await timed(call, n)
            group.cancel_scope.cancel()
    return samples


async def stdio_raw(n: int) -> list[float]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "envgym.cli", "mcp", "serve", ENV_ID, "--tasks", str(LONG), "--transport", "stdio",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    ids = iter(range(10**9))

    async def rpc(method: str, params: dict) -> dict:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}).encode()
                         + b"\n")
        await proc.stdin.drain()
        reply = json.loads(await proc.stdout.readline())
        if "error" in reply or reply["result"].get("isError"):
            raise RuntimeError(reply)
        return reply

    try:
        await rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "0"}})
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        return await timed(lambda: rpc("tools/call", {"name": TOOL, "arguments": {}}), n)
    finally:
        proc.stdin.close()
        await proc.wait()


async def http_inproc(n: int) -> list[float]:
    async with EpisodeServer(ENV_ID, task=long_task()) as episode, episode.http() as url, Client(url) as client:
        return await via_client(client, n)


async def http_process(n: int) -> list[float]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "envgym.cli", "mcp", "serve", ENV_ID, "--tasks",
                                                str(LONG), stdout=asyncio.subprocess.PIPE)
    try:
        url = json.loads(await proc.stdout.readline())["url"]
        async with Client(url) as client:
            return await via_client(client, n)
    finally:
        proc.terminate()
        await proc.wait()


async def stdio(n: int) -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "envgym.cli", "mcp", "serve", ENV_ID, "--tasks",
                                                                 str(LONG), "--transport", "stdio"])
    async with Client(params) as client:
        return await via_client(client, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    write_tasks(LONG, [long_task()])
    rows = {}
    paths = (("direct", direct), ("memory", memory), ("stdio-raw", stdio_raw), ("stdio", stdio),
             ("http-inproc", http_inproc), ("http", http_process))
    for name, fn in paths:
        rows[name] = asyncio.run(fn(args.calls))
    base = statistics.median(rows["direct"])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.calls} calls per path")
    print(f"{'path':<12} {'p50 ms':>8} {'p90 ms':>8} {'mean ms':>8} {'overhead p50':>13}")
    for name, samples in rows.items():
        p50 = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        print(f"{name:<12} {p50:8.3f} {p90:8.3f} {statistics.fmean(samples):8.3f} {p50 - base:+12.3f}")


if __name__ == "__main__":
    main()
