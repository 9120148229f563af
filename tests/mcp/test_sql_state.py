"""McpToolEnv's ``sql_state`` follows its server's declared state: only a SQLite state answers a rubric ``sql``
check, and a task with one on a git or stateless server is refused before any sandbox starts (a SpecError naming
the check's field), where it used to run and then fail at grading. On a SQLite server the check queries the state
the episode left."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import envgym
from envgym.agents.baseline import OracleAgent
from envgym.errors import SpecError
from envgym.rollout import run_episode
from envgym.task import TaskSpec, load_suite
from envgym.types import Outcome
from envgym.verify.spec import AllOfSpec, AnswerSpec, Criterion, RubricSpec, SqlCheck
from envgym_mcp.env import McpToolEnv
from envgym_mcp.spec import GitState, McpServerSpec

pytestmark = pytest.mark.filterwarnings("ignore::envgym.sandbox.InsecureSandboxWarning")
TOY = Path(__file__).with_name("toy_server.py")
STATES = {"stateless": None, "git": {"kind": "git"}, "sqlite": {"kind": "sqlite"}}


def toy(state: dict | None) -> dict:
    """A server block for ``metadata.server``: the toy (standard library only) on the local backend."""
    return {"name": "toy", "command": [sys.executable, "toy.py"], "files": {"/work/toy.py": str(TOY)},
            "sandbox": "local", "state": state}


def sql_task(state: dict | None) -> TaskSpec:
    rubric = RubricSpec(criteria=(Criterion(name="one", check=SqlCheck(query="SELECT 1", expected=1)),))
    return TaskSpec(id="toy-sql", env_id="mcp/server-v1", instruction="ping",
                    verifiers=(AnswerSpec(kind="exact", expected="done"), AllOfSpec(verifiers=(rubric,))),
                    metadata={"server": toy(state)})


def test_sql_state_is_the_servers_own() -> None:
    assert {name: McpServerSpec.model_validate(toy(state)).sql_state for name, state in STATES.items()} == \
        {"stateless": False, "git": False, "sqlite": True}
    spec = McpServerSpec.model_validate(toy(None))
    assert McpToolEnv(spec).sql_state is False
    assert McpToolEnv(spec.model_copy(update={"state": GitState()})).sql_state is False
    assert envgym.make("mcp/kanban-v1").sql_state is True  # SQLite, read through every wrapper
    assert envgym.spec("mcp/server-v1").capabilities["sql_state"]  # the class: its tasks' servers decide


@pytest.mark.parametrize("state", ["stateless", "git"])
async def test_a_sql_check_on_a_server_without_sql_is_refused_before_the_episode_naming_its_field(state) -> None:
    task = sql_task(STATES[state])
    async with envgym.make("mcp/server-v1") as env:
        with pytest.raises(SpecError, match=r"task 'toy-sql' has a sql check, but .* answers no SQL") as exc:
            await env.reset(task=task)
        assert env.unwrapped._sandbox is None  # refused before anything started
    assert exc.value.field == "verifiers.1.verifiers.0.criteria.0.check"


async def test_a_sql_check_on_the_sqlite_server_queries_the_state_the_episode_left() -> None:
    move = next(t for t in load_suite("mcp-kanban") if t.id.endswith("move-review"))
    before = next(c for c in move.initial_state["cards"] if c["id"] == "K-1")
    assert before["col"] != "review"  # so a pass below reads the episode's state, not the initial one
    moved = SqlCheck(query="SELECT col FROM cards WHERE id = 'K-1'", expected="review")
    data = move.model_dump(mode="json")
    data["verifiers"].append(RubricSpec(criteria=(Criterion(name="moved", check=moved),)).model_dump(mode="json"))
    task = TaskSpec.model_validate({**data, "id": "kanban-sql"})
    async with envgym.make("mcp/kanban-v1", sandbox="local") as env:
        trajectory = await run_episode(env, OracleAgent(task), task, seed=0)
    assert trajectory.error is None and trajectory.outcome is Outcome.SUCCESS, trajectory.verdict
    assert [c.detail for c in trajectory.verdict.criteria if c.name == "moved"] == \
        ["query gave 'review', expected 'review'"]


@pytest.mark.parametrize("state", ["stateless", "git"])
def test_envgym_eval_refuses_the_suite_at_load_naming_the_file_line_and_field(tmp_path, screen, state) -> None:
    from envgym.cli import main
    from envgym.task import write_tasks

    write_tasks(tmp_path / "suite.jsonl", [sql_task(STATES[state])])
    code = main(["eval", "--suite", str(tmp_path / "suite.jsonl"), "--agent", "oracle", "--out", str(tmp_path / "run")])
    said = " ".join(screen()[1].split())
    assert code == 2 and "Traceback" not in said, said
    assert f"{tmp_path / 'suite.jsonl'}:1: task 'toy-sql' has a sql check" in said, said
    assert "(field 'verifiers.1.verifiers.0.criteria.0.check')" in said, said
    assert not (tmp_path / "run").exists()  # nothing ran
