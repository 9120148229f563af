"""The SWE env end to end on the demo repository: tools, grading, admission gates, timeouts, dead containers."""

from __future__ import annotations

import asyncio

import pytest

import envgym
from envgym.agent import Agent
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.errors import EnvError
from envgym.rollout import run_episode
from envgym.sandbox.errors import SandboxCrashed
from envgym.task import write_tasks
from envgym.types import Action, Blame, Observation, Outcome
from envgym_swe.demo import REPO, make_demo
from envgym_swe.importer import import_instances

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("no_leftover_containers")]
ENV_ID = "swe/demo-v1"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe-env")
    repo, instances = make_demo(root)
    # A short test timeout only for the hanging task: the others must not time out on a loaded machine.
    hang = import_instances([i for i in instances if "hang" in i["instance_id"]], {REPO: repo}, "swe-demo", None,
                            test_timeout_s=4, remember=False)
    report = import_instances([i for i in instances if "hang" not in i["instance_id"]], {REPO: repo}, "swe-demo",
                              None, remember=False)
    tasks = {t.metadata["instance_id"]: t for t in [*report.tasks, *hang.tasks]}
    suite = root / "suite"
    suite.mkdir()
    write_tasks(suite / "tasks.jsonl", [t for t in report.tasks if "hang" not in t.id])
    envgym.register(ENV_ID, "envgym_swe.env:SweEnv", suites=(str(suite),), override=True,
                    kwargs={"max_output": 2000, "command_timeout_s": 3})
    return tasks


def call(name: str, **args) -> Action:
    return Action.call(name, **args)


async def test_tools_errors_caps_and_hidden_history(demo):
    task = demo["demo__calc-1"]
    async with envgym.make(ENV_ID) as env:
        obs, info = await env.reset(task=task)
        assert "calc.mean([1, 2, 3, 4])" in obs.text and "/testbed" in obs.text
        assert [t["function"]["name"] for t in info["tools"]] == ["bash", "view", "edit", "create", "search", "submit"]
        step = await env.step(call("bash", cmd="git log --all --oneline | wc -l; ls tests; cd calc"))
        assert step.observation.text.split() == ["1", "test_calc.py"]  # one commit, the hidden test file absent
        step = await env.step(call("bash", cmd="pwd; ls /sys/class/net"))
        assert step.observation.text.split() == ["/testbed/calc", "lo"]  # cd persists; no network but loopback
        step = await env.step(call("edit", path="__init__.py", old="return", new="return"))
        assert step.observation.last_action_error == (
            "edit: old text matches 3 times in /testbed/calc/__init__.py; include more surrounding lines to make "
            "it unique")
        step = await env.step(call("edit", path="__init__.py", old="no such text", new="x"))
        assert "old text not found in /testbed/calc/__init__.py" in step.observation.last_action_error
        assert not step.terminated
        step = await env.step(call("edit", path="__init__.py", old="(len(values) - 1)", new="len(values)"))
        assert step.observation.last_action_error is None and "11\t    return sum(values) / len(values)" in \
            step.observation.text
        step = await env.step(call("view", path="/testbed/calc/__init__.py", start=8, end=9))
        assert step.observation.text == "     8\tdef mean(values):\n     9\t    \"\"\"Arithmetic mean of a " \
                                        "non-empty sequence.\"\"\""
        step = await env.step(call("search", pattern="def (mean|clamp)", path="/testbed"))
        assert step.observation.text.count("/testbed/calc/__init__.py:") == 2
        step = await env.step(call("bash", cmd="seq 1 5000"))
        assert step.observation.text.endswith("[output truncated: only the first 2000 bytes are shown]")
        step = await env.step(call("bash", cmd="sleep 30"))
        assert "[command timed out after 3s and was killed]" in step.observation.text
        step = await env.step(call("view", path="nope.py"))
        assert "no such file or directory" in step.observation.last_action_error
        step = await env.step(call("create", path="/tmp/notes/a.txt", content="x\ny\n"))
        assert step.observation.text == "created /tmp/notes/a.txt (2 lines)"
        step = await env.step(call("submit"))
        assert step.terminated and step.reward == 1.0
        verdict = step.info["verdict"]
        assert verdict.evidence["tests"]["FAIL_TO_PASS"] == {"tests/test_mean.py::test_mean": "PASSED",
                                                             "tests/test_mean.py::test_mean_single": "PASSED"}
        assert "-    return sum(values) / (len(values) - 1)" in verdict.evidence["model_patch"]
        assert "tests/test_mean.py" not in verdict.evidence["model_patch"]  # grading's own files are not the agent's
        assert await env.verify() == verdict  # the Grading wrapper's one verdict: the container is gone
        with pytest.raises(EnvError, match="graded when it was submitted"):
            await env.unwrapped.verify()  # the env keeps no second copy
        # The next reset in the same (reused) container is clean again: the fix and /tmp are gone.
        await env.reset(task=task)
        step = await env.step(call("bash", cmd="git status --short; ls /tmp; grep -c 'len(values) - 1' calc/*.py"))
        assert step.observation.text.strip() == "1"


async def test_admission_gates_and_contract_pass(demo):
    from envgym.check import check

    report = await check(ENV_ID, concurrency=2, tamper=0)  # the tampering agents: tests/adversarial/test_swe_*
    assert report.ok, (report.failed, report.gate_failures)
    assert report.tasks == 2


