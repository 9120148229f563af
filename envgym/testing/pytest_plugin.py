"""envgym's pytest fixtures for a plug-in's own tests: ``pytest -p envgym.testing.pytest_plugin``.

Or, in the plug-in's ``conftest.py``: ``pytest_plugins = ["envgym.testing.pytest_plugin"]``. Fixtures:

- ``envgym_registry`` — a fresh, empty registry of envs, suites and verifier kinds for the test
  (:func:`envgym.registry.isolated`, no entry-point plug-ins load inside); the previous one is back after.
  Register what the test needs in it; nothing leaks into other tests.
- ``fake_sandbox`` — a started :class:`~envgym.sandbox.fake.FakeSandbox` (in memory), stopped after.
- ``scripted_agent`` — a maker of :class:`~envgym.testing.ScriptedAgent`: ``scripted_agent([actions])``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from envgym.registry import isolated
from envgym.sandbox.fake import FakeSandbox
from envgym.testing.agents import ScriptedAgent
from envgym.types import Action


@pytest.fixture
def envgym_registry() -> Iterator[None]:
    """An isolated, empty envgym registry for the duration of the test."""
    with isolated():
        yield


@pytest.fixture
async def fake_sandbox() -> AsyncIterator[FakeSandbox]:
    """A started in-memory sandbox, stopped when the test ends."""
    sandbox = FakeSandbox()
    await sandbox.start()
    try:
        yield sandbox
    finally:
        await sandbox.stop()


@pytest.fixture
def scripted_agent() -> Callable[..., ScriptedAgent]:
    """``scripted_agent(actions, delay=0.0)`` makes a :class:`ScriptedAgent` playing ``actions``."""
    def make(actions: list[Action], *, delay: float = 0.0) -> ScriptedAgent:
        return ScriptedAgent(actions, delay=delay)

    return make
