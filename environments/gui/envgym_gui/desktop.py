"""The host side of one desktop container: :class:`Desktop` drives its X session through two daemons.

The image (``sandboxes/desktop``) holds ``/opt/envgym/desktop/desktopd.py``; :meth:`Desktop.start` opens it twice
as kernel channels (:meth:`envgym.sandbox.Sandbox.channel`, JSON lines over one ``docker exec`` each):

* as **root**: input (xdotool), screenshots (XGetImage + PNG), the window list, the clipboard, directory
  listings. The desktop's user (whose terminal the agent may open) cannot kill or fake it;
* as **user** (uid 1000): the session itself (Xvfb ``:0`` at a fixed size, the D-Bus session bus, the AT-SPI
  bus, openbox), the accessibility tree and element actions (AT-SPI needs the user's bus), launching apps,
  writing the user's files (capabilities are dropped in every envgym container: root cannot chown).

::

    desktop = Desktop(sandbox)                  # a started DockerSandbox of tag_for("desktop"), PROFILE
    await desktop.start()                       # idempotent; about half a second
    await desktop.write_files({"/home/user/a.txt": b"hi"})
    await desktop.launch("editor", "/home/user/a.txt")
    win = await desktop.wait_window("a.txt")
    png = await desktop.screenshot()
    await desktop.key("ctrl+s")

``start(prewarm_apps=("calc",))`` starts LibreOffice without a window while the desktop waits in a pool, so
that opening a document at reset takes its own time only, not LibreOffice's cold start (several seconds).

Errors: the agent's bad input (unknown key name, off-screen coordinates, an element that is gone, a 1 MB
``type``) is :class:`ActionError`; the X server or the session dead while the container runs (the agent
killed it) is :class:`DesktopGone`, also when it died *during* a call, which then failed for a reason the daemon
could not name (``kill -9 -1`` typed into the terminal ends the X server while xdotool still sends the Return:
"X connection broken"; the root daemon is asked whether the X server still answers before such a failure is
called the environment's :class:`DesktopError`); the container dead is the kernel's
:class:`~envgym.sandbox.SandboxCrashed` (infrastructure). Files are read for grading with the sandbox's
``copy_out`` (root's session helper, validated by tarsafe), never through a process the user could have replaced.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym.plugin import EnvError
from envgym.plugin.sandbox import (
    WRITABLE,
    Channel,
    ChannelClosed,
    Sandbox,
    SandboxCrashed,
    SandboxError,
    SandboxFileNotFound,
    SandboxProfile,
)
from envgym_gui.apps import EXTRA_APPS

__all__ = ["APPS", "HEIGHT", "PROFILE", "WIDTH", "ActionError", "AppExited", "Desktop", "DesktopError",
           "DesktopGone", "Element", "Window", "WindowTimeout"]

WIDTH, HEIGHT = 1280, 720
DAEMON = "/opt/envgym/desktop/desktopd.py"
USER = "user"
HOME = "/home/user"
RUNTIME = "/tmp/runtime-user"
SESSION_ENV = {"DISPLAY": ":0", "HOME": HOME, "XDG_RUNTIME_DIR": RUNTIME,
               "DBUS_SESSION_BUS_ADDRESS": f"unix:path={RUNTIME}/bus", "LANG": "C.UTF-8"}
"""What both daemons are started with (the daemon holds the full session environment itself)."""
BASE_APPS = ("editor", "files", "terminal", "calc", "writer", "image")
"""The desktop image's own apps (mousepad, pcmanfm, xterm, LibreOffice Calc / Writer, Drawing)."""
APPS = BASE_APPS + tuple(EXTRA_APPS)
"""The app keys :meth:`Desktop.launch` takes: the image's own, then those of images built FROM it
(:mod:`envgym_gui.apps`)."""
PREWARM_APPS = ("calc", "writer")
"""Apps :meth:`Desktop.start` can start ahead, windowless (one LibreOffice process serves both)."""
MAX_READ = 16 << 20
CALL_TIMEOUT_S = 30.0
CATCH_UP_S = 3.0
"""Longest a key press waits for LibreOffice to have handled it (:meth:`Desktop.key`); then the next goes anyway
(a LibreOffice the agent stopped never catches up)."""