async def test_a_hanging_test_run_is_a_failure_with_reason_timeout(demo):
    task = demo["demo__calc-4-hang"]
    async with envgym.make(ENV_ID) as env:
        trajectory = await run_episode(env, OracleAgent(task), task)
    assert trajectory.outcome is Outcome.FAILURE and trajectory.reward == 0.0
    assert trajectory.verdict.evidence["reason"] == "timeout"
    assert trajectory.verdict.evidence["tests"]["FAIL_TO_PASS"] == {"tests/test_hang.py::test_hangs": "TIMEOUT"}


class KillsTheContainer(Agent):
    """Has its episode's container killed between its commands, then submits: from outside (the engine's
    ``docker kill``, as an operator or an engine restart would) or from inside (a background process of its
    own that stops PID 1 (``kill 1``), as the agent could)."""

    name = "killer"

    def __init__(self, env, *, outside: bool) -> None:
        super().__init__()
        self.env, self.outside, self.turn = env, outside, 0

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if not self.outside:
            if self.turn == 1:
                return call("bash", cmd="setsid sh -c 'sleep 0.5; kill 1' >/dev/null 2>&1 < /dev/null & echo ok")
            await asyncio.sleep(2)
            return call("bash", cmd="echo still here?") if self.turn < 4 else call("submit")
        import docker

        api = docker.APIClient(version="auto")
        try:
            api.kill(self.env.unwrapped.sandbox.id)
        finally:
            api.close()
        return call("submit")


async def test_a_container_the_agent_killed_is_its_failure_and_the_next_reset_recovers(demo):
    task = demo["demo__calc-2"]
    async with envgym.make(ENV_ID) as env:
        trajectory = await run_episode(env, KillsTheContainer(env, outside=False), task)
        assert trajectory.outcome is Outcome.FAILURE and trajectory.reward == 0.0
        assert trajectory.error_type == SandboxCrashed.__name__ and trajectory.blame is Blame.AGENT
        null = await run_episode(env, NullAgent(), task)
        assert null.outcome is Outcome.FAILURE and null.verdict is not None


async def test_a_container_killed_from_outside_is_an_infra_error_and_the_next_reset_recovers(demo):
    task = demo["demo__calc-2"]
    async with envgym.make(ENV_ID) as env:
        trajectory = await run_episode(env, KillsTheContainer(env, outside=True), task)
        assert trajectory.outcome is Outcome.INFRA_ERROR and trajectory.blame is Blame.INFRA
        assert trajectory.error_type == SandboxCrashed.__name__ and "killed from outside" in trajectory.error
        null = await run_episode(env, NullAgent(), task)
        assert null.outcome is Outcome.FAILURE and null.verdict is not None


async def test_every_episode_gets_a_fresh_container_with_a_read_only_root_and_capped_disk(demo):
    task = demo["demo__calc-1"]
    async with envgym.make(ENV_ID) as env:
        await env.reset(task=task)
        first = env.unwrapped.sandbox.id
        step = await env.step(call("bash", cmd="setsid nohup sleep 600 >/dev/null 2>&1 & echo x > /root/mark; "
                                   "echo y > /tmp/mark; touch /usr/lib/python3/evil"))
        assert "Read-only file system" in step.observation.text
        assert "[read-only file system: only /testbed, /tmp, /root, /var/tmp, /run are writable" in \
            step.observation.text
        step = await env.step(call("bash", cmd="head -c 100M /dev/zero > /var/tmp/fill"))
        assert "[No space left on device: the sandbox's disk limit (64m on /var/tmp) was reached]" in \
            step.observation.text
        step = await env.step(call("create", path="/var/tmp/more.txt", content="z" * 100_000))
        assert step.observation.last_action_error == (
            "create: /var/tmp/more.txt: No space left on device: the sandbox's disk limit (64m on /var/tmp) was "
            "reached")
        step = await env.step(call("bash", cmd="git status --short; git log --oneline | wc -l; pip --version"))
        assert step.observation.text.split()[0] == "1" and "[exit code" not in step.observation.text
        step = await env.step(call("bash", cmd="cd / && python3 -c 'import calc; print(calc.__file__)'"))
        assert step.observation.text.strip() == "/testbed/calc/__init__.py"  # the editable install, on the tmpfs
        await env.reset(task=task)
        assert env.unwrapped.sandbox.id != first
        step = await env.step(call("bash", cmd="find /root /tmp -mindepth 1 | wc -l; pgrep -c sleep; git status -s"))
        assert step.observation.text.split() == ["0", "1"]  # only PID 1's keeper sleeps; nothing left of episode 1


async def test_view_refuses_fifos_devices_and_huge_files_at_once(demo):
    task = demo["demo__calc-1"]
    async with envgym.make(ENV_ID) as env:
        await env.reset(task=task)
        await env.step(call("bash", cmd="mkfifo /tmp/pipe; head -c 9M /dev/zero | tr '\\0' a > /tmp/big.txt"))
        for path, why in (("/tmp/pipe", "is a fifo, not a regular file"),
                          ("/dev/zero", "is a character special file, not a regular file"),
                          ("/tmp/big.txt", "is 9437184 bytes, more than the 8 MiB view and edit read")):
            step = await env.step(call("view", path=path))
            assert why in step.observation.last_action_error and not step.terminated, path
        step = await env.step(call("edit", path="/tmp/pipe", old="a", new="b"))
        assert "is a fifo" in step.observation.last_action_error
        step = await env.step(call("create", path="/tmp/pipe", content="x"))
        assert "is a fifo" in step.observation.last_action_error
