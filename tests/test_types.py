import json

import pytest
from pydantic import ValidationError

from envgym.types import Action, Observation, ToolCall, Usage, Verdict, content_hash


def test_models_are_frozen_and_strict():
    action = Action.say("hi")
    with pytest.raises(ValidationError):
        action.text = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Observation(text="x", unknown_field=1)  # type: ignore[call-arg]


def test_tool_call_keeps_raw_arguments_and_openai_shape():
    call = ToolCall(id="c1", name="get", arguments="{not json")
    assert call.to_openai() == {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{not json"}}
    built = ToolCall.of("get", order_id="o1")
    assert json.loads(built.arguments) == {"order_id": "o1"}


def test_action_final_iff_no_tool_calls():
    assert Action.say("done").is_final
    assert not Action.call("x").is_final


def test_content_hash_is_order_independent():
    assert content_hash({"a": 1, "b": [1, 2]}) == content_hash({"b": [1, 2], "a": 1})
    assert content_hash({"a": 1}) != content_hash({"a": 2})


def test_usage_adds():
    total = Usage(prompt_tokens=3, completion_tokens=4, calls=1) + Usage(prompt_tokens=1, calls=1)
    assert (total.prompt_tokens, total.completion_tokens, total.calls, total.total_tokens) == (4, 4, 2, 8)


def test_verdict_combine_all_and_any():
    ok, bad = Verdict(score=1.0, passed=True), Verdict(score=0.5, passed=False)
    assert not Verdict.combine([ok, bad]).passed
    assert Verdict.combine([ok, bad]).score == 0.5
    assert Verdict.combine([ok, bad], mode="any").passed
    with pytest.raises(ValidationError):
        Verdict(score=1.5, passed=True)
