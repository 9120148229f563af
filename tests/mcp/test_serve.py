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
            assert set(tools) == {s["function"]["name"] for s in episode.info["tools"]} | {"finish"}
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


def test_over_stdio_the_finish_tool_gives_the_answer_and_an_answer_graded_task_scores_1(tmp_path: Path) -> None:
    """The reference's calls, then its final answer through the final-answer tool: stdio has no /finish, and
    before the tool a task graded on the answer scored 0 however right every call was."""
    out = tmp_path / "verdict.json"
    task = next(t for t in envgym.load_suite("tool-telecom") if t.id == TASK)
    answer = task.solution[-1].text

    async def run() -> tuple[list[str], str, bool]:
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "envgym.cli", "mcp", "serve", "tool/telecom-v1", "--task", TASK, "--transport", "stdio",
            "--verdict", str(out)])
        async with Client(params) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            for action in task.solution[:-1]:
                for call in action.tool_calls:
                    await client.call_tool(call.name, json.loads(call.arguments))
            done = await client.call_tool("finish", {"message": answer})
            late = await client.call_tool("list_plans", {})
        return tools, done.content[0].text, late.is_error

    tools, done, refused = asyncio.run(run())
    assert "finish" in tools and "episode is over" in done and refused
    for _ in range(100):  # the verdict file is written when the client has closed stdin
        if out.exists():
            break
        asyncio.run(asyncio.sleep(0.05))
    verdict = json.loads(out.read_text())
    assert answer and verdict["score"] == 1.0 and verdict["passed"], verdict


async def test_the_finish_tool_gives_way_to_an_env_tool_of_that_name() -> None:
    class FinishEnv(ScreenEnv):
        async def reset(self, *, task: Any = None, seed: int | None = None, options: Any = None) -> Any:
            obs, info = await super().reset(task=task, seed=seed, options=options)
            info["tools"][0]["function"]["name"] = "finish"
            return obs, info

    async with EpisodeServer("test/finish-v1", env=FinishEnv()) as episode:
        names = [t.name for t in episode._tools]
    assert names == ["finish", "envgym_finish"]


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


# -- bad input, files, signals: every session ends with a verdict ----------------------------------------------
SERVE = [sys.executable, "-m", "envgym.cli", "mcp", "serve", "tool/telecom-v1", "--task", TASK, "--transport", "stdio"]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def list_plans(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "list_plans",
                                                                                    "arguments": {}}}


async def serve(*args: str, stdin: Any = asyncio.subprocess.PIPE, stdout: Any = asyncio.subprocess.PIPE) -> Any:
    return await asyncio.create_subprocess_exec(*SERVE, *args, stdin=stdin, stdout=stdout,
                                                stderr=asyncio.subprocess.PIPE, limit=1 << 20)


async def reply(process: Any) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(process.stdout.readline(), 20))


async def ended(process: Any) -> tuple[int, str]:
    _, err = await asyncio.wait_for(process.communicate(), 20)
    return process.returncode, err.decode()


async def test_stdio_answers_oversized_deep_and_garbage_lines_with_errors_and_keeps_serving(tmp_path: Path) -> None:
    verdict = tmp_path / "verdict.json"
    process = await serve("--verdict", str(verdict))
    process.stdin.write(line(INIT) + line(INITIALIZED))
    assert (await reply(process))["id"] == 1
    depth = 100_000
    process.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_plans","arguments":'
                        b'{"x":' + b"[" * depth + b"]" * depth + b"}}}\n")
    deep = await reply(process)
    process.stdin.write(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_plans","arguments":'
                        b'{"x":"' + b"a" * (65 << 20) + b'"}}}\n')
    await process.stdin.drain()
    oversized = await reply(process)
    process.stdin.write(b"not json\n" + line(list_plans(4)))
    garbage, plans = await reply(process), await reply(process)
    process.stdin.close()
    code, err = await ended(process)
    assert deep["id"] == 2 and deep["error"]["code"] == -32700 and "recursion limit" in deep["error"]["message"]
    assert oversized["id"] == 3 and oversized["error"]["code"] == -32600
    assert "over 64 MiB" in oversized["error"]["message"]
    assert garbage["id"] is None and garbage["error"]["code"] == -32700
    assert plans["id"] == 4 and not plans["result"]["isError"]
    assert code == 0, err
    assert json.loads(verdict.read_text())["steps"] == 1  # the refused messages were never steps


