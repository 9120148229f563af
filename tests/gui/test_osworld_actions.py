"""OSWorld's action spaces read without running anything: pyautogui code through a whitelist, computer_13 dicts,
pyautogui's key names as xdotool's, and OSWorld's accessibility-tree XML as its own agent code reads it."""

from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ET

import pytest

from envgym_gui.actions import ActionError
from envgym_gui.desktop import Element
from envgym_gui.observe import OSWORLD_NS, osworld_tree
from envgym_gui.osworld_actions import MAX_OPS, Op, key_name, parse_code, parse_computer13

SCREEN = (1280, 720)


def code(text: str) -> list[Op]:
    return parse_code(text, screen=SCREEN)


def test_the_calls_an_osworld_agent_writes_become_desktop_actions() -> None:
    snippet = """
import pyautogui
import time
pyautogui.FAILSAFE = False
pyautogui.click(100, 200)
pyautogui.doubleClick(x=10.4, y=20.6)
pyautogui.rightClick((30, 40))
pyautogui.moveTo(50, 60, duration=0.5)
pyautogui.dragTo(70, 80, duration=1.0, button='left')
pyautogui.scroll(-5)
pyautogui.hscroll(3, x=5, y=6)
pyautogui.typewrite('hi\\n', interval=0.05)
pyautogui.write('x')
pyautogui.press('enter', presses=2)
pyautogui.press(['tab', 'ESC'])
pyautogui.hotkey('ctrl', 'shift', 's')
pyautogui.typewrite(['a', 'left'])
time.sleep(1.5)
"""
    assert code(snippet) == [
        Op("osw_click", {"x": 100, "y": 200, "button": "left", "count": 1}),
        Op("osw_click", {"x": 10, "y": 21, "button": "left", "count": 2}),
        Op("osw_click", {"x": 30, "y": 40, "button": "right", "count": 1}),
        Op("osw_move", {"x": 50, "y": 60}),
        Op("osw_drag_to", {"x": 70, "y": 80}),
        Op("osw_scroll", {"dx": 0, "dy": -5}),
        Op("osw_scroll", {"x": 5, "y": 6, "dx": 3, "dy": 0}),
        Op("type", {"text": "hi\n"}),
        Op("type", {"text": "x"}),
        Op("key", {"keys": "Return Return"}),
        Op("key", {"keys": "Tab Escape"}),
        Op("key", {"keys": "ctrl+shift+s"}),
        Op("key", {"keys": "a Left"}),
        Op("wait", {"seconds": 1.5}),
    ]


def test_names_arithmetic_and_simple_loops_are_followed() -> None:
    snippet = """
x, y = 100, 200
w, h = pyautogui.size()
for i in range(3):
    pyautogui.click(x + i * 10, y)
for key in ['a', 'b']:
    pyautogui.press(key)
pyautogui.click(w // 2, h - 1)
"""
    assert code(snippet) == [
        *(Op("osw_click", {"x": 100 + i * 10, "y": 200, "button": "left", "count": 1}) for i in range(3)),
        Op("key", {"keys": "a"}), Op("key", {"keys": "b"}),
        Op("osw_click", {"x": 640, "y": 719, "button": "left", "count": 1}),
    ]


def test_mouse_and_key_down_up_and_relative_moves_are_kept_for_the_env() -> None:
    snippet = ("pyautogui.mouseDown(10, 20); pyautogui.moveTo(30, 40); pyautogui.mouseUp(button='left')\n"
               "pyautogui.keyDown('shift'); pyautogui.keyUp('shift'); pyautogui.move(5, -5); pyautogui.dragRel(1, 2)")
    assert code(snippet) == [
        Op("osw_move", {"x": 10, "y": 20}), Op("osw_mouse_down", {"button": "left"}),
        Op("osw_move", {"x": 30, "y": 40}), Op("osw_mouse_up", {"button": "left"}),
        Op("osw_key_down", {"keys": "shift"}), Op("osw_key_up", {"keys": "shift"}),
        Op("osw_move", {"rx": 5, "ry": -5}), Op("osw_drag_to", {"rx": 1, "ry": 2}),
    ]


@pytest.mark.parametrize("word", ["WAIT", "DONE", "FAIL", "  DONE\n"])
def test_the_special_strings(word: str) -> None:
    expected = {"WAIT": Op("wait", {"seconds": 0.5}), "DONE": Op("done"), "FAIL": Op("fail")}[word.strip()]
    assert code(word) == [expected]
    assert parse_computer13({"action_type": word.strip()}) == [expected]


@pytest.mark.parametrize(("snippet", "needle"), [
    ("import os\nos.system('rm -rf /')", "import os"),
    ("__import__('os').system('id')", "calling __import__"),
    ("open('/etc/passwd').read()", "calling open('/etc/passwd').read"),
    ("pyautogui.locateOnScreen('a.png')", "pyautogui.locateOnScreen is not supported"),
    ("subprocess.run(['ls'])", "calling subprocess.run"),
    ("pyautogui.click(x=os.environ)", "Attribute expression"),
    ("while True:\n    pyautogui.click(1, 1)", "While statement"),
    ("f = lambda: 1", "Lambda expression"),
    ("pyautogui.click(1, 2, bogus=3)", "has no argument 'bogus'"),
    ("pyautogui.click(1)", "give both x and y"),
    ("pyautogui.press('hyper_fn')", "key 'hyper_fn' is not one of"),
    ("pyautogui.click(", "does not parse"),
    ("for i in range(1000):\n    pyautogui.press('a')", f"more than {MAX_OPS} actions"),
    ("x = 'a' * 1000", "arithmetic on 'a'"),
    ("x = 10 ** 10 ** 10", "BinOp expression"),
    ("pyautogui = 1", "rebinding pyautogui"),
    ("pyautogui.dragTo(1, 2, button='right')", "right button"),
    ("time.time()", "time.time"),
    ("for i in range(5):\n    time.sleep(8)", "sleeps more than 30 s"),
])
def test_anything_else_is_refused_naming_it(snippet: str, needle: str) -> None:
    with pytest.raises(ActionError, match=re.escape(needle)):
        code(snippet)


