"""Tool-use environments: what a tool domain is written in, and the env that serves any domain.

Public API for a family (or a third-party package) whose agent acts through function calls:

- arguments (:mod:`envgym.tools.args`, shared by every tool-using family): :class:`NoArgs`,
  :func:`args_model_of`, :func:`function_schema` (the OpenAI function schema of a pydantic model),
  :func:`decode_arguments` / :func:`parse_arguments` and their :class:`ArgumentsError` (a call's JSON arguments,
  validated against the tool's model, or the agent's error);
- domains (:mod:`envgym.tools.domain`): the :func:`tool` decorator and :class:`Tool`, :class:`ToolContext`
  (the store and earlier calls a tool sees), :class:`ToolFailure` / :class:`PolicyViolation` (refusals the
  agent sees), :class:`Domain` (schema, tools, written policy, ignored fields) and :func:`load_domain`;
- the store (:mod:`envgym.tools.store`): ``store.image`` (a task's template, built once) / ``store.clone`` (an
  episode's copy, in memory) / ``store.create``, ``store.Changes`` (the tables an episode wrote, so grading
  reads only those) and :class:`SqliteState`, the :class:`~envgym.verify.state.StateView` of a connection;
- the env (:mod:`envgym.tools.env`): :class:`ToolEnv` (serves any :class:`Domain`), :func:`execute_calls`
  (run calls on a store, as the env and a replayed reference do), :class:`FrozenState`;
- the conversational env (:mod:`envgym.tools.conversation`): :class:`ConversationToolEnv`, a tool env whose
  agent talks to a simulated user (:mod:`envgym.user`) who holds the facts and ends the conversation.

A third-party domain is a module exporting a :class:`Domain`, registered like any env::

    envgym.register("mine/shop-v1", "envgym.tools:ToolEnv", kwargs={"domain": "my_pkg.shop:DOMAIN"},
                    suites=("mine-shop",), max_episode_steps=30)
"""

from __future__ import annotations

import typing as _typing

from envgym import _lazy
from envgym.tools import store

if _typing.TYPE_CHECKING:
    from envgym.tools.args import (
        ArgumentsError,
        NoArgs,
        args_model_of,
        decode_arguments,
        function_schema,
        parse_arguments,
    )
    from envgym.tools.conversation import ConversationToolEnv
    from envgym.tools.domain import Domain, PolicyViolation, Tool, ToolContext, ToolFailure, load_domain, tool
    from envgym.tools.env import FrozenState, ToolEnv, execute_calls
    from envgym.tools.store import SqliteState

# first use imports each name's module: the argument helpers (every tool-using family's) load neither the tool
# env nor the conversation env and its simulated users
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "envgym.tools.args": ("ArgumentsError", "NoArgs", "args_model_of", "decode_arguments", "function_schema",
                          "parse_arguments"),
    "envgym.tools.conversation": ("ConversationToolEnv",),
    "envgym.tools.domain": ("Domain", "PolicyViolation", "Tool", "ToolContext", "ToolFailure", "load_domain", "tool"),
    "envgym.tools.env": ("FrozenState", "ToolEnv", "execute_calls"),
    "envgym.tools.store": ("SqliteState",),
})

__all__ = [
    "ArgumentsError",
    "ConversationToolEnv",
    "Domain",
    "FrozenState",
    "NoArgs",
    "PolicyViolation",
    "SqliteState",
    "Tool",
    "ToolContext",
    "ToolEnv",
    "ToolFailure",
    "args_model_of",
    "decode_arguments",
    "execute_calls",
    "function_schema",
    "load_domain",
    "parse_arguments",
    "store",
    "tool",
]
