"""A small MCP client over a line transport: what the env needs of a server, and nothing of the SDK.

MCP's stdio transport is one JSON-RPC 2.0 message per line; :class:`McpClient` speaks it over any
:class:`LineTransport` (a request line and the response with its id, or a notification):

- :class:`ProcessTransport`: the server is a child process (the local sandbox runs it in its directory);
- :class:`ChannelTransport`: the server runs inside a sandbox, behind ``bridge.py`` on a sandbox channel
  (:meth:`envgym.sandbox.Sandbox.channel`, a JSON-lines process), so the Docker backend works unchanged.

The client does the ``initialize`` handshake (protocol ``2025-06-18``), ``tools/list`` (following
``nextCursor``) and ``tools/call``. A server that dies, answers garbage or does not answer in time raises
:class:`McpServerError` (an :class:`~envgym.errors.EnvError`: the env's failure, not the agent's).

No message larger than :data:`MAX_MESSAGE_BYTES` crosses in either direction, and none is decoded by more
than the host's recursion limit: a request over the bound, or nested too deeply to encode, is never sent; a
reply over it is read past and dropped (the bridge drops it inside the sandbox, so it never reaches the
host), one too deep to decode is dropped too. Either raises :class:`McpMessageRefused` for that one request
(the env makes it the call's error observation); the server and the session go on. A dropped line is taken
to be the reply to the request in flight: the servers here answer one request at a time.
"""

from __future__ import annotations

import asyncio
import json
from itertools import count
from typing import Any, Protocol

from envgym.plugin import EnvError

__all__ = ["MAX_MESSAGE_BYTES", "ChannelTransport", "LineTransport", "McpClient", "McpMessageRefused",
           "McpServerError", "ProcessTransport"]

PROTOCOL_VERSION = "2025-06-18"
MAX_MESSAGE_BYTES = 4 << 20
"""The largest request or reply line, in bytes (the official SDK's default bound on an HTTP request body)."""


class McpServerError(EnvError):
    """The MCP server failed (died, broke the protocol, timed out)."""


class McpMessageRefused(McpServerError):
    """One request or reply the client will not carry: over :data:`MAX_MESSAGE_BYTES`, or nested too deeply to
    encode or decode. Only that request fails; the server is alive and the session goes on. ``sent`` says
    whether the server got the request (its reply was the one dropped)."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


class LineTransport(Protocol):
    async def request(self, line: bytes, request_id: int, *, timeout: float) -> dict[str, Any]: ...  # noqa: ASYNC109

    async def notify(self, line: bytes) -> None: ...

    async def close(self) -> None: ...


def _over(what: str, then: str, *, sent: bool) -> McpMessageRefused:
    return McpMessageRefused(f"{what} over the {MAX_MESSAGE_BYTES >> 20} MiB one MCP message may be here; {then}",
                             sent=sent)


def _decode(line: bytes | str) -> dict[str, Any]:
    try:
        reply = json.loads(line)
    except RecursionError:
        raise McpMessageRefused("the server's reply nests too deeply to decode; it was dropped", sent=True) from None
    except ValueError:
        raise McpServerError(f"the MCP server wrote a line that is not JSON: {line[:200]!r}") from None
    if not isinstance(reply, dict):
        raise McpServerError(f"the MCP server wrote a JSON {type(reply).__name__}, not a message")
    return reply


def _answers(reply: dict[str, Any], request_id: int) -> bool:
    return reply.get("id") == request_id and ("result" in reply or "error" in reply)


class ProcessTransport:
    """A server started as a child process with pipes (stderr kept, last 4 KiB, for error messages)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._stderr = bytearray()
        self._drain = asyncio.create_task(self._collect_stderr())

    @classmethod
    async def start(cls, argv: list[str], *, cwd: str, env: dict[str, str] | None = None) -> ProcessTransport:
        process = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE,
                                                       stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE, limit=MAX_MESSAGE_BYTES)
        return cls(process)

    async def _collect_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(4096):
            self._stderr = (self._stderr + chunk)[-4096:]

    def _died(self) -> McpServerError:
        tail = self._stderr.decode(errors="replace").strip()[-800:]
        return McpServerError(f"the MCP server exited (code {self.process.returncode})" + (f": {tail}" if tail else ""))

    async def _write(self, line: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line + b"\n")
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            await self.process.wait()
            raise self._died() from None

    async def _readline(self) -> bytes | None:
        """The next line, or None for one over the bound (read past, never held whole)."""
        assert self.process.stdout is not None
        stdout, oversized = self.process.stdout, False
        while True:
            try:
                line = await stdout.readuntil(b"\n")
            except asyncio.LimitOverrunError as exc:  # the stream's limit is the bound: drop what it holds
                await stdout.readexactly(exc.consumed)
                oversized = True
                continue
            except asyncio.IncompleteReadError:
                await self.process.wait()
                raise self._died() from None
            return None if oversized or len(line) > MAX_MESSAGE_BYTES else line

    async def request(self, line: bytes, request_id: int, *, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109
        await self._write(line)
        async with asyncio.timeout(timeout):
            while True:
                raw = await self._readline()
                if raw is None:
                    raise _over("the server's reply is", "it was dropped (ask for less)", sent=True)
                reply = _decode(raw)
                if _answers(reply, request_id):
                    return reply
                # a notification or a request of the server's own (logging, progress): not ours to answer

    async def notify(self, line: bytes) -> None:
        await self._write(line)

    async def close(self) -> None:
        if self.process.returncode is None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), 2)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self._drain.cancel()


