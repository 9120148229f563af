"""Any MCP server as an environment by suite file alone (mcp/server-v1): each PyPI server in an image of its own
built offline (their MCP SDKs conflict), declared read tools, stateless servers graded from the answer and the
calls, a repository the task ships graded by its final state, and a missing state never blamed on the agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.check import check
from envgym.cli import main
from envgym.errors import SpecError
from envgym.rollout import run_episode
from envgym.task import TaskSpec, load_suite, load_tasks, suite_files
from envgym.types import Action, Blame, Outcome, ToolCall
from envgym.verify.spec import AnswerSpec, WriteActionSpec
from envgym_mcp.env import McpServerSpec, McpToolEnv
from envgym_mcp.spec import McpStateMissing, server_of

pytestmark = pytest.mark.filterwarnings("ignore::envgym.sandbox.InsecureSandboxWarning")
TOY = Path(__file__).with_name("toy_server.py")
DOCKER = [pytest.mark.docker, pytest.mark.slow]


def toy(**update) -> McpServerSpec:
    """The toy stdio server (tools dump, big, deep, ping; no annotations, no state file) on the local backend."""
    return McpServerSpec(name="toy", command=(sys.executable, "toy.py"), files={"/work/toy.py": str(TOY)}, **update)


def ping_task(**update) -> TaskSpec:
    answer = AnswerSpec(kind="regex", expected=r"\bpong\b")
    fields = {"id": "toy-ping", "env_id": "mcp/server-v1", "instruction": "Ping the server; answer with its reply.",
              "verifiers": (WriteActionSpec(compare_final_state=False), answer),
              "solution": (Action(tool_calls=(ToolCall(id="c1", name="ping", arguments="{}"),)), Action.say("pong"))}
    return TaskSpec(**{**fields, **update})


async def test_a_declared_state_missing_after_the_episode_is_the_envs_failure_never_the_agents() -> None:
    """The toy keeps no state.sqlite though its spec declares one: grading used to raise SandboxFileNotFound,
    which the rollout blames on the agent after its first action."""
    env = McpToolEnv(toy(read_tools=("ping",)))
    try:
        trajectory = await run_episode(env, OracleAgent(ping_task()), ping_task(), seed=0)
    finally:
        await env.close()
    assert trajectory.error_type == McpStateMissing.__name__, trajectory.error
    assert trajectory.blame is Blame.ENV and trajectory.outcome is Outcome.FAILURE
    assert "state.sqlite" in trajectory.error


async def test_a_stateless_server_is_graded_from_the_answer_and_the_call_record() -> None:
    env = McpToolEnv(toy(state=None, read_tools=("ping",)))
    try:
        good = await run_episode(env, OracleAgent(ping_task()), ping_task(), seed=0)
        bad = await run_episode(env, NullAgent(), ping_task(), seed=0)
        await env.reset(task=ping_task())
        await env.step(Action(tool_calls=(ToolCall(id="c1", name="dump", arguments='{"mib": 0}'),)))
        await env.step(Action.say("pong"))
        verdict = await env.verify()  # built by hand: no Grading wrapper grades it on termination
    finally:
        await env.close()
    assert good.reward == 1.0 and good.error is None
    assert bad.reward == 0.0 and bad.error is None  # the answer's failure, not SandboxFileNotFound
    assert not verdict.passed and "collateral: dump" in json.dumps(verdict.model_dump(mode="json"))


async def test_read_tools_override_missing_annotations_and_unknown_names_are_spec_errors() -> None:
    tools = [{"name": "ping"}, {"name": "dump"}, {"name": "peek", "annotations": {"readOnlyHint": True}}]
    kinds = toy(read_tools=("ping",), write_tools=("peek",)).kinds(tools)
    assert kinds == {"ping": "read", "dump": "write", "peek": "write"}
    assert toy().kinds(tools)["ping"] == "write" and toy().kinds(tools)["peek"] == "read"
    with pytest.raises(ValueError, match="both read_tools and write_tools"):
        toy(read_tools=("ping",), write_tools=("ping",))
    env = McpToolEnv(toy(read_tools=("ping", "pong")))
    try:
        with pytest.raises(SpecError, match="lists no tool 'pong'") as caught:
            await env.reset(task=ping_task())
    finally:
        await env.close()
    assert caught.value.field == "read_tools"


def test_a_tasks_server_block_is_checked_naming_the_field(tmp_path) -> None:
    with pytest.raises(SpecError, match="names no MCP server") as missing:
        server_of(ping_task())
    assert missing.value.field == "metadata.server"
    block = {"name": "toy", "command": "python3 toy.py"}
    with pytest.raises(SpecError, match="valid tuple") as bad:
        server_of(ping_task(metadata={"server": block}))
    assert bad.value.field == "metadata.server.command"
    with pytest.raises(SpecError, match="no state") as stateless:
        server_of(ping_task(metadata={"server": {"name": "t", "command": ["t", "{state}"], "state": None}}))
    assert stateless.value.field == "metadata.server"
    good = ping_task(id="toy-good", metadata={"server": {"name": "toy", "command": ["python3", "toy.py"]}})
    file = tmp_path / "suite.jsonl"
    file.write_text(json.dumps(good.model_dump(mode="json")) + "\n"
                    + json.dumps(ping_task(metadata={"server": block}).model_dump(mode="json")) + "\n")
    assert main(["mcp", "build", str(file)]) == 2  # the local toy needs no image; line 2 is refused


# -- the bundled PyPI servers, in Docker ----------------------------------------------------------------------
@pytest.mark.docker
@pytest.mark.slow
async def test_envgym_check_passes_on_the_three_pypi_servers() -> None:
    """Oracle 1 and null 0 on every task of mcp-sqlite, mcp-time and mcp-git (all_tasks: ``envgym check`` gates a
    sample), the contract and the hack probes: one install, no extra venv, no entry point of theirs (the suites are
    task files naming the servers)."""
    report = await check("mcp/server-v1", gymnasium_check=False, concurrency=4, all_tasks=True)
    assert report.ok, (report.failed, report.gate_failures, report.tamper_failures)
    assert report.gated == report.tasks == sum(len(load_suite(s)) for s in ("mcp-sqlite", "mcp-time", "mcp-git"))


@pytest.mark.docker
@pytest.mark.slow
def test_each_server_has_its_own_image_with_its_own_sdk_and_is_built_once() -> None:
    import docker

    from envgym_mcp.images import ensure_image

    servers = {s: server_of(load_suite(f"mcp-{s}")[0]) for s in ("sqlite", "time", "git")}
    for server in servers.values():
        ensure_image(server, log=lambda _: None)  # built here if nothing before built it
    said: list[str] = []
    tags = {s: ensure_image(server, log=said.append) for s, server in servers.items()}
    assert not said  # the tag (a hash of the requirements, the base and the recipe) is there: not built again
    api = docker.from_env()
    try:
        resolved = {s: api.images.get(tag).labels["envgym.mcp.resolved"].split() for s, tag in tags.items()}
    finally:
        api.close()
    assert "mcp-1.30.0-py3-none-any" in resolved["sqlite"]  # mcp-server-sqlite fails under mcp>=2.3
    assert any(w.startswith("mcp-2.") for w in resolved["time"])  # mcp-server-time needs it
    assert not any(w.startswith("mcp_server_time") for w in resolved["sqlite"])


@pytest.mark.docker
@pytest.mark.slow
async def test_a_git_task_is_graded_by_the_repositorys_final_state() -> None:
    task = next(t for t in load_suite("mcp-git") if t.id.endswith("commit-readme"))
    repo = "/work/repo"
    async with envgym.make("mcp/server-v1") as env:
        await env.reset(task=task)
        for name, args in (("git_add", {"repo_path": repo, "files": ["README.md"]}),
                           ("git_commit", {"repo_path": repo, "message": "Document usage"}),
                           ("git_create_branch", {"repo_path": repo, "branch_name": "stray"})):
            await env.step(Action(tool_calls=(ToolCall.of(name, **args),)))
        _, reward, _, _, info = await env.step(Action.say("Done."))
        state = (await env.unwrapped.verify_context()).state.snapshot()
    verdict = info["verdict"]
    assert reward == 0.0 and "commits" in verdict.evidence["state_diff"]  # the stray branch's commits
    assert any(c["branch"] == "main" and c["depth"] == 0 and c["message"] == "Document usage" for c in state["commits"])
    assert state["worktree"] == [] and state["index"] == []


@pytest.mark.docker
@pytest.mark.slow
def test_a_suite_file_alone_runs_through_envgym_eval(tmp_path) -> None:
    """A copy of one mcp-time task in a file of its own, outside every registered suite: eval runs it."""
    file = tmp_path / "mine.jsonl"
    first = load_tasks(suite_files("mcp-time")[0])[0]
    file.write_text(json.dumps(first.model_dump(mode="json")) + "\n")
    out = tmp_path / "run"
    assert main(["eval", "--suite", str(file), "--split", "all", "--agent", "oracle", "--out", str(out),
                 "--quiet"]) == 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [r["verdict"]["score"] for r in records] == [1.0]