@pytest.mark.parametrize("stdin_kind", ["pipe", "file"])
async def test_stdio_serves_into_a_regular_file(tmp_path: Path, stdin_kind: str) -> None:
    out, verdict = tmp_path / "out.jsonl", tmp_path / "verdict.json"
    requests = line(INIT) + line(INITIALIZED) + line(list_plans(2))
    with out.open("wb") as sink:
        if stdin_kind == "file":  # a batch: at end of input the requests read are answered, then it grades
            (tmp_path / "in.jsonl").write_bytes(requests)
            with (tmp_path / "in.jsonl").open("rb") as source:
                process = await serve("--verdict", str(verdict), stdin=source, stdout=sink)
        else:
            process = await serve("--verdict", str(verdict), stdout=sink)
            process.stdin.write(requests)
            for _ in range(400):
                if out.read_bytes().count(b"\n") >= 2:
                    break
                await asyncio.sleep(0.05)
            process.stdin.close()
        code, err = await ended(process)
    assert code == 0, err
    replies = [json.loads(r) for r in out.read_bytes().splitlines()]
    assert [r["id"] for r in replies] == [1, 2] and not replies[1]["result"]["isError"]
    assert json.loads(verdict.read_text())["steps"] == 1


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
async def test_a_signal_ends_a_stdio_session_with_its_verdict_written(tmp_path: Path, signal_name: str) -> None:
    import signal

    verdict = tmp_path / "verdict.json"
    process = await serve("--verdict", str(verdict))
    process.stdin.write(line(INIT) + line(INITIALIZED) + line(list_plans(2)))
    assert [(await reply(process))["id"] for _ in range(2)] == [1, 2]
    process.send_signal(getattr(signal, signal_name))
    code, err = await ended(process)
    assert code == 0, err
    written = json.loads(verdict.read_text())
    assert written["task_id"] == TASK and written["steps"] == 1 and written["score"] == 0.0


async def test_http_answers_oversized_and_deep_bodies_with_errors_and_keeps_serving() -> None:
    from envgym.mcp.serve import MAX_MESSAGE_BYTES

    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    depth = 100_000
    deep = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":' + b"[" * depth + b"]" * depth + b"}}"
    async with EpisodeServer("tool/telecom-v1", task=TASK) as episode, episode.http() as url:
        finish = url.removesuffix("/mcp") + "/finish"
        async with httpx.AsyncClient(timeout=30) as http:
            deep_reply = await http.post(url, headers=headers, content=deep)
        async with httpx.AsyncClient(timeout=30) as http:
            oversized = await http.post(url, headers=headers, content=b" " * (MAX_MESSAGE_BYTES + 1))
        async with httpx.AsyncClient(timeout=30) as http:
            deep_finish = await http.post(finish, content=b'{"message":' + b"[" * depth + b"]" * depth + b"}")
        async with Client(url) as client:
            plans = await client.call_tool("list_plans", {})
        async with httpx.AsyncClient(timeout=30) as http:
            verdict = (await http.post(finish, json={"message": "done"})).json()
    assert deep_reply.status_code == 400 and deep_reply.json()["error"]["code"] == -32700
    assert oversized.status_code == 413
    assert deep_finish.status_code == 400 and "must be JSON" in deep_finish.json()["error"]
    assert not plans.is_error
    assert verdict["score"] == 0.0 and episode.steps == 1


class BrokenStepEnv(Env):
    """One tool whose step raises what an env raises when the agent broke the episode (a disk bound)."""

    async def reset(self, *, task: Any = None, seed: int | None = None, options: Any = None) -> Any:
        return Observation(text="go"), {"tools": [{"type": "function", "function": {
            "name": "fill", "description": "[write] Fill the disk.", "parameters": {"type": "object"}}}]}

    async def step(self, action: Action) -> StepResult:
        from envgym.errors import AgentFault

        raise AgentFault("the folder outgrew its disk bound")


async def test_a_step_that_breaks_the_episode_is_a_zero_verdict_blamed_as_the_rollout_would() -> None:
    async with EpisodeServer("test/broken-v1", env=BrokenStepEnv()) as episode:
        result = await episode.call("fill", {})
        verdict = await episode.finish()
    assert result.is_error and result.content[0].text == "the episode ended: the folder outgrew its disk bound"
    assert verdict.score == 0.0 and verdict.evidence["blame"] == "agent"
    assert verdict.evidence["cause"] == "AgentFault: the folder outgrew its disk bound"
