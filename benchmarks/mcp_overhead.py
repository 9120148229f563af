"""MCP tool-call round trip through ``envgym mcp serve`` versus a direct ``env.step``, and where the time goes.

One read tool of ``tool/telecom-v1`` (``list_plans``: six rows from SQLite) is called N times each way:

  direct        ``await env.step(Action(tool_calls=...))`` on ``envgym.make(...)`` in this process
  memory        JSON-RPC messages into the SDK server of an EpisodeServer over in-memory streams: the
                server's own cost (SDK dispatch, validation, serialisation), no transport, no client
  stdio-raw     newline-delimited JSON-RPC written by hand -> ``envgym mcp serve --transport stdio``:
                the server and the pipe, without an MCP client's own cost
  http-raw      HTTP/1.1 requests written by hand on one keep-alive socket (TCP_NODELAY) ->
                ``envgym mcp serve --transport http``: the server and its HTTP stack, without a client library
  stdio         the official MCP SDK client -> ``envgym mcp serve --transport stdio`` (the client starts it)
  stdio-floor   the SDK client -> a bare SDK server (one tool returning a constant, the SDK's own stdio
                transport) in its own process: what the SDK costs with no envgym in it
  http          the SDK client -> Streamable HTTP on 127.0.0.1 -> ``envgym mcp serve`` in its own process
  http-floor    the SDK client -> the bare SDK server over Streamable HTTP (JSON responses, as envgym serves)

The whole set runs ``--runs`` times (default 3), paths interleaved, each run with its load average; the table
gives per path the median over runs of the run's p50 and p90 (ms per call), the overhead (p50 minus the same
run's direct p50), for the SDK-client rows the difference from the same run's floor (what envgym adds to
what the SDK's client and server cost anyway), and the CPU milliseconds per call of this process and of the
server's (from /proc). Target: <= 2 ms overhead (p50). Rows that cross processes are dominated by scheduling
on a loaded host: compare them side by side, run by run; there the CPU columns say what costs what, the
wall-clock ones how long a call waited.
Needs the ``mcp`` extra (mcp>=2.3). Usage: ``python benchmarks/mcp_overhead.py [--calls 300] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

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


class Timed(NamedTuple):
    samples: list[float]
    """Milliseconds per call."""
    cpu_here: float
    """CPU milliseconds per call of this process (client, or client and server in one)."""
    cpu_server: float
    """CPU milliseconds per call of this process's children (a server in its own process)."""


def children_cpu() -> float:
    """CPU seconds so far of this process's live child processes (from /proc)."""
    tasks = Path(f"/proc/{os.getpid()}/task").iterdir()
    pids = {pid for task in tasks for pid in (task / "children").read_text().split()}
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def timed(call: Callable[[], Awaitable[object]], n: int) -> Timed:
    for _ in range(min(50, n)):  # warm-up
        await call()
    samples = []
    here, server = time.process_time(), children_cpu()
    for _ in range(n):
        t = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - t) * 1000)
    return Timed(samples, (time.process_time() - here) * 1000 / n, (children_cpu() - server) * 1000 / n)


async def direct(n: int) -> Timed:
    async with envgym.make(ENV_ID) as env:
        await env.reset(task=long_task())
        action = Action(tool_calls=(ToolCall(name=TOOL),))
        return await timed(lambda: env.step(action), n)


async def via_client(client: Client, n: int) -> Timed:
    async def call() -> object:
        result = await client.call_tool(TOOL, {})
        if result.is_error:
            raise RuntimeError(result.content)
        return result

    return await timed(call, n)


async def memory(n: int) -> Timed:
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

            result = await timed(call, n)
            group.cancel_scope.cancel()
    return result


async def stdio_raw(n: int) -> Timed:
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


