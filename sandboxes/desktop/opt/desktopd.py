"""envgym's desktop daemon: JSON lines on stdin -> one JSON line per request on stdout.

    python3 desktopd.py root     input, screenshots, windows, clipboard, listings (X clients; run as root,
                                 so the desktop's user cannot kill or fake it)
    python3 desktopd.py user     the session (Xvfb, D-Bus, AT-SPI, window manager), the accessibility tree,
                                 element actions, launching apps, writing the user's files (run as ``user``)

The first line is ``{"hello": <pid>}``. Every request ``{"op": ..., ...}`` is answered by ``{"ok": true, ...}``
or ``{"ok": false, "kind": K, "error": "..."}`` with K one of ``action`` (the caller's bad input: unknown key
name, coordinates off the screen, unknown element), ``gone`` (the X server or the session is dead),
``timeout`` (a wait ran out) or ``error`` (anything else). Standard library + python3-xlib + PIL (+ pyatspi
for the user role); Debian bookworm's Python 3.11. The session's environment is fixed (:data:`SESSION_ENV`),
so host and daemons agree on it without asking. Beside it: ``office.py`` (LibreOffice's own signals: its pipe,
its main loop's sleep, its movable clock) and ``a11y.py`` (the accessibility tree), which the user's role uses.
This file stays one module of about 800 lines: the wire protocol and the two roles' ops, each a few lines over
the X server or the session, read together.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import a11y  # beside this file (the script's folder is the first on sys.path)
import office

WIDTH, HEIGHT = 1280, 720
DISPLAY = ":0"
RUNTIME = "/tmp/runtime-user"
HOME = "/home/user"
USER_UID = 1000
SKELETON = "/opt/envgym/home"
"""The image's home (GTK settings: no blinking caret; the LibreOffice profile; the GSettings keyfile), kept
outside ``HOME``: the container mounts an empty tmpfs there, and the session copies this in before any app."""
HERE = os.path.dirname(os.path.abspath(__file__))
WM_RUNNING = f"{RUNTIME}/wm-running"
"""Made by openbox's ``--startup`` command: the window manager is in its main loop."""
SESSION_ENV = {
    "DISPLAY": DISPLAY, "HOME": HOME, "USER": "user", "LOGNAME": "user", "SHELL": "/bin/bash",
    "XDG_RUNTIME_DIR": RUNTIME, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={RUNTIME}/bus",
    "XDG_CONFIG_HOME": f"{HOME}/.config", "XDG_CACHE_HOME": f"{HOME}/.cache", "XDG_DATA_HOME": f"{HOME}/.local/share",
    "XDG_CURRENT_DESKTOP": "X-Generic", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
    "PATH": "/usr/local/bin:/usr/bin:/bin", "GDK_BACKEND": "x11", "GTK_OVERLAY_SCROLLING": "0",
    "GTK_MODULES": "gail:atk-bridge", "SAL_USE_VCLPLUGIN": "gtk3", "SAL_ACCESSIBILITY_ENABLED": "1",
    "SAL_ENABLE_FILE_LOCKING": "0", "SAL_DISABLE_JAVA": "1", "LIBGL_ALWAYS_SOFTWARE": "1",
    "GSETTINGS_BACKEND": "keyfile",
}
APPS = {
    "editor": ["mousepad"],
    "files": ["pcmanfm"],
    "terminal": ["xterm", "-fa", "DejaVu Sans Mono", "-fs", "11", "-bg", "white", "-fg", "black",
                 "-xrm", "XTerm*cursorBlink: false", "-title", "Terminal", "-e", "bash"],
    "calc": ["soffice", "--calc", "--norestore", "--nologo", "--nolockcheck"],
    "writer": ["soffice", "--writer", "--norestore", "--nologo", "--nolockcheck"],
    "image": ["drawing"],
}
"""App key -> argv; the path (a file, or for ``files``/``terminal`` a folder) is appended or is the cwd."""
FOLDER_APPS = {"terminal"}
"""Apps that take their path as the working directory, not as an argument."""
APPS_D = "/opt/envgym/desktop/apps.d"
"""An image built FROM this one adds apps with ``apps.d/<key>.json`` files: ``{"argv": [...], "folder": false}``
(the file's stem is the app key). Read once at start; a key of :data:`APPS` cannot be redefined."""


def load_extra_apps(folder: str = APPS_D) -> None:
    if not os.path.isdir(folder):
        return
    for name in sorted(os.listdir(folder)):
        key, ext = os.path.splitext(name)
        if ext != ".json" or key in APPS:
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            spec = json.load(fh)
        APPS[key] = [str(a) for a in spec["argv"]]
        if spec.get("folder"):
            FOLDER_APPS.add(key)


