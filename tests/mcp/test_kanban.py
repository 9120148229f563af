"""mcp/kanban-v1: an MCP server (written here) in a sandbox as an envgym tool env, graded on its state."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.types import Action, Blame, Outcome, ToolCall
from envgym_mcp.client import McpClient, McpServerError, ProcessTransport
from envgym_mcp.env import SERVERS, McpServerSpec, McpToolEnv

pytestmark = pytest.mark.filterwarnings("ignore::envgym.sandbox.InsecureSandboxWarning")
SERVER = str(SERVERS["kanban"].files["/work/kanban.py"]).replace("envgym_mcp.servers:", "")


def task(slug: str):
    return next(t for t in load_suite("mcp-kanban") if t.id.endswith(slug))


async def test_the_oracle_scores_1_and_null_0_on_the_servers_state() -> None:
    start = task("start-leak")  # two ordered writes around the server's WIP limit
    async with envgym.make("mcp/kanban-v1", sandbox="local") as env:
        good = await run_episode(env, OracleAgent(start), start, seed=0)
        bad = await run_episode(env, NullAgent(), start, seed=0)
    assert good.outcome is Outcome.SUCCESS and good.reward == 1.0
    assert bad.reward == 0.0 and bad.outcome is Outcome.FAILURE


async def test_tools_come_from_the_server_and_its_rules_are_error_observations() -> None:
    async with envgym.make("mcp/kanban-v1", sandbox="local") as env:
        _, info = await env.reset(task=task("refuse-doing-full"))
        kinds = {t["function"]["name"]: t["function"]["description"].split("]")[0] for t in info["tools"]}
        assert kinds["list_cards"] == "[read" and kinds["move_card"] == "[write"
        assert info["mcp_server"]["name"] == "envgym-kanban"
        obs, *_ = await env.step(Action(tool_calls=(ToolCall.of("move_card", card_id="K-12", column="doing"),)))
        assert "its limit" in obs.last_action_error
        obs, *_ = await env.step(Action(tool_calls=(ToolCall(name="move_card", arguments="[1]"),)))
        assert obs.last_action_error == "move_card: arguments of move_card must be a JSON object"
        _, reward, terminated, _, info = await env.step(Action.say("Doing is full; nothing changed."))
    assert terminated and reward == 1.0  # the refused write changed nothing, and the answer says why


async def test_a_write_off_the_task_fails_by_the_state_diff() -> None:
    move = task("move-review")
    async with envgym.make("mcp/kanban-v1", sandbox="local") as env:
        await env.reset(task=move)
        for card in ("K-1", "K-8"):
            await env.step(Action(tool_calls=(ToolCall.of("move_card", card_id=card, column="review"),)))
        _, reward, _, _, info = await env.step(Action.say("Done."))
    assert reward == 0.0
    assert not info["verdict"].passed


async def test_a_server_that_dies_is_the_envs_failure_not_the_agents() -> None:
    dead = McpServerSpec(name="dead", command=(sys.executable, "-c", "import sys; sys.exit(3)"))
    env = McpToolEnv(dead)
    try:
        with pytest.raises(McpServerError, match=r"exited \(code 3\)"):
            await env.reset(task=task("move-review").model_copy(update={"env_id": "mcp/kanban-v1"}))
    finally:
        await env.close()
    assert McpServerError.blame is None  # the rollout's stage decides: env at a step, infra at reset


async def test_the_client_speaks_to_the_server_over_stdio(tmp_path) -> None:
    from importlib import resources

    source = resources.files("envgym_mcp.servers").joinpath("kanban.py").read_text()
    (tmp_path / "kanban.py").write_text(source)
    (tmp_path / "init.json").write_text(json.dumps({"members": [{"id": "m1", "name": "Dana"}]}))
    client = McpClient(await ProcessTransport.start(
        [sys.executable, "kanban.py", "--db", "s.sqlite", "--init", "init.json"], cwd=str(tmp_path)))
    try:
        info = await client.initialize()
        assert info["protocolVersion"] == "2025-06-18"
        assert len(await client.list_tools()) == 9
        assert json.loads((await client.call_tool("create_card", {"title": "x"}))[0]) == {"card_id": "K-1"}
        text, error = await client.call_tool("assign_card", {"card_id": "K-1", "member_id": "m9"})
        assert error and "no member" in text
        with pytest.raises(McpServerError, match="method not found"):
            await client._request("resources/list", {})
    finally:
        await client.close()


def test_the_official_sdk_client_talks_to_the_server_written_here(tmp_path) -> None:
    pytest.importorskip("mcp_types", reason="needs the mcp extra (mcp>=2.3)")
    from importlib import resources

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    (tmp_path / "kanban.py").write_text(resources.files("envgym_mcp.servers").joinpath("kanban.py").read_text())

    async def run() -> tuple[list[str], str]:
        params = StdioServerParameters(command=sys.executable, args=["kanban.py", "--db", "s.sqlite"],
                                       cwd=str(tmp_path))
        async with Client(params) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("create_card", {"title": "from the SDK"})
        return tools, result.content[0].text

    tools, created = asyncio.run(run())
    assert "move_card" in tools and json.loads(created) == {"card_id": "K-1"}


async def test_an_sdk_server_as_the_envs_server_envgym_mcp_serve_both_ways() -> None:
    pytest.importorskip("mcp_types", reason="needs the mcp extra (mcp>=2.3)")
    served = McpServerSpec(name="served-telecom", command=(
        sys.executable, "-m", "envgym.cli", "mcp", "serve", "tool/telecom-v1", "--task", "telecom-000-plan",
        "--transport", "stdio"))
    env = McpToolEnv(served)
    try:
        _, info = await env.reset(task=task("move-review"))
        assert {t["function"]["name"] for t in info["tools"]} >= {"verify_identity", "change_plan"}
        obs, *_ = await env.step(Action(tool_calls=(ToolCall.of("verify_identity", phone="415-555-0101",
                                                                 pin="4821"),)))
        assert json.loads(obs.tool_results[0].content)["customer_id"] == "c01"
    finally:
        await env.close()


@pytest.mark.docker
@pytest.mark.slow
async def test_the_server_in_a_docker_sandbox_behind_the_bridge() -> None:
    write = task("create-bug")
    async with envgym.make("mcp/kanban-v1") as env:  # docker, the python image: the default
        trajectory = await run_episode(env, OracleAgent(write), write, seed=0)
    assert trajectory.reward == 1.0, trajectory.error
    assert trajectory.blame is not Blame.INFRA
