"""``envgym bfcl setup [--check]``: install the pinned bfcl-eval with ``--no-deps`` into this interpreter.

Run after ``pip install 'envgym[bfcl]'`` (see :mod:`envgym_bfcl.install` for why it is a second step). When
:data:`~envgym_bfcl.install.REQUIREMENT` already imports it does nothing (no pip, no network); when it is
missing or at another version it runs ``python -m pip install --no-deps`` (pip's own progress shows) and
checks the import again; when it is installed as pinned but an import fails, it names the extra. Exit 0 when BFCL
is ready, 2 naming what to run when it is not (``--check`` only checks), 1 when pip itself failed. Hooked into
``envgym`` by the entry point ``bfcl = "envgym_bfcl.cli:add_parser"`` (group ``envgym.cli``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import subprocess
import sys

from envgym.plugin import ExtraMissing
from envgym.plugin.cli import LazyConsole
from envgym_bfcl.install import REQUIREMENT, VERSION, found, problem

__all__ = ["add_parser"]

out = LazyConsole(soft_wrap=True)


def _ready() -> int:
    out.print(f"{REQUIREMENT} is installed and imports: BFCL is ready", markup=False, highlight=False)
    return 0


def _setup(args: argparse.Namespace) -> int:
    reason = problem(runner=True)
    if reason is None:
        return _ready()
    if args.check or found() == VERSION:  # installed as pinned: pip would change nothing, the extra is missing
        raise ExtraMissing(reason)
    if importlib.util.find_spec("pip") is None:
        raise ExtraMissing(f"this environment has no pip ({sys.executable}): install bfcl-eval without its "
                           f"dependencies another way, e.g. uv pip install --python {sys.executable} --no-deps "
                           f"{REQUIREMENT}")
    command = [sys.executable, "-m", "pip", "install", "--no-deps", REQUIREMENT]
    out.print(f"installing {REQUIREMENT} without its pinned dependencies: {' '.join(command)}", markup=False,
              highlight=False)
    if subprocess.run(command).returncode != 0:
        out.print(f"pip could not install {REQUIREMENT} (its message is above)", markup=False, highlight=False)
        return 1
    importlib.invalidate_caches()
    reason = problem(runner=True)
    if reason is not None:
        raise ExtraMissing(reason)
    return _ready()


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``envgym bfcl setup`` to the ``envgym`` command line."""
    p = subparsers.add_parser("bfcl", help="the Berkeley Function Calling Leaderboard: install its checker")
    sub = p.add_subparsers(dest="bfcl_command", required=True)
    s = sub.add_parser("setup", help=f"install {REQUIREMENT} with --no-deps into this environment, then check "
                                     "that envgym can import it (after pip install 'envgym[bfcl]')")
    s.add_argument("--check", action="store_true", help="only check; exit 2 naming what to run when not ready")
    s.set_defaults(fn=_setup)
    return p