PROFILE = SandboxProfile(
    name="desktop",
    memory="1g",
    cpus=1.0,
    pids_limit=512,
    nofile=4096,
    tmpfs={**WRITABLE, "/tmp": "rw,exec,nosuid,size=160m,mode=1777", "/work": "rw,exec,nosuid,size=16m,mode=1777",
           "/home/user": "rw,exec,nosuid,size=192m,mode=755,uid=1000,gid=1000"},
    disk="512m",
    hostname="desktop",
)
"""The desktop container: DEFAULT's hardening (network none, read-only root, no capabilities, labels) with a
tmpfs home for ``user`` (the image's home is copied in: the LibreOffice profile, GTK settings), more pids
(LibreOffice's threads) and open files, and a fixed hostname (a terminal's prompt shows it: the same state must
give the same screenshot in every container). Memory 1 GiB (a desktop with Calc open uses about 300 MiB)."""


class DesktopError(EnvError):
    """Root of the desktop's own errors (the environment's, unless a subclass says otherwise)."""


class ActionError(DesktopError, ValueError):
    """The agent's input was invalid (unknown key name, off-screen point, stale element id, text too long)."""

    blame = "agent"


class DesktopGone(DesktopError):
    """The X server or the user's session died while the container still runs (the agent's doing)."""

    blame = "agent"


class WindowTimeout(DesktopError, TimeoutError):
    """:meth:`Desktop.wait_window` saw no matching window in time."""


class AppExited(WindowTimeout):
    """:meth:`Desktop.wait_window` given the launched app's pid: the app ended and no matching window came
    (the message carries the app's log)."""


@dataclass(frozen=True)
class Window:
    """A top-level window (a ``_NET_CLIENT_LIST`` entry that is mapped); x, y, w, h on the screen."""

    id: int
    title: str
    wm_class: str
    pid: int | None
    focused: bool
    x: int
    y: int
    w: int
    h: int


@dataclass(frozen=True)
class Element:
    """An accessibility node. ``id`` is its child-index path from the AT-SPI desktop (``"2.0.1.3"``): the same
    for the same UI state, and what :meth:`Desktop.element_action` takes. ``bbox`` is x, y, w, h on the screen;
    ``text`` the first characters of an editable or text node."""

    id: str
    role: str
    name: str
    states: tuple[str, ...]
    bbox: tuple[int, int, int, int] | None
    depth: int
    text: str | None = None

    def line(self) -> str:
        """The element as one line of the agent's text form: ``[id] role "name" (states)``."""
        name = f' "{self.name[:120]}"' if self.name else ""
        states = f" ({', '.join(self.states)})" if self.states else ""
        text = f" text={self.text[:80]!r}" if self.text else ""
        return f"{'  ' * min(self.depth, 12)}[{self.id}] {self.role}{name}{states}{text}"


