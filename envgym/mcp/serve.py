"""One episode of any envgym env, served as an MCP server (``envgym mcp serve ENV_ID``).

:class:`EpisodeServer` makes the env (through :func:`envgym.make`, so the kernel grades it), resets it on
one task and exposes that episode's tools, and only those, as MCP tools: ``reset``, ``step`` and
``verify`` are never tools, so an MCP client (any agent harness) can act but cannot grade or restart. Every
``tools/call`` becomes one ``env.step`` of a one-call :class:`~envgym.types.Action`, so the call is
logged, policy-checked and graded exactly as an envgym agent's; a rejected call comes back with
``isError`` set and the env's message. Text results are ``TextContent``; images the observation carries
(a web or GUI screenshot, see :mod:`envgym._images`) come back as ``ImageContent``. Tool annotations say
``readOnlyHint`` for a domain's read tools.

Two transports: ``stdio`` (the client starts the server) and Streamable HTTP on 127.0.0.1 only, at a
per-episode URL ``http://127.0.0.1:PORT/<token>/mcp`` whose token (32 random hex digits) is the
credential: any other path is 404, and the SDK's DNS-rebinding protection refuses other hosts and
origins. Grading is not a tool, but giving the final answer is: beside the env's tools the server lists
``finish`` (``envgym_finish`` where the env has a tool of that name; :data:`FINISH_TOOL`), whose ``message``
is the agent's final answer, as an envgym agent's last message is. It ends the episode and grades it, so an
answer-graded task can be won over stdio too, where no other channel reaches the server; later calls are
refused. :meth:`EpisodeServer.finish` is the same grading for the harness (``POST /<token>/finish`` over HTTP,
end of input on stdio, SIGINT or SIGTERM for the CLI): it grades the episode once and returns the verdict; a
step that raises ends the episode with a zero verdict blamed as the rollout would (:func:`failed_verdict`).

Bad input never ends a session: a message over :data:`MAX_MESSAGE_BYTES` (a stdio line, an HTTP body), one
nested deeper than the parser goes, or one that is not JSON-RPC is answered with a JSON-RPC error (over
HTTP: the SDK's 400, or 413 for a body over the bound) and the server goes on. stdin and stdout may be
pipes, sockets, terminals or regular files; at end of input the requests already read are answered first.

Needs the ``mcp`` extra (``mcp>=2.3``, the official Python SDK, and ``httptools``, which uvicorn parses HTTP
with when it is installed: a fifth less server CPU per call than its pure-Python h11). Where a call's time
goes, measured side by side with a bare SDK server: ``benchmarks/mcp_overhead.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from itertools import count
from typing import TYPE_CHECKING, Any

import mcp_types as types
import pydantic_core
from mcp.server.lowlevel import Server

from envgym.compose import make
from envgym.errors import EnvError, EnvgymError
from envgym.types import Action, Observation, ToolCall, Verdict

if TYPE_CHECKING:
    from envgym.env import Env
    from envgym.task import TaskSpec

__all__ = ["FINISH_TOOL", "MAX_MESSAGE_BYTES", "EpisodeServer", "failed_verdict", "mcp_tool", "to_call_result"]

MAX_MESSAGE_BYTES = 64 << 20
"""The largest message either transport reads: a line on stdio, a request body over HTTP."""
FINISH_TOOL = "finish"
"""The final-answer tool's name (``envgym_finish`` when the env has a tool of this name)."""


def _finish_tool(taken: set[str]) -> types.Tool:
    name = FINISH_TOOL if FINISH_TOOL not in taken else f"envgym_{FINISH_TOOL}"
    return types.Tool(name=name, description=(
        "End the episode with your final answer to the task: call it once, when you are done (no tool works "
        "after it). The message is graded as your answer, so put the answer the task asks for in it."),
        input_schema={"type": "object", "properties": {"message": {
            "type": "string", "description": "your final answer (what the task asks you to report, or a summary)"}},
            "required": ["message"]},
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False))


def mcp_tool(schema: dict[str, Any]) -> types.Tool:
    """The MCP tool of an OpenAI function schema (a domain's ``[read]`` tools are marked read-only)."""
    function = schema["function"]
    description = function.get("description", "")
    read_only = description.startswith("[read]")
    return types.Tool(name=function["name"], description=description,
                      input_schema=function.get("parameters") or {"type": "object", "properties": {}},
                      annotations=types.ToolAnnotations(read_only_hint=read_only, destructive_hint=not read_only))


def failed_verdict(exc: BaseException, stage: str) -> Verdict:
    """The zero verdict of an episode that ``exc`` broke at ``stage``, blamed as the rollout blames it."""
    from envgym.rollout import blame_of

    return Verdict(score=0.0, passed=False, evidence={"blame": blame_of(exc, stage).value, "stage": stage,
                                                      "cause": f"{type(exc).__name__}: {exc}"[:2000]})


