"""Web environments: an episode is a browser context on a local site, driven by function-call actions.

:class:`BrowserEnv` is the shared episode machinery: a lease on the loop's shared Chromium, one context per
episode (off-origin requests blocked), actions from :mod:`envgym_web.actions`, observations from
:mod:`envgym_web.observe`, and the final answer (``send_msg_to_user`` or a plain message) that ends and
grades the episode. A dead browser raises :class:`~envgym_web.browser.BrowserCrashed` (an ``EnvError``, so
the rollout records ``infra_error``); the next reset runs on a relaunched browser.

Resets are cheap because no episode waits for Chromium to start a renderer. By default (``recycle=True``)
the next episode runs in the finished episode's context and page once they are proven clean
(:meth:`~envgym_web.browser.EpisodeBrowser.recycle`: other pages closed, cookies and storage cleared, the new
document checked to have started with none, history dropped); a context that is not is closed and the
episode gets a fresh one. This saves the renderer process an episode would otherwise start, most of the CPU
of a short episode. With ``recycle=False`` every episode gets a fresh context, and the expensive part of one
happens while the agent works: after each reset the env opens a spare context for the same origin in the
background, and the next reset takes it (``prewarm=False`` turns this off, halving the contexts an env
holds). The finished episode's context is closed concurrently with entering the next one.

:class:`WebAppEnv` (``web/shop-v1``, ``web/forum-v1``) serves an envgym app from its own HTTP server on
127.0.0.1 (one per env, so the origin is stable across resets; each reset gives it a fresh database seeded
from ``initial_state["db"]``). ``initial_state["start"]`` is the first path; ``initial_state["sign_in"]``
signs a user in before the episode starts. Grading sees the app's recorded writes, the final database,
a ``page`` table (``url``, ``path``, ``title``, ``text``: the page the agent ended on) for SQL checks on
page state, and the expected database: ``metadata["reference_writes"]`` replayed on the initial state.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections import OrderedDict
from typing import Any, ClassVar
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from envgym.plugin import (
    Action,
    ArgumentsError,
    Clock,
    Env,
    EnvError,
    StepResult,
    TamperAgent,
    TaskSpec,
    ToolResult,
    VerifyContext,
    decode_arguments,
)
from envgym_web import observe
from envgym_web.actions import MAX_TYPE, TOOL_NAMES, TOOLS, ActionError, check_args, perform
from envgym_web.apps import load_app
from envgym_web.apps.base import AppSession, replay
from envgym_web.browser import BrowserCrashed, EpisodeBrowser, SharedBrowser, shared_browser
from envgym_web.observe import WebObservation
from envgym_web.server import HttpServer, Request, Response
from envgym_web.tamper import DressThePage, QuoteBack, TypeUnsent

_CLOSED_HINTS = ("has been closed", "browser has disconnected", "target crashed", "page crashed")


_OBSERVE_ATTEMPTS = 6
"""Looks at a page whose document a navigation keeps replacing (0.05 s, then twice as long each time: ~1.6 s)."""


class BrowserEnv(Env):
    """Shared machinery of the web envs; subclasses open the site and grade the episode."""

    multimodal: ClassVar[bool] = True

    def __init__(self, *, screenshot: bool = False, screenshot_scale: float = 0.5, prewarm: bool = True,
                 recycle: bool = True, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.screenshot = screenshot
        self.screenshot_scale = screenshot_scale
        self.prewarm = prewarm
        self.recycle = recycle
        self.browser: SharedBrowser | None = None
        self.episode: EpisodeBrowser | None = None
        self._final_answer: str | None = None
        self._want_pixels = screenshot
        self._spare: asyncio.Task[EpisodeBrowser] | None = None
        self._closing: asyncio.Task[None] | None = None

    # --- subclass hooks ------------------------------------------------------------------------------------
    async def _open_site(self, task: TaskSpec) -> str:
        """Prepare the site for ``task`` and return its origin."""
        raise NotImplementedError

    async def _enter(self, task: TaskSpec, episode: EpisodeBrowser) -> None:
        """Navigate the fresh page to where the episode starts."""
        raise NotImplementedError

    def _note(self) -> str | None:
        return None

    def _goal(self) -> str:
        return self.task.instruction if self.task else ""

    async def _snapshot(self, page: Page) -> dict[str, Any]:
        """One look at the page (:func:`observe.snapshot`); subclasses read their own page state in the same call."""
        return await observe.snapshot(page)

    # --- the episode ---------------------------------------------------------------------------------------
    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[WebObservation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        previous, self.episode = self.episode, None
        if self.browser is None:
            self.browser = shared_browser()
            self.browser.acquire()
        self._want_pixels = bool((options or {}).get("screenshot", self.screenshot))
        try:
            origin = await self._open_site(chosen)
        except BaseException:
            self._close_soon(previous)
            raise
        self.task = chosen
        self._final_answer = None
        if previous is not None and not (self.recycle and await previous.recycle(origin)):
            self._close_soon(previous)
            previous = None
        self.episode = previous or await self._take_spare(origin) or await self.browser.open_episode(origin)
        try:
            await self._enter(chosen, self.episode)
            if self.episode.recycled and not await self.episode.proven_clean():
                self._close_soon(self.episode)  # not proven clean: the episode starts over in a fresh context
                self.episode = await self.browser.open_episode(origin)
                await self._enter(chosen, self.episode)
            obs = await self._observe()
        except PlaywrightError as exc:
            raise self._broken(exc) from exc
        finally:
            await self._finish_closing()
        if self.prewarm and not self.recycle:
            self._spare = asyncio.create_task(self.browser.open_episode(origin))
        info = {"tools": TOOLS, "task_id": chosen.id, "task_hash": chosen.hash, "env_id": chosen.env_id}
        return obs, info

    async def _take_spare(self, origin: str) -> EpisodeBrowser | None:
        """The context opened in the background after the last reset, if it is still usable for ``origin``."""
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        try:
            episode = await spare
        except (EnvError, PlaywrightError):
            return None  # e.g. the browser died meanwhile: open a fresh one on the relaunched browser
        if episode.crashed or episode.origin != origin.lower():
            await episode.close()
            return None
        return episode

    async def step(self, action: Action) -> StepResult:
        if self.episode is None or self.task is None:
            raise EnvError("step() without an open episode")
        if not action.tool_calls:
            if action.text is None:
                return StepResult(await self._observe_safe("empty action: call a tool or send a message"),
                                  0.0, False, False, {})
            return await self._finish(action.text)
        results: list[ToolResult] = []
        typed = 0  # keyboard_type's characters this step (actions.MAX_TYPE in all)
        for call in action.tool_calls:
            try:
                args = self._parse(call.name, call.arguments)
                if call.name == "send_msg_to_user":
                    return await self._finish(str(args["text"]))
                if call.name == "keyboard_type":
                    if typed + len(args["text"]) > MAX_TYPE:
                        raise ActionError(f"keyboard_type: this step already typed {typed} characters; at most "
                                          f"{MAX_TYPE} per step")
                    typed += len(args["text"])
                await perform(self.episode.page, call.name, args, origin=self.episode.origin)
                results.append(ToolResult(call_id=call.id, name=call.name, content="ok"))
            except ActionError as exc:
                results.append(ToolResult(call_id=call.id, name=call.name, content=str(exc), error=str(exc)))
            except PlaywrightError as exc:
                raise self._broken(exc) from exc
        errors = "; ".join(f"{r.name}: {r.error}" for r in results if r.error) or None
        obs = await self._observe_safe(errors)
        return StepResult(obs.model_copy(update={"tool_results": tuple(results)}), 0.0, False, False, {})

    @staticmethod
    def _parse(name: str, arguments: str) -> dict[str, Any]:
        if name not in TOOL_NAMES:
            raise ActionError(f"unknown tool {name!r}; available: {', '.join(sorted(TOOL_NAMES))}")
        try:
            return check_args(name, decode_arguments(name, arguments))
        except ArgumentsError as exc:
            raise ActionError(str(exc)) from None

    async def _finish(self, answer: str) -> StepResult:
        self._final_answer = answer  # the episode ends; the kernel's Grading wrapper grades it
        obs = WebObservation(text="Episode finished.", url=self.episode.page.url if self.episode else "")
        return StepResult(obs, 0.0, True, False, {})

    def _broken(self, exc: PlaywrightError) -> EnvError:
        message = (exc.message or repr(exc)).splitlines()[0]
        if self.episode is None or self.episode.crashed or any(h in message.lower() for h in _CLOSED_HINTS):
            return BrowserCrashed(f"the browser died during the episode: {message}")
        return EnvError(f"browser error: {message}")

    async def _observe_safe(self, error: str | None) -> WebObservation:
        try:
            return await self._observe(error)
        except PlaywrightError as exc:
            raise self._broken(exc) from exc

    async def _observe(self, error: str | None = None) -> WebObservation:
        assert self.episode is not None and self.task is not None
        page = self.episode.page
        note = self._note()
        for attempt in range(_OBSERVE_ATTEMPTS):
            try:
                await page.wait_for_load_state("load", timeout=15_000)
                state = await self._snapshot(page)
                break
            except PlaywrightError as exc:  # a navigation replaced the document mid-evaluate: look again
                if (attempt == _OBSERVE_ATTEMPTS - 1 or "context was destroyed" not in (exc.message or "")
                        or self.episode.crashed):
                    raise
                # the next document may not have begun loading yet (an error page Chromium commits a moment
                # after a refused request): "load" of the old one would pass at once, so give it time to start
                await asyncio.sleep(0.05 * 2**attempt)
        pixels = await observe.screenshot(page, scale=self.screenshot_scale) if self._want_pixels else None
        text = observe.render(self._goal(), state["url"], state["title"], state["dom"], note=note)
        if error:
            text += f"\n\nLAST ACTION ERROR: {error}"
        return WebObservation(text=text, url=state["url"], title=state["title"], screenshot=pixels,
                              last_action_error=error)

    async def _drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            with contextlib.suppress(EnvError, PlaywrightError):
                await (await spare).close()

    def _close_soon(self, episode: EpisodeBrowser | None) -> None:
        """Close an episode's context in the background (awaited by :meth:`_finish_closing`)."""
        if episode is not None:
            previous = self._closing

            async def close_after() -> None:
                if previous is not None:
                    await previous
                await episode.close()

            self._closing = asyncio.create_task(close_after())

    async def _finish_closing(self) -> None:
        closing, self._closing = self._closing, None
        if closing is not None:
            await closing

    async def close(self) -> None:
        episode, self.episode = self.episode, None
        self._close_soon(episode)
        await self._finish_closing()
        await self._drop_spare()
        browser, self.browser = self.browser, None
        if browser is not None:
            await browser.release()


