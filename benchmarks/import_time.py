"""Start-up cost: how long a fresh interpreter takes to import envgym, build an env, and run the CLI.

Each row is the median (and min, max) wall time of ``--runs`` fresh subprocesses, run interleaved (row 1,
row 2, ..., then again) so that a burst of load on this shared machine lands on every row alike. The first
row, ``python -c pass``, is the interpreter's own start (site-packages' ``.pth`` files included); the
``vs pass`` column subtracts it. The load average is printed with every row. ``--importtime N`` adds the
N modules with the largest cumulative import time of ``import envgym`` (``python -X importtime``).

``--baseline DIR`` times every row a second time, interleaved with the first, against the source tree in
DIR (another commit: ``git archive COMMIT | tar -x -C DIR``; its packages go first on ``PYTHONPATH``, the
installed entry points and task data stay this install's) and prints the ratio, so that both sides see the
same load.

    .venv/bin/python benchmarks/import_time.py              # the table (10 runs per row)
    .venv/bin/python benchmarks/import_time.py --importtime 15 --baseline /tmp/envgym-before
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

NEUTRAL = tempfile.gettempdir()


def cli_command() -> list[str]:
    """The installed ``envgym`` console script beside this interpreter (or on PATH)."""
    script = Path(sys.executable).parent / "envgym"
    found = str(script) if script.exists() else shutil.which("envgym")
    if found is None:
        raise SystemExit("no envgym console script: install the package (pip install -e .)")
    return [found]


def rows() -> list[tuple[str, list[str]]]:
    py = sys.executable
    return [
        ("python -c pass", [py, "-c", "pass"]),
        ("import envgym", [py, "-c", "import envgym"]),
        ("import envgym; envgym.make('tool/retail-v1')",
         [py, "-c", "import envgym; envgym.make('tool/retail-v1')"]),
        ("import gymnasium, envgym", [py, "-c", "import gymnasium, envgym"]),
        ("envgym --help", [*cli_command(), "--help"]),
        ("envgym list", [*cli_command(), "list"]),
    ]


def baseline_env(tree: Path) -> dict[str, str]:
    """The environment that makes ``tree``'s code packages (pyproject's package-dir) shadow this install's."""
    dirs = tomllib.loads((tree / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    roots = {str((tree / where).parent) for name, where in dirs.items() if Path(where).name == name}
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sorted(roots))}


def time_once(command: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    # from a neutral folder: with -c, the current one is first on sys.path and would shadow PYTHONPATH
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env, cwd=NEUTRAL)
    return time.perf_counter() - start


def importtime(top: int) -> None:
    """The ``top`` largest cumulative import times of ``import envgym`` (one run)."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import envgym"], capture_output=True,
                            text=True, check=True, cwd=NEUTRAL)
    entries = []
    for line in result.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            entries.append((int(parts[1]), parts[2].strip()))
    print(f"\n-X importtime of import envgym: {top} largest cumulative (load average {os.getloadavg()[0]:.2f})")
    print(f"{'cumulative ms':>14}  module")
    for cumulative_us, module in sorted(entries, reverse=True)[:top]:
        print(f"{cumulative_us / 1000:>14.1f}  {module}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="fresh subprocesses per row (median reported)")
    parser.add_argument("--importtime", type=int, default=0, metavar="N", help="also list the N slowest imports")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="also time the source tree in DIR, side by side")
    args = parser.parse_args()
    sides: dict[str, dict[str, str] | None] = {"now": None}
    if args.baseline:
        sides["baseline"] = baseline_env(args.baseline)
    table = rows()
    for _, command in table:  # warm the file cache and the bytecode caches once, untimed
        for env in sides.values():
            time_once(command, env)
    times = {(side, name): [] for side in sides for name, _ in table}
    loads: dict[str, list[float]] = {name: [] for name, _ in table}
    for _ in range(args.runs):
        for name, command in table:
            for side, env in sides.items():
                times[side, name].append(time_once(command, env))
            loads[name].append(os.getloadavg()[0])
    print(f"{os.cpu_count()} CPUs; {args.runs} runs per row, interleaved; python {sys.version.split()[0]}"
          + (f"; baseline tree {args.baseline}" if args.baseline else ""))
    header = f"{'command':<46} {'median s':>9} {'min s':>7} {'max s':>7} {'vs pass':>8}"
    if args.baseline:
        header += f" {'baseline s':>10} {'ratio':>6}"
    print(header + f" {'load avg':>9}")
    base = statistics.median(times["now", "python -c pass"])
    for name, _ in table:
        now = times["now", name]
        line = (f"{name:<46} {statistics.median(now):>9.3f} {min(now):>7.3f} {max(now):>7.3f} "
                f"{statistics.median(now) - base:>+8.3f}")
        if args.baseline:
            before = statistics.median(times["baseline", name])
            line += f" {before:>10.3f} {statistics.median(now) / before:>6.2f}"
        print(line + f" {statistics.median(loads[name]):>9.2f}")
    if args.importtime:
        importtime(args.importtime)


if __name__ == "__main__":
    main()
