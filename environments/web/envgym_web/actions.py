"""The web action space: OpenAI function tools, and their execution on an episode's page.

Element actions address the ids of the observation (``click``, ``fill``, ``select_option``, ``hover``,
``press``); page actions (``scroll``, ``go_back``, ``goto`` — same origin only); coordinate actions for
visual agents (``mouse_click``, ``mouse_move``, ``keyboard_type``, ``keyboard_press``); and
``send_msg_to_user``, the final answer (the env handles that one). An action the page cannot take (unknown
element, not actionable, off-origin URL, bad key) raises :class:`ActionError`, which the env turns into
``last_action_error``; only a dead browser is an exception.

Every free-text argument is bounded before anything reaches the page (:data:`MAX_CHARS`), so no single action
can outlast the step's deadline: ``keyboard_type`` and ``fill`` take at most :data:`MAX_TYPE` characters, and
``keyboard_type`` at most that many per step across its calls (Playwright types key by key, each a round trip
to the browser), the same cap as the GUI family's ``type``; a key or chord at most :data:`MAX_KEY` (Playwright
presses every ``+``-joined key of a chord); a URL at most :data:`MAX_URL`. Over a cap is an
:class:`ActionError`: nothing is typed and the episode goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urljoin

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeout

from envgym.plugin import ActionRefused
from envgym_web.browser import origin_of

ACTION_TIMEOUT_MS = 5000
MAX_TYPE = 4000
"""Characters one ``keyboard_type`` or ``fill`` may send, and ``keyboard_type`` calls of one step together."""
MAX_KEY = 64
"""Characters of a key or chord (``press``, ``keyboard_press``): ``Control+Shift+ArrowLeft`` is 23."""
MAX_URL = 2048
"""Characters of a ``goto`` URL."""
MAX_ID = 64
"""Characters of an element id (the observation's are a few)."""
MAX_CHARS = {"text": MAX_TYPE, "value": MAX_TYPE, "option": MAX_TYPE, "key": MAX_KEY, "url": MAX_URL,
             "element_id": MAX_ID}
"""The cap of each free-text argument; ``send_msg_to_user``'s ``text`` (the final answer, which ends the
episode and costs nothing on the page) has none."""


class ActionError(ActionRefused):
    """The agent's action could not be carried out; the message is shown to the agent."""


def _tool(name: str, description: str, **params: tuple[dict[str, Any], bool]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {k: v[0] for k, v in params.items()},
                       "required": [k for k, v in params.items() if v[1]], "additionalProperties": False}}}


_ID = ({"type": "string", "description": "an element id shown in brackets in the observation"}, True)
_STR = ({"type": "string"}, True)
_NUM = ({"type": "number"}, True)
_BUTTON = ({"type": "string", "enum": ["left", "right", "middle"]}, False)

