"""Imported OSWorld tasks on a real desktop container: the references pass, doing nothing or the wrong thing
fails (the admission gates of ``gui-osworld``, plus a tempting wrong path); an OSWorld agent loop with its own
action spaces (pyautogui code, computer_13 dicts) and observation runs to success."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.plugin import TaskSpec
from envgym.rollout import run_episode
from envgym.task import load_suite, load_tasks
from envgym.testing.agents import ScriptedAgent
from envgym.types import Action, Outcome, ToolCall
from envgym_gui.observe import OSWORLD_NS, GuiObservation
from envgym_gui.osworld_env import osworld_action

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SUITE = Path(__file__).parents[2] / "tasks" / "gui-osworld" / "tasks.jsonl"
ENV_ID = "gui/osworld-v1"
RENAME = "osworld-os-e0df059f-28a6-4169-924f-b9623e7184cc"
BLUETOOTH = "osworld-os-b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"


@pytest.fixture(scope="module")
def tasks():
    return {t.id: t for t in load_tasks(SUITE)}


async def test_references_pass_wrong_paths_fail_and_mouse_down_up_works_beside_envgym_tools(tasks) -> None:
    """One env (one warm desktop pool) for both: every episode still starts on a desktop of its own."""
    rename, infeasible = tasks[RENAME], tasks[BLUETOOTH]
    # a tempting wrong path: copy the folder under a misspelt name, then claim success
    wrong = ScriptedAgent([Action.call("type", text="cp -r ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan2"),
                           Action.call("key", keys="Return"), Action.call("wait", seconds=1), Action.call("done")])
    async with envgym.make(ENV_ID) as env:
        runs = {
            "oracle": await run_episode(env, OracleAgent(rename), rename),
            "null": await run_episode(env, NullAgent(), rename),
            "wrong": await run_episode(env, wrong, rename),
            "oracle infeasible": await run_episode(env, OracleAgent(infeasible), infeasible),
            "claims done on infeasible": await run_episode(env, ScriptedAgent([Action.call("done")]), infeasible),
        }
        outcomes = {name: (t.outcome, t.reward) for name, t in runs.items()}
        assert outcomes == {
            "oracle": (Outcome.SUCCESS, 1.0), "null": (Outcome.FAILURE, 0.0), "wrong": (Outcome.FAILURE, 0.0),
            "oracle infeasible": (Outcome.SUCCESS, 1.0), "claims done on infeasible": (Outcome.FAILURE, 0.0)}
        evidence = runs["wrong"].verdict.evidence["desktop"]
        assert [e["passed"] for e in evidence] == [True, False]  # ended with done, but no folder todo_list_Jan_2

        # mouse down/up and OSWorld's action spaces as tools beside envgym's own, in one episode
        obs, info = await env.reset(task=rename)
        assert {"pyautogui", "computer_13", "left_click", "done"} <= {t["function"]["name"] for t in info["tools"]}
        assert type(obs) is GuiObservation and obs.a11y is not None  # envgym's own observation by default
        steps = [
            Action(tool_calls=(ToolCall.of("pyautogui", code="pyautogui.mouseDown(100, 100); "
                                                              "pyautogui.moveTo(300, 200); pyautogui.mouseUp()"),
                               ToolCall.of("computer_13", action_type="HOTKEY",
                                           parameters={"keys": ["ctrl", "shift", "c"]}))),
            Action(tool_calls=(ToolCall.of("pyautogui", code="pyautogui.keyDown('ctrl'); pyautogui.keyUp('ctrl')"),
                               ToolCall.of("type", text=MV),
                               ToolCall.of("computer_13", action_type="PRESS", parameters={"key": "enter"}),
                               ToolCall.of("wait", seconds=1))),
        ]
        for action in steps:
            obs, _, done, _, _ = await env.step(action)
            assert not done and obs.last_action_error is None, obs.last_action_error
            assert [r.content for r in obs.tool_results] == ["ok"] * len(action.tool_calls)
        _, reward, done, _, _ = await env.step(Action.call("done"))
        assert (done, reward) == (True, 1.0)


# --- OSWorld's own agent loop, action spaces and observation (lib_run_single's loop, prompt-free agents) ----
class PyautoguiAgent:
    """An OSWorld agent as OSWorld's loop calls it (``predict(instruction, obs) -> (response, actions)``): each
    step of its plan is made from the point it is to click (the terminal's centre: xterm has no accessibility
    tree, so where a model would read it off the screenshot, the test measures it)."""

    def __init__(self, plan: list, point: tuple[int, int] = (0, 0)) -> None:
        self.plan, self.point, self.seen = list(plan), point, []

    def predict(self, instruction: str, obs: dict) -> tuple[str, list]:
        self.seen.append(obs)
        actions = self.plan.pop(0)(*self.point) if self.plan else ["DONE"]
        return "\n".join(map(str, actions)), actions


async def osworld_loop(env, agent, task, max_steps: int = 10) -> tuple[float, list]:
    """lib_run_single.run_single_example's loop on envgym: each action through ``osworld_action``; the kernel
    grades on the episode's end (the reward of that step), where OSWorld calls ``env.evaluate()``."""
    obs, _ = await env.reset(task=task)
    errors, done, reward = [], False, 0.0
    for _ in range(max_steps):
        _, actions = agent.predict(obs.osworld()["instruction"], obs.osworld())
        for action in actions:
            obs, reward, done, truncated, _ = await env.step(osworld_action(action))
            errors.append(obs.last_action_error)
            if done or truncated:
                return reward, errors
    return reward, errors


