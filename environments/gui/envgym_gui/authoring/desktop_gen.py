"""``gui-desktop-gen``: GUI tasks by the thousand: seeded spreadsheets, documents and file trees, graded on the
files the apps leave.

:func:`generate` is the generator (registered in :func:`envgym_gui.register_all`); every choice comes from the
request's seeded ``rng``. A task is one template family of the request's split (drawn from the seed) applied
at the request's level by its module (:mod:`~envgym_gui.authoring.gen_sheets` for Calc,
:mod:`~envgym_gui.authoring.gen_docs` for Writer, :mod:`~envgym_gui.authoring.gen_trees` for the editor
and the terminal), which draws the world (the files written at reset, a look-alike file beside them named as
collateral), derives the keyboard reference solution from it (cell addresses, paragraph and line positions,
the file names a command lists) and builds the ``desktop`` checks from the same edit applied in Python.

Template families and their splits (:data:`envgym_gui.GENERATOR_TEMPLATES`; train and test share none, and
each split has two families per app, so a model trained on ``train`` meets every app but not the request)::

    train: sheet-update, sheet-formula, doc-format, doc-rewrite, config-set, tree-organise
    test:  sheet-append, sheet-product, doc-align, doc-append, list-rename, tree-extract

Levels: ``level`` edits in one task (1, 2 or 3 cells, paragraphs, keys, lines, folders or output files) on a
world that grows with it (more rows, paragraphs, settings, files); at level 3 a spreadsheet update names one of
two near-namesake rows. The reference solution's length grows with the level. :func:`draft` gives the task
with the files a correct episode leaves (the offline gates of ``tests/gui/test_gui_gen.py``).
"""

from __future__ import annotations

import random
from typing import Any

from envgym.plugin import Limits, TaskSpec
from envgym_gui.authoring import DesktopSpec, done
from envgym_gui.authoring.gen_base import Draft
from envgym_gui.authoring.gen_docs import FAMILIES as DOCS
from envgym_gui.authoring.gen_sheets import FAMILIES as SHEETS
from envgym_gui.authoring.gen_trees import FAMILIES as TREES

__all__ = ["FAMILIES", "NAME", "draft", "generate"]

NAME = "gui-desktop-gen"
FAMILIES = {**SHEETS, **DOCS, **TREES}
"""Template family -> ``fn(rng, level) -> Draft``."""
SLACK = 10
"""Steps an agent gets beyond the reference solution's."""


def draft(request: Any) -> tuple[TaskSpec, Draft]:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`) and its draft."""
    rng: random.Random = request.rng()
    level = request.level
    family = rng.choice(request.templates)
    made = FAMILIES[family](rng, level)
    solution = (*made.solution, done())
    verifier = DesktopSpec.model_validate({"type": "desktop", "checks": made.checks,
                                           "unchanged": sorted(made.unchanged), "expect": "done"})
    app = made.open_app["app"]
    slow = app in ("calc", "writer")  # reset starts LibreOffice: on a loaded 2-core host that alone takes a minute
    limits = Limits(max_steps=len(solution) + SLACK, episode_timeout_s=240.0 + 60.0 * level if slow else 180.0,
                    step_timeout_s=120.0)
    task = TaskSpec(id=request.task_id, env_id=request.env_id, split=request.split, instruction=made.instruction,
                    initial_state={"files": made.files, "open": made.open_app}, limits=limits,
                    verifiers=(verifier,), solution=solution,
                    tags=("generated", app, f"level-{level}", family),
                    metadata={"templates": [family], "level": level, "seed": request.seed, "generator": NAME})
    return task, made


def generate(request: Any) -> TaskSpec:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`)."""
    return draft(request)[0]
