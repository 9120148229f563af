"""One episode of any envgym env, served as an MCP server (``envgym mcp serve ENV_ID``).

:class:`EpisodeServer` makes the env (through :func:`envgym.make`, so the kernel grades it), resets it on
one task and exposes that episode's tools, and only those, as MCP tools: ``reset``, ``step`` and
``verify`` are never tools, so an MCP client (any agent harness) can act but cannot grade or restart. Every
``tools/call`` becomes one ``env.step`` of a one-call :class:`~envgym.types.Action`, so the call is
logged, policy-checked and graded exactly as an envgym agent's; a rejected call comes back with
``isError`` set and the env's message. Text results are ``TextContent``; images the observation carries
(a web or GUI screenshot, see :mod:`envgym.images`) come back as ``ImageContent``. Tool annotations say
``readOnlyHint`` for a domain's read tools.

Two transports: ``stdio`` (the client starts the server) and Streamable HTTP on 127.0.0.1 only, at a
per-episode URL ``http://127.0.0.1:PORT/<token>/mcp`` whose token (32 random hex digits) is the
credential: any other path is 404, and the SDK's DNS-rebinding protection refuses other hosts and
origins. Grading is not a tool: :meth:`EpisodeServer.finish` (``POST /<token>/finish`` over HTTP, end of
input on stdio, Ctrl-C for the CLI) grades the episode once and returns the verdict.

Needs the ``mcp`` extra (``mcp>=2.3``, the official Python SDK, and ``httptools``, which uvicorn parses HTTP
with when it is installed: a fifth less server CPU per call than its pure-Python h11). Where a call's time
goes, measured side by side with a bare SDK server: ``benchmarks/mcp_overhead.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from itertools import count
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server

from envgym.errors import EnvError
from envgym.registry import make
from envgym.types import Action, Observation, ToolCall, Verdict

if TYPE_CHECKING:
    from envgym.env import Env
    from envgym.task import TaskSpec

__all__ = ["EpisodeServer", "mcp_tool", "to_call_result"]


def mcp_tool(schema: dict[str, Any]) -> types.Tool:
    """The MCP tool of an OpenAI function schema (a domain's ``[read]`` tools are marked read-only)."""
    function = schema["function"]
    description = function.get("description", "")
    read_only = description.startswith("[read]")
    return types.Tool(name=function["name"], description=description,
                      input_schema=function.get("parameters") or {"type": "object", "properties": {}},
                      annotations=types.ToolAnnotations(read_only_hint=read_only, destructive_hint=not read_only))


def to_call_result(observation: Observation) -> types.CallToolResult:
    """A step's observation as an MCP tool result: the tool's text (or error), then any images."""
    content: list[Any] = []
    error = observation.last_action_error
    for result in observation.tool_results:
        content.append(types.TextContent(text=result.error or result.content))
    if not observation.tool_results and (error or observation.text):
        content.append(types.TextContent(text=error or observation.text))
    from envgym.images import observation_images

    for image in observation_images(observation):
        content.append(types.ImageContent(data=image.base64, mime_type=image.media_type))
    return types.CallToolResult(content=content, is_error=error is not None)


class EpisodeServer:
    """One episode of ``env_id`` as an MCP server (see the module docstring)."""

    def __init__(self, env_id: str, *, task: TaskSpec | str | None = None, seed: int | None = None,
                 env: Env | None = None) -> None:
        self.env_id = env_id
        self.task = task
        self.seed = seed
        self.token = secrets.token_hex(16)
        self.env: Env | None = env
        self.info: dict[str, Any] = {}
        self.instruction = ""
        self.verdict: Verdict | None = None
        self.steps = 0
        self._ids = count(1)
        self._lock = asyncio.Lock()
        self._tools: list[types.Tool] = []
        self.finished = asyncio.Event()
        """Set once ``POST /<token>/finish`` graded the episode (the CLI then stops serving)."""

    async def start(self) -> None:
        """Make the env and reset it on the task (drawn with ``seed`` when none is named)."""
        if self.env is None:
            self.env = make(self.env_id)
        obs, self.info = await self.env.reset(task=self.task, seed=self.seed)
        self.instruction = obs.text
        self._tools = [mcp_tool(schema) for schema in self.info.get("tools", [])]

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """One tool call through ``env.step``; calls are serialised (an episode is one sequence of steps)."""
        if self.env is None:
            raise EnvError("the episode server was not started")
        async with self._lock:
            if self.verdict is not None:
                return types.CallToolResult(content=[types.TextContent(text="the episode has been graded")],
                                            is_error=True)
            call = ToolCall(id=f"mcp_{next(self._ids)}", name=name,
                            arguments=json.dumps(arguments or {}, ensure_ascii=False))
            obs, _, terminated, truncated, info = await self.env.step(Action(tool_calls=(call,)))
            self.steps += 1
            if terminated or truncated:  # the step limit: the kernel graded it already
                self.verdict = info.get("verdict")
            return to_call_result(obs)

    async def finish(self, message: str | None = None) -> Verdict:
        """Grade the episode (once): ``message`` is the agent's final answer, if it gives one."""
        if self.env is None:
            raise EnvError("the episode server was not started")
        async with self._lock:
            if self.verdict is None:
                _, _, terminated, _, info = await self.env.step(Action(text=message or ""))
                verdict = info.get("verdict") if terminated else None
                self.verdict = verdict if verdict is not None else await self.env.verify()
            return self.verdict

    def server(self) -> Server[Any]:
        """The SDK server whose tools are this episode's (and nothing else)."""

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self._tools)

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            return await self.call(params.name, params.arguments)

        return Server(f"envgym:{self.env_id}", instructions=self.instruction, on_list_tools=list_tools,
                      on_call_tool=call_tool)

    def http_app(self) -> Any:
        """The Starlette app: MCP at ``/<token>/mcp``, grading at ``POST /<token>/finish``."""
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def finish(request: Request) -> JSONResponse:
            body = await request.body()
            try:
                message = json.loads(body).get("message") if body else None
            except (ValueError, AttributeError):
                return JSONResponse({"error": 'the body must be JSON: {"message": "..."} or empty'}, status_code=400)
            verdict = await self.finish(message if isinstance(message, str) else None)
            self.finished.set()
            return JSONResponse(verdict.model_dump(mode="json"))

        return self.server().streamable_http_app(
            streamable_http_path=f"/{self.token}/mcp", host="127.0.0.1", json_response=True,
            custom_starlette_routes=[Route(f"/{self.token}/finish", finish, methods=["POST"])])

    def url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}/{self.token}/mcp"

    @contextlib.asynccontextmanager
    async def http(self, port: int = 0) -> AsyncIterator[str]:
        """Serve Streamable HTTP on 127.0.0.1 (``port`` 0: a free one) while the block runs; yields the URL."""
        import uvicorn

        config = uvicorn.Config(self.http_app(), host="127.0.0.1", port=port, log_level="warning",
                                lifespan="on", access_log=False)
        server = uvicorn.Server(config)
        server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]  # the caller owns signals
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                task.result()
                raise EnvError(f"the MCP server did not start on 127.0.0.1:{port}")
            await asyncio.sleep(0.005)
        bound = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield self.url(bound)
        finally:
            server.should_exit = True
            await task

    async def serve_stdio(self) -> Verdict:
        """Serve on stdin/stdout until the client closes stdin, then grade."""
        server = self.server()
        async with _stdio_streams() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return await self.finish()

    async def close(self) -> None:
        if self.env is not None:
            await self.env.close()

    async def __aenter__(self) -> EpisodeServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


