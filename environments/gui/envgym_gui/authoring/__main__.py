"""``python -m envgym_gui.authoring``: rewrite ``tasks/gui-calc``, ``tasks/gui-writer`` and ``tasks/gui-files``."""

from __future__ import annotations

from envgym.plugin import write_suite
from envgym_gui.authoring import calc, fileops, writer

for module in (calc, writer, fileops):
    write_suite(module.SUITE, module.build())
