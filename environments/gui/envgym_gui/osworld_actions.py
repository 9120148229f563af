"""OSWorld's two action spaces, read into envgym's own GUI actions without running anything.

* ``pyautogui``: a Python snippet (``pyautogui.click(100, 200); pyautogui.hotkey('ctrl', 's')``) or one of the
  strings ``WAIT``, ``DONE``, ``FAIL``. OSWorld runs the snippet with ``python -c`` inside its VM; here it is
  **never executed**: :func:`parse_code` reads it with :mod:`ast` and accepts only calls of a whitelist of
  ``pyautogui`` functions and ``time.sleep``, with literal arguments, names bound to literals, arithmetic on
  them, and ``for`` loops over ``range(n)`` or a literal list (at most :data:`MAX_OPS` actions in all).
  ``import pyautogui`` / ``import time`` and setting ``pyautogui.FAILSAFE`` or ``pyautogui.PAUSE`` are
  accepted and do nothing. Anything else (another module, ``open``, attribute access, ``while``, a ``lambda``)
  is an :class:`~envgym_gui.actions.ActionError` naming what is not supported, and nothing of the snippet runs.
* ``computer_13``: a dict ``{"action_type": "CLICK", "parameters": {"x": 10, "y": 20}}`` (parameters may also
  sit beside ``action_type``, as OSWorld's controller allows): :func:`parse_computer13`.

Both give a list of :class:`Op`: an envgym tool name and its arguments (``left_click``, ``type``, ``key`` …,
validated later by :func:`envgym_gui.actions.validate` like any other call), or one of the stateful OSWorld
operations the env carries out itself (:data:`STATEFUL`: mouse and key down/up, clicks and scrolls at the
pointer's current position). Key names are pyautogui's (``enter``, ``ctrlleft``, ``pgdn``, ``num5``, ``!``),
mapped to xdotool's by :func:`key_name`.
"""

from __future__ import annotations

import ast
import json
import math
import string
from dataclasses import dataclass, field
from typing import Any

from envgym_gui.actions import ActionError

MAX_OPS = 200
"""Actions one snippet (loops unrolled) may produce."""
MAX_CODE = 20_000
"""Characters of one snippet."""
MAX_SLEEP_S = 30.0
"""Seconds all the ``time.sleep`` calls of one snippet may add up to (each is also a ``wait``, at most 10 s)."""
SPECIAL = frozenset({"WAIT", "DONE", "FAIL"})
WAIT_S = 0.5
"""What ``WAIT`` waits: OSWorld's ``DesktopEnv.step`` default pause in its 2024 code (desktop-env 1.0.2: 2 s)."""
STATEFUL = frozenset({"osw_move", "osw_click", "osw_scroll", "osw_mouse_down", "osw_mouse_up", "osw_drag_to",
                      "osw_key_down", "osw_key_up"})
"""Ops whose meaning depends on the pointer position or on buttons and keys held (see :mod:`.osworld_env`)."""

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "pyautogui",
        "description": "OSWorld's pyautogui action space: a Python snippet of pyautogui calls (click, moveTo, "
                       "dragTo, scroll, typewrite/write, press, hotkey, keyDown/keyUp, mouseDown/mouseUp ...) "
                       "and time.sleep, or WAIT / DONE / FAIL. It is parsed, never executed.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"],
                       "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "computer_13",
        "description": "OSWorld's computer_13 action: action_type (MOVE_TO, CLICK, MOUSE_DOWN, MOUSE_UP, "
                       "RIGHT_CLICK, DOUBLE_CLICK, DRAG_TO, SCROLL, TYPING, PRESS, KEY_DOWN, KEY_UP, HOTKEY, "
                       "WAIT, FAIL, DONE) and its parameters.",
        "parameters": {"type": "object", "properties": {
            "action_type": {"type": "string"}, "parameters": {"type": "object"}},
            "required": ["action_type"], "additionalProperties": True}}},
]
"""The two OSWorld action spaces as tools of ``gui/osworld-v1``, beside :data:`envgym_gui.actions.TOOLS`."""


