"""A minimal asyncio HTTP/1.1 JSON server: the transport under the recording proxy (and test fakes).

    server = JsonServer(handler, host="127.0.0.1", port=0)
    await server.start(); server.port
    await server.aclose()

``handler(request) -> (status, body)`` is an ``async`` callable; ``body`` is a dict (sent as JSON) or bytes.
Enough HTTP for OpenAI clients (httpx, openai, aiohttp): keep-alive, ``Content-Length`` request bodies
(``Transfer-Encoding: chunked`` bodies are decoded too), ``Connection: close``. Built on asyncio streams
rather than aiohttp or uvicorn+starlette: neither is a dependency of envgym, and a bare stream server has the
least work per request (one ``readuntil`` for the head, one write for the response), which is what the
proxy's per-call overhead budget is spent on. A handler that raises answers 500 with an OpenAI-style error
body; the connection survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

MAX_BODY = 64 << 20


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


Handler = Callable[[Request], Awaitable[tuple[int, dict[str, Any] | bytes]]]


def error_body(message: str, kind: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error body."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class JsonServer:
    def __init__(self, handler: Handler, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.handler = handler
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=MAX_BODY)
        self.port = self._server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writer in list(self._writers):
            writer.close()  # the connection's reader sees EOF and its task ends by itself
        if self._tasks:
            # Cancelling them instead would log errors on Python 3.11 (its stream callback re-raises it).
            _, pending = await asyncio.wait(list(self._tasks), timeout=5)
            for task in pending:
                task.cancel()
        with contextlib.suppress(Exception):
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while True:
                request = await _read(reader)
                if request is None:
                    break
                try:
                    status, body = await self.handler(request)
                except Exception as exc:  # a handler bug answers 500; the server and the connection live on
                    status, body = 500, error_body(f"{type(exc).__name__}: {exc}", "server_error")
                close = request.headers.get("connection", "").lower() == "close"
                writer.write(_encode(status, body, close=close))
                await writer.drain()
                if close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)  # type: ignore[arg-type]
            writer.close()


async def _read(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None  # the client closed a kept-alive connection
        raise
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if not size:
                break
            body += chunk[:-2]
            if len(body) > MAX_BODY:
                raise ValueError("request body too large")
        body = bytes(body)
    else:
        length = int(headers.get("content-length", "0") or 0)
        if length > MAX_BODY:
            raise ValueError("request body too large")
        body = await reader.readexactly(length) if length else b""
    return Request(method=method.upper(), path=target.split("?", 1)[0], headers=headers, body=body)


def _encode(status: int, body: dict[str, Any] | bytes, *, close: bool) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: {'close' if close else 'keep-alive'}\r\n\r\n")
    return head.encode("latin-1") + data