class Desktop:
    """One desktop container's X session, driven from the host; see the module docstring."""

    def __init__(self, sandbox: Sandbox, *, width: int = WIDTH, height: int = HEIGHT) -> None:
        self.sandbox, self.width, self.height = sandbox, width, height
        self._root: Channel | None = None
        self._user: Channel | None = None
        self._starting = asyncio.Lock()
        self.started = False
        self.start_seconds: float | None = None
        """How long the session took to come up inside the container (the daemon's own clock)."""

    # -- lifecycle ---------------------------------------------------------------------------------------------
    async def start(self, *, prewarm_apps: Iterable[str] = ()) -> None:
        """Open both daemons and bring the session up (idempotent: a running session is kept).

        ``prewarm_apps`` (``"calc"``, ``"writer"``): start LibreOffice windowless now, so that a later
        :meth:`launch` of a document opens in a fraction of its cold start.
        """
        async with self._starting:
            if self._user is None:
                self._user = await self.sandbox.channel(["python3", "-u", DAEMON, "user"], user=USER,
                                                        env=SESSION_ENV, cwd=HOME)
            reply = await self._call(self._user, {"op": "start_session", "width": self.width,
                                                  "height": self.height}, timeout=CALL_TIMEOUT_S)
            self.start_seconds = reply.get("seconds")
            if self._root is None:
                self._root = await self.sandbox.channel(["python3", "-u", DAEMON, "root"], env=SESSION_ENV,
                                                        cwd="/")
            apps = list(prewarm_apps)
            if apps:
                unknown = [a for a in apps if a not in PREWARM_APPS]
                if unknown:
                    raise ValueError(f"cannot prewarm {unknown}; only {PREWARM_APPS}")
                await self._call(self._user, {"op": "prewarm", "apps": apps}, timeout=CALL_TIMEOUT_S)
            self.started = True

    async def close(self) -> None:
        """Close both daemon channels (the sandbox's owner stops the container)."""
        for channel in (self._root, self._user):
            if channel is not None:
                with contextlib.suppress(SandboxError):
                    await channel.close()
        self._root = self._user = None
        self.started = False

    async def alive(self) -> bool:
        """Whether the container, the X server and the root daemon are all up."""
        if not await self.sandbox.alive() or self._root is None:
            return False
        try:
            return bool((await self._call(self._root, {"op": "ping"}, timeout=10)).get("x"))
        except (DesktopError, SandboxError):
            return False

    # -- calls -------------------------------------------------------------------------------------------------
    async def _call(self, channel: Channel | None, request: Mapping[str, Any], *,
                    timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:  # noqa: ASYNC109 - the request's own deadline
        if channel is None:
            raise DesktopError("the desktop is not started (call start() first)")
        try:
            reply = await channel.call(request, timeout=timeout)
        except ChannelClosed as exc:  # the container runs (else SandboxCrashed), the daemon does not
            raise DesktopGone(f"the desktop daemon ended: {exc}") from exc
        if reply.get("ok"):
            return reply
        kind, message = reply.get("kind"), str(reply.get("error", reply))
        if kind == "action":
            raise ActionError(message)
        if kind == "gone":
            if not await self.sandbox.alive():  # the container itself died: the kernel's crash, not the agent's
                raise SandboxCrashed(f"the desktop container died: {message}")
            raise DesktopGone(message)
        if kind == "timeout":
            raise WindowTimeout(message)
        if kind == "exited":
            raise AppExited(message)
        if await self._x_died():
            raise DesktopGone(f"the X server died during {request.get('op')}: {message}")
        raise DesktopError(f"{request.get('op')}: {message}")

    async def _x_died(self) -> bool:
        """After a call failed for a reason the daemon could not name: whether the X server is gone while the
        container runs (the root daemon, which the user cannot kill, says so). Unknown (no answer) is False: the
        failure stays the environment's."""
        if self._root is None:
            return False
        try:
            reply = await self._root.call({"op": "ping"}, timeout=10)
        except (SandboxError, TimeoutError):
            return False
        return bool(reply.get("ok")) and not reply.get("x")

    async def _root_call(self, request: Mapping[str, Any], *, timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:  # noqa: ASYNC109
        return await self._call(self._root, request, timeout=timeout)

    async def _user_call(self, request: Mapping[str, Any], *, timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:  # noqa: ASYNC109
        return await self._call(self._user, request, timeout=timeout)

    # -- files -------------------------------------------------------------------------------------------------
    async def write_files(self, files: Mapping[str, bytes], *, owner: str = "user") -> None:
        """Create or replace each file (parents made), owned by ``owner`` (``"user"`` or ``"root"``)."""
        if owner not in ("user", "root"):
            raise ValueError(f"owner must be 'user' or 'root', got {owner!r}")
        if not files:
            return
        payload = {path: base64.b64encode(data).decode() for path, data in files.items()}
        call = self._user_call if owner == "user" else self._root_call
        await call({"op": "write_files", "files": payload}, timeout=60)

    async def read_file(self, path: str, *, max_bytes: int = MAX_READ) -> bytes | None:
        """The file's bytes, copied out by the sandbox (tarsafe); None when absent, unreadable or not a file."""
        with tempfile.TemporaryDirectory(prefix="envgym-desktop-") as tmp:
            dest = Path(tmp) / "out"
            try:
                await self.sandbox.copy_out(path, dest, max_bytes=max_bytes)
            except SandboxFileNotFound:
                return None
            except SandboxError as exc:
                if "PermissionError" in str(exc) or "IsADirectory" in str(exc):
                    return None
                raise
            return await asyncio.to_thread(lambda: dest.read_bytes() if dest.is_file() and not dest.is_symlink()
                                           else None)

    async def share_config(self) -> int:
        """Make the user's ``~/.config`` readable to :meth:`read_file` (the apps write their settings 0600;
        LibreOffice rewrites its profile so while it runs); returns how many entries were opened."""
        return int((await self._user_call({"op": "share_config"})).get("opened", 0))

    async def list_dir(self, path: str) -> list[str] | None:
        """The names in the folder ``path``, sorted (dotfiles included); None when it is absent."""
        return (await self._root_call({"op": "list_dir", "path": path})).get("names")

    # -- apps and windows --------------------------------------------------------------------------------------
    async def launch(self, app: str, path: str | None = None, *, timeout: float = 60.0) -> int:  # noqa: ASYNC109 - how long LibreOffice may load
        """Start ``app`` (a key of :data:`APPS`) as the user, detached, on ``path``; returns its pid.

        Calc and Writer on a desktop started with ``prewarm_apps``: the document goes to the running
        LibreOffice over its own pipe, and this returns once LibreOffice says it is loaded (its pid then), or
        raises :class:`WindowTimeout` after ``timeout`` seconds."""
        reply = await self._user_call({"op": "launch", "app": app, "path": path, "timeout": timeout},
                                      timeout=timeout + 10)
        return int(reply["pid"])

    async def windows(self) -> list[Window]:
        reply = await self._root_call({"op": "windows"})
        return [Window(**w) for w in reply.get("windows", [])]

    async def wait_window(self, title_regex: str, timeout: float = 10.0, *, settle: float = 0.25,  # noqa: ASYNC109 - how long to wait
                          app: str | None = None, pid: int | None = None) -> Window:
        """The first window whose title matches ``title_regex`` (``re.search``); else :class:`WindowTimeout`.

        ``settle``: once it is there, also wait (within ``timeout``) until the screen has not changed for that
        many seconds, so that the next screenshot shows the window painted; 0 returns as soon as it is mapped.
        ``app`` and ``pid`` (what :meth:`launch` started): :class:`AppExited` a few seconds after that process
        ended with no matching window, rather than waiting out ``timeout``; either error carries the app's log.
        """
        try:
            reply = await self._root_call({"op": "wait_window", "title": title_regex, "timeout": timeout,
                                           "settle": settle, "app": app, "pid": pid}, timeout=timeout + 10)
        except WindowTimeout as exc:
            if app is None:
                raise
            try:
                log = (await self._user_call({"op": "app_log", "app": app}, timeout=10)).get("log", "")
            except (DesktopError, SandboxError) as why:
                log = f"(not read: {why})"
            raise type(exc)(f"{exc}; its log: {log!r}") from None
        return Window(**reply["window"])

    async def wait_idle(self, quiet: float = 0.3, timeout: float = 5.0, *, strict: bool = False) -> bool:  # noqa: ASYNC109 - how long to wait
        """Wait until the screen has not changed and the apps were idle for ``quiet`` seconds (``strict``: and
        none of the user's threads runnable); False when ``timeout`` passed first."""
        reply = await self._root_call({"op": "settle", "quiet": quiet, "timeout": timeout, "strict": strict},
                                      timeout=timeout + 10)
        return bool(reply.get("settled"))

    async def still_screenshot(self, quiet: float = 0.3, timeout: float = 5.0, *,  # noqa: ASYNC109 - how long to wait
                               strict: bool = False) -> bytes | None:
        """:meth:`wait_idle`, returning the still screen as a PNG (what :meth:`screenshot` would give then), or
        None when ``timeout`` passed first."""
        reply = await self._root_call({"op": "settle", "quiet": quiet, "timeout": timeout, "strict": strict,
                                       "shot": True}, timeout=timeout + 10)
        return base64.b64decode(reply["data"]) if reply.get("settled") else None

    async def office_quiet(self, timeout: float = 30.0, *, horizon_ms: int = 1000, hold: float = 0.15) -> bool:  # noqa: ASYNC109 - how long to wait
        """Wait until LibreOffice has no timer due within ``horizon_ms`` and runs nothing (its own state: the
        main loop's sleep, read by the user's daemon), in the same sleep for ``hold`` seconds; False when
        ``timeout`` passed first or none runs."""
        reply = await self._user_call({"op": "office_quiet", "timeout": timeout, "horizon_ms": horizon_ms,
                                       "hold": hold}, timeout=timeout + 10)
        return bool(reply.get("quiet"))

    async def office_fast_forward(self, budget_ms: int = 2000, timeout: float = 30.0) -> dict[str, Any]:  # noqa: ASYNC109 - how long to wait
        """Run LibreOffice's timers due within ``budget_ms`` of its clock without waiting for them: each time it
        sleeps with nothing else in flight, its clock (``sandboxes/desktop/officeclock``) moves to its next
        timer. ``{"clock": bool, "moved_ms": ..., "timers": ..., "seconds": ...}``; ``clock`` is false when
        LibreOffice runs without that clock (an image without it, or none runs): then nothing was done."""
        return await self._user_call({"op": "office_fast_forward", "budget_ms": budget_ms, "timeout": timeout},
                                     timeout=timeout + 10)

    async def clipboard(self) -> str:
        return str((await self._root_call({"op": "clipboard"})).get("text", ""))

    # -- screen and input --------------------------------------------------------------------------------------
    async def screenshot(self, scale: float = 1.0, fmt: str = "png") -> bytes:
        """The screen as an encoded image (PNG, lossless: the same pixels give the same bytes; or JPEG)."""
        reply = await self._root_call({"op": "screenshot", "scale": scale, "fmt": fmt})
        return base64.b64decode(reply["data"])

    async def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        await self._root_call({"op": "click", "x": x, "y": y, "button": button, "count": count})

    async def move(self, x: int, y: int) -> None:
        await self._root_call({"op": "move", "x": x, "y": y})

    async def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        await self._root_call({"op": "drag", "x1": x1, "y1": y1, "x2": x2, "y2": y2})

    async def scroll(self, x: int, y: int, direction: str, amount: int = 3) -> None:
        await self._root_call({"op": "scroll", "x": x, "y": y, "direction": direction, "amount": amount})

    async def type_text(self, text: str) -> None:
        await self._root_call({"op": "type", "text": text}, timeout=CALL_TIMEOUT_S + len(text) * 0.05)

    async def key(self, keys: str) -> None:
        """xdotool key syntax: ``"ctrl+s"``, ``"ctrl+a Delete"``; an unknown key name is an :class:`ActionError`
        (and then no key is pressed). Each combination is handled before the next is sent
        (:meth:`_caught_up`); the call returns once the last one is."""
        combos = keys.split() if isinstance(keys, str) else []
        if len(combos) > 1:  # every name checked before any key goes out
            combos = (await self._root_call({"op": "key", "keys": keys, "send": False}))["keys"]
        for combo in combos or [keys]:
            await self._root_call({"op": "key", "keys": combo})
            await self._caught_up()

    async def _caught_up(self) -> None:
        """Until LibreOffice (when it runs) has handled the input sent so far, :data:`CATCH_UP_S` at most. It
        runs a shortcut (``ctrl+End``) from an event it posts to itself after the key press: a key sent
        meanwhile, which a CPU-starved LibreOffice reads in the same go, overtook it (``ctrl+End Return``
        split the first paragraph, then went to the end). Other apps handle keys as they come."""
        await self._user_call({"op": "office_caught_up", "timeout": CATCH_UP_S}, timeout=CATCH_UP_S + 10)

    async def pointer(self) -> tuple[int, int]:
        """Where the pointer is on the screen."""
        reply = await self._root_call({"op": "pointer"})
        return int(reply["x"]), int(reply["y"])

    async def mouse_button(self, x: int, y: int, *, down: bool, button: str = "left") -> None:
        """Press (``down``) or release ``button`` at (x, y), and leave it so (a drag in several steps)."""
        await self._root_call({"op": "mouse_button", "x": x, "y": y, "button": button, "down": down})

    async def key_state(self, keys: str, *, down: bool) -> None:
        """Press (``down``) or release key combinations and leave them so (a shift-click in several steps)."""
        await self._root_call({"op": "key_state", "keys": keys, "down": down})
        await self._caught_up()

    async def hold_key(self, keys: str, seconds: float) -> None:
        await self._root_call({"op": "hold_key", "keys": keys, "seconds": seconds}, timeout=CALL_TIMEOUT_S + 10)

    # -- accessibility -----------------------------------------------------------------------------------------
    async def a11y_tree(self, max_nodes: int = 400) -> list[Element]:
        """The showing accessibility nodes of every app, depth first, at most ``max_nodes``."""
        reply = await self._user_call({"op": "a11y", "max_nodes": max_nodes}, timeout=120)
        return [Element(id=e["id"], role=e["role"], name=e["name"], states=tuple(e["states"]),
                        bbox=tuple(e["bbox"]) if e.get("bbox") else None, depth=e["depth"], text=e.get("text"))
                for e in reply.get("elements", [])]

    async def element_action(self, element_id: str, action: str = "click", text: str | None = None) -> None:
        """``click`` (the element's own action, else a click at its centre), ``focus`` or ``set_text``."""
        if action not in ("click", "focus", "set_text"):
            raise ActionError(f"element action must be click, focus or set_text, got {action!r}")
        reply = await self._user_call({"op": "element_action", "id": element_id, "action": action, "text": text})
        if not reply.get("done"):
            center = reply.get("center")
            if not center:
                raise ActionError(f"element {element_id} cannot be {action}ed: it has no action and no extent")
            await self.click(*center)
