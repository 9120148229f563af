"""The installed plug-ins' entry points, from one scan of the installed distributions.

``importlib.metadata.entry_points(group=...)`` reads every distribution's ``entry_points.txt`` on each call
(~10 ms with the ~190 distributions of this project's environment). ``envgym eval`` asked three times (its
subcommand plug-ins, the environment families, the exporters) and each worker process once more. :func:`installed`
scans once for every group and again only when ``sys.path`` or one of its folders changed (a distribution
installed or removed later in the same process is seen: installing one changes its folder).
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from typing import Any

__all__ = ["installed"]

_scan: tuple[Any, metadata.EntryPoints, dict[str, list[metadata.EntryPoint]]] | None = None


def _mtime(folder: str) -> int | None:
    try:
        return os.stat(folder or ".").st_mtime_ns
    except OSError:
        return None


def installed(group: str) -> list[metadata.EntryPoint]:
    """The entry points of ``group``, sorted by name (the same list until the next scan)."""
    global _scan
    key = tuple((folder, _mtime(folder)) for folder in sys.path)
    if _scan is None or _scan[0] != key:
        _scan = (key, metadata.entry_points(), {})
    found = _scan[2].get(group)
    if found is None:
        found = _scan[2][group] = sorted(_scan[1].select(group=group), key=lambda ep: ep.name)
    return found
