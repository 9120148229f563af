"""McpToolEnv's bounds: tool traffic of any size or depth is that call's error observation (the episode goes
on), the local backend's disk bound ends an episode as the agent's failure, and mcp/kanban-v1 runs in Docker
unless a user picks the local backend."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import envgym
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.testing.agents import ScriptedAgent
from envgym.types import Action, Blame, Outcome, ToolCall
from envgym_mcp.env import SERVERS, McpServerSpec, McpToolEnv

pytestmark = pytest.mark.filterwarnings("ignore::envgym.sandbox.InsecureSandboxWarning")
TOY = Path(__file__).with_name("toy_server.py")
DOCKER = pytest.param("docker", marks=[pytest.mark.docker, pytest.mark.slow])


def task(slug: str):
    return next(t for t in load_suite("mcp-kanban") if t.id.endswith(slug))


def toy(sandbox: str, **update) -> McpToolEnv:
    python = sys.executable if sandbox == "local" else "python3"
    return McpToolEnv(McpServerSpec(name="toy", command=(python, "toy.py"), files={"/work/toy.py": str(TOY)},
                                    sandbox=sandbox, image="python" if sandbox == "docker" else None, **update))


def call(name: str, **arguments) -> Action:
    return Action(tool_calls=(ToolCall.of(name, **arguments),))


def test_kanban_runs_in_docker_unless_the_local_backend_is_picked() -> None:
    assert envgym.make("mcp/kanban-v1").unwrapped.server.sandbox == "docker"
    assert envgym.make("mcp/kanban-v1", sandbox="local").unwrapped.server.sandbox == "local"


@pytest.mark.parametrize("sandbox", ["local", DOCKER])
async def test_20000_deep_and_30_mb_calls_are_error_observations_and_the_oracle_still_succeeds(sandbox) -> None:
    move = task("move-review")
    deep = '{"card_id": ' + "[" * 20_000 + "]" * 20_000 + "}"
    huge = "é" * (15 << 20)  # 30 MB of UTF-8
    agent = ScriptedAgent([Action(tool_calls=(ToolCall(name="get_card", arguments=deep),)),
                           call("add_comment", card_id="K-1", text=huge), *move.solution])
    async with envgym.make("mcp/kanban-v1", sandbox=sandbox) as env:
        trajectory = await run_episode(env, agent, move, seed=0)
    assert trajectory.error is None and trajectory.blame is None
    assert trajectory.outcome is Outcome.SUCCESS and trajectory.reward == 1.0  # the refused calls changed nothing
    errors = [obs.last_action_error for obs in agent.seen[1:3]]
    assert errors[0] == "get_card: arguments of get_card nest too deeply to decode"
    assert re.fullmatch(r"add_comment: the call of add_comment is [\d,]+ bytes, over the 4 MiB one MCP message may "
                        r"be here; it was not sent", errors[1]), errors[1]


@pytest.mark.parametrize("sandbox", ["local", DOCKER])
async def test_a_reply_over_the_bound_or_too_deep_is_that_calls_error_and_the_server_goes_on(sandbox) -> None:
    env = toy(sandbox)
    try:
        await env.reset(task=task("move-review"))
        big, *_ = await env.step(call("big", mib=5))  # the bound is 4 MiB
        deep, *_ = await env.step(call("deep", depth=5_000))
        fine, *_ = await env.step(call("big", mib=1))
        pong, *_ = await env.step(call("ping"))
    finally:
        await env.close()
    assert big.last_action_error == ("big: the server's reply is over the 4 MiB one MCP message may be here; it was "
                                     "dropped (ask for less)")
    assert deep.last_action_error.startswith("deep: the server's reply nests too deeply")
    assert fine.last_action_error is None and len(fine.tool_results[0].content) == 1 << 20
    assert pong.tool_results[0].content == "pong"
    assert [c.ok for c in env._calls] == [False, False, True, True]


@pytest.mark.parametrize(("calls", "mib"), [(8, 1), (1, 8)], ids=["many-files", "one-file"])
async def test_the_local_backend_ends_an_episode_that_fills_its_folder_as_the_agents_failure(calls, mib) -> None:
    env = toy("local", disk_bytes=4 << 20)
    roots: list[Path] = []

    class Dumper(ScriptedAgent):
        async def act(self, observation):
            roots.append(env._sandbox.root)
            return await super().act(observation)

    agent = Dumper([Action(tool_calls=tuple(ToolCall.of("dump", mib=mib) for _ in range(calls)))])
    try:
        trajectory = await run_episode(env, agent, task("move-review"), seed=0)
    finally:
        await env.close()
    assert trajectory.outcome is Outcome.FAILURE and trajectory.blame is Blame.AGENT
    assert trajectory.error_type == "DiskBoundExceeded" and "Traceback" not in trajectory.error
    found = re.search(r"the folder holds ([\d,]+) bytes, over the local sandbox's disk bound of 4,194,304 bytes",
                      trajectory.error)
    assert found, trajectory.error
    # each file is capped at the bound as it is written (RLIMIT_FSIZE): one 8 MiB dump stops at 4 MiB
    assert int(found.group(1).replace(",", "")) < (5 << 20) + (64 << 10)
    assert not roots[0].exists()  # the server stopped and its folder removed at once


async def test_the_kanban_server_refuses_what_a_full_disk_cannot_hold(tmp_path) -> None:
    """The board answers a write its disk refuses as a tool error and keeps serving (Docker's /work fills up
    the same way); here a small local disk bound caps its database file."""
    env = McpToolEnv(SERVERS["kanban"].model_copy(update={"disk_bytes": 1 << 20}), sandbox="local")
    try:
        await env.reset(task=task("move-review"))
        full, *_ = await env.step(call("add_comment", card_id="K-1", text="z" * (2 << 20)))
        after, *_ = await env.step(call("get_card", card_id="K-1"))
    finally:
        await env.close()
    assert full.last_action_error.startswith("add_comment: the board could not store this: ")  # EFBIG: I/O error
    assert json.loads(after.tool_results[0].content)["comments"] == []
