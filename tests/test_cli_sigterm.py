"""``envgym eval`` stopped by SIGTERM (a scheduler, ``kill``, ``timeout``) takes Ctrl-C's path: the run is
cancelled, finished episodes stay recorded, the exit status is 143 and the same command resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from envgym.record import read_records

SLOW_AGENT = textwrap.dedent("""
    import asyncio
    import os

    from envgym.agents.baseline import OracleFactory

    class Slow:
        def __init__(self):
            self.inner = OracleFactory()

        def describe(self):
            return {"agent": "slow-oracle"}

        def create(self, task):
            agent = self.inner.create(task)
            act = agent.act

            async def slowly(observation):
                await asyncio.sleep(float(os.environ.get("SLOW_AGENT_DELAY", "1.5")))
                return await act(observation)

            agent.act = slowly
            return agent

    def make():
        return Slow()
""")


def _eval(tmp_path: Path, agent: str) -> list[str]:
    return [sys.executable, "-m", "envgym.cli", "eval", "--suite", "tool-retail", "--limit", "4",
            "--agent", agent, "--concurrency", "1", "--workers", "1", "--quiet", "--out", str(tmp_path / "run")]


def test_sigterm_stops_the_run_like_ctrl_c_and_the_same_command_resumes(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(SLOW_AGENT)
    records = tmp_path / "run" / "records.jsonl"
    with subprocess.Popen(_eval(tmp_path, "slow.py:make"), cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as child:
        deadline = time.monotonic() + 120
        while not (records.exists() and records.read_text().strip()) and time.monotonic() < deadline:
            assert child.poll() is None, child.stdout.read() if child.stdout else ""
            time.sleep(0.2)
        child.send_signal(signal.SIGTERM)
        output, _ = child.communicate(timeout=60)
    assert child.returncode == 143, output
    output = " ".join(output.split())  # rich wraps the line
    assert "terminated" in output and "run the same command again to resume" in output
    done, _ = read_records(records)
    assert done and all(r.outcome.value == "success" for r in done)
    # the same command; its agent is slow only so that SIGTERM lands mid-run: the rest now runs at full speed
    rerun = subprocess.run(_eval(tmp_path, "slow.py:make"), cwd=tmp_path, capture_output=True, text=True,
                           timeout=300, env={**os.environ, "SLOW_AGENT_DELAY": "0"})
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"skipped {len(done)}" in rerun.stdout
    every, _ = read_records(records)
    assert len({r.task_id for r in every}) == len(every)  # resumed: no episode ran twice
