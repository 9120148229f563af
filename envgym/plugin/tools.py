"""The tool-use base for a family whose agent acts through function calls over a backing store (part of the
plug-in surface).

Covered by Semantic Versioning like all of :mod:`envgym.plugin` (see ``CHANGELOG.md``). The argument helpers
every tool-using family needs are in the core (:func:`envgym.plugin.decode_arguments`, ...); this module is
what a family that serves a *domain* builds on:

- a domain: the :func:`tool` decorator, :class:`Tool`, :class:`ToolContext` (the store and earlier calls a
  tool sees), :class:`ToolFailure` / :class:`PolicyViolation` (refusals the agent sees), :class:`Domain` and
  :func:`load_domain`;
- the envs: :class:`ToolEnv` (serves any domain), :class:`ConversationToolEnv` (its agent talks to a
  simulated user), :func:`execute_calls`, :class:`FrozenState`;
- the store: the :mod:`store` module (``store.image`` / ``store.clone`` / ``store.create`` /
  ``store.connect``) and :class:`SqliteState`, the state view of a connection.
"""

from __future__ import annotations

from envgym.tools import (
    ConversationToolEnv,
    Domain,
    FrozenState,
    PolicyViolation,
    SqliteState,
    Tool,
    ToolContext,
    ToolEnv,
    ToolFailure,
    execute_calls,
    load_domain,
    store,
    tool,
)

__all__ = [
    "ConversationToolEnv",
    "Domain",
    "FrozenState",
    "PolicyViolation",
    "SqliteState",
    "Tool",
    "ToolContext",
    "ToolEnv",
    "ToolFailure",
    "execute_calls",
    "load_domain",
    "store",
    "tool",
]
