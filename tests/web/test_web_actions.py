"""The web action space's bounds: free text is capped before it reaches the page, and over a cap the episode
goes on with an error observation (a step that typed 5,000,000 characters burned its whole deadline)."""

from __future__ import annotations

import asyncio

import pytest

import envgym
from envgym.types import Action, ToolCall
from envgym_web.actions import MAX_KEY, MAX_TYPE, MAX_URL, ActionError, check_args


@pytest.mark.parametrize(("name", "args", "needle"), [
    ("keyboard_type", {"text": "a" * (MAX_TYPE + 1)}, "keyboard_type.text: 4001 characters is too long"),
    ("fill", {"element_id": "q", "value": "a" * 5_000_000}, "fill.value: 5000000 characters"),
    ("select_option", {"element_id": "q", "option": "a" * (MAX_TYPE + 1)}, "select_option.option"),
    ("press", {"key": "+".join(["a"] * 100)}, f"at most {MAX_KEY}"),
    ("keyboard_press", {"key": "Shift+" * 20 + "a"}, "keyboard_press.key"),
    ("goto", {"url": "/?q=" + "c" * MAX_URL}, f"at most {MAX_URL}"),
    ("click", {"element_id": "9" * 100}, "click.element_id"),
])
def test_free_text_over_its_cap_is_refused(name: str, args: dict, needle: str) -> None:
    with pytest.raises(ActionError, match="too long") as caught:
        check_args(name, args)
    assert needle in str(caught.value)


def test_text_within_the_caps_passes_and_the_final_answer_has_none() -> None:
    assert check_args("keyboard_type", {"text": "a" * MAX_TYPE}) == {"text": "a" * MAX_TYPE}
    assert check_args("press", {"key": "Control+Shift+ArrowLeft"}) == {"key": "Control+Shift+ArrowLeft"}
    assert check_args("send_msg_to_user", {"text": "x" * 100_000})["text"] == "x" * 100_000


@pytest.mark.browser
async def test_typing_millions_of_characters_is_an_error_observation_and_the_episode_goes_on(shop_task) -> None:
    async with envgym.make("web/shop-v1") as env:
        await env.reset(task=shop_task)
        await env.step(Action.call("click", element_id="search-input"))
        async with asyncio.timeout(20):  # uncapped, typing 5,000,000 characters took far past the step's 120 s
            huge = await env.step(Action.call("keyboard_type", text="a" * 5_000_000))
            # one step's calls share the cap: two of 3,000 type the first only
            split = await env.step(Action(tool_calls=(ToolCall.of("keyboard_type", text="b" * 3000),
                                                      ToolCall.of("keyboard_type", text="c" * 3000))))
        assert not huge.terminated and "keyboard_type.text: 5000000 characters is too long" in \
            huge.observation.last_action_error
        assert [r.error is None for r in split.observation.tool_results] == [True, False]
        assert "at most 4000 per step" in split.observation.last_action_error
        assert 'value="bbb' in split.observation.text and "ccc" not in split.observation.text
        typed = await env.step(Action.call("keyboard_type", text="d"))  # the next step has its own budget
        assert typed.observation.last_action_error is None and not typed.terminated