def to_call_result(observation: Observation) -> types.CallToolResult:
    """A step's observation as an MCP tool result: the tool's text (or error), then any images."""
    content: list[Any] = []
    error = observation.last_action_error
    for result in observation.tool_results:
        content.append(types.TextContent(text=result.error or result.content))
    if not observation.tool_results and (error or observation.text):
        content.append(types.TextContent(text=error or observation.text))
    from envgym._images import observation_images

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
        self._finish = _finish_tool(set())
        self.finished = asyncio.Event()
        """Set once ``POST /<token>/finish`` or the final-answer tool graded the episode (the CLI then stops
        serving HTTP)."""

    async def start(self) -> None:
        """Make the env and reset it on the task (drawn with ``seed`` when none is named)."""
        if self.env is None:
            self.env = make(self.env_id)
        obs, self.info = await self.env.reset(task=self.task, seed=self.seed)
        self.instruction = obs.text
        self._tools = [mcp_tool(schema) for schema in self.info.get("tools", [])]
        self._finish = _finish_tool({tool.name for tool in self._tools})
        self._tools.append(self._finish)

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """One tool call through ``env.step``; calls are serialised (an episode is one sequence of steps)."""
        if self.env is None:
            raise EnvError("the episode server was not started")
        if name == self._finish.name and self.verdict is None:
            message = (arguments or {}).get("message")
            await self.finish(message if isinstance(message, str) or message is None
                              else json.dumps(message, ensure_ascii=False))
            self.finished.set()
            return types.CallToolResult(content=[types.TextContent(text="The episode is over: your answer was "
                                                                        "recorded.")], is_error=False)
        async with self._lock:
            if self.verdict is not None:
                return types.CallToolResult(content=[types.TextContent(text="the episode has been graded")],
                                            is_error=True)
            call = ToolCall(id=f"mcp_{next(self._ids)}", name=name,
                            arguments=json.dumps(arguments or {}, ensure_ascii=False))
            try:
                obs, _, terminated, truncated, info = await self.env.step(Action(tool_calls=(call,)))
            except EnvgymError as exc:  # the episode broke at this step: a zero verdict, blamed as the rollout would
                self.steps += 1
                self.verdict = failed_verdict(exc, "env")
                return types.CallToolResult(content=[types.TextContent(text=f"the episode ended: {exc}")],
                                            is_error=True)
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
            except (ValueError, AttributeError, RecursionError):
                return JSONResponse({"error": 'the body must be JSON: {"message": "..."} or empty'}, status_code=400)
            verdict = await self.finish(message if isinstance(message, str) else None)
            self.finished.set()
            return JSONResponse(verdict.model_dump(mode="json"))

        from mcp.server.transport_security import RequestBodyLimitMiddleware

        app = self.server().streamable_http_app(
            streamable_http_path=f"/{self.token}/mcp", host="127.0.0.1", json_response=True,
            max_request_body_size=MAX_MESSAGE_BYTES,
            custom_starlette_routes=[Route(f"/{self.token}/finish", finish, methods=["POST"])])
        return RequestBodyLimitMiddleware(app, MAX_MESSAGE_BYTES)  # /finish too (413, as the SDK answers /mcp)

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
        """Serve on stdin/stdout until the client closes stdin (once what it asked is answered), then grade."""
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


def _pipe_like(fd: int) -> bool:
    """Whether the event loop can watch ``fd`` (a pipe, a socket, a terminal); a regular file it cannot."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


async def _lines(read: Callable[[], Awaitable[bytes]], limit: int) -> AsyncIterator[tuple[bytes, bool]]:
    """``(line, False)`` for each non-blank line of the input, ``(its first 4 KiB, True)`` for one over ``limit``
    bytes, which is read past in pieces and never held whole; ends with the input."""
    pending = bytearray()
    head = b""
    dropping = False
    while chunk := await read():
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if not dropping and len(pending) + end - start > limit:
                head, dropping = bytes((pending + chunk[start:end])[:4096]), True
            if dropping:
                yield head, True
                dropping = False
            else:
                pending += chunk[start:end]
                if pending.strip():  # blank lines are no messages
                    yield bytes(pending), False
            pending.clear()
            start = end + 1
        if not dropping:
            pending += chunk[start:]
            if len(pending) > limit:
                head, dropping = bytes(pending[:4096]), True
                pending.clear()
    if dropping:
        yield head, True
    elif pending.strip():
        yield bytes(pending), False


_CANCELLED = "notifications/cancelled"
_LEADING_ID = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*'
                         rb'(-?\d{1,18}|"(?:[^"\\]|\\.){0,256}")')


def _request_id(line: bytes) -> int | str | None:
    """The id of a message that could not be read, where it can be told: from the message when it decodes, else
    from its start (``{"jsonrpc": "2.0", "id": ...``, the order clients write); else null, as JSON-RPC says."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        match = _LEADING_ID.match(line)
        message = {"id": json.loads(match.group(1))} if match else None
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, (int, str)) and not isinstance(found, bool) else None