MV = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"
RENAME_CODE = [
    lambda x, y: ["import pyautogui\nimport time\npyautogui.FAILSAFE = False\npyautogui.scroll(-1)\ntime.sleep(0.5)"],
    lambda x, y: [f"pyautogui.click({x}, {y}); pyautogui.typewrite('{MV}')", "pyautogui.press('enter'); time.sleep(1)"],
    lambda x, y: ["DONE"],
]
RENAME_COMPUTER_13 = [
    lambda x, y: [{"action_type": "CLICK", "parameters": {"x": x, "y": y}}],
    lambda x, y: [{"action_type": "TYPING", "parameters": {"text": MV}},
                  {"action_type": "PRESS", "parameters": {"key": "enter"}}, "WAIT", "WAIT"],
    lambda x, y: [{"action_type": "DONE"}],
]


async def test_an_osworld_agent_loop_runs_unchanged_in_both_action_spaces_and_sees_osworlds_tree(tasks) -> None:
    """One env (one warm desktop pool) for the loop and the tree: every episode still starts on a desktop of its own."""
    rename, infeasible = tasks[RENAME], tasks[BLUETOOTH]
    async with envgym.make(ENV_ID, observation="osworld") as env:
        await env.reset(task=rename)
        window = next(w for w in await env.unwrapped.desktop.windows() if w.title == "Terminal")
        point = (window.x + window.w // 2, window.y + window.h // 2)
        code = PyautoguiAgent(RENAME_CODE, point)
        assert await osworld_loop(env, code, rename) == (1.0, [None] * 4)
        first = code.seen[0]
        assert set(first) == {"screenshot", "accessibility_tree", "terminal", "instruction"}
        assert first["screenshot"].startswith(b"\x89PNG") and first["instruction"] == rename.instruction
        assert ET.fromstring(first["accessibility_tree"]).tag == "desktop-frame"
        assert await osworld_loop(env, PyautoguiAgent(RENAME_COMPUTER_13, point), rename) == (1.0, [None] * 6)
        assert (await osworld_loop(env, PyautoguiAgent([lambda x, y: ["FAIL"]]), infeasible))[0] == 1.0
        assert (await osworld_loop(env, PyautoguiAgent([lambda x, y: [{"action_type": "DONE"}]]), infeasible))[0] == 0
        # code that is not pyautogui's: an error observation, nothing of it runs, the episode goes on
        await env.reset(task=rename)
        for text, needle in [
                (f"pyautogui.typewrite('{MV}\\n')\nimport os; os.system('true')", "import os"),
                ("pyautogui.click(5000, 10)", "off the screen"),
                ('{"action_type": "PRESS", "parameters": {"key": "nosuchkey"}}', "nosuchkey")]:
            obs, _, done, _, _ = await env.step(Action(text=text))
            assert not done and obs.last_action_error and needle in obs.last_action_error, obs.last_action_error
        obs, reward, done, _, _ = await env.step(Action(text="DONE"))
        assert (done, reward) == (True, 0.0)  # the first snippet's typing never ran: the folder keeps its name

        # the OSWorld tree of an accessible app (the editor; xterm has none) is what OSWorld's agents filter
        editor = next(t for t in load_suite("gui-files") if t.initial_state.get("open", {}).get("app") == "editor")
        obs, _ = await env.reset(task=TaskSpec.model_validate({**editor.model_dump(mode="json"), "env_id": ENV_ID}))
    tree = ET.fromstring(obs.osworld()["accessibility_tree"])
    st, cp = "{" + OSWORLD_NS["st"] + "}", "{" + OSWORLD_NS["cp"] + "}"
    frame = next(n for n in tree.iter("frame"))
    assert "Mousepad" in frame.get("name") and frame.get(f"{cp}size") == "(1280, 720)"
    menus = [n.get("name") for n in tree.iter("menu")]
    assert menus[:2] == ["File", "Edit"]
    text = next(n for n in tree.iter("text") if n.get(f"{st}focused") == "true")
    assert text.text and text.text.splitlines()[0] in obs.a11y  # the file's text, also in envgym's own tree
    # OSWorld's own agents filter the tree with this (desktop-env ships mm_agents): it keeps the menus and the text
    heuristic = pytest.importorskip("mm_agents.accessibility_tree_wrap.heuristic_retrieve")
    kept = heuristic.filter_nodes(ET.fromstring(obs.osworld()["accessibility_tree"]), platform="ubuntu")
    assert {"File", "Edit"} <= {n.get("name") for n in kept if n.tag == "menu"}
    assert any(n.tag == "text" and n.text == text.text for n in kept)
