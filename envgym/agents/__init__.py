"""The built-in agents and how a command line names them.

``parse_agent("oracle" | "null" | "random[:SEED]" | "openai:MODEL" | "hf[:GGUF_PATH]" | "tamper:NAME", **options)``
gives a
typed :data:`AgentConfig`; ``build_factory(config)`` gives the :class:`~envgym.agent.AgentFactory` that makes
one agent per task. Model-backed agents import their dependencies only when built.

``tamper:NAME`` plays the tampering agent ``NAME`` (:mod:`envgym.tamper`: the kernel's generic ones and each env's
own, as ``envgym check`` lists them) on every task: a run of it shows what a forger would score in ``envgym eval``
and on the leaderboard (it must be 0).

Any other ``MODULE:CALLABLE`` or ``FILE.py:CALLABLE`` (or ``py:`` before either, when the module's name is
also an agent kind) is a user's own agent (:mod:`envgym.agents.python`), with the id ``py:REF``.
The openai agent reads its key from ``api_key_env`` (default ``OPENAI_API_KEY``); only a variable named on
purpose must be set, so a keyless local endpoint works without one.
"""

from __future__ import annotations

from envgym.agents._configs import (
    AGENT_KINDS,
    AgentConfig,
    HFConfig,
    NullConfig,
    OpenAIConfig,
    OracleConfig,
    PythonConfig,
    RandomConfig,
    TamperConfig,
    agent_id,
    build_factory,
    parse_agent,
)

__all__ = [
    "AGENT_KINDS",
    "AgentConfig",
    "HFConfig",
    "NullConfig",
    "OpenAIConfig",
    "OracleConfig",
    "PythonConfig",
    "RandomConfig",
    "TamperConfig",
    "agent_id",
    "build_factory",
    "parse_agent",
]
