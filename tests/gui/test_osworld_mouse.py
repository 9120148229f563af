"""OSWorld's held buttons and keys on a real desktop: ``mouseDown`` / ``mouseUp`` and ``keyDown`` / ``keyUp``
(computer_13's ``MOUSE_DOWN`` / ``KEY_DOWN`` …) press and release on the X server, so a drag selects a Calc
range while the button is still down and a click under a held shift extends the selection. Checked on Calc's
Name Box (the accessibility tree) during the episode and on the saved file by the task's verifier."""

from __future__ import annotations

import re

import pytest

import envgym
from envgym.plugin import TaskSpec
from envgym.task import load_suite
from envgym.types import Action, ToolCall
from envgym_gui.authoring import check, desktop, get

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PATH = "/home/user/Documents/marks.ods"
# Calc's default column width and row height at 100 % on this desktop's 1280x720 screen, and the column
# header's height: the cells' centres follow from the sheet's own bbox in the tree.
COLUMN_W, ROW_H, HEADER_H = 82, 17, 24
EXPECTED = [
    ["start", None, None, None, None, None],
    [None] * 6,
    [None, None, "x", "x", None, None],
    [None, None, "x", "x", None, None],
    [None, None, "x", "x", None, None],
    *([[None] * 6] * 4),
    ["y", "y", None, None, "z", "z"],
    ["y", "y", None, None, "z", "z"],
    ["y", "y", None, None, None, None],
    [None] * 6,
]


def marks_task() -> TaskSpec:
    base = next(t for t in load_suite("gui-calc") if t.initial_state.get("open", {}).get("app") == "calc")
    verifier = desktop([check(get("ods_table", path=PATH, range="A1:F13"), "table_equal", "marks",
                              expected=EXPECTED)], [])
    return TaskSpec.model_validate({
        **base.model_dump(mode="json"), "id": "osworld-mouse-marks", "env_id": "gui/osworld-v1",
        "instruction": "Mark C3:D5 with x, A10:B12 with y and E10:F11 with z in marks.ods, and save it.",
        "initial_state": {"files": {PATH: {"ods": {"sheets": [{"name": "Sheet1", "rows": [["start"]]}]}}},
                          "open": {"app": "calc", "path": PATH, "title": r"marks\.ods"}},
        "verifiers": [verifier.model_dump(mode="json")], "solution": []})


async def sheet(desktop_) -> tuple[dict[str, tuple[int, int]], object]:
    """The centres of cells A1:F13 on the screen, and a reader of the Name Box's text."""
    elements = await desktop_.a11y_tree()
    x, y, _, _ = next(e for e in elements if e.role == "table" and e.name.startswith("Sheet")).bbox
    cells = {f"{'ABCDEF'[c]}{r + 1}": (x + c * COLUMN_W + COLUMN_W // 2, y + HEADER_H + r * ROW_H + ROW_H // 2)
             for c in range(6) for r in range(13)}

    async def name_box() -> str:
        # the Name Box shows the selection (C3:D5), or its size while a drag is under way (3R x 2C)
        texts = [e.text for e in await desktop_.a11y_tree() if e.role == "text" and e.text]
        return next(t for t in texts if re.fullmatch(r"[A-Z]+\d+(:[A-Z]+\d+)?|\d+R x \d+C", t))

    return cells, name_box


async def test_a_drag_selects_a_calc_range_and_a_shift_click_extends_the_selection() -> None:
    async with envgym.make("gui/osworld-v1") as env:
        await env.reset(task=marks_task())
        cells, name_box = await sheet(env.unwrapped.desktop)

        async def step(action: Action) -> None:
            obs, _, done, _, _ = await env.step(action)
            assert not done and obs.last_action_error is None, obs.last_action_error

        def at(cell: str) -> str:
            return "{}, {}".format(*cells[cell])

        # pyautogui: the button goes down at C3 and stays down while the pointer moves to D5: Calc is selecting
        await step(Action(text=f"pyautogui.mouseDown({at('C3')}); pyautogui.moveTo({at('D5')})"))
        assert await name_box() in ("3R x 2C", "C3:D5")
        await step(Action(text="pyautogui.mouseUp()"))
        assert await name_box() == "C3:D5"
        await step(Action(text="pyautogui.write('x'); pyautogui.hotkey('alt', 'enter')"))  # fills the selection
        # pyautogui: a click on A10, then a click on B12 under a held shift
        await step(Action(text=f"pyautogui.click({at('A10')})\npyautogui.keyDown('shift')\n"
                               f"pyautogui.click({at('B12')})\npyautogui.keyUp('shift')"))
        assert await name_box() == "A10:B12"
        await step(Action(text="pyautogui.write('y'); pyautogui.hotkey('alt', 'enter')"))
        # computer_13: the same shift-click, E10 then F11
        e10, f11 = cells["E10"], cells["F11"]
        await step(Action(tool_calls=(
            ToolCall.of("computer_13", action_type="CLICK", parameters={"x": e10[0], "y": e10[1]}),
            ToolCall.of("computer_13", action_type="KEY_DOWN", parameters={"key": "shift"}),
            ToolCall.of("computer_13", action_type="CLICK", parameters={"x": f11[0], "y": f11[1]}),
            ToolCall.of("computer_13", action_type="KEY_UP", parameters={"key": "shift"}))))
        assert await name_box() == "E10:F11"
        await step(Action(text="pyautogui.write('z'); pyautogui.hotkey('alt', 'enter')\n"
                               "pyautogui.hotkey('ctrl', 's'); time.sleep(2)"))
        _, reward, done, _, info = await env.step(Action(text="DONE"))
    assert (done, reward) == (True, 1.0), info