class ChannelTransport:
    """A server inside a sandbox, behind the bridge (``bridge.py``) on a sandbox channel.

    The request goes as a string (``{"line": ..., "id": ...}``) and the reply comes back as one: the channel
    never holds a nested message, and the reply is decoded here, depth-checked.
    """

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    async def _send(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:  # noqa: ASYNC109
        reply = await self.channel.call(request, timeout=timeout)
        if reply.get("dropped"):
            raise McpMessageRefused(f"the server's reply {reply['dropped']}; it was dropped (ask for less)",
                                    sent=True)
        if not reply.get("ok"):
            raise McpServerError(f"the MCP server failed: {reply.get('error', reply)}")
        return reply

    async def request(self, line: bytes, request_id: int, *, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109
        reply = await self._send({"line": line.decode(), "id": request_id}, timeout)
        if not isinstance(reply.get("reply"), str):
            raise McpServerError(f"the bridge answered without a reply: {str(reply)[:200]}")
        return _decode(reply["reply"])

    async def notify(self, line: bytes) -> None:
        await self._send({"line": line.decode()}, 10)

    async def close(self) -> None:
        await self.channel.close()


def _encode(message: dict[str, Any]) -> bytes:
    """One request line, or :class:`McpMessageRefused` when it is over the bound or too deep to encode."""
    what = f"the {message['method']} request"
    if message["method"] == "tools/call":
        what = f"the call of {message['params']['name']}"
    try:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    except RecursionError:
        raise McpMessageRefused(f"{what} nests too deeply to encode; it was not sent", sent=False) from None
    if len(line) > MAX_MESSAGE_BYTES:
        raise _over(f"{what} is {len(line):,} bytes,", "it was not sent", sent=False)
    return line


class McpClient:
    """The requests the env makes of an MCP server (see the module docstring)."""

    def __init__(self, transport: LineTransport, *, timeout: float = 30.0) -> None:
        self.transport = transport
        self.timeout = timeout
        self.server_info: dict[str, Any] = {}
        self._ids = count(1)

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        line = _encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            reply = await self.transport.request(line, request_id, timeout=self.timeout)
        except TimeoutError:
            raise McpServerError(f"the MCP server did not answer {method} within {self.timeout:g}s") from None
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {"message": reply["error"]}
            raise McpServerError(f"the MCP server refused {method}: {error.get('message')} (code {error.get('code')})")
        result = reply.get("result")
        if not isinstance(result, dict):
            raise McpServerError(f"the MCP server answered {method} without a result object")
        return result

    async def initialize(self) -> dict[str, Any]:
        result = await self._request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                                    "clientInfo": {"name": "envgym", "version": "1"}})
        self.server_info = result.get("serverInfo") or {}
        await self.transport.notify(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        return result

    async def list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            result = await self._request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(result.get("tools") or [])
            cursor = result.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """The call's text content (joined) and whether it is an error (:class:`McpMessageRefused` when the
        request or its reply was over the bound or too deep: the call's error, the session goes on)."""
        result = await self._request("tools/call", {"name": name, "arguments": arguments})
        texts = [c.get("text", "") for c in result.get("content") or []
                 if isinstance(c, dict) and c.get("type") == "text"]
        if result.get("structuredContent") is not None and not texts:
            try:
                texts = [json.dumps(result["structuredContent"], sort_keys=True)]
            except RecursionError:  # decoded at a shallower stack than this: still the reply's fault
                raise McpMessageRefused("the server's reply nests too deeply to encode", sent=True) from None
        return "\n".join(t if isinstance(t, str) else str(t) for t in texts), bool(result.get("isError"))

    async def close(self) -> None:
        await self.transport.close()
