"""A small MCP client over a line transport: what the env needs of a server, and nothing of the SDK.

MCP's stdio transport is one JSON-RPC 2.0 message per line; :class:`McpClient` speaks it over any
:class:`LineTransport` (a request and the response with its id, or a notification):

- :class:`ProcessTransport`: the server is a child process (the local sandbox runs it in its directory);
- :class:`ChannelTransport`: the server runs inside a sandbox, behind ``bridge.py`` on a sandbox channel
  (:meth:`envgym.sandbox.Sandbox.channel`, a JSON-lines process), so the Docker backend works unchanged.

The client does the ``initialize`` handshake (protocol ``2025-06-18``), ``tools/list`` (following
``nextCursor``) and ``tools/call``. A server that dies, answers garbage or does not answer in time raises
:class:`McpServerError` (an :class:`~envgym.errors.EnvError`: the env's failure, not the agent's).
"""

from __future__ import annotations

import asyncio
import json
from itertools import count
from typing import Any, Protocol

from envgym.errors import EnvError

__all__ = ["ChannelTransport", "LineTransport", "McpClient", "McpServerError", "ProcessTransport"]

PROTOCOL_VERSION = "2025-06-18"


class McpServerError(EnvError):
    """The MCP server failed (died, broke the protocol, timed out)."""


class LineTransport(Protocol):
    async def request(self, message: dict[str, Any], *, timeout: float) -> dict[str, Any]: ...  # noqa: ASYNC109

    async def notify(self, message: dict[str, Any]) -> None: ...

    async def close(self) -> None: ...


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
                                                       stderr=asyncio.subprocess.PIPE, limit=64 << 20)
        return cls(process)

    async def _collect_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(4096):
            self._stderr = (self._stderr + chunk)[-4096:]

    def _died(self) -> McpServerError:
        tail = self._stderr.decode(errors="replace").strip()[-800:]
        return McpServerError(f"the MCP server exited (code {self.process.returncode})" + (f": {tail}" if tail else ""))

    async def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            await self.process.wait()
            raise self._died() from None

    async def request(self, message: dict[str, Any], *, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109
        assert self.process.stdout is not None
        await self._write(message)
        async with asyncio.timeout(timeout):
            while True:
                line = await self.process.stdout.readline()
                if not line:
                    await self.process.wait()
                    raise self._died()
                reply = _decode(line)
                if reply.get("id") == message["id"] and ("result" in reply or "error" in reply):
                    return reply
                # a notification or a request of the server's own (logging, progress): not ours to answer

    async def notify(self, message: dict[str, Any]) -> None:
        await self._write(message)

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
    """A server inside a sandbox, behind the bridge (``bridge.py``) on a sandbox channel."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    async def request(self, message: dict[str, Any], *, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109
        reply = await self.channel.call({"send": message}, timeout=timeout)
        if not reply.get("ok"):
            raise McpServerError(f"the MCP server failed: {reply.get('error', reply)}")
        return reply["reply"]

    async def notify(self, message: dict[str, Any]) -> None:
        reply = await self.channel.call({"send": message}, timeout=10)
        if not reply.get("ok"):
            raise McpServerError(f"the MCP server failed: {reply.get('error', reply)}")

    async def close(self) -> None:
        await self.channel.close()


def _decode(line: bytes) -> dict[str, Any]:
    try:
        reply = json.loads(line)
    except ValueError:
        raise McpServerError(f"the MCP server wrote a line that is not JSON: {line[:200]!r}") from None
    if not isinstance(reply, dict):
        raise McpServerError(f"the MCP server wrote a JSON {type(reply).__name__}, not a message")
    return reply


class McpClient:
    """The requests the env makes of an MCP server (see the module docstring)."""

    def __init__(self, transport: LineTransport, *, timeout: float = 30.0) -> None:
        self.transport = transport
        self.timeout = timeout
        self.server_info: dict[str, Any] = {}
        self._ids = count(1)

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        try:
            reply = await self.transport.request(message, timeout=self.timeout)
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
        await self.transport.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
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
        """The call's text content (joined) and whether it is an error."""
        result = await self._request("tools/call", {"name": name, "arguments": arguments})
        texts = [c.get("text", "") for c in result.get("content") or [] if c.get("type") == "text"]
        if result.get("structuredContent") is not None and not texts:
            texts = [json.dumps(result["structuredContent"], sort_keys=True)]
        return "\n".join(texts), bool(result.get("isError"))

    async def close(self) -> None:
        await self.transport.close()
