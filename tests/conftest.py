"""Shared fixtures: asyncio debug mode, the fake ``test/notes-v1`` env and its tasks."""

from __future__ import annotations

import os

os.environ.setdefault("PYTHONASYNCIODEBUG", "1")  # slow callbacks and never-awaited coroutines show up

import tempfile
from pathlib import Path

import pytest

import envgym
from envgym.task import write_tasks

from fakes import NOTES, notes_tasks

NOTES_SUITE = Path(tempfile.mkdtemp(prefix="envgym-tests-")) / "notes.jsonl"
write_tasks(NOTES_SUITE, notes_tasks())
if "test/notes-v1" not in envgym.registry._registry:
    envgym.register("test/notes-v1", "envgym_tool.env:ToolEnv", kwargs={"domain": NOTES},
                    suites=(str(NOTES_SUITE),), max_episode_steps=10)


@pytest.fixture
def notes():
    return notes_tasks()