@dataclass(frozen=True)
class Op:
    """One action: an envgym tool (``name`` in :data:`envgym_gui.actions.TOOL_NAMES`) or a :data:`STATEFUL` op."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


# -- key names ------------------------------------------------------------------------------------------------
_KEYS: dict[str, str] = {
    "\n": "Return", "\r": "Return", "\t": "Tab", " ": "space", "enter": "Return", "return": "Return",
    "tab": "Tab", "space": "space", "esc": "Escape", "escape": "Escape", "backspace": "BackSpace",
    "del": "Delete", "delete": "Delete", "insert": "Insert", "home": "Home", "end": "End",
    "pageup": "Page_Up", "pgup": "Page_Up", "pagedown": "Page_Down", "pgdn": "Page_Down",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "ctrl": "ctrl", "ctrlleft": "Control_L", "ctrlright": "Control_R",
    "alt": "alt", "altleft": "Alt_L", "altright": "Alt_R", "option": "alt", "optionleft": "Alt_L",
    "optionright": "Alt_R", "shift": "shift", "shiftleft": "Shift_L", "shiftright": "Shift_R",
    "win": "super", "winleft": "Super_L", "winright": "Super_R", "command": "super",
    "capslock": "Caps_Lock", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock", "pause": "Pause",
    "print": "Print", "printscreen": "Print", "prntscrn": "Print", "prtsc": "Print", "prtscr": "Print",
    "apps": "Menu", "help": "Help", "select": "Select", "execute": "Execute", "clear": "Clear",
    "add": "KP_Add", "subtract": "KP_Subtract", "multiply": "KP_Multiply", "divide": "KP_Divide",
    "decimal": "KP_Decimal", "separator": "KP_Separator", "yen": "yen",
    "volumeup": "XF86AudioRaiseVolume", "volumedown": "XF86AudioLowerVolume", "volumemute": "XF86AudioMute",
    "playpause": "XF86AudioPlay", "nexttrack": "XF86AudioNext", "prevtrack": "XF86AudioPrev",
    "stop": "XF86AudioStop", "browserback": "XF86Back", "browserforward": "XF86Forward",
    "browserrefresh": "XF86Refresh", "browserhome": "XF86HomePage", "browsersearch": "XF86Search",
    "browserstop": "XF86Stop", "browserfavorites": "XF86Favorites", "launchmail": "XF86Mail",
    "launchmediaselect": "XF86AudioMedia", "sleep": "XF86Sleep",
    **{f"f{n}": f"F{n}" for n in range(1, 25)}, **{f"num{n}": f"KP_{n}" for n in range(10)},
}
_PUNCTUATION = {
    "!": "exclam", '"': "quotedbl", "#": "numbersign", "$": "dollar", "%": "percent", "&": "ampersand",
    "'": "apostrophe", "(": "parenleft", ")": "parenright", "*": "asterisk", "+": "plus", ",": "comma",
    "-": "minus", ".": "period", "/": "slash", ":": "colon", ";": "semicolon", "<": "less", "=": "equal",
    ">": "greater", "?": "question", "@": "at", "[": "bracketleft", "\\": "backslash", "]": "bracketright",
    "^": "asciicircum", "_": "underscore", "`": "grave", "{": "braceleft", "|": "bar", "}": "braceright",
    "~": "asciitilde",
}
MODIFIERS = frozenset({"ctrl", "Control_L", "Control_R", "alt", "Alt_L", "Alt_R", "shift", "Shift_L", "Shift_R",
                       "super", "Super_L", "Super_R"})


def key_name(key: Any) -> str:
    """pyautogui's name of a key (``'enter'``, ``'ctrlleft'``, ``'a'``, ``'!'``) as xdotool spells it."""
    if not isinstance(key, str) or not key:
        raise ActionError(f"a key name must be a non-empty string, not {key!r:.40}")
    if key in _KEYS or key.lower() in _KEYS:
        return _KEYS.get(key, _KEYS.get(key.lower(), ""))
    if key in _PUNCTUATION:
        return _PUNCTUATION[key]
    if len(key) == 1 and key in string.ascii_letters + string.digits:
        return key
    raise ActionError(f"key {key!r:.40} is not one of pyautogui's key names that this desktop maps "
                      "(letters, digits, punctuation, enter, esc, tab, ctrl, alt, shift, win, f1-f24, arrows ...)")