load_extra_apps()
PREWARM = {"calc": ["soffice", "--nodefault", "--norestore", "--nologo", "--nolockcheck"],
           "writer": ["soffice", "--nodefault", "--norestore", "--nologo", "--nolockcheck"]}
"""Apps that can be started ahead of the episode, windowless, so that opening a document is quick."""
OFFICE_CLOCK_LIB = "/usr/local/lib/envgym/officeclock.so"
"""LibreOffice's movable clock (``sandboxes/desktop/officeclock/officeclock.c``), preloaded into each ``soffice``
this daemon starts; :meth:`User.op_office_fast_forward` moves it."""
OFFICE_CLOCK = f"{RUNTIME}/office-clock"
"""The file the clock's offset is shared through (``struct shared`` of officeclock.c: offset, the main loop's poll
deadline, polls entered; int64 each); ``OFFICE_CLOCK + ".wake"`` is the FIFO that wakes the main loop."""
SYNC = ("getmouselocation",)
"""Chained after an xdotool input command: a round trip on its own X connection, so that xdotool exits only once
the X server has handled the fake input (and queued the events to the focused app); the host asks next whether
LibreOffice has handled them (``office_caught_up``)."""
MAX_TYPE = 4000
"""Longest ``type`` text (characters); longer is the caller's error."""
MAX_HOLD_S = 10.0
BUTTONS = {"left": 1, "middle": 2, "right": 3}
SCROLL = {"up": 4, "down": 5, "left": 6, "right": 7}
KEY_ALIASES = {
    "ctrl": "ctrl", "control": "ctrl", "alt": "alt", "shift": "shift", "super": "super", "meta": "meta",
    "win": "super", "cmd": "super", "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape",
    "del": "Delete", "delete": "Delete", "backspace": "BackSpace", "tab": "Tab", "space": "space",
    "pageup": "Page_Up", "pagedown": "Page_Down", "page_up": "Page_Up", "page_down": "Page_Down",
    "pgup": "Page_Up", "pgdn": "Page_Down", "home": "Home", "end": "End", "insert": "Insert", "ins": "Insert",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right", "capslock": "Caps_Lock", "menu": "Menu",
    "print": "Print", "plus": "plus", "minus": "minus",
}


