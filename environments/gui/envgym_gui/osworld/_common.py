"""Names every part of the OSWorld importer shares: the skip exception, its reasons, the desktop's home."""

from __future__ import annotations

from pathlib import PurePosixPath

from envgym.plugin import SpecError

ENV_ID = "gui/osworld-v1"
SUITE = "gui-osworld"
HOME = "/home/user"
REASONS = ("download", "network", "app", "setup", "evaluator", "postconfig", "windows", "unfinished", "malformed")
"""First word of every skip reason, in the order the checks run."""


class Skip(SpecError):
    """One task cannot be imported; the message is the reason (it starts with one of :data:`REASONS`)."""


def home_path(path: str, where: str, part: str = "setup") -> str:
    """``path`` (``~`` and relative paths taken from the home folder) normalised; Skip outside the home."""
    path = HOME + path[1:] if path == "~" or path.startswith("~/") else path
    if not path.startswith("/"):
        path = f"{HOME}/{path}"
    clean = str(PurePosixPath(path))
    if ".." in PurePosixPath(clean).parts or not (clean == HOME or clean.startswith(HOME + "/")):
        raise Skip(f"{part}: {where} names {path}, outside {HOME} (the desktop's root file system is read-only "
                   "and the user has no sudo)")
    return clean
