"""``envgym mcp serve``: an episode's tools over MCP (official SDK client), each call through env.step."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("mcp_types", reason="needs the mcp extra (mcp>=2.3)")

import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import envgym
from envgym.env import Env, StepResult
from envgym.mcp.serve import EpisodeServer
from envgym.types import Action, Observation, ToolResult

TASK = "telecom-000-plan"  # c01 on Starter; the reference moves her to Plus (p03)


async def test_http_serves_the_episode_tools_only_and_grades_the_calls_made() -> None:
    async with EpisodeServer("tool/telecom-v1", task=TASK) as episode, episode.http() as url:
        assert url.startswith("http://127.0.0.1:") and episode.token in url
        async with Client(url) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {s["function"]["name"] for s in episode.info["tools"]}
            assert not {"reset", "step", "verify"} & set(tools)
            assert tools["list_plans"].annotations.read_only_hint
            assert not tools["change_plan"].annotations.read_only_hint
            ok = await client.call_tool("verify_identity", {"phone": "415-555-0101", "pin": "4821"})
            assert not ok.is_error and json.loads(ok.content[0].text)["customer_id"] == "c01"
            refused = await client.call_tool("change_plan", {"customer_id": "c02", "plan_id": "p03"})
            assert refused.is_error and "not been verified" in refused.content[0].text
            await client.call_tool("change_plan", {"customer_id": "c01", "plan_id": "p03"})
        async with httpx.AsyncClient() as http:
            assert (await http.post(url.replace(episode.token, "0" * 32))).status_code == 404
            finish = url.removesuffix("/mcp") + "/finish"
            verdict = (await http.post(finish, json={"message": "You are on Plus at $30.00 per month."})).json()
    assert verdict["passed"] and verdict["score"] == 1.0
    assert episode.steps == 3


async def test_a_write_the_task_did_not_ask_for_fails_the_episode() -> None:
    async with EpisodeServer("tool/telecom-v1", task=TASK) as episode, episode.http() as url:
        async with Client(url) as client:
            await client.call_tool("verify_identity", {"phone": "415-555-0101", "pin": "4821"})
            await client.call_tool("change_plan", {"customer_id": "c01", "plan_id": "p06"})
        verdict = await episode.finish("You are on Plus at $30.00 per month.")
    assert not verdict.passed and verdict.score == 0.0


def test_stdio_transport_through_the_cli_writes_the_verdict(tmp_path: Path) -> None:
    out = tmp_path / "verdict.json"

    async def run() -> str:
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "envgym.cli", "mcp", "serve", "tool/telecom-v1", "--task", TASK, "--transport", "stdio",
            "--verdict", str(out)])
        async with Client(params) as client:
            result = await client.call_tool("list_plans", {})
        return result.content[0].text

    plans = json.loads(asyncio.run(run()))
    assert [p["id"] for p in plans][:2] == ["p01", "p02"]
    for _ in range(100):  # the server grades after the client closes its stdin
        if out.exists():
            break
        asyncio.run(asyncio.sleep(0.05))
    verdict = json.loads(out.read_text())
    assert verdict["task_id"] == TASK and verdict["steps"] == 1 and verdict["score"] == 0.0


PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                                     "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f6d7d40000000049454e44ae426082")).decode()


class Shot:
    png_base64 = PNG
    width = height = 1


class ScreenObservation(Observation):
    model_config: ClassVar[Any] = {**Observation.model_config, "arbitrary_types_allowed": True}
    screenshot: Any = None


class ScreenEnv(Env):
    """A one-tool env whose observations carry a screenshot, as the web and GUI families' do."""

    multimodal = True

    async def reset(self, *, task: Any = None, seed: int | None = None, options: Any = None) -> Any:
        return ScreenObservation(text="look"), {"tools": [{"type": "function", "function": {
            "name": "click", "description": "[write] Click.", "parameters": {"type": "object", "properties": {
                "x": {"type": "integer"}}, "required": ["x"]}}}]}

    async def step(self, action: Action) -> StepResult:
        call = action.tool_calls[0]
        obs = ScreenObservation(tool_results=(ToolResult(call_id=call.id, name=call.name, content="clicked"),),
                                screenshot=Shot())
        return StepResult(obs, 0.0, False, False, {})


async def test_screenshots_come_back_as_image_content() -> None:
    async with EpisodeServer("test/screen-v1", env=ScreenEnv()) as episode, episode.http() as url, \
            Client(url) as client:
        result = await client.call_tool("click", {"x": 3})
    assert result.content[0].text == "clicked"
    assert result.content[1].type == "image" and result.content[1].mime_type == "image/png"
    assert result.content[1].data == PNG


def test_the_subcommand_is_registered_through_the_plugin_path() -> None:
    from importlib.metadata import entry_points

    assert "envgym.mcp.cli:add_parser" in {ep.value for ep in entry_points(group="envgym.cli")}
    assert envgym.spec("tool/telecom-v1")  # the served env is any registered id