class PageState:
    """The StateView of a web-app episode: the database plus a ``page`` table for the final page."""

    def __init__(self, session: AppSession, tables: dict[str, Any], page: dict[str, str]) -> None:
        self.session, self.tables, self.page = session, tables, page

    def snapshot(self) -> dict[str, Any]:
        return self.tables

    def query(self, sql: str) -> list[dict[str, Any]]:
        if not sql.lstrip().lower().startswith(("select", "with")):
            raise ValueError("verifier queries must be read-only (SELECT/WITH)")
        conn = self.session.conn
        with self.session._lock:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS page (url TEXT, path TEXT, title TEXT, text TEXT)")
            conn.execute("DELETE FROM temp.page")
            conn.execute("INSERT INTO temp.page VALUES (:url, :path, :title, :text)", self.page)
            return [dict(r) for r in conn.execute(sql).fetchall()]


class Expected:
    def __init__(self, tables: dict[str, Any]) -> None:
        self.tables = tables

    def snapshot(self) -> dict[str, Any]:
        return self.tables


class WebAppEnv(BrowserEnv):
    """``web/<app>-vN``: see the module docstring."""

    sql_state: ClassVar[bool] = True  # rubric sql checks query its store
    has_write_actions: ClassVar[bool] = True
    tamper_agents: ClassVar[tuple[type[TamperAgent], ...]] = (DressThePage, TypeUnsent, QuoteBack)
    _expected_cache: ClassVar[OrderedDict[tuple[str, str], dict[str, Any]]] = OrderedDict()

    def __init__(self, app: str, *, screenshot: bool = False, screenshot_scale: float = 0.5, prewarm: bool = True,
                 recycle: bool = True, clock: Clock | None = None) -> None:
        super().__init__(screenshot=screenshot, screenshot_scale=screenshot_scale, prewarm=prewarm, recycle=recycle,
                         clock=clock)
        self.app = load_app(app)
        self.session: AppSession | None = None
        self.server: HttpServer | None = None

    async def _serve(self, request: Request) -> Response:
        session = self.session
        if session is None:
            return Response("no episode is running", status=503, content_type="text/plain")
        return await session.handle(request)

    async def _open_site(self, task: TaskSpec) -> str:
        old, self.session = self.session, None
        self.session = await asyncio.to_thread(self._new_session, old, task)
        if self.server is None:
            self.server = HttpServer(self._serve)
            await self.server.start()
        return self.server.origin

    def _new_session(self, old: AppSession | None, task: TaskSpec) -> AppSession:
        if old is not None:
            old.close()
        try:
            return AppSession(self.app, task.initial_state, key=task.hash)
        except sqlite3.Error as exc:
            raise EnvError(f"task {task.id}: cannot seed the {self.app.name} database: {exc}") from exc

    async def _enter(self, task: TaskSpec, episode: EpisodeBrowser) -> None:
        assert self.session is not None and self.server is not None
        username = task.initial_state.get("sign_in")
        if username:
            user = self.session.row("SELECT id FROM users WHERE username = ?", username)
            if user is None:
                raise EnvError(f"task {task.id}: sign_in names unknown user {username!r}")
            value = self.session.sign_in(user["id"]).split(";")[0].split("=", 1)[1]
            await episode.context.add_cookies([{"name": "sid", "value": value, "url": self.server.origin}])
        await episode.page.goto(self.server.origin + task.initial_state.get("start", "/"), wait_until="load")

    async def verify_context(self) -> VerifyContext:
        if self.session is None or self.task is None or self.episode is None:
            raise EnvError("verify() without an open episode")
        task, session = self.task, self.session
        page = {"url": "", "path": "", "title": "", "text": ""}
        if not self.episode.crashed:
            try:
                state = await observe.snapshot(self.episode.page)
                page = {"url": state["url"], "path": urlsplit(state["url"]).path, "title": state["title"],
                        "text": state["dom"]}
            except PlaywrightError:
                pass  # grading goes on without the page: page checks fail, the database still counts
        tables = await asyncio.to_thread(session.snapshot)
        return VerifyContext(calls=list(session.calls), final_answer=self._final_answer,
                             state=PageState(session, tables, page), expected_state=await self._expected(task),
                             initial_state=await self._expected(task, initial=True), task=task)

    async def _expected(self, task: TaskSpec, *, initial: bool = False) -> Expected | None:
        """The database the reference writes produce (or, ``initial``, the seeded one), replayed once per task."""
        writes = [] if initial else task.metadata.get("reference_writes")
        if writes is None:
            return None
        key = (self.app.name, task.hash + (":initial" if initial else ""))
        cached = self._expected_cache.get(key)
        if cached is None:
            cached = await asyncio.to_thread(replay, self.app, task.initial_state, writes, task.hash)
            self._expected_cache[key] = cached
            while len(self._expected_cache) > 512:
                self._expected_cache.popitem(last=False)
        return Expected(cached)

    async def close(self) -> None:
        await super().close()
        server, self.server = self.server, None
        if server is not None:
            await server.close()
        session, self.session = self.session, None
        if session is not None:
            await asyncio.to_thread(session.close)
