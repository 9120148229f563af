"""Shared fixtures: asyncio debug mode, the fake ``test/notes-v1`` env and its tasks.

Test modules import helpers from ``fakes`` (a unique module name), never from ``conftest``: other test
folders have conftest modules of their own.
"""

from __future__ import annotations

import os

os.environ.setdefault("PYTHONASYNCIODEBUG", "1")  # slow callbacks and never-awaited coroutines show up

import pytest

from fakes import notes_tasks, register_notes

register_notes()


@pytest.fixture
def notes():
    return notes_tasks()


@pytest.fixture
def screen(monkeypatch):
    """Render CLI output to fixed-width consoles; returns a reader of (stdout, stderr)."""
    import io

    from rich.console import Console

    from envgym import cli

    stdout, stderr = io.StringIO(), io.StringIO()
    monkeypatch.setattr(cli, "out", Console(file=stdout, width=160, color_system=None))
    monkeypatch.setattr(cli, "console", Console(file=stderr, width=160, color_system=None))
    return lambda: (stdout.getvalue(), stderr.getvalue())
