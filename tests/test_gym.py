import json
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from envgym.gym import gym_id, parse_action


def test_gymnasium_make_and_check_env():
    env = gymnasium.make(gym_id("test/notes-v1"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_sync_episode_through_gymnasium(notes):
    env = gymnasium.make("envgym/test-notes-v1")
    try:
        obs, info = env.reset(options={"task": notes[0]})
        assert json.loads(obs)["text"] == notes[0].instruction
        assert {t["function"]["name"] for t in info["tools"]} >= {"delete_note"}
        obs, reward, terminated, truncated, _ = env.step('{"name": "delete_note", "arguments": {"note_id": 1}}')
        assert not terminated and not truncated and json.loads(obs)["tool_results"][0]["error"] is None
        obs, reward, terminated, _truncated, info = env.step("Deleted it.")
        assert terminated and reward == 1.0 and info["verdict"].passed
    finally:
        env.close()


def test_bundled_envs_are_registered_with_gymnasium():
    assert "envgym/tool-retail-v1" in gymnasium.registry
    assert "envgym/tool-assistant-v1" in gymnasium.registry


def test_parse_action_forms():
    assert parse_action("plain words", 1).text == "plain words"
    call = parse_action({"name": "x", "arguments": {"a": 1}}, 2).tool_calls[0]
    assert (call.name, json.loads(call.arguments), call.id) == ("x", {"a": 1}, "call_2_0")
    both = parse_action('{"text": "hi", "tool_calls": [{"name": "y", "arguments": "{bad"}]}', 3)
    assert both.text == "hi" and both.tool_calls[0].arguments == "{bad"


def test_an_object_of_an_envs_own_action_space_reaches_it_as_text():
    # OSWorld's computer_13 action through the facade: before, it became an empty action (no call, no text)
    text = '{"action_type": "CLICK", "parameters": {"x": 10, "y": 20}}'
    assert parse_action(text, 1).text == text and not parse_action(text, 1).tool_calls
    as_dict = parse_action({"action_type": "WAIT"}, 2)
    assert json.loads(as_dict.text) == {"action_type": "WAIT"} and not as_dict.tool_calls
    assert parse_action({}, 3).text is None and not parse_action("{}", 3).tool_calls  # empty stays empty


def test_make_vec_builds_the_lockstep_facade():
    envs = gymnasium.make_vec("envgym/test-notes-v1", num_envs=2, vectorization_mode="vector_entry_point")
    try:
        observations, _ = envs.reset(seed=0)
        assert len(observations) == 2 and all(json.loads(o)["text"] for o in observations)
    finally:
        envs.close()


MALFORMED = [
    {"tool_calls": [{"arguments": {}}]},  # no name: KeyError before
    {"tool_calls": [5]},
    {"tool_calls": "get_note"},
    {"tool_calls": [{"name": None, "arguments": {"note_id": 1}}]},
    {"tool_calls": [{"name": ["get_note"], "id": 7}]},
    {"name": "get_note", "arguments": {1, 2}},  # not JSON-serialisable
    {"text": {"not": "text"}, "tool_calls": [{"name": "get_note", "arguments": [1]}]},
]


@pytest.mark.parametrize("action", MALFORMED)
def test_malformed_action_dicts_are_error_observations(notes, action):
    env = gymnasium.make("envgym/test-notes-v1")
    try:
        env.reset(options={"task": notes[0]})
        obs, reward, terminated, truncated, _ = env.step(action)
        observation = json.loads(obs)
        assert observation["last_action_error"] and not terminated and not truncated and reward == 0.0
        obs, *_ = env.step('{"name": "get_note", "arguments": {"note_id": 1}}')  # the episode goes on
        assert json.loads(obs)["last_action_error"] is None
    finally:
        env.close()


def test_ids_registered_before_gymnasium_is_first_imported_inside_an_isolated_registry_reach_it():
    """Gymnasium learns envgym's ids when envgym.gym is first imported; imported first inside ``isolated()``, it
    learned only the block's, and an id registered before (the tests' ``test/notes-v1``) was never made through
    Gymnasium afterwards (``tests/test_check.py`` failed after ``tests/timed/test_acme_stove.py``)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys
        import envgym
        envgym.register("test/outer-v1", "envgym_tool.env:ToolEnv", kwargs={"domain": "retail"})
        assert "gymnasium" not in sys.modules
        with envgym.isolated():
            envgym.register("test/inner-v1", "envgym_tool.env:ToolEnv", kwargs={"domain": "retail"})
            import gymnasium
            import envgym.gym
        assert envgym.gym.gym_id("test/outer-v1") in gymnasium.registry, "outer id unknown to Gymnasium"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
