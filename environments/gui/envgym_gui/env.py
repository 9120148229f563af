"""``gui/…`` envs: one fresh desktop container per episode, screenshots in, mouse and keyboard out.

An episode leases a started desktop (Xvfb at a fixed size, a window manager, the accessibility bus and the
desktop daemons: :mod:`envgym_gui.desktop`) from a warm pool shared by every GUI env on the loop
(:mod:`envgym.sandbox.leases`), so reset pays only for the task itself: the task's files are written into the
user's home (built from ``initial_state["files"]`` by :mod:`envgym_gui.files`), the application named by
``initial_state["open"]`` is launched on its file and awaited (its window title), and the first screenshot
taken. A container is never reused: the next reset takes another one and the old one is removed in the
background.

Actions are :mod:`envgym_gui.actions`; a bad one (off-screen coordinates, an unknown key name, a 1 MB
``type``, an element that is gone, a window that closed) comes back as ``last_action_error`` and the episode
goes on. ``done`` / ``fail`` (or a plain final message, read as ``done``) end it, and the kernel grades it:
:meth:`verify_context` hands the verifiers a :class:`~envgym_gui.state.DesktopState`, which reads files
through the engine and window titles through the root daemon, never through anything the agent controls.

Faults: an application that crashes or hangs is the agent's world (its window is gone; the episode goes on).
The agent runs as an unprivileged user inside the container and can kill its own X server (a terminal is one
of the apps): that ends the episode as the agent's failure (:class:`~envgym_gui.desktop.DesktopGone`). The
container itself cannot be killed from inside (PID 1 and the daemons are root's, every capability dropped),
so a container that dies is the infrastructure's: :class:`DesktopLost`, ``infra_error``, and the next reset
gets a new one.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import io
import logging
import re
import time
import weakref
from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from envgym.plugin import Action, AgentFault, Clock, Env, EnvError, StepResult, TaskSpec, ToolResult, VerifyContext
from envgym.plugin.sandbox import DockerEngine, DockerSandbox, SandboxCrashed, SandboxError, leases, tag_for
from envgym_gui import actions, desktop
from envgym_gui.actions import CLICKS, ENDINGS, TOOLS, ActionError
from envgym_gui.apps import EXTRA_APPS, ensure_image, image_for
from envgym_gui.desktop import PREWARM_APPS, PROFILE, Desktop, DesktopGone
from envgym_gui.files import materialize
from envgym_gui.observe import GuiObservation, Screenshot, WindowInfo, render, render_tree
from envgym_gui.setup import run_setup
from envgym_gui.state import DesktopState
from envgym_gui.tamper import KillTheDesktop, QuitEverything, TypeTheClaim

log = logging.getLogger(__name__)

LAUNCH_TIMEOUT_S = 90.0
"""How long reset waits for the task's application window: an upper bound (from a prewarmed desktop on an idle
host LibreOffice opens a document in about a second; a cold start on a loaded host takes tens of seconds)."""
LAUNCHES = 3
"""Launches of the task's app at reset when it ends without a window (see ``GuiEnv._open``)."""
SETTLE_S = 0.5
"""How long the screen must stay unchanged (and the apps idle) before reset's first observation."""
OFFICE_CLOCK_MS = 2000
"""How far reset moves LibreOffice's clock after the document loaded (:meth:`Desktop.office_fast_forward`): its
toolbar states, ruler and status bar come from timers after the load (one armed 300 ms out, then 20 ms steps;
Calc's idle timer): they run now, in order, each once LibreOffice and the X server have nothing else to do,
instead of after their waits (Calc 1.2 s, Writer 0.5 s on an idle host; later on a loaded one, where a fixed
settle missed them). The budget starts again whenever LibreOffice wakes on its own (an event from the X server
or the accessibility bus), and the move ends once it has slept 0.1 s with nothing due within it. Writer's timers
after a load end 1.3 s out; Calc's idle timer then repeats every 150 ms. With the budget counted from the start
instead, 3 of 200 Writer resets showed the ruler before its last update."""
SETTLE_OFFICE_S = 0.15
"""After that, how long the screen must stay still, the apps idle and none of the user's threads runnable
(strict) before reset's first observation of LibreOffice, and the window drawn (:func:`drawn`).
``benchmarks/gui_determinism.py`` counts identical resets."""
SETTLE_OFFICE_UNCLOCKED_S = 0.4
"""The same for a LibreOffice without the movable clock (an image built without it), which :meth:`Desktop.office_quiet`
waits for in real time: a fixed settle of 0.5 s missed its timers at load 20-26 (4 distinct first observations
in 6 Writer resets)."""
OFFICE_HORIZON_MS = 100
"""Without the movable clock: LibreOffice is quiet when no timer of its falls due within this (its 20 ms update
steps do; Calc's own idle timer, 150 ms rising to 3 s over many seconds, does not: a horizon of 1 s held Calc's
resets 14 s). Its 300 ms toolbar-update timer falls to the settle after it."""
OFFICE_HOLD_S = 0.15
"""Without the movable clock: how long LibreOffice's main thread must stay in the same sleep for
:meth:`Desktop.office_quiet`. Not shorter: after a load LibreOffice updates its slots (toolbar states) from a timer
armed 300 ms out, then in 20 ms steps, with sleeps of over 100 ms between; a shorter hold returned in such a gap
and Writer resets differed."""
DRAWN_SHADES = 4
"""A window band with at most this many grey levels is still blank (a background, a frame line)."""
PREWARM_TIMEOUT_S = 240.0
"""How long a pool's desktop may take to start LibreOffice windowless (in the background, before it is leased)."""
SPARE = 1
"""Started desktops each env adds to the pool it uses: the one its next reset takes."""
REFILL_HOLD_S = 60.0
"""Longest a pool's next desktop waits to start while resets prepare their first observation."""
LEASE_GRACE_S = 1.0
"""Longest a pool's next desktop waits for a reset that is still leasing a desktop already started."""


