"""A testing kit for envgym plug-ins: fakes, scripted agents, an isolated registry, pytest fixtures.

A plug-in's tests use the same fakes envgym's own tests do (everything here imports only the kernel: no
family, no Docker, no browser, no network):

- :class:`ScriptedAgent`, :class:`BrokenAgent` — an agent that plays a fixed list of actions (and records
  what it saw), one whose model endpoint is down
- :class:`CountdownEnv`, :func:`countdown_tasks` — a tool-less fake env graded by the kernel like any other
- :class:`FakeSandbox` — the in-memory sandbox (:mod:`envgym.sandbox.fake`)
- :func:`play` — step a fresh env through a list of actions and get the raw step results
- :func:`isolated_registry` — :func:`envgym.registry.isolated`: a fresh, empty registry of envs, suites
  and verifier kinds inside a ``with`` block

Fixtures (``envgym_registry``, ``fake_sandbox``, ``scripted_agent``) come as a pytest plugin:
``pytest -p envgym.testing.pytest_plugin``, or ``pytest_plugins = ["envgym.testing.pytest_plugin"]`` in
the plug-in's ``conftest.py`` (:mod:`envgym.testing.pytest_plugin`). ``import envgym.testing`` does not
import pytest.
"""

from __future__ import annotations

from envgym.registry import isolated as isolated_registry
from envgym.sandbox.fake import FakeSandbox
from envgym.testing.agents import BrokenAgent, ScriptedAgent
from envgym.testing.envs import COUNTDOWN_ID, CountdownEnv, countdown_tasks
from envgym.testing.episodes import play

__all__ = [
    "COUNTDOWN_ID",
    "BrokenAgent",
    "CountdownEnv",
    "FakeSandbox",
    "ScriptedAgent",
    "countdown_tasks",
    "isolated_registry",
    "play",
]
