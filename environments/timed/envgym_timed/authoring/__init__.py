"""Generators of the timed suites (``tasks/timed-*/``): one module per scenario exporting ``tasks()``.

``python -m envgym_timed.authoring [ROOT]`` rewrites every suite: in its folder as the registry knows it
(``envgym.plugin.write_suite``), or under ``ROOT`` if given (``ROOT/timed-<family>/``); a test checks that the
committed files equal the generators' output.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envgym.plugin import TaskSpec

__all__ = ["FAMILIES", "family_tasks", "write_all"]

FAMILIES = ("assistant", "backoffice", "kitchen")


def family_tasks(family: str) -> list[TaskSpec]:
    import importlib

    return importlib.import_module(f"envgym_timed.authoring.{family}").tasks()


def write_all(root: Path | None = None) -> dict[str, int]:
    """Write every timed suite (tasks and README); ``root``: a folder to write them under instead of where the
    registry has them. Returns the task count of each family."""
    from envgym.plugin import write_suite
    from envgym_timed import SCENARIOS
    from envgym_timed.authoring.common import readme

    counts = {}
    for family in FAMILIES:
        tasks = family_tasks(family)
        suite = f"timed-{family}"
        write_suite(suite, tasks, readme=readme(family, SCENARIOS[family], tasks),
                    folder=None if root is None else Path(root) / suite, log=None)
        counts[family] = len(tasks)
    return counts