def _unreadable(line: bytes, oversized: bool) -> types.JSONRPCError:
    """The JSON-RPC error that answers a line the server cannot take (over the bound, not JSON, too deep, not a
    JSON-RPC message), so the client's request fails at once instead of waiting for an answer that never comes."""
    if oversized:
        code, text = types.INVALID_REQUEST, (f"Invalid Request: the message is over {MAX_MESSAGE_BYTES >> 20} MiB, "
                                             "the most one message may be; it was not read")
    else:
        try:
            pydantic_core.from_json(line)
        except ValueError as exc:
            code, text = types.PARSE_ERROR, f"Parse error: {exc}"
        else:
            code, text = types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
    return types.JSONRPCError(jsonrpc="2.0", id=_request_id(line),
                              error=types.ErrorData(code=code, message=text[:1000]))


@contextlib.asynccontextmanager
async def _stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """MCP's stdio transport on the event loop: one JSON-RPC message per line, no thread per line.

    The SDK's ``stdio_server`` reads and writes through worker threads (two hops per message, most of a
    call's cost); this reads fd 0 and writes fd 1 on the event loop where they are pipes, sockets or terminals,
    and through a thread where they are regular files (``envgym mcp serve ... > out.jsonl``). As in the SDK,
    fd 1 points at stderr and fd 0 at the null device while serving, so stray prints never reach the wire. A
    line the server cannot take (over :data:`MAX_MESSAGE_BYTES`, not JSON, nested deeper than the parser
    goes, not a JSON-RPC message) is answered with a JSON-RPC error here, and serving goes on.
    """
    import anyio
    from mcp.shared.message import SessionMessage

    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    closers: list[Callable[[], None]] = []
    if _pipe_like(wire_in):
        reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                         os.fdopen(wire_in, "rb", 0))
        closers.append(read_transport.close)

        async def read() -> bytes:
            return await reader.read(1 << 20)
    else:
        closers.append(lambda: os.close(wire_in))

        async def read() -> bytes:
            return await asyncio.to_thread(os.read, wire_in, 1 << 20)
    if _pipe_like(wire_out):
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                                  os.fdopen(wire_out, "wb", 0))
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        closers.append(write_transport.close)

        async def write(data: bytes) -> None:
            writer.write(data)
            await writer.drain()
    else:
        closers.append(lambda: os.close(wire_out))

        async def write(data: bytes) -> None:
            await asyncio.to_thread(_write_all, wire_out, data)
    to_server, from_wire = anyio.create_memory_object_stream[Any](16)
    to_wire, from_server = anyio.create_memory_object_stream[Any](16)
    refusals = to_wire.clone()
    drained = anyio.Event()
    unanswered: set[Any] = set()  # ids of the requests read and not answered yet
    answered = asyncio.Event()

    async def pump_in() -> None:
        async with to_server, refusals:
            async for line, oversized in _lines(read, MAX_MESSAGE_BYTES):
                if not oversized:
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError:  # pydantic's ValidationError: answered below
                        pass
                    else:
                        if isinstance(message, types.JSONRPCRequest):
                            unanswered.add(message.id)
                        elif isinstance(message, types.JSONRPCNotification) and message.method == _CANCELLED:
                            unanswered.discard((message.params or {}).get("requestId"))  # it gets no answer
                        await to_server.send(SessionMessage(message))
                        continue
                with contextlib.suppress(anyio.ClosedResourceError):  # the session is over
                    await refusals.send(SessionMessage(_unreadable(line, oversized)))
            while unanswered:  # end of input: what was asked is answered before the session ends
                answered.clear()
                await answered.wait()

    async def pump_out() -> None:
        async with from_server:
            async for message in from_server:
                await write(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
                if isinstance(message.message, types.JSONRPCResponse | types.JSONRPCError):
                    unanswered.discard(message.message.id)
                    answered.set()
        drained.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(pump_in)
            group.start_soon(pump_out)
            yield from_wire, to_wire
            to_wire.close()  # the session ended (end of input): what it answered last still reaches the wire
            refusals.close()
            with anyio.move_on_after(5):
                await drained.wait()
            group.cancel_scope.cancel()
    finally:
        for close in closers:
            with contextlib.suppress(OSError):
                close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
