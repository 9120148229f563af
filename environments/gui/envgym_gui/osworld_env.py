"""``gui/osworld-v1``: the desktop env with OSWorld's action spaces and observation beside envgym's own.

An agent written for OSWorld emits either pyautogui code strings (``"pyautogui.click(10, 20)"``, ``"WAIT"``,
``"DONE"``, ``"FAIL"``) or computer_13 dicts (``{"action_type": "CLICK", "parameters": {...}}``). Here they
arrive as an :class:`~envgym.plugin.Action` routed explicitly, never guessed from a tool's name:

==========================================  ==================================================================
``Action(text=...)``                        OSWorld code: a pyautogui snippet or WAIT / DONE / FAIL, or a
                                            computer_13 action as JSON (text starting with ``{``). In this env a
                                            text is *not* a final answer: end with ``DONE`` or the ``done``
                                            tool (``answer=``); only a blank text still ends the episode (done,
                                            no answer), as in ``gui/desktop-v1``
tool ``pyautogui`` (``code``)               the same, as a tool call
tool ``computer_13`` (the action's fields)  ``ToolCall.of("computer_13", action_type="CLICK", parameters=...)``
envgym's tools (:mod:`envgym_gui.actions`)  as in ``gui/desktop-v1``
==========================================  ==================================================================

:func:`osworld_action` turns what an OSWorld agent's ``predict`` returns (a string or a dict) into that
:class:`~envgym.plugin.Action`. The code is read by :mod:`envgym_gui.osworld_actions` (``ast``, a whitelist of
pyautogui calls), never executed; what it cannot read is ``last_action_error`` and nothing of it runs. The
agent's steps go through the same desktop operations as envgym's tools.

OSWorld's pyautogui leaves buttons and keys held between calls; so does this env, on the X server itself:
``mouseDown`` / ``mouseUp`` (computer_13's ``MOUSE_DOWN`` / ``MOUSE_UP``) press and release the button where
the pointer is, so a move between them is a drag the app sees as it happens, and ``keyDown`` / ``keyUp``
(``KEY_DOWN`` / ``KEY_UP``) press and release keys, so a click, a scroll or a key press between them carries the
modifier (a shift-click; ``keyDown('ctrl'); press('c')`` is ctrl+c). A key combination that names a key already
held leaves that key out (pressing it again would release it). Keys still held when the episode ends are
released before the grading-time ``postconfig``; a held button stays held, as on OSWorld's VM.

``observation="osworld"`` makes every observation an :class:`~envgym_gui.observe.OSWorldObservation`, whose
``.osworld()`` is OSWorld's ``{"screenshot", "accessibility_tree", "terminal", "instruction"}`` with the tree in
OSWorld's XML form. The screen is 1280x720 (OSWorld's VM: 1920x1080): coordinates are the screen's.
"""

from __future__ import annotations

import json
import logging
from typing import Any, ClassVar, Literal

from envgym.plugin import (
    Action,
    AgentFault,
    ArgumentsError,
    EnvError,
    StepResult,
    TaskSpec,
    ToolCall,
    ToolResult,
    VerifyContext,
    decode_arguments,
)
from envgym.plugin.sandbox import SandboxCrashed
from envgym_gui import actions, desktop
from envgym_gui.actions import ENDINGS, MAX_SCROLL, TOOLS, ActionError
from envgym_gui.desktop import DesktopGone
from envgym_gui.env import DesktopEnv, DesktopLost
from envgym_gui.observe import GuiObservation, OSWorldObservation, osworld_tree, render, render_tree
from envgym_gui.osworld_actions import STATEFUL, Op, parse_code, parse_computer13
from envgym_gui.osworld_actions import TOOLS as OSWORLD_TOOLS
from envgym_gui.setup import run_setup

log = logging.getLogger(__name__)

__all__ = ["OSWorldEnv", "osworld_action"]

MAX_SCROLL_TOTAL = 200
"""Wheel clicks one OSWorld scroll may ask for (sent as several scrolls of at most ``MAX_SCROLL``)."""


def osworld_action(action: Any) -> Action:
    """What an OSWorld agent returns for one step (a pyautogui string, WAIT / DONE / FAIL, or a computer_13
    dict) as the :class:`~envgym.plugin.Action` ``gui/osworld-v1`` reads as OSWorld's (see the module
    docstring). An :class:`~envgym.plugin.Action` is returned as it is."""
    if isinstance(action, Action):
        return action
    if isinstance(action, dict):
        return Action(tool_calls=(ToolCall(name="computer_13", arguments=json.dumps(action, ensure_ascii=False)),))
    if isinstance(action, str):
        return Action(text=action)
    raise TypeError(f"an OSWorld action is a string or a dict, not {type(action).__name__}")


