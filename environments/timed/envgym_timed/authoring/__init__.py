"""Generators of the timed suites (``tasks/timed-*/``): one module per scenario exporting ``tasks()``.

``python -m envgym_timed.authoring [ROOT]`` rewrites every suite under ``ROOT`` (default: the repository's
``tasks/``); a test checks that the committed files equal the generators' output.
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


def write_all(root: Path) -> dict[str, int]:
    from envgym_timed import SCENARIOS
    from envgym_timed.authoring.common import write_suite

    counts = {}
    for family in FAMILIES:
        tasks = family_tasks(family)
        write_suite(root, family, SCENARIOS[family], tasks)
        counts[family] = len(tasks)
    return counts
