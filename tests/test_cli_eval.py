"""``envgym eval`` as a user runs it: progress on a terminal and in logs, the exit code of a run whose
episodes were infra errors, and a user's own Python agent (``--agent module:factory``)."""

from __future__ import annotations

import io
import json
import sys
import textwrap

import pytest
from rich.console import Console

from envgym import cli
from envgym.record import read_records

from fakes import NOTES_SUITE

BROKEN = """
from envgym.agents.baseline import OracleFactory
from envgym.errors import PolicyError

class Broken(OracleFactory):
    def __init__(self, first_ok=0):
        self.first_ok = first_ok

    def create(self, task):
        if self.first_ok:
            self.first_ok -= 1
            return super().create(task)
        raise PolicyError("endpoint http://127.0.0.1:9/v1 refused the connection")

def all_broken():
    return Broken()

def one_ok():
    return Broken(first_ok=1)
"""


def _eval(tmp_path, *extra: str, out: str = "run") -> list[str]:
    return ["eval", "--suite", str(NOTES_SUITE), "--split", "all", "--out", str(tmp_path / out), *extra]


def _agent_file(tmp_path, text: str, name: str = "my_agent.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_plain_progress_lines_without_a_terminal(screen, tmp_path):
    assert cli.main(_eval(tmp_path, "--agent", "oracle", "--concurrency", "1")) == 0
    _, stderr = screen()
    lines = [line for line in stderr.splitlines() if line.startswith("eval: ")]
    assert lines, stderr
    last = lines[-1]
    assert "3/3 episodes (100%)" in last and "in flight" in last and "ETA" in last
    assert "notes 3/3 (success 3)" in last
    assert "\x1b[" not in stderr  # no terminal codes in a log


def test_live_progress_on_a_terminal(screen, tmp_path, monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(cli, "console", Console(file=terminal, width=160, force_terminal=True, color_system=None))
    path = _agent_file(tmp_path, BROKEN)
    assert cli.main(_eval(tmp_path, "--agent", f"{path}:one_ok", "--concurrency", "1")) == cli.EXIT_INFRA
    shown = terminal.getvalue()
    assert "in flight" in shown and "ETA" in shown and "notes 3/3 (success 1, infra_error 2)" in shown
    assert "latest: PolicyError: endpoint http://127.0.0.1:9/v1 refused the connection" in shown


def test_quiet_prints_no_progress(screen, tmp_path):
    assert cli.main(_eval(tmp_path, "--agent", "oracle", "--quiet")) == 0
    stdout, stderr = screen()
    assert stderr == "" and "ran 3" in stdout


def test_every_episode_an_infra_error_exits_3_with_the_cause(screen, tmp_path):
    path = _agent_file(tmp_path, BROKEN)
    assert cli.main(_eval(tmp_path, "--agent", f"{path}:all_broken")) == cli.EXIT_INFRA == 3
    _, stderr = screen()
    assert "every episode ended as infra_error" in stderr
    assert "3 x PolicyError: endpoint http://127.0.0.1:9/v1 refused the connection" in stderr
    # the rerun retries them; still broken, still 3
    assert cli.main(_eval(tmp_path, "--agent", f"{path}:all_broken")) == 3


def test_infra_error_threshold(screen, tmp_path):
    path = _agent_file(tmp_path, BROKEN)
    # 2 of 3 episodes broken: over the default 0.5
    assert cli.main(_eval(tmp_path, "--agent", f"{path}:one_ok", "--concurrency", "1")) == 3
    assert "2 of 3 episodes ended as infra_error" in screen()[1]
    assert cli.main(_eval(tmp_path, "--agent", f"{path}:one_ok", "--concurrency", "1",
                          "--max-infra-errors", "0.9", out="run2")) == 0
    assert cli.main(_eval(tmp_path, "--agent", "oracle", "--max-infra-errors", "0", out="run3")) == 0
    with pytest.raises(SystemExit) as refused:
        cli.main(_eval(tmp_path, "--agent", "oracle", "--max-infra-errors", "1.5", out="run4"))
    assert refused.value.code == 2


def test_own_agent_from_a_module(screen, tmp_path, monkeypatch):
    (tmp_path / "my_agents.py").write_text("from envgym.agents.baseline import OracleFactory\n\n"
                                           "def make():\n    return OracleFactory()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "my_agents", raising=False)
    assert cli.main(_eval(tmp_path, "--agent", "my_agents:make")) == 0
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert {r.agent_id for r in records} == {"py:my_agents:make"}
    assert {r.outcome.value for r in records} == {"success"}
    assert records[0].agent["ref"] == "my_agents:make" and records[0].agent["agent"] == "python"
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["config"]["agent"] == {"type": "python", "ref": "my_agents:make"}
    # another callable is another config: its run directory is not mixed with this one
    (tmp_path / "my_agents.py").write_text((tmp_path / "my_agents.py").read_text() + "other = make\n")
    monkeypatch.delitem(sys.modules, "my_agents")
    assert cli.main(_eval(tmp_path, "--agent", "my_agents:other")) == 2
    assert "different configuration" in screen()[1]


def test_own_agent_class_from_a_file_makes_one_agent_per_episode(screen, tmp_path, monkeypatch):
    _agent_file(tmp_path, """
        import itertools

        from envgym.agent import Agent
        from envgym.types import Action

        numbers = itertools.count(1)

        class Quitter(Agent):
            def __init__(self):
                super().__init__()
                self.number = next(numbers)

            async def act(self, observation):
                return Action.say(f"agent {self.number} gives up")
        """, name="quit.py")
    monkeypatch.chdir(tmp_path)
    assert cli.main(_eval(tmp_path, "--agent", "./quit.py:Quitter", "--runs", "2")) == 0
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert len(records) == 6 and "infra_error" not in {r.outcome.value for r in records}
    assert {r.agent_id for r in records} == {"py:quit.py:Quitter"}  # the path normalised: a stable id
    trajectories = (tmp_path / "run" / "trajectories.jsonl").read_text()
    assert all(f"agent {n} gives up" in trajectories for n in range(1, 7))  # six agents, one per episode


@pytest.mark.parametrize(("agent", "message"), [
    ("no_such_module_xyz:make", "no module named 'no_such_module_xyz'"),
    ("json:no_such_factory", "json has no attribute 'no_such_factory'"),
    ("json:__doc__", "__doc__ is a str, not a callable"),
    ("json:JSONDecodeError", "calling it raised TypeError"),
    ("json:JSONEncoder", "returned a JSONEncoder, not an envgym.agent.Agent or an AgentFactory"),
    ("missing/file.py:make", "no file 'missing/file.py'"),
    ("opnai:gpt-4o", "did you mean 'openai'"),
    ("py:", "MODULE:CALLABLE or FILE.py:CALLABLE"),
])
def test_own_agent_errors_are_one_line_exit_2(screen, tmp_path, monkeypatch, agent, message):
    monkeypatch.chdir(tmp_path)
    assert cli.main(_eval(tmp_path, "--agent", agent)) == 2
    _, stderr = screen()
    assert message in stderr and "Traceback" not in stderr
    assert not (tmp_path / "run").exists()


def test_own_agent_file_that_fails_to_import_is_one_line(screen, tmp_path):
    path = _agent_file(tmp_path, "def make(:\n", name="bad.py")
    assert cli.main(_eval(tmp_path, "--agent", f"{path}:make")) == 2
    stderr = screen()[1]
    assert "importing" in stderr and "SyntaxError" in stderr and "bad.py" in stderr
