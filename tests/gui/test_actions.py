"""The GUI action space: schemas in OpenAI format, and validation against the screen before the desktop."""

from __future__ import annotations

import json

import pytest

from envgym_gui import actions
from envgym_gui.actions import MAX_TYPE, TOOL_NAMES, TOOLS, ActionError, validate


def check(name: str, **args: object) -> dict:
    return validate(name, json.dumps(args), width=1280, height=720)


def test_the_computer_use_set_and_endings_are_function_schemas() -> None:
    expected = {"left_click", "right_click", "middle_click", "double_click", "triple_click", "mouse_move",
                "left_click_drag", "scroll", "type", "key", "hold_key", "wait", "screenshot", "click_element",
                "focus_element", "set_element_text", "done", "fail"}
    assert expected == TOOL_NAMES
    for tool in TOOLS:
        assert tool["type"] == "function"
        params = tool["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])


def test_good_calls_come_back_normalised() -> None:
    assert check("left_click", x=0, y=719) == {"x": 0, "y": 719}
    assert check("left_click", x=10.0, y=20) == {"x": 10, "y": 20}
    assert check("scroll", x=5, y=5, direction="down") == {"x": 5, "y": 5, "direction": "down", "amount": 3}
    assert check("key", keys="  ctrl+a Delete ") == {"keys": "ctrl+a Delete"}
    assert check("click_element", element_id=12) == {"element_id": "12"}
    assert check("done") == {}


@pytest.mark.parametrize(("name", "args", "needle"), [
    ("left_click", {"x": 1280, "y": 5}, "off the screen"),
    ("left_click", {"x": -1, "y": 5}, "off the screen"),
    ("left_click_drag", {"start_x": 5, "start_y": 900, "x": 1, "y": 1}, "off the screen"),
    ("left_click", {"x": 1.5, "y": 5}, "whole number"),
    ("left_click", {"x": "10", "y": 5}, "must be an integer"),
    ("left_click", {"x": True, "y": 5}, "must be an integer"),
    ("left_click", {"x": 5}, "missing argument"),
    ("left_click", {"x": 5, "y": 5, "z": 1}, "unknown argument"),
    ("type", {"text": "a" * (MAX_TYPE + 1)}, "too long"),
    ("key", {"keys": "ctrl+s; rm -rf /"}, "xdotool key names"),
    ("key", {"keys": ""}, "xdotool key names"),
    ("scroll", {"x": 1, "y": 1, "direction": "sideways"}, "must be one of"),
    ("scroll", {"x": 1, "y": 1, "direction": "up", "amount": 0}, "1-25"),
    ("wait", {"seconds": 60}, "between 0 and 10"),
    ("hold_key", {"keys": "a", "seconds": -1}, "between 0 and 5"),
    ("teleport", {}, "unknown tool"),
])
def test_bad_calls_are_action_errors_naming_the_problem(name: str, args: dict, needle: str) -> None:
    with pytest.raises(ActionError, match=needle):
        check(name, **args)


def test_a_megabyte_of_type_text_and_bad_json_are_refused() -> None:
    with pytest.raises(ActionError, match="too long"):
        validate("type", json.dumps({"text": "x" * (1 << 20)}), width=1280, height=720)
    with pytest.raises(ActionError):
        validate("left_click", "{oops", width=1280, height=720)
    assert actions.MAX_TYPE < 1 << 20