TOOLS: list[dict[str, Any]] = [
    _tool("click", "Click an element.", element_id=_ID, button=_BUTTON),
    _tool("fill", "Clear a text field and type a value into it.", element_id=_ID, value=_STR),
    _tool("select_option", "Choose an option of a <select> by its label or value.", element_id=_ID, option=_STR),
    _tool("hover", "Move the mouse over an element.", element_id=_ID),
    _tool("press", "Press a key (e.g. 'Enter', 'Tab', 'Control+a') on an element, or on the page.",
          key=_STR, element_id=({"type": "string"}, False)),
    _tool("scroll", "Scroll the page by dx, dy pixels (positive dy scrolls down).", dx=_NUM, dy=_NUM),
    _tool("go_back", "Go back to the previous page."),
    _tool("goto", "Open a URL of this site (a path like '/cart' or a same-origin URL).", url=_STR),
    _tool("mouse_click", "Click at viewport coordinates (pixels).", x=_NUM, y=_NUM, button=_BUTTON),
    _tool("mouse_move", "Move the mouse to viewport coordinates (pixels).", x=_NUM, y=_NUM),
    _tool("keyboard_type", "Type text at the current focus.", text=_STR),
    _tool("keyboard_press", "Press a key or chord at the current focus (e.g. 'Enter', 'Shift+Tab').", key=_STR),
    _tool("send_msg_to_user", "Send your final answer to the user; this ends the episode.", text=_STR),
]
TOOL_NAMES = frozenset(t["function"]["name"] for t in TOOLS)
_PARAMS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def check_args(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Validate arguments against the tool's schema (required, unknown, simple types)."""
    params = _PARAMS[name]
    unknown = set(args) - set(params["properties"])
    if unknown:
        raise ActionError(f"unknown argument(s) for {name}: {', '.join(sorted(unknown))}")
    missing = [k for k in params["required"] if k not in args]
    if missing:
        raise ActionError(f"missing argument(s) for {name}: {', '.join(missing)}")
    for key, value in args.items():
        schema = params["properties"][key]
        kind = schema.get("type")
        if kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ActionError(f"{name}.{key} must be a number")
        if kind == "string" and not isinstance(value, str):
            if isinstance(value, int) and not isinstance(value, bool) and key == "element_id":
                args = {**args, key: str(value)}  # models often send numeric ids as numbers
                continue
            raise ActionError(f"{name}.{key} must be a string")
        if "enum" in schema and value not in schema["enum"]:
            raise ActionError(f"{name}.{key} must be one of {schema['enum']}")
        cap = MAX_CHARS.get(key)
        if cap is not None and name != "send_msg_to_user" and len(value) > cap:
            raise ActionError(f"{name}.{key}: {len(value)} characters is too long; send at most {cap} per call")
    return args


async def _element(page: Page, element_id: str):
    locator = page.locator(f'[data-eg-id="{element_id}"]')
    if await locator.count() == 0:
        raise ActionError(f"no element with id {element_id!r} on this page")
    return locator.first


async def _click(page: Page, a: dict[str, Any]) -> None:
    await (await _element(page, a["element_id"])).click(button=a.get("button", "left"), timeout=ACTION_TIMEOUT_MS)


async def _fill(page: Page, a: dict[str, Any]) -> None:
    await (await _element(page, a["element_id"])).fill(a["value"], timeout=ACTION_TIMEOUT_MS)


async def _select(page: Page, a: dict[str, Any]) -> None:
    element = await _element(page, a["element_id"])
    found = await element.evaluate(_RESOLVE_OPTION, a["option"])
    if found is None:
        raise ActionError(f"element {a['element_id']!r} is not a <select>")
    if found["value"] is None:
        raise ActionError(f"no option {a['option']!r}; options: {found['options']}")
    await element.select_option(value=found["value"], timeout=ACTION_TIMEOUT_MS)


_RESOLVE_OPTION = """(el, want) => {
  if (el.tagName !== 'SELECT') return null;
  const opts = Array.from(el.options);
  const norm = (s) => s.replace(/\\s+/g, ' ').trim().toLowerCase();
  const hit = opts.find(o => o.label.trim() === want || o.value === want)
           || opts.find(o => norm(o.label) === norm(want) || norm(o.value) === norm(want));
  return {value: hit ? hit.value : null, options: opts.map(o => o.label.trim())};
}"""


async def _hover(page: Page, a: dict[str, Any]) -> None:
    await (await _element(page, a["element_id"])).hover(timeout=ACTION_TIMEOUT_MS)


async def _press(page: Page, a: dict[str, Any]) -> None:
    if a.get("element_id"):
        await (await _element(page, a["element_id"])).press(a["key"], timeout=ACTION_TIMEOUT_MS)
    else:
        await page.keyboard.press(a["key"])


async def _scroll(page: Page, a: dict[str, Any]) -> None:
    await page.evaluate("([dx, dy]) => window.scrollBy(dx, dy)", [a["dx"], a["dy"]])


async def _go_back(page: Page, a: dict[str, Any]) -> None:
    if await page.go_back(wait_until="load", timeout=ACTION_TIMEOUT_MS) is None and page.url == "about:blank":
        raise ActionError("there is no previous page")


async def _goto(page: Page, a: dict[str, Any]) -> None:
    origin = a["_origin"]
    target = urljoin(page.url if origin_of(page.url) == origin else origin + "/", a["url"])
    if origin_of(target) != origin:
        raise ActionError(f"goto is limited to this site ({origin}); {a['url']!r} is elsewhere")
    await page.goto(target, wait_until="load", timeout=ACTION_TIMEOUT_MS)


async def _mouse_click(page: Page, a: dict[str, Any]) -> None:
    await page.mouse.click(a["x"], a["y"], button=a.get("button", "left"))


async def _mouse_move(page: Page, a: dict[str, Any]) -> None:
    await page.mouse.move(a["x"], a["y"])


async def _type(page: Page, a: dict[str, Any]) -> None:
    await page.keyboard.type(a["text"])


async def _key(page: Page, a: dict[str, Any]) -> None:
    await page.keyboard.press(a["key"])


_ACTIONS: dict[str, Callable[[Page, dict[str, Any]], Awaitable[None]]] = {
    "click": _click, "fill": _fill, "select_option": _select, "hover": _hover, "press": _press,
    "scroll": _scroll, "go_back": _go_back, "goto": _goto, "mouse_click": _mouse_click,
    "mouse_move": _mouse_move, "keyboard_type": _type, "keyboard_press": _key,
}


async def perform(page: Page, name: str, args: dict[str, Any], *, origin: str) -> None:
    """Carry out one page action. Raises ActionError for the agent's mistakes, PlaywrightError otherwise."""
    try:
        await _ACTIONS[name](page, {**args, "_origin": origin})
    except PlaywrightTimeout as exc:
        raise ActionError(f"{name} timed out: {exc.message.splitlines()[0]}") from None
    except PlaywrightError as exc:
        message = exc.message or ""
        if "closed" in message.lower() and ("target" in message.lower() or "browser" in message.lower()):
            raise
        raise ActionError(f"{name} failed: {message.splitlines()[0] if message else exc!r}") from None
