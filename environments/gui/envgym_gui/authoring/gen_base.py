"""What a template family of ``gui-desktop-gen`` hands back: a :class:`Draft` (the task's world, its keyboard
reference solution and its checks, plus the files a correct episode leaves, for the offline gates), and the
keyboard idioms the families share.

A family is ``fn(rng, level) -> Draft``; every choice comes from ``rng`` (a ``random.Random`` the generator
seeds from the request). The reference solution is derived from the world the family drew (cell addresses,
paragraph and line positions, the names a shell command lists), never written per task; :attr:`Draft.after`
is the same edit applied to the world in Python, which the family's checks are built from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envgym_gui.authoring import Action, check, get, key, typed, wait

__all__ = ["Draft", "check", "get", "key", "text", "typed", "wait"]


@dataclass
class Draft:
    """One generated GUI task before it becomes a :class:`~envgym.plugin.TaskSpec`."""

    instruction: str
    files: dict[str, Any]
    """``initial_state.files``: path -> file spec (:mod:`envgym_gui.files`)."""
    open_app: dict[str, Any]
    """``initial_state.open``: the app, the path it opens, a window-title regex."""
    solution: list[Action]
    """The keyboard reference, ending with ``done``."""
    checks: list[dict[str, Any]]
    unchanged: list[str]
    """Collateral: files that must keep the bytes reset wrote."""
    after: dict[str, Any] = field(default_factory=dict)
    """Files (specs) a correct episode leaves that differ from :attr:`files` (for the offline gates)."""
    remove: list[str] = field(default_factory=list)
    """Paths a correct episode moves away (offline gates)."""
    dirs: list[str] = field(default_factory=list)
    """Folders a correct episode creates (offline gates)."""


def text(body: str) -> dict[str, Any]:
    return {"text": body}


def opener(app: str, path: str, title: str | None = None) -> dict[str, Any]:
    return {"app": app, "path": path, "title": title or re.escape(path.rsplit("/", 1)[-1])}


def lines_keys(k: int) -> str:
    """Keys from anywhere to the start of line (or one-line paragraph) ``k``, 0-based, in the editor or Writer."""
    return " ".join(["ctrl+Home", *["Down"] * k, "Home"])
