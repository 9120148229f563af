"""Containers killed from outside a running evaluation: their episodes are ``infra_error`` and a rerun redoes them.

    python benchmarks/outside_kill.py OUT [--kills 4] [--gap 0.5] [--suite swe-toolz] [--limit 5]

Starts ``envgym eval --suite SUITE --agent oracle --limit N --out OUT``, and while it runs ``docker kill``s
``--kills`` of its running containers from the host, ``--gap`` seconds apart (``--kills 0``: every running
container at once), as an operator, an engine restart or a host OOM would. Then it prints each record's outcome
and blame, reruns the same command (resume) and prints the outcome counts again: every killed episode must be
``infra_error`` (blame infra, "killed from outside"), and after the rerun the oracle must be 100%. Needs a
running engine (sandboxes/host-setup.sh) and the suite's images (``envgym swe build``).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

import docker


def counts(out: Path) -> dict[tuple[str, str | None], int]:
    """The latest record of each episode: (outcome, blame) -> how many."""
    latest = {}
    for line in (out / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        latest[(record["task_id"], record.get("run_index", 0))] = record
    return dict(collections.Counter((r["outcome"], r.get("blame")) for r in latest.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--gap", type=float, default=0.5)
    parser.add_argument("--suite", default="swe-toolz")
    parser.add_argument("--limit", type=int, default=5)
    args = parser.parse_args()
    command = [str(Path(sys.executable).with_name("envgym")), "eval", "--suite", args.suite, "--agent", "oracle",
               "--limit", str(args.limit), "--out", str(args.out), "--quiet"]
    api = docker.APIClient(version="auto")
    run = subprocess.Popen(command)
    label = f"envgym.owner_pid={run.pid}"
    killed: list[str] = []
    started = time.monotonic()
    try:
        while run.poll() is None and (args.kills == 0 or len(killed) < args.kills):
            running = sorted(api.containers(filters={"label": label, "status": "running"}), key=lambda c: c["Created"])
            targets = [c["Id"] for c in running if c["Id"] not in killed][: None if args.kills == 0 else 1]
            if targets and time.monotonic() - started > 1.0:
                for cid in targets:
                    try:
                        api.kill(cid)
                        killed.append(cid)
                        print(f"killed {cid[:12]} at {time.monotonic() - started:.1f}s", flush=True)
                    except docker.errors.APIError as exc:
                        print(f"kill of {cid[:12]} refused: {exc}")
                if args.kills == 0:
                    break
                time.sleep(args.gap)
            time.sleep(0.05)
        print(f"eval exit {run.wait()}, {len(killed)} containers killed; records: {counts(args.out)}")
    finally:
        api.close()
    resumed = subprocess.run(command, check=False)
    print(f"rerun exit {resumed.returncode}; records: {counts(args.out)}")


if __name__ == "__main__":
    main()
