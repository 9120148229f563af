"""Bundled SWE suites: what building them cost, and how long re-validating them from the sdist takes.

    python benchmarks/swe_suite_build.py [--sample 3]

Per suite: tasks, candidates tried and the build's wall time (read from ``tasks/swe-*/build.json``, written
by ``python -m envgym_swe.inject build``), then a fresh ``validate`` run: rebuilding the repository from the
sdist and every task commit (seconds, ids identical?) and re-running ``--sample`` tasks in a container (bug
run + gold run per task; mean seconds per task). Docker and the swe-python image are required.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from envgym_swe.inject.__main__ import default_image
from envgym_swe.inject.validate import validate_suite

TASKS = Path(__file__).resolve().parents[1] / "tasks"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=3)
    args = parser.parse_args()
    image = default_image()
    rows = []
    for folder in sorted(TASKS.glob("swe-*")):
        if not (folder / "build.json").is_file():
            continue
        meta = json.loads((folder / "build.json").read_text())
        started = time.monotonic()
        stamps: dict[str, float] = {}

        def log(line: str, stamps: dict[str, float] = stamps, started: float = started) -> None:
            stamps.setdefault("rebuilt", time.monotonic() - started) if "commits rebuilt" in line else None

        result = asyncio.run(validate_suite(folder.name, image, sample=args.sample, log=log))
        per_task = sum(t.seconds for t in result.tasks) / max(1, len(result.tasks))
        rows.append((folder.name, meta["kept"], meta["tried"], meta["build_seconds"], stamps.get("rebuilt", 0.0),
                     f"{result.commits_ok}/{result.commits_total}", f"{sum(t.ok for t in result.tasks)}/"
                     f"{len(result.tasks)}", per_task, result.seconds))
    header = ("suite", "tasks", "tried", "build s", "rebuild s", "ids equal", "valid", "s/task", "validate s")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
