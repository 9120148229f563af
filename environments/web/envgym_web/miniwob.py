"""MiniWoB++ in envgym: the task pages of the ``miniwob`` package (MIT), served locally, graded by the page.

``web/miniwob-v1`` serves the package's ``html/`` folder from its own HTTP server on 127.0.0.1 and opens
``miniwob/<page>.html`` in a fresh context. A task names the page and a seed (``initial_state``:
``{"page": "click-button", "seed": 3}``): reset seeds the page's RNG (``Math.seedrandom``) and starts the
episode (``core.startEpisodeReal``), so a seed is one fixed instance. The goal is the page's own utterance.
The page runs its own 10-second clock (``core.EPISODE_MAX_TIME``); when the page reports the episode done
(success, failure or time out), the step that noticed it terminates the episode. Grading reads the page's
reward back (``WOB_DONE_GLOBAL``, ``WOB_RAW_REWARD_GLOBAL``) as a one-row table ``wob`` that the task's
rubric queries, e.g. ``SELECT done AND raw_reward >= 1 FROM wob``. Only the seeded instance reset started
counts: its first end is kept, and leaving the document (another page, a reload) ends the episode as a
failure, so an easier page or a fresh unseeded instance behind the START cover earns nothing.
"""

from __future__ import annotations

import asyncio
import mimetypes
import secrets
import sqlite3
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from envgym.plugin import (
    Action,
    Clock,
    Criterion,
    EnvError,
    Limits,
    RubricSpec,
    SqlCheck,
    StepResult,
    TamperAgent,
    TaskSpec,
    Verdict,
    VerifyContext,
)
from envgym_web import observe
from envgym_web.browser import EpisodeBrowser
from envgym_web.env import BrowserEnv
from envgym_web.server import HttpServer, Request, Response
from envgym_web.tamper import DressThePage, OtherMiniWobPage

# The episode is the seeded instance reset started, and only that one: reset marks the document with a
# nonce and wraps ``core.endEpisode`` so the first end is kept. A page the agent reached some other way (another
# page, a reload, the START cover's next unseeded instance) is not the task; it reads as a failed episode.
_HOOK_JS = """(nonce) => {
  window.__envgym_nonce = nonce;
  const end = core.endEpisode;
  core.endEpisode = function () {
    const open = core.EP_TIMER !== null;
    const result = end.apply(this, arguments);
    if (open && window.__envgym_first === undefined) {
      window.__envgym_first = {done: true, reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL,
                               reason: String(WOB_REWARD_REASON)};
    }
    return result;
  };
}"""
_STATE_JS = """(nonce) => {
  if (typeof core === 'undefined' || window.__envgym_nonce !== nonce) return null;
  const first = window.__envgym_first;
  const left = core.ept0 ? Math.max(0, core.EPISODE_MAX_TIME - (Date.now() - core.ept0)) : 0;
  return first ? {...first, utterance: core.getUtterance(), left_ms: 0}
               : {done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL,
                  reason: String(WOB_REWARD_REASON), utterance: core.getUtterance(), left_ms: left};
}"""
# Reset's one round trip after the page loaded: mark the document, seed and start the instance, wait (in the
# page) until the task is ready, and read the state back.
_ENTER_JS = f"""async ([nonce, seed]) => {{
  ({_HOOK_JS})(nonce);
  Math.seedrandom(seed);
  core.startEpisodeReal();
  for (let i = 0; i < 100 && !WOB_TASK_READY; i++) await new Promise((done) => setTimeout(done, 50));
  return ({_STATE_JS})(nonce);
}}"""
_LEFT = {"done": True, "reward": 0, "raw_reward": 0, "reason": "left the task page", "utterance": "", "left_ms": 0}
PASS_SQL = "SELECT done AND raw_reward >= 1 FROM wob"


def html_root() -> Path:
    return Path(str(resources.files("miniwob"))) / "html"


@cache
def pages() -> tuple[str, ...]:
    """Every MiniWoB++ task page of the installed package."""
    return tuple(sorted(p.stem for p in (html_root() / "miniwob").glob("*.html")))


def miniwob_task(page: str, seed: int, *, split: str = "test", solution: tuple[Action, ...] | None = None) -> TaskSpec:
    """The task of one seeded instance of a MiniWoB++ page, graded by the page's own reward."""
    return TaskSpec(id=f"miniwob-{page}-s{seed}", env_id="web/miniwob-v1", split=split,  # type: ignore[arg-type]
                    instruction=f"MiniWoB++ '{page}': follow the instruction shown on the page.",
                    initial_state={"page": page, "seed": seed}, limits=Limits(max_steps=20, episode_timeout_s=60),
                    verifiers=(RubricSpec(criteria=(Criterion(name="page reward", check=SqlCheck(
                        query=PASS_SQL, expected=1)),)),),
                    solution=solution, tags=("web", "miniwob", page))


_files: dict[str, bytes | None] = {}


def _read(path: str) -> bytes | None:
    if path not in _files:
        root = html_root().resolve()
        target = (root / path.lstrip("/")).resolve()
        _files[path] = target.read_bytes() if target.is_relative_to(root) and target.is_file() else None
    return _files[path]


