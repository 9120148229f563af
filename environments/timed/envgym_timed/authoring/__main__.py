"""``python -m envgym_timed.authoring [ROOT]``: regenerate the timed suites (under ``ROOT`` if given)."""

from __future__ import annotations

import sys
from pathlib import Path

from envgym_timed.authoring import write_all

root = Path(sys.argv[1]) if len(sys.argv) > 1 else None
for family, count in write_all(root).items():
    print(f"timed-{family}: {count} tasks")