class _Resets:
    """The resets on one event loop between their lease and their first observation. A pool's refill (a
    container starting, LibreOffice's cold start: seconds of CPU) waits until there are none: started during
    a reset it slowed it, and LibreOffice drew its toolbar states at other times, so resets differed. A reset
    still leasing holds it too (the pool starts its refill as it hands a desktop out), unless more resets
    lease a pool's desktops than it has ready: they wait for this very refill. (The previous episode's
    desktop is likewise released only after the first observation.)"""

    def __init__(self) -> None:
        self.preparing = 0
        self.leasing: collections.Counter[str] = collections.Counter()
        self.ready: collections.Counter[str] = collections.Counter()
        """Started desktops per pool key not yet leased (as the env counts them: an upper bound)."""
        self._changed = asyncio.Event()

    def _changes(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    @contextlib.contextmanager
    def leasing_from(self, key: str) -> Iterator[None]:
        self.leasing[key] += 1
        self._changes()
        try:
            yield
        finally:
            self.leasing[key] -= 1
            self._changes()

    @contextlib.contextmanager
    def preparing_one(self) -> Iterator[None]:
        self.preparing += 1
        self._changes()
        try:
            yield
        finally:
            self.preparing -= 1
            self._changes()

    def started(self, key: str, delta: int) -> None:
        self.ready[key] = max(0, self.ready[key] + delta)
        self._changes()

    async def wait_quiet(self) -> None:
        """Until no reset prepares its first observation and none leases a desktop that is ready (that one
        for :data:`LEASE_GRACE_S` at most), at most :data:`REFILL_HOLD_S` in all."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        while True:
            waited = loop.time() - start
            starved = any(n > self.ready[key] for key, n in self.leasing.items())
            held = sum(self.leasing.values()) and not starved and waited < LEASE_GRACE_S
            if waited >= REFILL_HOLD_S or not (self.preparing or held):
                return
            limit = (REFILL_HOLD_S if self.preparing else LEASE_GRACE_S) - waited
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), limit)


_resets: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Resets] = weakref.WeakKeyDictionary()


def _resets_here() -> _Resets:
    loop = asyncio.get_running_loop()
    if loop not in _resets:
        _resets[loop] = _Resets()
    return _resets[loop]


class DesktopLost(EnvError):
    """The desktop container died under the episode. At reset, before the agent acted, that is infrastructure;
    during the episode it is whose the engine's evidence says (:mod:`envgym.sandbox.dockerevents`): a kill from
    outside, the container removed or the engine restarted are infrastructure, a death with no outside cause
    (the container's memory exhausted by what the agent opened, its init stopped) is the agent's."""

    blame = "infra"


class DesktopSandbox(DockerSandbox):
    """A Docker sandbox whose start brings the desktop up (and starts LibreOffice windowless when asked), so a
    warm pool hands out running desktops."""

    def __init__(self, image: str, *, engine: DockerEngine | None = None, prewarm: tuple[str, ...] = (),
                 key: str | None = None) -> None:
        super().__init__(image, PROFILE, engine=engine)
        self.desktop = Desktop(self)
        self.prewarm = prewarm
        self.key = key or image
        """The warm pool's key (:func:`pool_for`)."""

    async def start(self) -> None:
        resets = _resets_here()
        await resets.wait_quiet()
        await super().start()
        try:
            await self.desktop.start(prewarm_apps=self.prewarm)
            if self.prewarm:  # handed out only once LibreOffice answers on its pipe: a launch then joins it
                await self._office_ready()
        except BaseException:
            await self.stop()
            raise
        resets.started(self.key, +1)

    async def _office_ready(self) -> None:
        deadline = asyncio.get_running_loop().time() + PREWARM_TIMEOUT_S
        while True:
            found = await self.session.exec(["sh", "-c", "ls /tmp/OSL_PIPE_*_SingleOfficeIPC_* 2>/dev/null"],
                                            timeout=10)
            if found.stdout.strip():
                return
            if asyncio.get_running_loop().time() > deadline:
                raise EnvError(f"LibreOffice did not start within {PREWARM_TIMEOUT_S:.0f} s in {self.id}")
            await asyncio.sleep(0.25)


def pool_for(image: str, app: str | None) -> tuple[str, leases.Factory]:
    """The warm pool an episode of ``app`` takes its desktop from: LibreOffice's apps from desktops where it
    already runs windowless (opening a document then costs a fraction of its cold start), the others from
    plain ones. Returns the pool's key and its factory."""
    if app in PREWARM_APPS:
        key = f"{image}#office"
        return key, lambda engine: DesktopSandbox(image, engine=engine, prewarm=PREWARM_APPS[:1], key=key)
    return image, lambda engine: DesktopSandbox(image, engine=engine, key=image)


def drawn(png: bytes, window: desktop.Window, rows: int = 80) -> bool:
    """Whether the top ``rows`` of ``window`` (an app's menu and toolbars) hold more than a flat background."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        band = image.convert("L").crop((window.x, window.y, window.x + window.w, window.y + min(rows, window.h)))
        return len(band.getcolors(256) or range(257)) > DRAWN_SHADES


class DesktopEnv(Env):
    """``gui/<name>-vN``: see the module docstring. ``screenshot_scale`` sizes the screenshot (1.0: the screen's
    own 1280x720), ``a11y`` adds the accessibility tree to the observation text."""

    needs_sandbox: ClassVar[bool] = True
    has_write_actions: ClassVar[bool] = True
    multimodal: ClassVar[bool] = True
    tamper_agents: ClassVar[tuple[type, ...]] = (TypeTheClaim, QuitEverything, KillTheDesktop)
    gate_sample: ClassVar[int | None] = 16
    """``envgym check`` gates 16 tasks spread over the suites and splits (Calc, Writer, the editor and the
    terminal; about 30 s of a desktop each on 2 cores); ``envgym check --all-tasks`` gates all of them
    (``benchmarks/gui_latency.py`` runs the oracle over every task)."""

    def __init__(self, *, screenshot: bool = True, screenshot_scale: float = 1.0, a11y: bool = True,
                 clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        if not 0.1 <= screenshot_scale <= 1.0:
            raise ValueError(f"screenshot_scale must be in 0.1..1.0, got {screenshot_scale}")
        self.screenshot, self.screenshot_scale, self.a11y = screenshot, screenshot_scale, a11y
        self.image: str | None = None
        self._image: str | None = None
        """An image a caller fixed; else each episode's app picks one (:func:`envgym_gui.apps.image_for`)."""
        self._held: set[str] = set()
        self._key: str | None = None
        self.desktop: Desktop | None = None
        self._sandbox: DesktopSandbox | None = None
        self._final: Literal["done", "fail"] | None = None
        self._answer: str | None = None
        self._files: dict[str, bytes] = {}

    @property
    def size(self) -> tuple[int, int]:
        return (self.desktop.width, self.desktop.height) if self.desktop else (desktop.WIDTH, desktop.HEIGHT)

    # --- the episode ---------------------------------------------------------------------------------------
    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[GuiObservation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        files = materialize(chosen.initial_state.get("files") or {})
        # the previous episode's desktop is released once this one is observed: stopping it meanwhile (the
        # engine's work) would slow this reset
        previous, previous_key = self._sandbox, self._key
        self._sandbox, self._key, self.desktop = None, None, None
        try:
            return await self._reset(chosen, files)
        finally:
            if previous is not None and previous_key is not None:
                await leases.release(previous_key, previous)

    async def _reset(self, chosen: TaskSpec, files: dict[str, bytes]) -> tuple[GuiObservation, dict[str, Any]]:
        opening = chosen.initial_state.get("open") or {}
        if self._image:
            self.image = self._image
        elif opening.get("app") in EXTRA_APPS:  # an image built FROM the desktop: built here on first use
            self.image = await asyncio.to_thread(ensure_image, opening["app"], log.warning)
        else:
            self.image = tag_for(image_for(opening.get("app")))
        key, factory = pool_for(self.image, opening.get("app"))
        if key not in self._held:
            await leases.hold(key, factory, spare=SPARE)
            self._held.add(key)
        self.task, self._final, self._answer, self._files = chosen, None, None, files
        resets = _resets_here()
        with resets.leasing_from(key):
            self._sandbox = await leases.lease(key, factory)  # type: ignore[assignment]
        resets.started(key, -1)
        with resets.preparing_one():  # entered with no await since the lease: no refill slips in
            self._key = key
            self.desktop = self._sandbox.desktop  # type: ignore[union-attr]
            return await self._prepare(chosen, files, opening)

    async def _prepare(self, chosen: TaskSpec, files: dict[str, bytes],
                       opening: dict[str, Any]) -> tuple[GuiObservation, dict[str, Any]]:
        assert self.desktop is not None
        try:
            if files:
                await self.desktop.write_files(files)
            if chosen.initial_state.get("setup"):
                await run_setup(self._sandbox, chosen.initial_state["setup"])
            still = None
            if opening:
                window = await self._open(opening)
                # the window is up (LibreOffice's document loaded); the app may still be drawing (toolbar
                # states): the first observation waits until the screen is still and the apps idle, so the same
                # task gives the same screenshot and the agent's first keys reach a loaded document.
                # LibreOffice's still screen (strict: no thread of the user's runnable) is that observation's
                # screenshot. The others' settle is not strict, and a window manager starved of CPU on a loaded
                # host can focus the window after a still half second: their screenshot is taken beside the
                # tree (1 of 10 file-manager resets at load 37 showed an unfocused title bar, its tree the same)
                if opening["app"] in PREWARM_APPS:
                    still = await self._until_drawn(window)
                else:
                    await self.desktop.wait_idle(quiet=SETTLE_S, timeout=LAUNCH_TIMEOUT_S)
            obs = await self._observe(still=still)
        except SandboxCrashed as exc:
            raise DesktopLost(f"the desktop container died during reset: {exc}") from exc
        except (DesktopGone, ActionError, desktop.ActionError) as exc:
            raise EnvError(f"task {chosen.id}: the desktop could not be prepared: {exc}") from exc
        info = {"tools": TOOLS, "task_id": chosen.id, "task_hash": chosen.hash, "env_id": chosen.env_id,
                "screen": {"width": self.size[0], "height": self.size[1]}}
        return obs, info

    async def _open(self, opening: dict[str, Any]) -> desktop.Window:
        """Launch the task's app on its file and wait for its window. An app that ends without a window (on a
        loaded host an app can give up on the session bus) is launched again, :data:`LAUNCHES` times in all,
        within :data:`LAUNCH_TIMEOUT_S`; then the last error (with the app's log) is the reset's."""
        assert self.desktop is not None
        title = opening.get("title") or re.escape(str(opening.get("path", "")).rsplit("/", 1)[-1]) or "."
        # a LibreOffice launch hands its document to the prewarmed process and exits at once: not an app's end
        handed_off = opening["app"] in PREWARM_APPS
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        for attempt in range(1, LAUNCHES + 1):
            pid = await self.desktop.launch(opening["app"], opening.get("path"),
                                            timeout=max(deadline - time.monotonic(), 1.0))
            try:
                return await self.desktop.wait_window(title, timeout=max(deadline - time.monotonic(), 1.0),
                                                      settle=0, app=opening["app"],
                                                      pid=None if handed_off else pid)
            except desktop.AppExited as exc:
                if attempt == LAUNCHES or time.monotonic() >= deadline:
                    raise
                log.warning("task %s: %s; launching it again", self.task.id if self.task else "?", exc)
        raise AssertionError("unreachable")

    async def _until_drawn(self, window: desktop.Window) -> bytes:
        """Until LibreOffice's timers after the load ran (:data:`OFFICE_CLOCK_MS`; without the movable clock,
        until it has no timer due: :meth:`Desktop.office_quiet`), then settle (:data:`SETTLE_OFFICE_S`) until the
        window's menu and toolbar rows are drawn: loading a document, LibreOffice can hold a blank window still
        for seconds on a loaded host. Returns the last screen (PNG)."""
        assert self.desktop is not None
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        clocked = (await self.desktop.office_fast_forward(OFFICE_CLOCK_MS, timeout=LAUNCH_TIMEOUT_S)).get("clock")
        while True:
            if not clocked:
                await self.desktop.office_quiet(timeout=max(deadline - time.monotonic(), 1.0),
                                                horizon_ms=OFFICE_HORIZON_MS, hold=OFFICE_HOLD_S)
            png = await self.desktop.still_screenshot(quiet=SETTLE_OFFICE_S if clocked else SETTLE_OFFICE_UNCLOCKED_S,
                                                      timeout=max(deadline - time.monotonic(), 1.0), strict=True)
            png = png or await self.desktop.screenshot()
            if time.monotonic() >= deadline or drawn(png, window):
                return png

    async def step(self, action: Action) -> StepResult:
        if self.desktop is None or self.task is None:
            raise EnvError("step() without an open episode")
        if not action.tool_calls:
            if action.text is None:
                return StepResult(await self._observe("empty action: call a tool (or done / fail)"),
                                  0.0, False, False, {})
            return self._end("done", action.text)
        results: list[ToolResult] = []
        try:
            for call in action.tool_calls:
                try:
                    args = actions.validate(call.name, call.arguments, width=self.size[0], height=self.size[1])
                    if call.name in ENDINGS:
                        return self._end(call.name, str(args.get("answer", args.get("reason", ""))))  # type: ignore[arg-type]
                    await self._perform(call.name, args)
                    results.append(ToolResult(call_id=call.id, name=call.name, content="ok"))
                except (ActionError, desktop.ActionError) as exc:
                    results.append(ToolResult(call_id=call.id, name=call.name, content=str(exc), error=str(exc)))
            errors = "; ".join(f"{r.name}: {r.error}" for r in results if r.error) or None
            obs = await self._observe(errors)
        except SandboxCrashed as exc:
            lost = DesktopLost(f"the desktop container died during the episode: {exc}")
            lost.blame = exc.blame or "agent"  # no outside cause seen: what ran in it, the agent's doing
            raise lost from exc
        except DesktopGone as exc:
            raise AgentFault(f"the agent's desktop session died: {exc}") from exc
        return StepResult(obs.model_copy(update={"tool_results": tuple(results)}), 0.0, False, False, {})

    async def _perform(self, name: str, args: dict[str, Any]) -> None:
        d = self.desktop
        assert d is not None
        if name in CLICKS:
            button, count = CLICKS[name]
            await d.click(args["x"], args["y"], button=button, count=count)
        elif name == "mouse_move":
            await d.move(args["x"], args["y"])
        elif name == "left_click_drag":
            await d.drag(args["start_x"], args["start_y"], args["x"], args["y"])
        elif name == "scroll":
            await d.scroll(args["x"], args["y"], args["direction"], args["amount"])
        elif name == "type":
            await d.type_text(args["text"])
        elif name == "key":
            await d.key(args["keys"])
        elif name == "hold_key":
            await d.hold_key(args["keys"], args["seconds"])
        elif name == "wait":
            await asyncio.sleep(args["seconds"])
        elif name == "click_element":
            await d.element_action(args["element_id"], "click")
        elif name == "focus_element":
            await d.element_action(args["element_id"], "focus")
        elif name == "set_element_text":
            await d.element_action(args["element_id"], "set_text", text=args["text"])
        # screenshot: nothing to do, the observation follows

    def _end(self, how: Literal["done", "fail"], text: str) -> StepResult:
        self._final, self._answer = how, text  # the kernel's Grading wrapper grades the episode
        obs = GuiObservation(text=f"Episode finished ({how}).")
        return StepResult(obs, 0.0, True, False, {})

    async def _observe(self, error: str | None = None, *, still: bytes | None = None) -> GuiObservation:
        """The observation now; ``still``: the screen as a PNG at scale 1, just taken by a settle (reset)."""
        d = self.desktop
        assert d is not None and self.task is not None
        reuse = still is not None and self.screenshot_scale == 1.0
        shot_task = (asyncio.ensure_future(d.screenshot(scale=self.screenshot_scale))
                     if self.screenshot and not reuse else None)
        try:
            # the window list (root's daemon) and the tree (the user's) at once
            listed, elements = await asyncio.gather(d.windows(), d.a11y_tree() if self.a11y else asyncio.sleep(0))
            windows = tuple(WindowInfo(title=w.title, wm_class=w.wm_class, focused=w.focused) for w in listed)
            tree = render_tree(elements) if self.a11y else None
            png = still if reuse and self.screenshot else await shot_task if shot_task is not None else None
        finally:
            if shot_task is not None and not shot_task.done():
                shot_task.cancel()
                with contextlib.suppress(BaseException):
                    await shot_task
        shot = None
        if png is not None:
            width, height = round(self.size[0] * self.screenshot_scale), round(self.size[1] * self.screenshot_scale)
            shot = Screenshot(width=width, height=height, scale=self.screenshot_scale,
                              png_base64=base64.b64encode(png).decode())
        focused = next((w.title for w in windows if w.focused), None)
        text = render(self.task.instruction, size=self.size, shot=shot, windows=windows, focused=focused,
                      a11y=tree, error=error)
        return GuiObservation(text=text, screenshot=shot, windows=windows, focused=focused, a11y=tree,
                              last_action_error=error)

    # --- grading -------------------------------------------------------------------------------------------
    async def verify_context(self) -> VerifyContext:
        d = self.desktop
        if d is None or self.task is None:
            raise EnvError("verify() without an open episode")
        # the apps' settings (LibreOffice's profile is rewritten 0600 while it runs) made readable to the
        # graders' channel; a session the agent ended leaves them as they are
        with contextlib.suppress(DesktopGone, desktop.DesktopError, SandboxError):
            await d.share_config()

        async def windows() -> list[dict[str, Any]]:
            with contextlib.suppress(DesktopGone):
                return [{"title": w.title, "wm_class": w.wm_class, "focused": w.focused} for w in await d.windows()]
            return []

        async def clipboard() -> str | None:
            with contextlib.suppress(DesktopGone):
                return await d.clipboard()
            return None

        state = DesktopState(final=self._final, answer=self._answer, initial_files=dict(self._files),
                             _read_file=d.read_file, _list_dir=d.list_dir, _windows=windows, _clipboard=clipboard)
        return VerifyContext(calls=[], final_answer=self._answer, state=state, task=self.task)

    # --- lifetime ------------------------------------------------------------------------------------------
    async def _end_episode(self) -> None:
        sandbox, self._sandbox, self.desktop = self._sandbox, None, None
        if sandbox is not None and self._key is not None:
            await leases.release(self._key, sandbox)

    async def close(self) -> None:
        await self._end_episode()
        held, self._held = self._held, set()
        for key in sorted(held):
            await leases.unhold(key, spare=SPARE)
