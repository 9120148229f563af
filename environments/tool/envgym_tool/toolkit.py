"""Tools and domains: the pieces a tool-use domain is written in.

A :class:`Tool` is a typed function over the episode's SQLite store, declared ``read`` or ``write``, whose
arguments are a pydantic model (its JSON schema becomes the OpenAI function schema). A tool signals a
refusal the agent should see with :class:`ToolFailure` (not found, invalid state) or
:class:`PolicyViolation` (the domain's written policy forbids it); both become error observations and
leave the store untouched. A :class:`Domain` bundles the schema, the tools and the written policy::

    class Refund(BaseModel):
        order_id: str
        amount: float

    @tool("write", "Refund part of a delivered order.")
    def refund_order(ctx: ToolContext, args: Refund) -> dict: ...

Tools see earlier calls of the episode through ``ctx.calls`` (e.g. "identity verified before any write").
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from envgym.tooling import NoArgs, args_model_of, function_schema
from envgym.verify.context import CallRecord

__all__ = ["Domain", "NoArgs", "PolicyViolation", "Tool", "ToolContext", "ToolFailure", "tool"]

Kind = Literal["read", "write"]


class ToolFailure(Exception):
    """The call was understood but cannot be done (not found, wrong state). Shown to the agent."""


class PolicyViolation(ToolFailure):
    """The domain's written policy forbids this call. Shown to the agent as a policy error."""


@dataclass
class ToolContext:
    conn: sqlite3.Connection
    calls: Sequence[CallRecord] = ()

    def one(self, sql: str, *params: Any) -> dict[str, Any] | None:
        row = self.conn.execute(sql, params).fetchone()
        return dict(row) if row is not None else None

    def all(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute(sql, params).fetchall()]

    def called(self, name: str, **args: Any) -> bool:
        """Whether a successful earlier call of ``name`` had these exact argument values."""
        return any(c.name == name and c.ok and c.arguments is not None
                   and all(c.arguments.get(k) == v for k, v in args.items()) for c in self.calls)


@dataclass(frozen=True)
class Tool:
    name: str
    kind: Kind
    description: str
    args_model: type[BaseModel]
    fn: Callable[[ToolContext, Any], Any]

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        return function_schema(self.name, f"[{self.kind}] {self.description}", self.args_model)


def tool(kind: Kind, description: str) -> Callable[[Callable[[ToolContext, Any], Any]], Tool]:
    """Decorator: the function's second parameter's annotation is the arguments model."""

    def wrap(fn: Callable[[ToolContext, Any], Any]) -> Tool:
        return Tool(name=fn.__name__, kind=kind, description=description, args_model=args_model_of(fn), fn=fn)

    return wrap


@dataclass(frozen=True)
class Domain:
    """A tool-use domain: a SQLite schema, its tools and the policy the agent must follow."""

    name: str
    schema_sql: str
    tools: tuple[Tool, ...]
    policy: str
    ignore_fields: tuple[str, ...] = ()
    by_name: dict[str, Tool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        if len(names) != len(set(names)):
            raise ValueError(f"domain {self.name}: duplicate tool names")
        object.__setattr__(self, "by_name", {t.name: t for t in self.tools})

    @functools.cached_property
    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of every tool (computed once per domain)."""
        return [t.schema() for t in self.tools]