@contextlib.asynccontextmanager
async def _stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """MCP's stdio transport on asyncio pipes: one JSON-RPC message per line, no thread per line.

    The SDK's ``stdio_server`` reads and writes through worker threads (two hops per message, most of a
    call's cost); this reads fd 0 and writes fd 1 on the event loop. As in the SDK, fd 1 points at stderr and
    fd 0 at the null device while serving, so stray prints never reach the wire. Where stdin is not a pipe
    or socket (a file), the SDK's transport serves instead.
    """
    import os
    import stat

    import anyio
    from mcp.shared.message import SessionMessage

    if not (stat.S_ISFIFO(os.fstat(0).st_mode) or stat.S_ISSOCK(os.fstat(0).st_mode)):
        from mcp.server.stdio import stdio_server

        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=64 << 20)
    read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                     os.fdopen(wire_in, "rb", 0))
    write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                              os.fdopen(wire_out, "wb", 0))
    writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
    to_server, from_wire = anyio.create_memory_object_stream[Any](16)
    to_wire, from_server = anyio.create_memory_object_stream[Any](16)

    async def pump_in() -> None:
        async with to_server:
            while line := await reader.readline():
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # the SDK's contract: a bad line is delivered as the exception
                    await to_server.send(exc)
                    continue
                await to_server.send(SessionMessage(message))

    async def pump_out() -> None:
        async with from_server:
            async for message in from_server:
                writer.write(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
                await writer.drain()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(pump_in)
            group.start_soon(pump_out)
            yield from_wire, to_wire
            group.cancel_scope.cancel()
    finally:
        read_transport.close()
        write_transport.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
