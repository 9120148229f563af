"""A small asyncio-native HTTP/1.1 server: one per episode, on 127.0.0.1, an ephemeral port.

Enough HTTP for the envgym apps and MiniWoB's static pages: GET/POST/HEAD, query strings, urlencoded forms,
cookies, keep-alive, Content-Length bodies (no chunked requests). The handler is an ``async`` callable from
:class:`Request` to :class:`Response`; handlers that touch SQLite or files hop to a thread themselves, so
nothing here blocks the loop. ``close`` stops listening and drops open connections.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, unquote, urlsplit

MAX_BODY = 1 << 20


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    cookies: dict[str, str]
    headers: dict[str, str]


@dataclass
class Response:
    body: str | bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
    cache_control: str = "no-store"
    """``no-store`` (app pages are state); static files that never change may say ``max-age=...``."""

    @classmethod
    def redirect(cls, location: str, *, cookie: str | None = None) -> Response:
        headers = [("Location", location)]
        if cookie is not None:
            headers.append(("Set-Cookie", cookie))
        return cls(status=303, headers=headers)

    def encode(self, *, head: bool = False) -> bytes:
        body = self.body.encode() if isinstance(self.body, str) else self.body
        reason = HTTPStatus(self.status).phrase
        lines = [f"HTTP/1.1 {self.status} {reason}", f"Content-Type: {self.content_type}",
                 f"Content-Length: {len(body)}", f"Cache-Control: {self.cache_control}"]
        lines += [f"{k}: {v}" for k, v in self.headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head else body)


Handler = Callable[[Request], Awaitable[Response]]


class HttpServer:
    def __init__(self, handler: Handler, *, host: str = "127.0.0.1") -> None:
        self.handler = handler
        self.host = host
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.origin

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writer in list(self._writers):
            writer.close()
        with contextlib.suppress(Exception):
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                request = await self._read(reader)
                if request is None:
                    break
                try:
                    response = await self.handler(request)
                except Exception as exc:  # an app bug is a 500 page, never a dead server
                    response = Response(f"<h1>Internal error</h1><pre>{type(exc).__name__}</pre>", status=500)
                writer.write(response.encode(head=request.method == "HEAD"))
                await writer.drain()
                if request.headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> Request | None:
        line = await reader.readline()
        if not line:
            return None
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        if length > MAX_BODY:
            raise ValueError("request body too large")
        body = await reader.readexactly(length) if length else b""
        parts = urlsplit(target)
        form: dict[str, str] = {}
        if body and headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        cookies = {k: m.value for k, m in SimpleCookie(headers.get("cookie", "")).items()}
        return Request(method=method.upper(), path=unquote(parts.path) or "/",
                       query=dict(parse_qsl(parts.query, keep_blank_values=True)), form=form, cookies=cookies,
                       headers=headers)
