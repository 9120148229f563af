"""The attacker's and fault injector's probes of issue 12, each proved by tests, as one table.

    python benchmarks/probe_table.py            # runs the tests (Docker and Chromium needed), prints the table
    python benchmarks/probe_table.py --list     # the probes and their tests, without running them

A probe "holds" when every test that proves it passes. The tests live in ``tests/adversarial/`` and beside
the modules they probe; each failed on the code before its fix.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
A = "tests/adversarial/"
PROBES: list[tuple[str, str, list[str]]] = [
    # (area, probe, test node-id prefixes)
    ("swe", "pytest rewritten in site-packages, empty patch",
     ["tests/swe/test_swe_tamper.py::test_each_tampering_agent"]),
    ("swe", "null agent after a tamperer on the same env", ["tests/swe/test_swe_tamper.py::test_a_null_agent_after"]),
    ("swe", "patch that hijacks the runner (pytest.py, sitecustomize, .pth, conftest, fake report)",
     ["tests/swe/test_swe_tamper.py::test_a_predicted_patch_that_hijacks"]),
    ("swe", "every episode in a fresh container, read-only root, capped disk",
     ["tests/swe/test_swe_env.py::test_every_episode_gets_a_fresh_container"]),
    ("swe", "`kill 1` is the agent's failure, next reset recovers",
     ["tests/swe/test_swe_env.py::test_a_killed_container_is_the_agents_failure"]),
    ("swe", "view of a FIFO / device / huge file", ["tests/swe/test_swe_env.py::test_view_refuses_fifos"]),
    ("blame", "SandboxCrashed / AgentFault from a step is the agent's failure",
     [A + "test_rollout_blame.py::test_the_agents_broken_sandbox_is_its_failure"]),
    ("blame", "ExecTimeout (a TimeoutError) is not the episode deadline",
     [A + "test_rollout_blame.py::test_an_unstoppable_command_is_not_the_episode_deadline"]),
    ("blame", "engine down / image missing mid-episode is infra",
     [A + "test_rollout_blame.py::test_the_engine_is_infrastructure"]),
    ("blame", "deeply nested tool-call arguments (100,000 deep)",
     [A + "test_rollout_blame.py::test_arguments_nested", A + "test_rollout_blame.py::test_deep_arguments",
      A + "test_rollout_blame.py::test_the_proxy_renders_deep"]),
    ("blame", "grading errors at the deadline: verifier's failure, judge down is infra",
     [A + "test_rollout_blame.py::test_grading_errors_at_the_deadline"]),
    ("blame", "an env that raised is never handed out again", [A + "test_rollout_blame.py::test_the_pool_never"]),
    ("blame", "prompt outgrew the context: agent; endpoint never answers: infra",
     ["tests/agents/test_openai.py::test_a_prompt_that_outgrew", "tests/agents/test_openai.py::test_an_endpoint"]),
    ("sandbox", "4 GB written from inside a sandbox", ["tests/sandbox/test_docker_bounds.py::test_disk_is_bounded",
                                                       "tests/sandbox/test_docker_bounds.py::test_a_writable_root"]),
    ("sandbox", "re-parented, environment-cleared busy loops after a timeout",
     ["tests/sandbox/test_docker_bounds.py::test_timeout_kills_reparented"]),
    ("sandbox", "fork bomb: `KeyError: 'oom_count'`, next call broken",
     ["tests/sandbox/test_docker_bounds.py::test_fork_bomb", "tests/sandbox/test_docker_bounds.py::test_a_detached"]),
    ("sandbox", "`kill 1`: a clean SandboxCrashed on every later call",
     ["tests/sandbox/test_docker_bounds.py::test_kill_1", "tests/sandbox/test_docker_bounds.py::test_pool_discards"]),
    ("sandbox", "copy-out link `res/peek -> ../res` to another name",
     ["tests/sandbox/test_tarsafe.py::test_links_resolve", "tests/sandbox/test_docker_bounds.py::test_copy_out"]),
    ("tool", "tampering agents score 0 (wrong record, claim done, candidates, other write tool)",
     [A + "test_tool_tamper.py"]),
    ("web", "tampering agents score 0 (dress the page, type unsent, another MiniWoB page)", [A + "test_web_tamper.py"]),
    ("timed", "tampering agents score 0 (late oracle, claim on time)", [A + "test_timed_tamper.py"]),
    ("answer", "answers that quote everything back or list every candidate", [A + "test_answer_hedging.py"]),
    ("input", "non-UTF-8, 100,000-deep, U+2028 lines in task/instance/prediction/record files",
     [A + "test_input_files.py"]),
    ("input", "--runs 0, --max-steps 0, --step-timeout nan, --concurrency 0, --out a file", [A + "test_input_cli.py"]),
]


def run(prefixes: list[str]) -> dict[str, str]:
    """Test id -> passed / failed / skipped, from one pytest run over the files the prefixes name."""
    files = sorted({p.split("::")[0] for p in prefixes})
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                        *files], cwd=ROOT, check=False)
        results = {}
        for case in ET.parse(report).iter("testcase"):
            module = case.get("classname", "").rsplit(".", 1)[-1]  # junit names the module by its import path
            node = f"{module}.py::{case.get('name')}"
            status = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    status = "failed"
                elif child.tag == "skipped":
                    status = "skipped"
            results[node] = status
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the probes without running the tests")
    args = parser.parse_args()
    results = {} if args.list else run([p for _, _, ps in PROBES for p in ps])
    held = failed = 0
    print(f"{'area':8} {'result':7} {'tests':>5}  probe")
    for area, probe, prefixes in PROBES:
        short = [p.rsplit("/", 1)[-1] for p in prefixes]
        matched = [s for node, s in results.items() if any(node.startswith(p) for p in short)]
        if args.list:
            verdict = "-"
        elif matched and all(s == "passed" for s in matched):
            verdict, held = "held", held + 1
        else:
            verdict, failed = ("FAILED" if matched else "NO TEST"), failed + 1
        print(f"{area:8} {verdict:7} {len(matched):5}  {probe}")
    if not args.list:
        print(f"\n{len(PROBES)} probes: {held} held, {failed} failed")


if __name__ == "__main__":
    main()
