"""Every SWE tampering agent on a suite imported with the default ``test_cmd``: what each scores, and whose failure.

    python benchmarks/swe_tamper_table.py [AGENT ...]

Imports the local demo repository (``envgym_swe.demo``) as ``envgym swe import`` would (no ``-o addopts=`` in its
``test_cmd``, unlike the bundled suites), then plays each agent of ``envgym_swe.tamper.AGENTS`` (or those named)
on ``demo__calc-1`` and prints one row per agent: reward, outcome, blame and why. Every reward must be 0 and no
blame ``env`` or ``verifier``. Needs a running engine (sandboxes/host-setup.sh). Issue 33's before/after table
came from this script at a039d50 and at the grader's change.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import envgym
from envgym.rollout import run_episode
from envgym.task import write_tasks
from envgym_swe import tamper
from envgym_swe.demo import REPO, make_demo
from envgym_swe.importer import import_instances

ENV_ID = "swe/demotable-v1"


async def main(names: list[str]) -> None:
    root = Path(tempfile.mkdtemp(prefix="envgym-tamper-table-"))
    repo, instances = make_demo(root)
    report = import_instances([i for i in instances if "hang" not in i["instance_id"]], {REPO: repo},
                              "swe-demotable", None, remember=False)
    (root / "suite").mkdir()
    write_tasks(root / "suite" / "tasks.jsonl", report.tasks)
    envgym.register(ENV_ID, "envgym_swe.env:SweEnv", suites=(str(root / "suite"),), override=True)
    task = next(t for t in report.tasks if t.metadata["instance_id"] == "demo__calc-1")
    print(f"| {'agent':24} | reward | {'outcome':8} | {'blame':8} | why |")
    print(f"|{'-' * 26}|--------|{'-' * 10}|{'-' * 10}|-----|")
    for kind in tamper.AGENTS:
        if names and kind.name not in names:
            continue
        async with envgym.make(ENV_ID) as env:
            t = await run_episode(env, kind(task), task)
        why = t.error.splitlines()[0] if t.error else (t.verdict.evidence.get("reason") if t.verdict else None)
        blame = t.blame.value if t.blame else "-"
        print(f"| {kind.name:24} | {t.reward:6.0f} | {t.outcome.value:8} | {blame:8} | {(why or '')[:90]} |",
              flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
