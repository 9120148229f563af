"""gui/desktop-v1 end to end on real desktop containers: observation, bad input, faults and their blame.

Needs the desktop image (``envgym sandbox build desktop``; ``make test`` builds it).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.rollout import run_episode
from envgym.sandbox.errors import SandboxCrashed
from envgym.task import load_suite
from envgym.types import Action, Blame, Outcome
from envgym_gui.env import DesktopLost
from envgym_gui.tamper import KillTheDesktop

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def first(app: str):
    for suite in ("gui-files", "gui-calc", "gui-writer"):
        for task in load_suite(suite):
            if task.initial_state.get("open", {}).get("app") == app and task.verifiers[0].expect == "done":
                return task
    raise LookupError(app)


async def test_observation_is_a_screenshot_windows_and_the_accessibility_tree() -> None:
    task = first("editor")
    async with envgym.make("gui/desktop-v1") as env:
        obs, info = await env.reset(task=task)
        assert info["screen"] == {"width": 1280, "height": 720}
        assert {t["function"]["name"] for t in info["tools"]} >= {"left_click", "key", "type", "done", "fail"}
        assert obs.screenshot is not None and obs.screenshot.array().shape == (720, 1280, 3)
        assert obs.focused and any(w.focused for w in obs.windows)
        assert obs.a11y and "[" in obs.a11y
        assert f"GOAL: {task.instruction}" in obs.text
        again, _ = await env.reset(task=task)
        assert again.screenshot == obs.screenshot  # same state, same pixels (fixed size, fonts, no blinking)


async def test_libreoffice_resets_are_identical_in_pixels_and_tree() -> None:
    # the document is loaded when LibreOffice says so, the settle outlasts its late status bar and ruler, and no
    # desktop starts beside a reset (benchmarks/gui_determinism.py runs 200)
    for app in ("writer", "calc"):
        task = first(app)
        async with envgym.make("gui/desktop-v1") as env:
            seen = set()
            for _ in range(3):
                obs, _ = await env.reset(task=task)
                seen.add((obs.screenshot.png_base64, obs.a11y, obs.windows))
                # the screenshot is the still screen reset's settle returned: what a screenshot now shows
                assert base64.b64decode(obs.screenshot.png_base64) == await env.unwrapped.desktop.screenshot()
            assert len(seen) == 1, app


async def test_bad_actions_are_error_observations_and_the_episode_goes_on() -> None:
    task = first("editor")
    async with envgym.make("gui/desktop-v1") as env:
        await env.reset(task=task)
        gui = env.unwrapped
        for action, needle in (
            (Action.call("left_click", x=5000, y=10), "off the screen"),
            (Action.call("key", keys="ctrl+NoSuchKey"), "NoSuchKey"),
            (Action.call("type", text="x" * (1 << 20)), "too long"),
            (Action.call("click_element", element_id="9.9.9.9.9"), "9.9.9.9.9"),
        ):
            obs, reward, terminated, truncated, _ = await env.step(action)
            assert not terminated and not truncated and reward == 0
            assert obs.last_action_error and needle in obs.last_action_error, obs.last_action_error
        # the application crashes (or the agent closed it): its window is gone, the episode goes on
        app = task.initial_state["open"]["app"]
        await gui.desktop.sandbox.exec(["pkill", "-KILL", "-u", "user", "-f", "mousepad"], user="user")
        for _ in range(20):
            obs, *_ = await env.step(Action.call("wait", seconds=0.2))
            if not obs.windows:
                break
        assert not obs.windows, f"{app}'s window outlived its process"
        obs, *_ = await env.step(Action.call("key", keys="ctrl+s"))
        assert obs.last_action_error is None


async def test_oracle_passes_and_null_fails_one_task_of_each_app() -> None:
    async with envgym.make("gui/desktop-v1") as env:
        for app in ("editor", "terminal", "calc", "writer"):
            task = first(app)
            good = await run_episode(env, OracleAgent(task), task)
            assert good.outcome is Outcome.SUCCESS, (app, good.error, good.verdict)
            bad = await run_episode(env, NullAgent(), task)
            assert bad.outcome is Outcome.FAILURE and bad.verdict.score == 0, (app, bad.error)


async def test_a_killed_container_is_infra_and_the_next_reset_gets_a_new_one() -> None:
    task = first("editor")
    async with envgym.make("gui/desktop-v1") as env:
        await env.reset(task=task)
        gui = env.unwrapped
        killed = gui.desktop.sandbox.id
        import docker

        api = docker.APIClient(version="auto")
        try:
            await asyncio.to_thread(api.kill, killed)
        finally:
            api.close()
        with pytest.raises(DesktopLost) as caught:
            await env.step(Action.call("key", keys="Right"))
        assert caught.value.blame == "infra"
        obs, _ = await env.reset(task=task)
        assert gui.desktop.sandbox.id != killed and obs.screenshot is not None
        trajectory = await run_episode(env, OracleAgent(task), task)
        assert trajectory.outcome is Outcome.SUCCESS


async def test_a_container_that_died_with_no_outside_cause_is_the_agents_failure() -> None:
    task = first("editor")
    async with envgym.make("gui/desktop-v1") as env:
        await env.reset(task=task)
        sandbox = env.unwrapped.desktop.sandbox
        # PID 1 stopped from inside (as root: the desktop user cannot; it stands for the container's own memory
        # exhausted by what the agent opened): the engine sends no kill, so nothing outside caused it
        with contextlib.suppress(SandboxCrashed):  # the container may die before this exec's reply
            await sandbox.exec(["sh", "-c", "kill 1"], timeout=10)
        await asyncio.sleep(1)
        with pytest.raises(DesktopLost) as caught:
            await env.step(Action.call("key", keys="Right"))
        assert caught.value.blame == "agent" and "killed from outside" not in str(caught.value)


async def test_the_agent_killing_its_own_session_is_its_failure_not_infra() -> None:
    # `kill -9 -1` typed into the terminal ends the X server while xdotool still sends the Return: that call
    # failed with "X connection broken", blamed on the env (DesktopError) until the root daemon was asked
    # whether the X server still runs; three episodes, as the kill can also land between two calls
    task = first("terminal")
    async with envgym.make("gui/desktop-v1") as env:
        for _ in range(3):
            trajectory = await run_episode(env, KillTheDesktop(task), task)
            assert trajectory.outcome is Outcome.FAILURE, (trajectory.outcome, trajectory.error)
            assert trajectory.verdict is not None and trajectory.verdict.score == 0
            assert trajectory.blame is Blame.AGENT and trajectory.error_type == "AgentFault", trajectory.error
            assert "the agent's desktop session died" in trajectory.error