# -- computer_13 ----------------------------------------------------------------------------------------------
def _coord(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ActionError(f"{what} must be a number, not {value!r:.40}")
    return round(value)


def _button(value: Any) -> str:
    if value not in ("left", "right", "middle"):
        raise ActionError(f"button must be 'left', 'right' or 'middle', not {value!r:.40}")
    return str(value)


def _point(params: dict[str, Any], action: str) -> dict[str, int]:
    if ("x" in params) != ("y" in params):
        raise ActionError(f"{action}: give both x and y, or neither")
    return {"x": _coord(params["x"], "x"), "y": _coord(params["y"], "y")} if "x" in params else {}


def parse_computer13(action: Any) -> list[Op]:
    """One computer_13 action (a dict, or its JSON text) as :class:`Op` s."""
    if isinstance(action, str):
        if action.strip() in SPECIAL:
            return [_special(action.strip())]
        try:
            action = json.loads(action)
        except json.JSONDecodeError as exc:
            raise ActionError(f"computer_13 action is not JSON: {exc}") from None
    if not isinstance(action, dict) or not isinstance(action.get("action_type"), str):
        raise ActionError("a computer_13 action is a dict with an action_type "
                          "(e.g. {\"action_type\": \"CLICK\", \"parameters\": {\"x\": 10, \"y\": 20}})")
    kind = action["action_type"].upper()
    params = action.get("parameters")
    if params is None:
        params = {k: v for k, v in action.items() if k != "action_type"}
    if not isinstance(params, dict):
        raise ActionError(f"{kind}: parameters must be an object, not {type(params).__name__}")
    allowed = _C13.get(kind)
    if allowed is None:
        raise ActionError(f"unknown computer_13 action_type {kind!r:.40}; one of {', '.join(_C13)}")
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ActionError(f"{kind}: unknown parameter(s) {', '.join(map(str, unknown))}")
    if kind in SPECIAL:
        return [_special(kind)]
    if kind == "MOVE_TO":
        point = _point(params, kind)
        if not point:
            raise ActionError("MOVE_TO needs x and y")
        return [Op("osw_move", point)]
    if kind in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK"):
        button = _button(params.get("button", "right" if kind == "RIGHT_CLICK" else "left"))
        count = params.get("num_clicks", 2 if kind == "DOUBLE_CLICK" else 1)
        if count not in (1, 2, 3) or isinstance(count, bool):
            raise ActionError(f"{kind}: num_clicks must be 1, 2 or 3, not {count!r:.20}")
        return [Op("osw_click", {**_point(params, kind), "button": button, "count": count})]
    if kind in ("MOUSE_DOWN", "MOUSE_UP"):
        return [Op("osw_mouse_down" if kind == "MOUSE_DOWN" else "osw_mouse_up",
                   {"button": _button(params.get("button", "left"))})]
    if kind == "DRAG_TO":
        point = _point(params, kind)
        if not point:
            raise ActionError("DRAG_TO needs x and y")
        return [Op("osw_drag_to", point)]
    if kind == "SCROLL":
        if "dx" not in params and "dy" not in params:
            raise ActionError("SCROLL needs dx or dy")
        dx, dy = (_coord(params.get(k, 0), k) for k in ("dx", "dy"))  # OSWorld: hscroll(dx), then vscroll(dy)
        return [Op("osw_scroll", {"dx": dx, "dy": 0})] * bool(dx) + [Op("osw_scroll", {"dx": 0, "dy": dy})] * bool(dy)
    if kind == "TYPING":
        if not isinstance(params.get("text"), str):
            raise ActionError("TYPING needs text (a string)")
        return [Op("type", {"text": params["text"]})]
    if kind in ("PRESS", "KEY_DOWN", "KEY_UP"):
        if "key" not in params:
            raise ActionError(f"{kind} needs key")
        name = {"PRESS": "key", "KEY_DOWN": "osw_key_down", "KEY_UP": "osw_key_up"}[kind]
        return [Op(name, {"keys": key_name(params["key"])})]
    keys = params.get("keys")  # HOTKEY
    if not isinstance(keys, list) or not keys:
        raise ActionError("HOTKEY needs keys, a non-empty list of key names")
    return [Op("key", {"keys": "+".join(key_name(k) for k in keys)})]


_C13: dict[str, set[str]] = {
    "MOVE_TO": {"x", "y"}, "CLICK": {"button", "x", "y", "num_clicks"}, "MOUSE_DOWN": {"button"},
    "MOUSE_UP": {"button"}, "RIGHT_CLICK": {"x", "y"}, "DOUBLE_CLICK": {"x", "y"}, "DRAG_TO": {"x", "y"},
    "SCROLL": {"dx", "dy"}, "TYPING": {"text"}, "PRESS": {"key"}, "KEY_DOWN": {"key"}, "KEY_UP": {"key"},
    "HOTKEY": {"keys"}, "WAIT": set(), "FAIL": set(), "DONE": set(),
}


def _special(word: str) -> Op:
    return Op("wait", {"seconds": WAIT_S}) if word == "WAIT" else Op("done" if word == "DONE" else "fail")


# -- pyautogui ------------------------------------------------------------------------------------------------
def parse_code(code: Any, *, screen: tuple[int, int]) -> list[Op]:
    """A pyautogui snippet (or ``WAIT`` / ``DONE`` / ``FAIL``) as :class:`Op` s; see the module docstring."""
    if not isinstance(code, str):
        raise ActionError(f"pyautogui code must be a string, not {type(code).__name__}")
    if code.strip() in SPECIAL:
        return [_special(code.strip())]
    if len(code) > MAX_CODE:
        raise ActionError(f"pyautogui code of {len(code)} characters; at most {MAX_CODE}")
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        raise ActionError(f"pyautogui code does not parse: {exc.msg} (line {exc.lineno})") from None
    reader = _Reader(screen)
    reader.block(tree.body)
    return reader.ops


_IGNORED_SETTINGS = frozenset({"FAILSAFE", "PAUSE", "MINIMUM_DURATION", "MINIMUM_SLEEP", "DARWIN_CATCH_UP_TIME"})
_SIGNATURES: dict[str, tuple[str, ...]] = {
    "click": ("x", "y", "clicks", "interval", "button", "duration", "tween", "logScreenshot", "_pause"),
    "leftClick": ("x", "y", "interval", "duration", "tween", "logScreenshot", "_pause"),
    "rightClick": ("x", "y", "interval", "duration", "tween", "logScreenshot", "_pause"),
    "middleClick": ("x", "y", "interval", "duration", "tween", "logScreenshot", "_pause"),
    "doubleClick": ("x", "y", "interval", "button", "duration", "tween", "logScreenshot", "_pause"),
    "tripleClick": ("x", "y", "interval", "button", "duration", "tween", "logScreenshot", "_pause"),
    "moveTo": ("x", "y", "duration", "tween", "logScreenshot", "_pause"),
    "moveRel": ("xOffset", "yOffset", "duration", "tween", "logScreenshot", "_pause"),
    "dragTo": ("x", "y", "duration", "tween", "button", "logScreenshot", "_pause", "mouseDownUp"),
    "dragRel": ("xOffset", "yOffset", "duration", "tween", "button", "logScreenshot", "_pause", "mouseDownUp"),
    "mouseDown": ("x", "y", "button", "duration", "tween", "logScreenshot", "_pause"),
    "mouseUp": ("x", "y", "button", "duration", "tween", "logScreenshot", "_pause"),
    "scroll": ("clicks", "x", "y", "logScreenshot", "_pause"),
    "vscroll": ("clicks", "x", "y", "logScreenshot", "_pause"),
    "hscroll": ("clicks", "x", "y", "logScreenshot", "_pause"),
    "typewrite": ("message", "interval", "logScreenshot", "_pause"),
    "press": ("keys", "presses", "interval", "logScreenshot", "_pause"),
    "keyDown": ("key", "logScreenshot", "_pause"),
    "keyUp": ("key", "logScreenshot", "_pause"),
    "hotkey": (),
    "size": (),
}
_ALIASES = {"write": "typewrite", "move": "moveRel", "drag": "dragRel"}
_SAFE_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)