class Fault(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def action_error(message: str) -> Fault:
    return Fault("action", message)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def run(argv: list[str], *, timeout: float = 10.0, data: bytes | None = None, env: dict | None = None) -> bytes:
    try:
        done = subprocess.run(argv, input=data, capture_output=True, timeout=timeout,
                              env={**SESSION_ENV, **(env or {})})
    except subprocess.TimeoutExpired:
        raise Fault("timeout", f"{argv[0]} did not finish in {timeout} s") from None
    if done.returncode != 0:
        raise Fault("error", f"{' '.join(argv[:3])} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return done.stdout


# ---------------------------------------------------------------------------------------------------------
# root role: X client
# ---------------------------------------------------------------------------------------------------------
class XClient:
    """One connection to the X server, reopened after the server restarts; a dead server is ``gone``."""

    def __init__(self) -> None:
        self._display = None
        self._keysyms: dict[str, str] | None = None

    def display(self):  # noqa: ANN201
        from Xlib import display, error

        if self._display is None:
            try:
                self._display = display.Display(DISPLAY)
            except (error.DisplayError, OSError) as exc:
                raise Fault("gone", f"the X server {DISPLAY} does not answer: {exc}") from None
        return self._display

    def drop(self) -> None:
        if self._display is not None:
            try:
                self._display.close()
            except Exception:  # noqa: BLE001 - a dead connection may fail to close
                pass
        self._display = None

    def guarded(self, fn):  # noqa: ANN001, ANN201
        """Run ``fn(display)``; a broken connection is retried once on a fresh one, then ``gone``."""
        from Xlib import error

        for attempt in (0, 1):
            try:
                return fn(self.display())
            except (error.ConnectionClosedError, BrokenPipeError, ConnectionError, OSError) as exc:
                self.drop()
                if attempt:
                    raise Fault("gone", f"the X server {DISPLAY} went away: {exc}") from None
        raise AssertionError("unreachable")

    # -- screen -----------------------------------------------------------------------------------------------
    def grab(self) -> tuple[int, int, bytes]:
        """The whole screen: width, height and its pixels (BGRX)."""
        from Xlib import X

        def grab(d):  # noqa: ANN001, ANN202
            root = d.screen().root
            geo = root.get_geometry()
            return geo.width, geo.height, root.get_image(0, 0, geo.width, geo.height, X.ZPixmap, 0xFFFFFFFF).data

        return self.guarded(grab)

    def screenshot(self, scale: float, fmt: str, quality: int) -> bytes:
        return self.encode(*self.grab(), scale, fmt, quality)

    @staticmethod
    def encode(w: int, h: int, data: bytes, scale: float = 1.0, fmt: str = "png", quality: int = 80) -> bytes:
        from PIL import Image

        image = Image.frombuffer("RGB", (w, h), data, "raw", "BGRX", 0, 1)
        if scale != 1.0:
            image = image.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.BILINEAR)
        out = io.BytesIO()
        if fmt == "png":
            image.save(out, "PNG", compress_level=1)
        else:
            image.save(out, "JPEG", quality=quality)
        return out.getvalue()

    def size(self) -> tuple[int, int]:
        return self.guarded(lambda d: (d.screen().width_in_pixels, d.screen().height_in_pixels))

    # -- keys -------------------------------------------------------------------------------------------------
    def keysym_names(self) -> dict[str, str]:
        """lower-case keysym name -> its canonical spelling, for every name python-xlib knows."""
        if self._keysyms is None:
            from Xlib import XK

            for group in ("xf86", "latin2", "latin3", "latin4", "greek", "cyrillic", "technical", "publishing",
                          "special", "currency"):
                try:
                    XK.load_keysym_group(group)
                except Exception:  # noqa: BLE001,S112 - a group this python-xlib lacks
                    continue
            self._keysyms = {}
            for name in dir(XK):
                if name.startswith("XK_"):
                    self._keysyms.setdefault(name[3:].lower(), name[3:])
        return self._keysyms

    def key_name(self, name: str, combo: str) -> str:
        """The xdotool spelling of one key of a combo, or an ``action`` fault naming it."""
        from Xlib import XK

        if not name:
            raise action_error(f"empty key name in {combo!r}")
        if name.lower() in KEY_ALIASES:
            return KEY_ALIASES[name.lower()]
        if XK.string_to_keysym(name):
            return name
        if len(name) == 1:
            code = ord(name)
            if 0x20 <= code < 0x7F or 0xA0 <= code <= 0xFF:
                canonical = XK.keysym_to_string(code)
                if canonical:
                    return canonical
            if code >= 0xA0:
                return f"U{code:04X}"
        canonical = self.keysym_names().get(name.lower())
        if canonical:
            return canonical
        if re.fullmatch(r"[Ff]([1-9]|[12][0-9]|3[0-5])", name):
            return name.upper()
        raise action_error(f"unknown key name {name!r} in {combo!r} (xdotool names: Return, ctrl+s, "
                           "Page_Down, F5, alt+Tab ...)")

    def combos(self, keys: str) -> list[str]:
        if not isinstance(keys, str) or not keys.strip():
            raise action_error("no keys given")
        out = []
        for combo in keys.split():
            parts = combo.split("+")
            if combo.endswith("++"):  # ctrl++ : the plus key
                parts = [*combo[:-2].split("+"), "plus"]
            out.append("+".join(self.key_name(p, combo) for p in parts))
        if len(out) > 50:
            raise action_error(f"{len(out)} key combinations in one call; at most 50")
        return out

    # -- windows ----------------------------------------------------------------------------------------------
    def windows(self) -> list[dict]:
        from Xlib import X, Xatom

        def collect(d):  # noqa: ANN001, ANN202
            root = d.screen().root
            atom = d.intern_atom
            clients = root.get_full_property(atom("_NET_CLIENT_LIST"), Xatom.WINDOW)
            active = root.get_full_property(atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
            active_id = int(active.value[0]) if active and len(active.value) else 0
            found = []
            for wid in (clients.value if clients else []):
                win = d.create_resource_object("window", int(wid))
                try:
                    name = win.get_full_property(atom("_NET_WM_NAME"), atom("UTF8_STRING"))
                    title = name.value.decode("utf-8", "replace") if name else (win.get_wm_name() or "")
                    if isinstance(title, bytes):
                        title = title.decode("latin-1")
                    klass = win.get_wm_class()
                    pid = win.get_full_property(atom("_NET_WM_PID"), Xatom.CARDINAL)
                    attrs = win.get_attributes()
                    geo = win.get_geometry()
                    pos = win.translate_coords(root, 0, 0)
                except Exception:  # noqa: BLE001,S112 - the window closed while it was read
                    continue
                if attrs.map_state != X.IsViewable:
                    continue
                found.append({"id": int(wid), "title": str(title), "wm_class": klass[1] if klass else "",
                              "pid": int(pid.value[0]) if pid else None, "focused": int(wid) == active_id,
                              "x": -pos.x, "y": -pos.y, "w": geo.width, "h": geo.height})
            return found

        return self.guarded(collect)

    def alive(self) -> bool:
        try:
            self.guarded(lambda d: d.screen().root.get_geometry())
        except Fault:
            return False
        return True


class Root:
    def __init__(self) -> None:
        self.x = XClient()

    def xdotool(self, *args: str, data: bytes | None = None, timeout: float = 20.0) -> None:
        self.x.size()  # a dead server is ``gone`` before xdotool says something vaguer
        run(["xdotool", *args], data=data, timeout=timeout)

    def pointer(self) -> tuple[int, int]:
        reply = self.x.guarded(lambda d: d.screen().root.query_pointer())
        return reply.root_x, reply.root_y

    def moveto(self, x: int, y: int, *, at: tuple[int, int] | None = None) -> list[str]:
        """xdotool arguments that move the pointer to (x, y): none when it is there already (``at``, else read),
        since ``mousemove --sync`` waits for a motion event that never comes then (about 16 s)."""
        if (at or self.pointer()) == (x, y):
            return []
        return ["mousemove", "--sync", str(x), str(y)]

    def point(self, req: dict, kx: str = "x", ky: str = "y") -> tuple[int, int]:
        x, y = req.get(kx), req.get(ky)
        w, h = self.x.size()
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (x, y)):
            raise action_error(f"coordinates must be integers, got {kx}={x!r}, {ky}={y!r}")
        if not (0 <= x < w and 0 <= y < h):
            raise action_error(f"({x}, {y}) is off the screen (0..{w - 1}, 0..{h - 1})")
        return x, y

    def op_ping(self, req: dict) -> dict:
        return {"x": self.x.alive()}

    def op_screenshot(self, req: dict) -> dict:
        scale = float(req.get("scale", 1.0))
        fmt = str(req.get("fmt", "png")).lower()
        if not 0.05 <= scale <= 1.0:
            raise action_error(f"scale must be in 0.05..1.0, got {scale}")
        if fmt not in ("png", "jpeg"):
            raise action_error(f"fmt must be png or jpeg, got {fmt!r}")
        return {"data": b64(self.x.screenshot(scale, fmt, int(req.get("quality", 80))))}

    def op_click(self, req: dict) -> dict:
        x, y = self.point(req)
        button = BUTTONS.get(str(req.get("button", "left")))
        count = req.get("count", 1)
        if button is None:
            raise action_error(f"button must be one of {sorted(BUTTONS)}, got {req.get('button')!r}")
        if not isinstance(count, int) or not 1 <= count <= 3:
            raise action_error(f"count must be 1, 2 or 3, got {count!r}")
        self.xdotool(*self.moveto(x, y), "click", "--repeat", str(count), "--delay", "60", str(button))
        return {}

    def op_move(self, req: dict) -> dict:
        x, y = self.point(req)
        args = self.moveto(x, y)
        if args:
            self.xdotool(*args)
        return {}

    def op_drag(self, req: dict) -> dict:
        x1, y1 = self.point(req, "x1", "y1")
        x2, y2 = self.point(req, "x2", "y2")
        args, at = [*self.moveto(x1, y1), "mousedown", "1", "sleep", "0.05"], (x1, y1)
        for i in range(1, 9):  # a short drag rounds to the same pixel twice: each step moves, or is left out
            step = (round(x1 + (x2 - x1) * i / 8), round(y1 + (y2 - y1) * i / 8))
            args += [*self.moveto(*step, at=at), "sleep", "0.02"]
            at = step
        self.xdotool(*args, "mouseup", "1")
        return {}

    def op_scroll(self, req: dict) -> dict:
        x, y = self.point(req)
        button = SCROLL.get(str(req.get("direction")))
        amount = req.get("amount", 3)
        if button is None:
            raise action_error(f"direction must be one of {sorted(SCROLL)}, got {req.get('direction')!r}")
        if not isinstance(amount, int) or not 1 <= amount <= 50:
            raise action_error(f"amount must be an integer in 1..50, got {amount!r}")
        self.xdotool(*self.moveto(x, y), "click", "--repeat", str(amount), "--delay", "20", str(button))
        return {}

    def op_type(self, req: dict) -> dict:
        text = req.get("text")
        if not isinstance(text, str):
            raise action_error("text must be a string")
        if len(text) > MAX_TYPE:
            raise action_error(f"type text of {len(text)} characters; at most {MAX_TYPE} per action")
        # xdotool types a newline as Linefeed, which text widgets ignore: newlines are Return key presses.
        for i, line in enumerate(text.replace("\r\n", "\n").split("\n")):
            if i:
                self.xdotool("key", "Return")
            if line:
                self.xdotool("type", "--delay", "8", "--", line, timeout=10 + len(line) * 0.05)
        return {}

    def op_key(self, req: dict) -> dict:
        """Press key combinations; with ``"send": false`` only check them (the host then sends them one at a
        time: :meth:`User.op_office_caught_up`)."""
        combos = self.x.combos(req.get("keys"))
        if req.get("send", True):  # the reply comes once the X server has handled the presses (SYNC)
            self.xdotool("key", "--delay", "30", "--", *combos, *SYNC)
        return {"keys": combos}

    def op_pointer(self, req: dict) -> dict:
        x, y = self.pointer()
        return {"x": x, "y": y}

    def op_mouse_button(self, req: dict) -> dict:
        """Press (``down``: true) or release a button at (x, y); pyautogui's mouseDown / mouseUp."""
        x, y = self.point(req)
        button = BUTTONS.get(str(req.get("button", "left")))
        if button is None:
            raise action_error(f"button must be one of {sorted(BUTTONS)}, got {req.get('button')!r}")
        self.xdotool(*self.moveto(x, y), "mousedown" if req.get("down") else "mouseup", str(button))
        return {}

    def op_key_state(self, req: dict) -> dict:
        """Press (``down``: true) or release key combinations and leave them so; pyautogui's keyDown / keyUp."""
        combos = self.x.combos(req.get("keys"))
        if req.get("down"):
            self.xdotool("keydown", "--", *combos, *SYNC)
        else:
            self.xdotool("keyup", "--", *reversed(combos), *SYNC)
        return {}

    def op_hold_key(self, req: dict) -> dict:
        combos = self.x.combos(req.get("keys"))
        seconds = req.get("seconds", 1.0)
        if not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_HOLD_S:
            raise action_error(f"seconds must be in 0..{MAX_HOLD_S}, got {seconds!r}")
        self.xdotool("keydown", "--", *combos)
        try:
            time.sleep(float(seconds))
        finally:
            self.xdotool("keyup", "--", *reversed(combos))
        return {}

    def op_windows(self, req: dict) -> dict:
        return {"windows": self.x.windows()}

    def op_wait_window(self, req: dict) -> dict:
        try:
            pattern = re.compile(str(req.get("title", ".")))
        except re.error as exc:
            raise action_error(f"bad title regex: {exc}") from None
        timeout = float(req.get("timeout", 10.0))
        deadline = time.monotonic() + timeout
        # the launched app (optional): once its process is gone and no window matched for EXITED_GRACE_S (an app
        # may hand its file to an instance already running, and exit), waiting on is pointless: say why
        pid, app = req.get("pid"), req.get("app") if req.get("app") in APPS else None
        gone_since = None
        while True:
            for win in self.x.windows():
                if pattern.search(win["title"]):
                    quiet = float(req.get("settle", 0.0))
                    if quiet > 0:  # the window is mapped; wait until it has painted (the screen stops changing)
                        self.settle(quiet, max(deadline - time.monotonic(), quiet))
                    return {"window": win}
            now = time.monotonic()
            if pid and gone_since is None and not pid_alive(int(pid)):
                gone_since = now
            if gone_since is not None and now - gone_since >= EXITED_GRACE_S:
                raise Fault("exited", f"{app or 'the app'} (pid {pid}) exited and no window title matches "
                                      f"{pattern.pattern!r}")
            if now >= deadline:
                titles = [w["title"] for w in self.x.windows()]
                running = "" if not pid else f"; {app or 'the app'} {'runs' if pid_alive(int(pid)) else 'exited'}"
                raise Fault("timeout", f"no window title matches {pattern.pattern!r} after {timeout} s "
                                       f"(windows: {titles}){running}")
            time.sleep(0.03)

    def settle(self, quiet: float, timeout: float, strict: bool = False) -> bool:
        return self.still_frame(quiet, timeout, strict) is not None

    def still_frame(self, quiet: float, timeout: float, strict: bool = False) -> tuple[int, int, bytes] | None:
        """:meth:`settle`, returning the still screen (width, height, pixels) or None. Wait until, for ``quiet`` seconds, the screen has not changed and the apps have been idle (True), or
        ``timeout`` passed (False). Idle: the user's processes but Xvfb (which serves these grabs) used at most
        :data:`IDLE_TICKS` of CPU, and with ``strict`` no thread of the user's (Xvfb's included) was runnable
        at any sample (:func:`user_runnable`; slow on a loaded host, where some thread nearly always waits). On a loaded host an app's late idle callbacks (LibreOffice's ruler and
        toolbar states) can come after a still second; while they are pending the app still uses CPU."""
        deadline = time.monotonic() + timeout
        frame = self.x.grab()
        since, ticks = time.monotonic(), app_ticks()
        while time.monotonic() < deadline:
            time.sleep(min(0.05, quiet))
            now = self.x.grab()
            if now != frame or (strict and user_runnable()):
                frame, since, ticks = now, time.monotonic(), app_ticks()
            elif time.monotonic() - since >= quiet:
                used = app_ticks()
                if used - ticks <= IDLE_TICKS:
                    return frame
                since, ticks = time.monotonic(), used  # still busy: a new quiet period from now
        return None

    def op_settle(self, req: dict) -> dict:
        """``{"settled": bool}``; with ``"shot": true`` also the still screen as a PNG (``"data"``), as
        :meth:`op_screenshot` would have taken it then: a reset's first observation needs no second grab."""
        frame = self.still_frame(float(req.get("quiet", 0.3)), float(req.get("timeout", 5.0)),
                                 bool(req.get("strict")))
        if frame is not None and req.get("shot"):
            return {"settled": True, "data": b64(self.x.encode(*frame))}
        return {"settled": frame is not None}

    def op_clipboard(self, req: dict) -> dict:
        self.x.size()
        try:
            done = subprocess.run(["xclip", "-o", "-selection", str(req.get("selection", "clipboard"))],
                                  capture_output=True, timeout=3, env=SESSION_ENV)
        except subprocess.TimeoutExpired:
            return {"text": ""}
        return {"text": done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""}

    def op_list_dir(self, req: dict) -> dict:
        try:
            return {"names": sorted(os.listdir(str(req["path"])))}
        except (FileNotFoundError, NotADirectoryError):
            return {"names": None}

    def op_write_files(self, req: dict) -> dict:
        return write_files(req)


# ---------------------------------------------------------------------------------------------------------
# user role: the session, accessibility, apps
# ---------------------------------------------------------------------------------------------------------
def write_files(req: dict) -> dict:
    written = []
    for path, data in (req.get("files") or {}).items():
        if not path.startswith("/") or "/../" in f"{path}/":
            raise action_error(f"file paths must be absolute and normalised: {path!r}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        written.append(path)
    return {"written": written}


def x_ready(timeout: float) -> bool:
    """Whether the X server accepts connections on its socket within ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect("/tmp/.X11-unix/X0")
                return True
            except OSError:
                pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def read_log(name: str) -> str:
    """The end of what a process :meth:`User.spawn` started wrote (stdout and stderr)."""
    try:
        with open(f"{RUNTIME}/{name}.log", errors="replace") as f:
            return f.read()[-600:]
    except OSError as exc:
        return str(exc)


EXITED_GRACE_S = 5.0
"""How long wait_window still looks for the window once the launched app's process has ended."""


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] not in "ZX"
    except (OSError, IndexError):
        return False


IDLE_TICKS = 2
"""CPU clock ticks (10 ms each) the apps may use in a quiet period and still count as idle."""


def app_ticks() -> int:
    """CPU ticks (user + system) used so far by the desktop user's processes, Xvfb left out."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != USER_UID:
                continue
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:  # the process ended meanwhile
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")] == "Xvfb":
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def user_runnable() -> bool:
    """Whether a thread of the desktop user's processes (Xvfb included) is running or waiting for a CPU. On a
    loaded host the apps and the X server can sit runnable for a while: the screen then stays still and they
    use no CPU, but they are not done."""
    me = str(os.getpid())  # the user's daemon asking
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == me:
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != USER_UID:
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
                if stat[stat.rindex(")") + 2] == "R":
                    return True
        except (OSError, ValueError, IndexError):  # the process or thread ended meanwhile
            continue
    return False


def fill_home() -> None:
    """Copy :data:`SKELETON` into the (tmpfs) home once, before the session's first app reads its settings;
    modes are kept (``~/.config`` 0755: root, which has no capabilities, reads the apps' files for grading)."""
    if os.path.isdir(SKELETON) and not os.path.exists(f"{HOME}/.config/gtk-3.0/settings.ini"):
        shutil.copytree(SKELETON, HOME, symlinks=True, dirs_exist_ok=True)


class User:
    def __init__(self) -> None:
        self.pids: dict[str, int] = {}
        self.a11y = a11y.Accessibility(DISPLAY, MAX_TYPE)
        os.environ.update(SESSION_ENV)

    def spawn(self, name: str, argv: list[str], *, cwd: str = HOME) -> int:
        os.makedirs(RUNTIME, mode=0o700, exist_ok=True)
        log = open(f"{RUNTIME}/{name}.log", "ab")  # noqa: SIM115 - handed to the child
        env = SESSION_ENV
        if argv[0] == "soffice" and os.path.exists(OFFICE_CLOCK_LIB):
            env = {**SESSION_ENV, "LD_PRELOAD": OFFICE_CLOCK_LIB, "ENVGYM_OFFICE_CLOCK": OFFICE_CLOCK}
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=cwd,
                                    env=env, start_new_session=True)
        except FileNotFoundError as exc:
            raise Fault("error", f"cannot start {argv[0]}: {exc}") from None
        finally:
            log.close()
        self.pids[name] = proc.pid
        return proc.pid

    def log(self, name: str) -> str:
        return read_log(name)

    def op_app_log(self, req: dict) -> dict:
        """The end of what an app :meth:`op_launch` started wrote (the user's runtime folder: root cannot read it)."""
        app = req.get("app")
        if app not in APPS:
            raise action_error(f"unknown app {app!r} (known: {', '.join(APPS)})")
        return {"log": read_log(f"app-{app}")}

    def op_ping(self, req: dict) -> dict:
        return {"x": pid_alive(self.pids.get("xvfb")) and x_ready(0)}

    def op_start_session(self, req: dict) -> dict:
        """Bring up Xvfb, the session bus, the accessibility bus and the window manager (idempotent)."""
        width, height = int(req.get("width", WIDTH)), int(req.get("height", HEIGHT))
        started = time.monotonic()
        os.makedirs(RUNTIME, mode=0o700, exist_ok=True)
        fill_home()
        if not (pid_alive(self.pids.get("xvfb")) and x_ready(0)):
            if x_ready(0):
                raise Fault("error", "an X server already answers on :0 that this daemon did not start")
            self.spawn("xvfb", ["Xvfb", DISPLAY, "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp",
                                "-dpi", "96", "-noreset", "-ac", "+extension", "RANDR", "-extension", "GLX"])
            if not x_ready(10):
                raise Fault("gone", f"Xvfb did not start: {self.log('xvfb')}")
        if not pid_alive(self.pids.get("dbus")):
            self.spawn("dbus", ["dbus-daemon", "--session", "--nofork", "--nopidfile", "--nosyslog",
                                f"--address=unix:path={RUNTIME}/bus"])
            deadline = time.monotonic() + 5
            while not os.path.exists(f"{RUNTIME}/bus"):
                if time.monotonic() > deadline:
                    raise Fault("error", "the session bus did not start")
                time.sleep(0.005)
        if not pid_alive(self.pids.get("atspi")):
            self.spawn("atspi", ["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"])
        if not pid_alive(self.pids.get("wm")):
            # Ready when openbox runs its --startup command: it does so on entering its main loop, after its
            # theme and fonts are loaded. Its _NET_SUPPORTING_WM_CHECK comes earlier, and a window mapped
            # between the two (an xterm launched at once) had its geometry request unanswered: Xt waits
            # wmTimeout (5 s) for the window manager before it shows the window.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(WM_RUNNING)
            self.spawn("wm", ["openbox", "--config-file", f"{HERE}/openbox-rc.xml", "--startup",
                              f"touch {WM_RUNNING}"])
            deadline = time.monotonic() + 30
            while not os.path.exists(WM_RUNNING):
                if time.monotonic() > deadline or not pid_alive(self.pids["wm"]):
                    raise Fault("error", f"the window manager did not start: {self.log('wm')}")
                time.sleep(0.01)
        return {"pids": self.pids, "env": SESSION_ENV, "seconds": round(time.monotonic() - started, 3)}

    def op_launch(self, req: dict) -> dict:
        """Start ``app`` on ``path``. A LibreOffice app whose process was prewarmed gets the document over that
        process's own pipe instead, and the reply waits until LibreOffice says the document is loaded
        (``"loaded": true``; within ``timeout``, else a ``timeout`` fault)."""
        app, path = req.get("app"), req.get("path")
        if app not in APPS:
            raise action_error(f"unknown app {app!r} (known: {', '.join(APPS)})")
        argv, cwd = list(APPS[app]), HOME
        if path is not None:
            if not isinstance(path, str) or not path.startswith("/"):
                raise action_error(f"path must be absolute, got {path!r}")
            if app in FOLDER_APPS:
                cwd = path
            else:
                argv.append(path)
        if app in PREWARM and pid_alive(self.pids.get("office")):
            try:
                if office.hand_over(argv[1:], float(req.get("timeout", 60.0)), home=HOME):
                    return {"pid": self.pids["office"], "loaded": True}
            except office.Timeout as exc:
                raise Fault("timeout", str(exc)) from None
            except office.Refused as exc:
                raise Fault("error", str(exc)) from None
        return {"pid": self.spawn(f"app-{app}", argv, cwd=cwd)}

    def op_prewarm(self, req: dict) -> dict:
        started = {}
        for app in req.get("apps") or []:
            if app not in PREWARM:
                raise action_error(f"no prewarm for {app!r} (only {', '.join(PREWARM)})")
            if "office" not in self.pids or not pid_alive(self.pids["office"]):
                started[app] = self.spawn("office", PREWARM[app])
        return {"pids": started}

    def op_write_files(self, req: dict) -> dict:
        return write_files(req)

    def op_office_quiet(self, req: dict) -> dict:
        return office.quiet(float(req.get("timeout", 30.0)), int(req.get("horizon_ms", 1000)),
                            float(req.get("hold", 0.15)), runnable=user_runnable)

    def op_office_fast_forward(self, req: dict) -> dict:
        return office.fast_forward(OFFICE_CLOCK, int(float(req.get("budget_ms", 2000)) * 1e6),
                                   float(req.get("timeout", 30.0)), runnable=user_runnable,
                                   quiet=float(req.get("quiet", 0.1)), trace=bool(req.get("trace")))

    def op_office_caught_up(self, req: dict) -> dict:
        return office.caught_up(float(req.get("timeout", 2.0)))

    def op_share_config(self, req: dict) -> dict:
        """Make everything under ``~/.config`` readable by others (folders searchable): the apps write their
        settings 0600 (LibreOffice rewrites its profile so while it runs), and the graders read them as root
        without capabilities, which cannot open another user's 0600 file."""
        opened = 0
        for top, dirs, files in os.walk(f"{HOME}/.config"):
            for name, bits in [(d, 0o055) for d in dirs] + [(f, 0o044) for f in files]:
                path = os.path.join(top, name)
                try:
                    mode = os.lstat(path).st_mode
                    if not os.path.islink(path) and mode & bits != bits:
                        os.chmod(path, (mode & 0o7777) | bits)
                        opened += 1
                except OSError:  # gone meanwhile, or not the user's
                    continue
        return {"opened": opened}

    # -- accessibility (a11y.py) -------------------------------------------------------------------------------
    def op_a11y(self, req: dict) -> dict:
        return self.a11y.tree(req)

    def op_element_action(self, req: dict) -> dict:
        try:
            return self.a11y.element_action(req)
        except a11y.ElementError as exc:
            raise action_error(str(exc)) from None


# ---------------------------------------------------------------------------------------------------------
def warm(role: str) -> None:
    """Import what the first observation needs (the X and image libraries; for the user's role GObject
    introspection's AT-SPI, about a second of a loaded host's CPU) now, while the desktop waits in the pool,
    not in the reset that first reads the screen or the accessibility tree."""
    import Xlib.display  # noqa: F401

    if role == "root":
        import PIL.Image
        import PIL.PngImagePlugin  # noqa: F401
    else:
        import gi

        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi, Gio, GLib  # noqa: F401


def serve(role: str) -> None:
    warm(role)
    handler = Root() if role == "root" else User()
    out = sys.stdout
    out.write(json.dumps({"hello": os.getpid()}) + "\n")
    out.flush()
    for line in iter(sys.stdin.readline, ""):
        try:
            req = json.loads(line)
            op = getattr(handler, f"op_{req.get('op')}", None)
            if op is None:
                raise Fault("error", f"unknown op {req.get('op')!r}")
            reply = {"ok": True, **op(req)}
        except Fault as exc:
            reply = {"ok": False, "kind": exc.kind, "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - one bad request must not end the daemon
            reply = {"ok": False, "kind": "error", "error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":  # SIGPIPE stays ignored: a dead X server's socket must be an error, not our death
    if len(sys.argv) != 2 or sys.argv[1] not in ("root", "user"):
        sys.exit("usage: desktopd.py root|user")
    serve(sys.argv[1])