async def serve_static(request: Request) -> Response:
    body = await asyncio.to_thread(_read, request.path)
    if body is None:
        return Response("not found", status=404, content_type="text/plain")
    kind = mimetypes.guess_type(request.path)[0] or "application/octet-stream"
    # the package's files never change: a context keeps them (and V8 its compiled scripts) from one episode to the next
    return Response(body, content_type=kind + ("; charset=utf-8" if kind.startswith("text/") or "javascript" in kind
                                               else ""), cache_control="max-age=86400")


class WobState:
    """The page's reward as a one-row table ``wob`` (done, reward, raw_reward, reason)."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.row = {k: state[k] for k in ("done", "reward", "raw_reward", "reason")}

    def snapshot(self) -> dict[str, Any]:
        return {"wob": [self.row]}

    def query(self, sql: str) -> list[dict[str, Any]]:
        conn = sqlite3.connect(":memory:")
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("CREATE TABLE wob (done INTEGER, reward REAL, raw_reward REAL, reason TEXT)")
            conn.execute("INSERT INTO wob VALUES (:done, :reward, :raw_reward, :reason)", self.row)
            return [dict(r) for r in conn.execute(sql).fetchall()]
        finally:
            conn.close()


class MiniWobEnv(BrowserEnv):
    """``web/miniwob-v1``: see the module docstring."""

    sql_state: ClassVar[bool] = True  # rubric sql checks query its store
    time_evolving: ClassVar[bool] = True  # the page's clock runs while the agent thinks
    tamper_agents: ClassVar[tuple[type[TamperAgent], ...]] = (DressThePage, OtherMiniWobPage)

    def __init__(self, *, screenshot: bool = False, screenshot_scale: float = 0.5, prewarm: bool = True,
                 recycle: bool = True, clock: Clock | None = None) -> None:
        super().__init__(screenshot=screenshot, screenshot_scale=screenshot_scale, prewarm=prewarm, recycle=recycle,
                         clock=clock)
        self.server: HttpServer | None = None
        self._utterance = ""
        self._nonce = ""
        self._last: dict[str, Any] | None = None

    def _goal(self) -> str:
        return self._utterance

    def _note(self) -> str | None:
        left = (self._last or {}).get("left_ms")
        return None if left is None else f"TIME LEFT: {left / 1000:.1f} s"

    async def _open_site(self, task: TaskSpec) -> str:
        page = task.initial_state.get("page")
        if page not in pages():
            raise EnvError(f"task {task.id}: unknown MiniWoB++ page {page!r}")
        if self.server is None:
            self.server = HttpServer(serve_static)
            await self.server.start()
        return self.server.origin

    async def _enter(self, task: TaskSpec, episode: EpisodeBrowser) -> None:
        assert self.server is not None
        state = task.initial_state
        await episode.page.goto(f"{self.server.origin}/miniwob/{state['page']}.html", wait_until="load")
        self._nonce = secrets.token_hex(16)
        self._last = None  # some pages load data before they are ready: the page waits up to 5 s
        self._keep(await episode.page.evaluate(_ENTER_JS, [self._nonce, str(state.get("seed", 0))]))
        self._utterance = self._last["utterance"]

    def _keep(self, state: dict[str, Any] | None) -> dict[str, Any]:
        """Remember the page's state; once off the task's page, coming back does not restore the episode."""
        if self._last is None or self._last["reason"] != _LEFT["reason"]:
            self._last = state or _LEFT
        return self._last

    async def _snapshot(self, page: Page) -> dict[str, Any]:
        state = await observe.snapshot(page, extra=(_STATE_JS, self._nonce))  # the observation reads the state
        self._keep(state.pop("extra"))
        return state

    async def _read_state(self) -> dict[str, Any]:
        assert self.episode is not None
        try:
            return self._keep(await self.episode.page.evaluate(_STATE_JS, self._nonce))
        except PlaywrightError as exc:
            if "context was destroyed" not in (exc.message or "") or self.episode.crashed:
                raise self._broken(exc) from exc
            return self._keep(None)  # the agent's action is navigating away from the task's page

    async def step(self, action: Action) -> StepResult:
        result = await super().step(action)  # its observation read the page's state (``_snapshot``)
        if result.terminated:
            return result
        if self._last is not None and self._last["done"]:  # the task's page says it is over; the kernel grades
            return StepResult(result.observation, 0.0, True, False, result.info)
        return result

    async def verify_context(self) -> VerifyContext:
        if self.episode is None or self.task is None:
            raise EnvError("verify() without an open episode")
        # an end is final (the first one is kept), so a state that says done needs no second look
        done = self._last is not None and self._last["done"]
        state = self._last if self.episode.crashed or done else await self._read_state()
        return VerifyContext(calls=[], final_answer=self._final_answer, task=self.task, state=WobState(state or {
            "done": False, "reward": 0, "raw_reward": 0, "reason": "no state"}))

    async def graded(self, verdict: Verdict) -> dict[str, Any]:
        state = self._last or {"done": False, "reward": 0, "raw_reward": 0, "reason": "no state"}
        return {"miniwob": WobState(state).row}  # the page's own reward row goes into the evidence

    async def close(self) -> None:
        await super().close()
        server, self.server = self.server, None
        if server is not None:
            await server.close()
