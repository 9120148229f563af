"""Done-when of the kernel base for time-evolving envs: a third-party package puts an outside, turn-based
engine behind ``envgym.timed.TimedWorldEnv`` on a step clock, with a step-based delayed effect that pauses,
and every front end works on it unchanged (check, eval with a virtual-time budget, leaderboard, replay).

The package is ``tests/thirdparty/acme_stove`` (its own pyproject.toml), installed the way
``tests/test_thirdparty.py`` installs ``acme_counter``: a distribution on ``sys.path`` whose
``entry_points.txt`` names its hook, inside an isolated registry that loads every installed plug-in afresh.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import envgym
from envgym.agents.baseline import OracleAgent
from envgym.cli import main
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.timed.replay import regrade
from envgym.types import Action, ToolCall

from fakes import installed_plugin

PACKAGE = Path(__file__).parents[1] / "thirdparty" / "acme_stove"


@pytest.fixture
def stove(tmp_path, monkeypatch):
    with installed_plugin(tmp_path, monkeypatch, PACKAGE, "acme_stove = acme_stove:register_all"):
        yield


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


def test_the_package_uses_only_the_kernel_base():
    sources = "\n".join(p.read_text() for p in (PACKAGE / "acme_stove").glob("*.py"))
    assert "envgym_timed" not in sources and "from envgym.timed." not in sources
    assert "import envgym" not in (PACKAGE / "acme_stove" / "engine.py").read_text()  # the engine is outside


def test_check_passes_the_contract_and_every_gate(stove, screen):
    assert main(["check", "acme/stove-v1", "--concurrency", "2"]) == 0, screen()
    stdout, _ = screen()
    assert "late-cook" in stdout  # the package's own tampering agent ran, and scored 0


def test_eval_with_a_virtual_time_budget_then_the_leaderboard_efficiency(stove, screen, tmp_path):
    runs = {}
    for label, extra in (("oracle", []), ("null", []), ("tight", ["--max-virtual-time", "7"])):
        out = tmp_path / label
        agent = "null" if label == "null" else "oracle"
        assert main(["eval", "--suite", "acme-stove", "--split", "all", "--agent", agent, "--out", str(out),
                     "--quiet", *extra]) == 0, screen()
        runs[label] = _records(out)
    assert {r["outcome"] for r in runs["oracle"]} == {"success"} and len(runs["oracle"]) == 6
    assert {r["outcome"] for r in runs["null"]} == {"failure"}
    # every reference plates at step 8 or later: a 7-step budget truncates each episode there, not passed
    assert {r["outcome"] for r in runs["tight"]} == {"truncated"}
    assert {r["verdict"]["evidence"]["efficiency"]["virtual_time_s"] for r in runs["tight"]} == {7.0}
    efficiency = [r["verdict"]["evidence"]["efficiency"] for r in runs["oracle"]]
    assert {e["unit"] for e in efficiency} == {"step"} and all(e["time_to_goal_s"] is not None for e in efficiency)
    state_goal = next(r for r in runs["oracle"] if r["task_id"] == "stove-003-stew-state")
    assert state_goal["verdict"]["evidence"]["efficiency"]["time_to_goal_s"] == 11.0  # plated at step 11
    board = tmp_path / "board"
    assert main(["leaderboard", "build", *(str(tmp_path / k) for k in runs), "--out", str(board)]) == 0, screen()
    entries = json.loads((board / "leaderboard.json").read_text())["suites"]["acme-stove"]
    oracle = next(e for e in entries if e["agent_id"] == "oracle" and "max_virtual_time" not in e["settings"])
    assert oracle["efficiency"]["unit"] == "step" and oracle["efficiency"]["goal_reached"] == 6
    mean = sum(e["virtual_time_s"] for e in efficiency) / 6
    assert oracle["efficiency"]["mean_virtual_time"] == pytest.approx(mean, abs=1e-3)
    assert "Virtual time (steps)" in (board / "leaderboard.md").read_text()
    assert 'class="board efficiency"' in (board / "index.html").read_text()


async def test_cooking_pauses_off_the_burner_and_resumes_where_it_stopped(stove):
    task = next(t for t in load_suite("acme-stove") if t.id == "stove-001-soup")  # soup: 3 steps on the burner
    async with envgym.make("acme/stove-v1") as env:
        await env.reset(task=task, seed=0)

        async def do(name: str, **args: object):
            return await env.step(Action(tool_calls=(ToolCall.of(name, **args),)))

        obs, *_ = await do("chop", pot="soup")
        assert obs.time_s == 3  # 1 step thinking + chop takes 2
        await do("put_on", pot="soup")  # on at step 4
        await do("take_off", pot="soup")  # step 5: one step cooked
        obs, *_ = await do("wait", steps=5)  # off the burner: nothing cooks
        assert obs.time_s == 11 and not obs.notifications
        soup = env.unwrapped.world.engine.pot("soup")
        assert soup.cooked_for == 1 and soup.status == "cooking"
        await do("put_on", pot="soup")  # step 12
        obs, *_ = await do("wait_for_notification", timeout=10, source="soup")
        assert obs.time_s == 14 and [n.content for n in obs.notifications] == ["soup is cooked"]  # 2 more steps
        timeline = env.unwrapped.timeline()
        assert timeline.unit == "step" and timeline.event("soup:cooked").time == 14
        assert timeline.metrics()["acting_s"] == 2  # the chop


async def test_a_recorded_run_is_regraded_by_the_kernel_replay(stove):
    task = next(t for t in load_suite("acme-stove") if t.id == "stove-005-sauce-first")
    async with envgym.make("acme/stove-v1") as env:
        trajectory = await run_episode(env, OracleAgent(task), task, seed=3)
    assert trajectory.verdict is not None and trajectory.verdict.passed
    again = await regrade(task, trajectory)
    assert again.passed and again.evidence["efficiency"] == trajectory.verdict.evidence["efficiency"]
