"""The GUI action space: the computer-use actions of Anthropic's ``computer`` and OpenAI's ``computer_use``
tools as OpenAI function schemas, plus element actions by accessibility id and the two endings.

=====================  ==========================================================================
tool                   what it does
=====================  ==========================================================================
``left_click`` …       ``left_click``, ``right_click``, ``middle_click``, ``double_click``,
                       ``triple_click`` at ``(x, y)``
``mouse_move``         move the pointer to ``(x, y)``
``left_click_drag``    press at ``(start_x, start_y)``, move to ``(x, y)``, release
``scroll``             ``amount`` wheel clicks ``up`` / ``down`` / ``left`` / ``right`` at ``(x, y)``
``type``               type ``text`` at the keyboard focus (at most :data:`MAX_TYPE` characters)
``key``                key combinations in xdotool syntax, several separated by spaces
                       (``"ctrl+s"``, ``"ctrl+a Delete"``, ``"Return"``)
``hold_key``           hold ``keys`` down for ``seconds``
``wait``               let ``seconds`` pass (apps loading), then look again
``screenshot``         just look again
``click_element`` …    ``click_element``, ``focus_element``, ``set_element_text``: by the ids of the
                       accessibility tree in the observation
``done`` / ``fail``    end the episode: the task is done (``answer`` if it asks for one), or it cannot
                       be done (``reason``); infeasible tasks pass only on ``fail``
=====================  ==========================================================================

:func:`validate` checks a call against the schema and the screen before anything reaches the desktop:
coordinates must lie on the screen, ``type`` text and key strings are bounded, durations are capped. A bad
action raises :class:`ActionError`, which the env shows the agent as ``last_action_error``.
"""

from __future__ import annotations

import re
from typing import Any

from envgym.plugin import ActionRefused, ArgumentsError, decode_arguments

MAX_TYPE = 4000
"""Characters one ``type`` call may send (xdotool types about 80 a second in LibreOffice)."""
MAX_KEYS = 200
MAX_WAIT_S = 10.0
MAX_HOLD_S = 5.0
MAX_SCROLL = 25
_KEYS = re.compile(r"^[A-Za-z0-9_+\- ]+$")

ENDINGS = frozenset({"done", "fail"})
CLICKS = {"left_click": ("left", 1), "right_click": ("right", 1), "middle_click": ("middle", 1),
          "double_click": ("left", 2), "triple_click": ("left", 3)}


class ActionError(ActionRefused):
    """The agent's action cannot be carried out; the message is shown to the agent."""


def _tool(name: str, description: str, **params: tuple[dict[str, Any], bool]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {k: v[0] for k, v in params.items()},
                       "required": [k for k, v in params.items() if v[1]], "additionalProperties": False}}}


_X = ({"type": "integer", "description": "pixels from the left edge of the screen"}, True)
_Y = ({"type": "integer", "description": "pixels from the top edge of the screen"}, True)
_ID = ({"type": "string", "description": "an element id shown in brackets in the accessibility tree"}, True)

