"""OSWorld (xlang-ai/OSWorld) task JSON imported as ``gui/osworld-v1`` tasks, graded by OSWorld's own metrics.

Three parts, one concept each: :mod:`~envgym_gui.osworld._importer` maps a task's setup and says why for
every task it cannot import; :mod:`~envgym_gui.osworld._evaluator` resolves its evaluator's getters (cached
expected files, files read out of the container, rules) and its grading-time ``postconfig``;
:mod:`~envgym_gui.osworld.grade` scores an episode with desktop-env's metric functions on the host
(:mod:`~envgym_gui.osworld.install` loads them; ``envgym osworld setup`` installs them). The command line
(``envgym osworld import DIR [--cache CACHE]``, ``envgym osworld setup``) is :mod:`~envgym_gui.osworld.cli`.
"""

from __future__ import annotations

from envgym_gui.osworld._common import ENV_ID, HOME, REASONS, SUITE, Skip
from envgym_gui.osworld._importer import SOLUTIONS, import_tasks, map_task
from envgym_gui.osworld.cli import add_parser, import_suite, main, write_suite

__all__ = ["ENV_ID", "HOME", "REASONS", "SOLUTIONS", "SUITE", "Skip", "add_parser", "import_suite", "import_tasks",
           "main", "map_task", "write_suite"]