async def http_exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, url: str, message: dict,
                        headers: dict[str, str]) -> tuple[bytes, dict[str, str], bytes]:
    """One HTTP/1.1 POST of a JSON-RPC message on an open keep-alive connection, written in one piece."""
    parts = urlsplit(url)
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    head = {"Host": parts.netloc, "Content-Type": "application/json", "Content-Length": str(len(body)),
            "Accept": "application/json, text/event-stream", **headers}
    writer.write(f"POST {parts.path} HTTP/1.1\r\n".encode()
                 + "".join(f"{k}: {v}\r\n" for k, v in head.items()).encode() + b"\r\n" + body)
    status, *lines = (await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
    reply = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
    return status.encode(), reply, await reader.readexactly(int(reply.get("content-length", "0")))


async def http_raw(n: int) -> Timed:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "envgym.cli", "mcp", "serve", ENV_ID, "--tasks",
                                                str(LONG), stdout=asyncio.subprocess.PIPE)
    try:
        url = json.loads(await proc.stdout.readline())["url"]
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)  # asyncio sets TCP_NODELAY
        _, reply, _ = await http_exchange(reader, writer, url, {"id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}, {})
        session = {"mcp-session-id": reply["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        await http_exchange(reader, writer, url, {"method": "notifications/initialized"}, session)
        ids = iter(range(1, 10**9))

        async def call() -> bytes:
            status, _, body = await http_exchange(reader, writer, url, {"id": next(ids), "method": "tools/call",
                                                  "params": {"name": TOOL, "arguments": {}}}, session)
            if b" 200 " not in status or b'"isError":true' in body:
                raise RuntimeError(body)
            return body

        try:
            return await timed(call, n)
        finally:
            writer.close()
    finally:
        proc.terminate()
        await proc.wait()


async def http_process(n: int, *server: str) -> Timed:
    command = server or ("-m", "envgym.cli", "mcp", "serve", ENV_ID, "--tasks", str(LONG))
    proc = await asyncio.create_subprocess_exec(sys.executable, *command, stdout=asyncio.subprocess.PIPE)
    try:
        url = json.loads(await proc.stdout.readline())["url"]
        async with Client(url) as client:
            return await via_client(client, n)
    finally:
        proc.terminate()
        await proc.wait()


async def stdio(n: int, *server: str) -> Timed:
    args = server or ("-m", "envgym.cli", "mcp", "serve", ENV_ID, "--tasks", str(LONG), "--transport", "stdio")
    async with Client(StdioServerParameters(command=sys.executable, args=list(args))) as client:
        return await via_client(client, n)


async def serve_floor(transport: str) -> None:
    """The bare SDK server of the floor rows: one tool whose result is the real tool's text, computed once."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async with envgym.make(ENV_ID) as env:
        await env.reset(task=long_task())
        text = (await env.step(Action(tool_calls=(ToolCall(name=TOOL),)))).observation.tool_results[0].content
    tool = types.Tool(name=TOOL, input_schema={"type": "object", "properties": {}})
    result = types.CallToolResult(content=[types.TextContent(text=text)])

    async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: object, params: object) -> types.CallToolResult:
        return result

    server = Server("floor", on_list_tools=list_tools, on_call_tool=call_tool)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1", json_response=True)
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False))
    task = asyncio.create_task(http.serve())
    while not http.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.005)
    print(json.dumps({"url": f"http://127.0.0.1:{http.servers[0].sockets[0].getsockname()[1]}/mcp"}), flush=True)
    await task


PATHS: dict[str, Callable[[int], Awaitable[Timed]]] = {
    "direct": direct, "memory": memory, "stdio-raw": stdio_raw, "http-raw": http_raw,
    "stdio": stdio, "stdio-floor": lambda n: stdio(n, __file__, "--floor-server", "stdio"),
    "http": http_process, "http-floor": lambda n: http_process(n, __file__, "--floor-server", "http"),
}
FLOORS = {"stdio": "stdio-floor", "http": "http-floor"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per path and run (after 50 warm-up)")
    parser.add_argument("--runs", type=int, default=3, help="runs of the whole set (medians are over runs)")
    parser.add_argument("--floor-server", choices=("stdio", "http"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_server:
        asyncio.run(serve_floor(args.floor_server))
        return
    write_tasks(LONG, [long_task()])
    runs: list[tuple[float, dict[str, Timed]]] = []
    for _ in range(args.runs):
        load = os.getloadavg()[0]
        runs.append((load, {name: asyncio.run(fn(args.calls)) for name, fn in PATHS.items()}))
    p50 = [{name: statistics.median(t.samples) for name, t in row.items()} for _, row in runs]
    p90 = [{name: statistics.quantiles(t.samples, n=10)[-1] for name, t in row.items()} for _, row in runs]
    print(f"{os.cpu_count()} CPUs; {args.calls} calls per path and run; load average (1 min) at the start of each "
          f"run: {', '.join(f'{load:.1f}' for load, _ in runs)}; now {os.getloadavg()[0]:.1f}")
    print(f"{'path':<12} " + " ".join(f"{'p50 #' + str(i + 1):>8}" for i in range(len(runs)))
          + f" {'p50 ms':>8} {'p90 ms':>8} {'overhead':>9} {'vs floor':>9} {'cpu here':>9} {'cpu server':>10}")
    for name in PATHS:
        over = statistics.median(run[name] - run["direct"] for run in p50)
        floor = (f"{statistics.median(run[name] - run[FLOORS[name]] for run in p50):+9.3f}" if name in FLOORS
                 else f"{'':>9}")
        cpu_here = statistics.median(row[name].cpu_here for _, row in runs)
        cpu_server = statistics.median(row[name].cpu_server for _, row in runs)
        print(f"{name:<12} " + " ".join(f"{run[name]:8.3f}" for run in p50)
              + f" {statistics.median(run[name] for run in p50):8.3f}"
              f" {statistics.median(run[name] for run in p90):8.3f} {over:+9.3f} {floor} {cpu_here:9.3f} "
              f"{cpu_server:10.3f}")
    print("p50/p90: medians over runs of each run's percentile; overhead: p50 - direct p50 of the same run; "
          "vs floor: p50 - the same run's bare-SDK-server p50 (the SDK client and server cost without envgym); "
          "cpu here / cpu server: CPU ms per call of this process / of the server process (medians over runs; "
          "on a loaded host the CPU columns say what costs what, the wall-clock ones how long a call waited)")

if __name__ == "__main__":
    main()