TOOLS: list[dict[str, Any]] = [
    *(_tool(name, f"{name.replace('_', ' ').capitalize()} at screen coordinates.", x=_X, y=_Y) for name in CLICKS),
    _tool("mouse_move", "Move the mouse pointer to screen coordinates.", x=_X, y=_Y),
    _tool("left_click_drag", "Press the left button at (start_x, start_y), drag to (x, y) and release.",
          start_x=_X, start_y=_Y, x=_X, y=_Y),
    _tool("scroll", "Scroll the mouse wheel at screen coordinates.", x=_X, y=_Y,
          direction=({"type": "string", "enum": ["up", "down", "left", "right"]}, True),
          amount=({"type": "integer", "description": f"wheel clicks, 1-{MAX_SCROLL} (default 3)"}, False)),
    _tool("type", "Type text at the keyboard focus.", text=({"type": "string"}, True)),
    _tool("key", "Press key combinations in xdotool syntax, several separated by spaces "
          "(e.g. 'ctrl+s', 'ctrl+a Delete', 'Return', 'alt+F4').", keys=({"type": "string"}, True)),
    _tool("hold_key", "Hold key combinations down for a while.", keys=({"type": "string"}, True),
          seconds=({"type": "number", "description": f"at most {MAX_HOLD_S:g}"}, True)),
    _tool("wait", "Wait (an application is loading), then look again.",
          seconds=({"type": "number", "description": f"at most {MAX_WAIT_S:g}"}, True)),
    _tool("screenshot", "Look at the screen again without acting."),
    _tool("click_element", "Click the accessibility element with this id (its default action).", element_id=_ID),
    _tool("focus_element", "Give the keyboard focus to the accessibility element with this id.", element_id=_ID),
    _tool("set_element_text", "Replace the text of an editable accessibility element.", element_id=_ID,
          text=({"type": "string"}, True)),
    _tool("done", "The task is complete; this ends the episode. Put the answer here if the task asks for one.",
          answer=({"type": "string"}, False)),
    _tool("fail", "The task cannot be done (say why); this ends the episode.", reason=({"type": "string"}, False)),
]
TOOL_NAMES = frozenset(t["function"]["name"] for t in TOOLS)
_PARAMS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def _number(name: str, key: str, value: Any, *, integer: bool) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ActionError(f"{name}.{key} must be a{'n integer' if integer else ' number'}, not {value!r:.40}")
    if integer:
        if value != int(value):
            raise ActionError(f"{name}.{key} must be a whole number of pixels, not {value}")
        return int(value)
    return float(value)


def validate(name: str, arguments: str, *, width: int, height: int) -> dict[str, Any]:
    """The call's arguments, checked against the schema and a ``width`` x ``height`` screen."""
    if name not in TOOL_NAMES:
        raise ActionError(f"unknown tool {name!r}; available: {', '.join(sorted(TOOL_NAMES))}")
    try:
        args = decode_arguments(name, arguments)
    except ArgumentsError as exc:
        raise ActionError(str(exc)) from None
    params = _PARAMS[name]
    unknown = sorted(set(args) - set(params["properties"]))
    if unknown:
        raise ActionError(f"unknown argument(s) for {name}: {', '.join(unknown)}")
    missing = [k for k in params["required"] if k not in args]
    if missing:
        raise ActionError(f"missing argument(s) for {name}: {', '.join(missing)}")
    out: dict[str, Any] = {}
    for key, value in args.items():
        kind = params["properties"][key].get("type")
        if kind in ("integer", "number"):
            out[key] = _number(name, key, value, integer=kind == "integer")
        elif kind == "string":
            if isinstance(value, int) and not isinstance(value, bool) and key == "element_id":
                value = str(value)  # models often send numeric ids as numbers
            if not isinstance(value, str):
                raise ActionError(f"{name}.{key} must be a string, not {type(value).__name__}")
            enum = params["properties"][key].get("enum")
            if enum and value not in enum:
                raise ActionError(f"{name}.{key} must be one of {', '.join(enum)}, not {value!r:.40}")
            out[key] = value
    for kx, ky in (("x", "y"), ("start_x", "start_y")):
        if kx in out and not (0 <= out[kx] < width and 0 <= out[ky] < height):
            raise ActionError(f"{name}: ({out[kx]}, {out[ky]}) is off the screen; x must be in 0..{width - 1} "
                              f"and y in 0..{height - 1}")
    if name == "type" and len(out["text"]) > MAX_TYPE:
        raise ActionError(f"type: {len(out['text'])} characters is too long; send at most {MAX_TYPE} per call")
    if "keys" in out:
        keys = out["keys"].strip()
        if not keys or len(keys) > MAX_KEYS or not _KEYS.match(keys):
            raise ActionError(f"{name}: keys must be xdotool key names joined by '+' (combinations separated by "
                              f"spaces, at most {MAX_KEYS} characters), not {out['keys']!r:.60}")
        out["keys"] = keys
    if name == "scroll":
        out["amount"] = int(out.get("amount", 3))
        if not 1 <= out["amount"] <= MAX_SCROLL:
            raise ActionError(f"scroll.amount must be 1-{MAX_SCROLL}, not {out['amount']}")
    if "seconds" in out:
        cap = MAX_WAIT_S if name == "wait" else MAX_HOLD_S
        if not 0 <= out["seconds"] <= cap:
            raise ActionError(f"{name}.seconds must be between 0 and {cap:g}, not {out['seconds']:g}")
    return out