class OSWorldEnv(DesktopEnv):
    """``gui/osworld-v1``: see the module docstring. ``observation``: ``"envgym"`` (:class:`GuiObservation`,
    as ``gui/desktop-v1``) or ``"osworld"`` (:class:`OSWorldObservation`)."""

    gate_sample: ClassVar[int | None] = 8
    """Admission gates on 8 of the imported tasks (``envgym check --all-tasks`` gates every one): each episode is
    a desktop's seconds, and the importer's own tests grade every mapping rule."""

    def __init__(self, *, observation: Literal["envgym", "osworld"] = "envgym", a11y: bool = True,
                 **kwargs: Any) -> None:
        if observation not in ("envgym", "osworld"):
            raise ValueError(f"observation must be 'envgym' or 'osworld', got {observation!r}")
        # in OSWorld's form the tree is read once per observation here, for both the XML and the text
        super().__init__(a11y=a11y and observation == "envgym", **kwargs)
        self.observation, self.text_a11y = observation, a11y
        self._keys: list[str] = []  # held by keyDown, in the order pressed (xdotool's names)
        self._buttons: set[str] = set()  # held by mouseDown

    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[GuiObservation, dict[str, Any]]:
        self._keys, self._buttons = [], set()
        self._postconfig_done = False
        obs, info = await super().reset(task=task, seed=seed, options=options)
        return obs, {**info, "tools": [*TOOLS, *OSWORLD_TOOLS]}

    async def verify_context(self) -> VerifyContext:
        """OSWorld's grading-time ``postconfig`` (the importer's ``initial_state.postconfig``: focus the
        document, ctrl+s) replayed once, as OSWorld does before its getters read the files; then the files are
        read. A step the episode's end state makes impossible (the agent closed the window) is logged and the
        files are graded as they are, as OSWorld grades them."""
        steps = (self.task.initial_state.get("postconfig") if self.task else None) or []
        if steps and not self._postconfig_done and self._sandbox is not None:
            self._postconfig_done = True
            try:
                if self._keys and self.desktop is not None:
                    await self._release_keys()
                await run_setup(self._sandbox, steps, part="postconfig")
            except (EnvError, DesktopGone, desktop.DesktopError) as exc:
                log.warning("task %s: postconfig not replayed: %s", self.task.id if self.task else "?", exc)
        return await super().verify_context()

    # --- stepping ------------------------------------------------------------------------------------------
    async def step(self, action: Action) -> StepResult:
        if self.desktop is None or self.task is None:
            raise EnvError("step() without an open episode")
        if not action.tool_calls and (action.text is None or not action.text.strip()):
            return await super().step(action)  # nothing (an error observation) or a blank final message (done)
        calls = action.tool_calls or (ToolCall(name="pyautogui", arguments=json.dumps({"code": action.text})),)
        results: list[ToolResult] = []
        try:
            for call in calls:
                try:
                    ops = self._ops(call, from_text=not action.tool_calls)
                    for op in ops:
                        if op.name in ENDINGS:
                            return self._end(op.name, str(op.args.get("answer", op.args.get("reason", ""))))  # type: ignore[arg-type]
                        await self._run(op)
                    results.append(ToolResult(call_id=call.id, name=call.name, content="ok"))
                except (ActionError, desktop.ActionError) as exc:
                    results.append(ToolResult(call_id=call.id, name=call.name, content=str(exc), error=str(exc)))
            errors = "; ".join(f"{r.name}: {r.error}" for r in results if r.error) or None
            obs = await self._observe(errors)
        except SandboxCrashed as exc:
            lost = DesktopLost(f"the desktop container died during the episode: {exc}")
            lost.blame = exc.blame or "agent"
            raise lost from exc
        except DesktopGone as exc:
            raise AgentFault(f"the agent's desktop session died: {exc}") from exc
        if not action.tool_calls:  # OSWorld code sent as text: no call to answer
            return StepResult(obs, 0.0, False, False, {})
        return StepResult(obs.model_copy(update={"tool_results": tuple(results)}), 0.0, False, False, {})

    def _ops(self, call: ToolCall, *, from_text: bool) -> list[Op]:
        """The call as :class:`Op` s, all read and validated before any of them runs."""
        if call.name == "pyautogui":
            args = _arguments(call)
            if set(args) != {"code"}:
                raise ActionError("pyautogui takes one argument, code (a string of pyautogui calls)")
            code = args["code"]
            if from_text and isinstance(code, str) and code.lstrip().startswith("{"):
                ops = parse_computer13(code)
            else:
                ops = parse_code(code, screen=self.size)
        elif call.name == "computer_13":
            ops = parse_computer13(_arguments(call))
        else:
            return [Op(call.name, actions.validate(call.name, call.arguments, width=self.size[0],
                                                   height=self.size[1]))]
        checked = []
        width, height = self.size
        for op in ops:
            if op.name in STATEFUL:
                if "x" in op.args and not (0 <= op.args["x"] < width and 0 <= op.args["y"] < height):
                    raise ActionError(f"({op.args['x']}, {op.args['y']}) is off the screen; x must be in "
                                      f"0..{width - 1} and y in 0..{height - 1} (this desktop is {width}x{height})")
                checked.append(op)
            else:
                checked.append(Op(op.name, actions.validate(op.name, json.dumps(op.args), width=self.size[0],
                                                             height=self.size[1])))
        return checked

    async def _run(self, op: Op) -> None:
        d = self.desktop
        assert d is not None
        name, args = op.name, op.args
        if name == "osw_key_down":
            if args["keys"] not in self._keys:  # pyautogui's second keyDown of a held key: no second press
                await d.key_state(args["keys"], down=True)
                self._keys.append(args["keys"])
        elif name == "osw_key_up":
            if args["keys"] in self._keys:  # a key this env never pressed is left alone
                await d.key_state(args["keys"], down=False)
                self._keys.remove(args["keys"])
        elif name == "key" and self._keys:
            keys = self._without_held(args["keys"])
            if keys:  # press('shift') while shift is held: it is down already
                await d.key(keys)
        elif name == "osw_move":
            await d.move(*await self._target(args))
        elif name == "osw_click":
            await d.click(*await self._target(args), button=args["button"], count=args["count"])
        elif name == "osw_scroll":
            point = await self._target(args)
            dx, dy = args["dx"], args["dy"]
            direction = ("right" if dx > 0 else "left") if dx else ("up" if dy > 0 else "down")
            total = abs(dx or dy)
            if total > MAX_SCROLL_TOTAL:
                raise ActionError(f"scroll of {total} clicks; at most {MAX_SCROLL_TOTAL}")
            while total > 0:
                await d.scroll(*point, direction, min(total, MAX_SCROLL))
                total -= MAX_SCROLL
        elif name == "osw_drag_to":  # the left button (the reader refuses others: mouseDown / mouseUp do those)
            start, target = await d.pointer(), await self._target(args)
            if "left" in self._buttons:  # held by mouseDown: pyautogui's dragTo moves, then releases it
                await d.move(*target)
                await d.mouse_button(*target, down=False)
                self._buttons.discard("left")
            else:
                await d.drag(*start, *target)  # the daemon's drag moves in steps, as a hand would
        elif name == "osw_mouse_down":
            if args["button"] not in self._buttons:  # pyautogui presses a pressed button again: no new press
                await d.mouse_button(*await d.pointer(), down=True, button=args["button"])
                self._buttons.add(args["button"])
        elif name == "osw_mouse_up":
            if args["button"] in self._buttons:  # pyautogui releases a button that is not pressed silently
                await d.mouse_button(*await d.pointer(), down=False, button=args["button"])
                self._buttons.discard(args["button"])
        else:
            await self._perform(name, args)

    def _without_held(self, keys: str) -> str:
        """xdotool key combinations less the keys held by ``keyDown`` (already down on the X server: pressing
        one again in a combination would release it at the combination's end). ``keyDown('ctrl');
        press('c')`` is ctrl+c; ``keyDown('ctrl'); hotkey('ctrl', 'c')`` too."""
        combos = ["+".join(part for part in combo.split("+") if part not in self._keys) for combo in keys.split()]
        return " ".join(c for c in combos if c)

    async def _release_keys(self) -> None:
        """Release the keys ``keyDown`` left held, before the grading-time ``postconfig`` presses its own (its
        ctrl+s is not a ctrl+shift+s). A held button stays held, as on OSWorld's VM: releasing it could finish a
        drag the agent left unfinished, a change the agent did not make."""
        keys, self._keys = self._keys, []
        for key in reversed(keys):
            await self.desktop.key_state(key, down=False)  # type: ignore[union-attr]

    async def _target(self, args: dict[str, Any]) -> tuple[int, int]:
        """The point an op names: its x, y; the pointer moved by rx, ry (moveRel, dragRel); else the pointer."""
        if "x" in args:
            return args["x"], args["y"]
        assert self.desktop is not None
        here = await self.desktop.pointer()
        if "rx" not in args:
            return here
        point = (here[0] + args["rx"], here[1] + args["ry"])
        width, height = self.size
        if not (0 <= point[0] < width and 0 <= point[1] < height):
            raise ActionError(f"({point[0]}, {point[1]}) is off the screen; x must be in 0..{width - 1} and y in "
                              f"0..{height - 1} (this desktop is {width}x{height})")
        return point

    # --- observation ---------------------------------------------------------------------------------------
    async def _observe(self, error: str | None = None, **kwargs: Any) -> GuiObservation:
        obs = await super()._observe(error, **kwargs)  # kwargs: the desktop env's (a reset's still screen)
        if self.observation != "osworld":
            return obs
        assert self.desktop is not None and self.task is not None
        elements = await self.desktop.a11y_tree()
        tree = render_tree(elements) if self.text_a11y else None
        text = render(self.task.instruction, size=self.size, shot=obs.screenshot, windows=obs.windows,
                      focused=obs.focused, a11y=tree, error=error)
        return OSWorldObservation(**{**dict(obs), "text": text, "a11y": tree}, instruction=self.task.instruction,
                                  accessibility_tree=osworld_tree(elements))


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        return decode_arguments(call.name, call.arguments)
    except ArgumentsError as exc:
        raise ActionError(str(exc)) from None