class _Reader:
    """Walks a snippet's statements, evaluating only literals, bound names, arithmetic and whitelisted calls."""

    def __init__(self, screen: tuple[int, int]) -> None:
        self.screen = screen
        self.ops: list[Op] = []
        self.names: dict[str, Any] = {}
        self.slept = 0.0

    def fail(self, node: ast.AST, what: str) -> ActionError:
        return ActionError(f"line {getattr(node, 'lineno', '?')}: {what} is not supported here (only pyautogui "
                           "calls and time.sleep with literal arguments, names, arithmetic and simple for loops; "
                           "the code is read, not run)")

    def emit(self, op: Op) -> None:
        if len(self.ops) >= MAX_OPS:
            raise ActionError(f"the code makes more than {MAX_OPS} actions; send fewer per step")
        self.ops.append(op)

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            bad = [a.name for a in stmt.names if a.name not in ("pyautogui", "time") or a.asname]
            if bad:
                raise self.fail(stmt, f"import {', '.join(bad)}")
        elif isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                return  # a docstring or a bare string: nothing to do
            if not isinstance(stmt.value, ast.Call):
                raise self.fail(stmt, "an expression that is not a call")
            self.call(stmt.value)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            self.assign(stmt.targets[0], stmt.value)
        elif isinstance(stmt, ast.For) and not stmt.orelse:
            values = self.value(stmt.iter)
            if not isinstance(values, range | list | tuple):
                raise self.fail(stmt, "a for loop over anything but range(...) or a literal list")
            for item in values[:MAX_OPS + 1]:
                self.bind(stmt.target, item)
                self.block(stmt.body)
        elif isinstance(stmt, ast.Pass):
            return
        else:
            raise self.fail(stmt, f"a {type(stmt).__name__} statement")

    def assign(self, target: ast.expr, value: ast.expr) -> None:
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "pyautogui" and target.attr in _IGNORED_SETTINGS):
            self.value(value)
            return
        self.bind(target, self.value(value))

    def bind(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if target.id in ("pyautogui", "time"):
                raise self.fail(target, f"rebinding {target.id}")
            self.names[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple | list) or len(value) != len(target.elts):
                raise ActionError(f"line {target.lineno}: cannot unpack {value!r:.40} into "
                                  f"{len(target.elts)} names")
            for sub, item in zip(target.elts, value, strict=True):
                self.bind(sub, item)
        else:
            raise self.fail(target, f"assigning to a {type(target).__name__}")

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool | type(None)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            raise self.fail(node, f"the name {node.id!r}")
        if isinstance(node, ast.Tuple | ast.List):
            items = [self.value(e) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self._number(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and isinstance(node.op, _SAFE_BINOPS):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
                if len(left) + len(right) > MAX_CODE:
                    raise ActionError(f"line {node.lineno}: a string longer than {MAX_CODE} characters")
                return left + right
            left, right = self._number(node.left, left), self._number(node.right, right)
            try:
                return {ast.Add: lambda: left + right, ast.Sub: lambda: left - right,
                        ast.Mult: lambda: left * right, ast.Div: lambda: left / right,
                        ast.FloorDiv: lambda: left // right, ast.Mod: lambda: left % right}[type(node.op)]()
            except ZeroDivisionError:
                raise ActionError(f"line {node.lineno}: division by zero") from None
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(node, f"a {type(node).__name__} expression")

    def _number(self, node: ast.expr, value: Any = ...) -> int | float:
        value = self.value(node) if value is ... else value
        if isinstance(value, bool) or not isinstance(value, int | float) or abs(value) > 1e9:
            raise ActionError(f"line {node.lineno}: arithmetic on {value!r:.40}; only numbers")
        return value

    def call(self, node: ast.Call) -> Any:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "range" and not node.keywords:
            bounds = [self._number(a) for a in node.args]
            if not 1 <= len(bounds) <= 3 or not all(isinstance(b, int) for b in bounds):
                raise ActionError(f"line {node.lineno}: range() takes 1-3 integers")
            return range(*bounds)
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id in ("pyautogui", "time")):
            raise self.fail(node, f"calling {ast.unparse(func)[:60]}")
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.fail(node, "*args or **kwargs")
        module, name = func.value.id, func.attr
        args = [self.value(a) for a in node.args]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords}
        if module == "time":
            if name != "sleep" or len(args) + len(kwargs) != 1 or kwargs.keys() - {"secs"}:
                raise self.fail(node, f"time.{name}(...)")
            seconds = args[0] if args else kwargs["secs"]
            if isinstance(seconds, int | float) and not isinstance(seconds, bool):  # else wait's check refuses it
                self.slept += seconds
                if self.slept > MAX_SLEEP_S:
                    raise ActionError(f"line {node.lineno}: the code sleeps more than {MAX_SLEEP_S:g} s in all")
            self.emit(Op("wait", {"seconds": seconds}))
            return None
        name = _ALIASES.get(name, name)
        if name not in _SIGNATURES:
            raise ActionError(f"line {node.lineno}: pyautogui.{func.attr} is not supported here (supported: "
                              f"{', '.join(sorted({*_SIGNATURES, *_ALIASES} - {'size'}))}, size)")
        return self.pyautogui(node, name, args, kwargs)

    def pyautogui(self, node: ast.Call, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if name == "hotkey":
            unknown = sorted(set(kwargs) - {"interval", "logScreenshot", "_pause"})
            if unknown or not args:
                raise ActionError(f"line {node.lineno}: hotkey takes key names (and interval=)")
            keys = args[0] if len(args) == 1 and isinstance(args[0], list | tuple) else args
            self.emit(Op("key", {"keys": "+".join(key_name(k) for k in keys)}))
            return None
        params = _SIGNATURES[name]
        if len(args) > len(params):
            raise ActionError(f"line {node.lineno}: pyautogui.{name} takes at most {len(params)} positional "
                              "arguments")
        bound = dict(zip(params, args, strict=False))
        for key, value in kwargs.items():
            if key not in params:
                raise ActionError(f"line {node.lineno}: pyautogui.{name} has no argument {key!r}")
            if key in bound:
                raise ActionError(f"line {node.lineno}: pyautogui.{name} got {key!r} twice")
            bound[key] = value
        if name == "size":
            return self.screen
        if "x" in bound and isinstance(bound["x"], tuple | list) and len(bound["x"]) == 2 and "y" not in bound:
            bound["x"], bound["y"] = bound["x"]  # click((x, y)): pyautogui accepts a point as its first argument
        point = {}
        if bound.get("x") is not None or bound.get("y") is not None:
            if bound.get("x") is None or bound.get("y") is None:
                raise ActionError(f"line {node.lineno}: pyautogui.{name}: give both x and y, or neither")
            point = {"x": _coord(bound["x"], "x"), "y": _coord(bound["y"], "y")}
        button = _button(bound.get("button", "left"))
        if name in ("click", "leftClick", "rightClick", "middleClick", "doubleClick", "tripleClick"):
            button = {"leftClick": "left", "rightClick": "right", "middleClick": "middle"}.get(name, button)
            count = {"doubleClick": 2, "tripleClick": 3}.get(name, bound.get("clicks", 1))
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 3:
                raise ActionError(f"line {node.lineno}: clicks must be 0-3, not {count!r:.20}")
            if count:
                self.emit(Op("osw_click", {**point, "button": button, "count": count}))
            elif point:
                self.emit(Op("osw_move", point))
        elif name == "moveTo":
            if point:
                self.emit(Op("osw_move", point))
        elif name in ("moveRel", "dragRel"):
            rx, ry = (_coord(bound.get(k) or 0, k) for k in ("xOffset", "yOffset"))
            if name == "dragRel" and (button != "left" or bound.get("mouseDownUp", True) is not True):
                raise ActionError(f"line {node.lineno}: dragRel with the {button} button or mouseDownUp=False is "
                                  "not supported here; drag with the left button, or with mouseDown(button=...), "
                                  "moveTo and mouseUp(button=...)")
            self.emit(Op("osw_move" if name == "moveRel" else "osw_drag_to", {"rx": rx, "ry": ry}))
        elif name == "dragTo":
            if not point:
                raise ActionError(f"line {node.lineno}: dragTo needs x and y")
            if button != "left" or bound.get("mouseDownUp", True) is not True:
                raise ActionError(f"line {node.lineno}: dragTo with the {button} button or mouseDownUp=False is "
                                  "not supported here; drag with the left button, or with mouseDown(button=...), "
                                  "moveTo and mouseUp(button=...)")
            self.emit(Op("osw_drag_to", point))
        elif name in ("mouseDown", "mouseUp"):
            if point:
                self.emit(Op("osw_move", point))
            self.emit(Op("osw_mouse_down" if name == "mouseDown" else "osw_mouse_up", {"button": button}))
        elif name in ("scroll", "vscroll", "hscroll"):
            clicks = _coord(bound.get("clicks"), "clicks")
            if clicks == 0:
                return None
            self.emit(Op("osw_scroll", {**point, "dx": clicks if name == "hscroll" else 0,
                                        "dy": 0 if name == "hscroll" else clicks}))
        elif name == "typewrite":
            message = bound.get("message")
            if isinstance(message, str):
                self.emit(Op("type", {"text": message}))
            elif isinstance(message, list | tuple) and message:
                self.emit(Op("key", {"keys": " ".join(key_name(k) for k in message)}))
            else:
                raise ActionError(f"line {node.lineno}: typewrite takes a string or a list of key names")
        elif name == "press":
            keys = bound.get("keys")
            keys = list(keys) if isinstance(keys, list | tuple) else [keys]
            presses = bound.get("presses", 1)
            if isinstance(presses, bool) or not isinstance(presses, int) or not 1 <= presses <= 50:
                raise ActionError(f"line {node.lineno}: presses must be 1-50, not {presses!r:.20}")
            self.emit(Op("key", {"keys": " ".join([key_name(k) for k in keys] * presses)}))
        else:  # keyDown / keyUp
            self.emit(Op("osw_key_down" if name == "keyDown" else "osw_key_up", {"keys": key_name(bound.get("key"))}))
        return None
