"""envgym's timed family: asynchronous, time-evolving worlds where thinking costs time."""

from __future__ import annotations


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.registry import register  # noqa: F401
