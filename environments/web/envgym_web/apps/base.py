"""What an envgym web app is: a SQLite schema, named write operations, and routes that render HTML.

An :class:`App` is a definition (no state). :class:`AppSession` is one episode's running app: its own
SQLite database created from the task's ``initial_state["db"]`` (in memory, from a serialised template
cached per task), the login sessions, and the :class:`~envgym.verify.context.CallRecord` of every write the
app performed on the agent's behalf — what the write-action verifier grades. Route handlers are plain
functions run in a worker thread under the session's lock, so SQLite never runs on the event loop. Every
state change goes through :meth:`AppSession.write`, which is also how the reference writes of a task are
replayed on a fresh database to get the expected final state.
"""

from __future__ import annotations

import asyncio
import html
import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envgym.plugin import ActionRefused, CallRecord
from envgym.plugin.tools import store  # the kernel's SQLite store: schema + rows + a template cache
from envgym_web.server import Request, Response

WriteFn = Callable[[sqlite3.Connection, dict[str, Any]], Any]
Handler = Callable[..., Response | str]


class AppFailure(ActionRefused):
    """A write the app refuses (out of stock, no permission); the page shows the message."""


class Forbidden(ActionRefused):
    """The signed-in user may not see this page."""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


@dataclass
class App:
    name: str
    title: str
    schema_sql: str
    writes: dict[str, WriteFn] = field(default_factory=dict)
    routes: list[tuple[str, re.Pattern[str], Handler]] = field(default_factory=list)
    login_required: bool = False
    css: str = ""

    def write(self, name: str) -> Callable[[WriteFn], WriteFn]:
        def register(fn: WriteFn) -> WriteFn:
            self.writes[name] = fn
            return fn
        return register

    def route(self, method: str, pattern: str) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            self.routes.append((method, re.compile(f"^{pattern}$"), fn))
            return fn
        return register

    def page(self, title: str, body: str, *, nav: str = "") -> str:
        return (f"<!doctype html><html><head><meta charset=utf-8><title>{esc(title)} · {esc(self.title)}</title>"
                f"<style>body{{font-family:sans-serif;margin:0}}nav{{background:#234;padding:8px}}"
                f"nav a{{color:#fff;margin-right:14px}}main{{padding:12px 20px}}.error{{color:#b00}}"
                f"table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px}}{self.css}</style>"
                f"</head><body><nav>{nav}</nav><main>{body}</main></body></html>")


def create_db(app: App, initial_state: dict[str, Any], key: str | None) -> sqlite3.Connection:
    return store.create(":memory:", app.schema_sql, initial_state.get("db", {}),
                        template_key=(f"web:{app.name}", key) if key else None)


def replay(app: App, initial_state: dict[str, Any], writes: list[dict[str, Any]], key: str | None) -> dict[str, Any]:
    """The database after applying ``writes`` (``{"tool", "args"}``) to the initial state (blocking)."""
    conn = create_db(app, initial_state, key)
    try:
        for item in writes:
            conn.execute("BEGIN")
            app.writes[item["tool"]](conn, dict(item["args"]))
            conn.execute("COMMIT")
        return store.SqliteState(conn).snapshot()
    finally:
        conn.close()


class AppSession:
    """One episode's app: database, login sessions, recorded writes."""

    def __init__(self, app: App, initial_state: dict[str, Any], *, key: str | None = None) -> None:
        self.app = app
        self.conn = create_db(app, initial_state, key)
        self.calls: list[CallRecord] = []
        self.sessions: dict[str, int] = {}
        self._lock = threading.Lock()
        self._next_sid = 0

    # --- used by route handlers (inside the worker thread) ---------------------------------------------
    def write(self, name: str, **args: Any) -> Any:
        self.conn.execute("BEGIN")
        try:
            result = self.app.writes[name](self.conn, args)
        except AppFailure as exc:
            self.conn.execute("ROLLBACK")
            self.calls.append(CallRecord(index=len(self.calls), name=name, kind="write", arguments=args, ok=False,
                                         error=str(exc)))
            raise
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        self.calls.append(CallRecord(index=len(self.calls), name=name, kind="write", arguments=args, ok=True))
        return result

    def rows(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchall()

    def row(self, sql: str, *params: Any) -> sqlite3.Row | None:
        return self.conn.execute(sql, params).fetchone()

    def user(self, request: Request) -> sqlite3.Row | None:
        uid = self.sessions.get(request.cookies.get("sid", ""))
        return None if uid is None else self.row("SELECT * FROM users WHERE id = ?", uid)

    def sign_in(self, user_id: int) -> str:
        self._next_sid += 1
        sid = f"s{self._next_sid}-{user_id}-{id(self) & 0xFFFF:x}"
        self.sessions[sid] = user_id
        return f"sid={sid}; Path=/; HttpOnly; SameSite=Lax"

    # --- the server side ---------------------------------------------------------------------------------
    async def handle(self, request: Request) -> Response:
        return await asyncio.to_thread(self._handle, request)

    def _handle(self, request: Request) -> Response:
        with self._lock:
            method = "GET" if request.method == "HEAD" else request.method
            for route_method, pattern, fn in self.app.routes:
                match = pattern.match(request.path)
                if match and route_method == method:
                    if self.app.login_required and request.path != "/login" and self.user(request) is None:
                        return Response.redirect("/login")
                    try:
                        result = fn(self, request, *match.groups())
                    except Forbidden as exc:
                        return Response(self.app.page("Forbidden", f"<h1>Forbidden</h1><p class=error>{esc(exc)}</p>"
                                                      "<a id=back-home href='/'>Home</a>"), status=403)
                    return result if isinstance(result, Response) else Response(result)
            return Response(self.app.page("Not found", "<h1>Page not found</h1><a id=back-home href='/'>Home</a>"),
                            status=404)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return store.SqliteState(self.conn).snapshot()

    def close(self) -> None:
        with self._lock:
            self.conn.close()