def test_values_are_checked_by_the_desktop_actions_later_not_here() -> None:
    # a bad sleep or text comes through as the envgym action it is; the env validates it like any other call
    assert code("time.sleep('a'); time.sleep(1)") == [Op("wait", {"seconds": "a"}), Op("wait", {"seconds": 1})]


def test_computer_13_actions() -> None:
    assert parse_computer13({"action_type": "CLICK", "parameters": {"x": 5, "y": 6, "num_clicks": 2,
                                                                    "button": "right"}}) == [
        Op("osw_click", {"x": 5, "y": 6, "button": "right", "count": 2})]
    assert parse_computer13({"action_type": "CLICK", "x": 5, "y": 6}) == [  # OSWorld's flat form
        Op("osw_click", {"x": 5, "y": 6, "button": "left", "count": 1})]
    assert parse_computer13({"action_type": "CLICK", "parameters": {}}) == [
        Op("osw_click", {"button": "left", "count": 1})]
    assert parse_computer13('{"action_type": "TYPING", "parameters": {"text": "hello"}}') == [
        Op("type", {"text": "hello"})]
    assert parse_computer13({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "alt", "t"]}}) == [
        Op("key", {"keys": "ctrl+alt+t"})]
    assert parse_computer13({"action_type": "SCROLL", "parameters": {"dx": 0, "dy": -3}}) == [
        Op("osw_scroll", {"dx": 0, "dy": -3})]
    assert parse_computer13({"action_type": "SCROLL", "parameters": {"dx": 2, "dy": 0}}) == [
        Op("osw_scroll", {"dx": 2, "dy": 0})]
    assert parse_computer13({"action_type": "PRESS", "parameters": {"key": "pgdn"}}) == [
        Op("key", {"keys": "Page_Down"})]
    assert parse_computer13({"action_type": "DRAG_TO", "parameters": {"x": 1, "y": 2}}) == [
        Op("osw_drag_to", {"x": 1, "y": 2})]
    assert parse_computer13({"action_type": "MOUSE_DOWN"}) == [Op("osw_mouse_down", {"button": "left"})]
    for bad, needle in [({"action_type": "TELEPORT"}, "unknown computer_13"), ({"x": 1}, "action_type"),
                        ({"action_type": "CLICK", "parameters": {"x": 1}}, "both x and y"),
                        ({"action_type": "CLICK", "parameters": {"z": 1}}, "unknown parameter"),
                        ({"action_type": "TYPING", "parameters": {"text": 5}}, "TYPING needs text"),
                        ({"action_type": "HOTKEY", "parameters": {"keys": "ctrl+c"}}, "non-empty list"),
                        ("{not json", "not JSON")]:
        with pytest.raises(ActionError, match=needle):
            parse_computer13(bad)


def test_pyautogui_key_names_map_to_xdotool() -> None:
    assert [key_name(k) for k in ("enter", "Return", "\n", "ctrlleft", "altright", "win", "command", "pgup",
                                  "f11", "num7", "!", "+", "a", "Z", "7", "volumeup", "printscreen", " ")] == [
        "Return", "Return", "Return", "Control_L", "Alt_R", "super", "super", "Page_Up", "F11", "KP_7",
        "exclam", "plus", "a", "Z", "7", "XF86AudioRaiseVolume", "Print", "space"]


def test_the_tree_is_osworld_xml_that_its_own_filter_reads() -> None:
    elements = [
        Element(id="0", role="application", name="mousepad", states=(), bbox=None, depth=0),
        Element(id="0.0", role="frame", name='notes.txt - "Mousepad"', states=("active",), bbox=(0, 0, 1280, 720),
                depth=1),
        Element(id="0.0.0", role="push button", name="Save", states=(), bbox=(10, 20, 30, 40), depth=2),
        Element(id="0.0.1", role="text", name="", states=("editable", "focused"), bbox=(0, 60, 1280, 600),
                depth=2, text="a < b & \x01c"),
        Element(id="1", role="application", name="xterm", states=(), bbox=None, depth=0),
    ]
    root = ET.fromstring(osworld_tree(elements))
    st, cp = "{" + OSWORLD_NS["st"] + "}", "{" + OSWORLD_NS["cp"] + "}"
    assert root.tag == "desktop-frame"
    assert [c.tag for c in root] == ["application", "application"]
    frame = root[0][0]
    assert (frame.tag, frame.get("name")) == ("frame", 'notes.txt - "Mousepad"')
    button, text = list(frame)
    assert (button.tag, button.get("name"), button.get(f"{cp}screencoord"), button.get(f"{cp}size")) == (
        "push-button", "Save", "(10, 20)", "(30, 40)")
    assert button.get(f"{st}showing") == button.get(f"{st}visible") == button.get(f"{st}enabled") == "true"
    assert (text.text, text.get(f"{st}editable"), text.get(f"{st}focused")) == ("a < b & c", "true", "true")
    # OSWorld's agent keeps a node that is showing, visible, enabled, named or with text, and on the screen
    kept = [n for n in root.iter() if n.get(f"{st}showing") == "true" and n.get(f"{st}enabled") == "true"
            and (n.get("name") or n.text) and ast.literal_eval(n.get(f"{cp}size", "(-1, -1)"))[0] > 0]
    assert [n.tag for n in kept] == ["frame", "push-button", "text"]
