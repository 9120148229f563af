"""Tools and domains: the pieces a tool-use domain is written in (any package may write one).

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

    DOMAIN = Domain(name="shop", schema_sql=SCHEMA, tools=(refund_order, ...), policy=POLICY)

Tools see earlier calls of the episode through ``ctx.calls`` (e.g. "identity verified before any write").
:func:`load_domain` resolves what :class:`~envgym.tools.ToolEnv` is given: a :class:`Domain`, or a
reference ``"package.module:ATTR"`` (``"package.module"`` alone means its ``DOMAIN``), so a registration's
keyword arguments stay plain strings. ``ignore_fields`` (``table.column``) are left out of every state
snapshot the verifiers see (free text a judge, not a diff, should grade); an entry naming no column of the
schema is a :class:`~envgym.errors.VerifierError` when the episode is graded.
"""

from __future__ import annotations

import functools
import importlib
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from envgym.errors import ActionRefused, SpecError
from envgym.tools.args import args_model_of, function_schema
from envgym.verify.context import CallRecord

__all__ = ["Domain", "PolicyViolation", "Tool", "ToolContext", "ToolFailure", "load_domain", "tool"]

Kind = Literal["read", "write"]


class ToolFailure(ActionRefused):
    """The call was understood but cannot be done (not found, wrong state). Shown to the agent."""


class PolicyViolation(ToolFailure):
    """The domain's written policy forbids this call. Shown to the agent as a policy error."""


@dataclass
class ToolContext:
    """What a tool function gets: the episode's store (inside the call's transaction) and earlier calls."""

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
    """A typed function over the store; ``kind`` says whether the write-action verifier counts it."""

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
    """Unique among the domains a process serves: with the task hash it keys the store caches."""
    schema_sql: str
    """``CREATE TABLE`` statements; a task's ``initial_state`` fills these tables."""
    tools: tuple[Tool, ...]
    policy: str
    """The written policy, given to the agent in ``info["policy"]``."""
    ignore_fields: tuple[str, ...] = ()
    """``table.column`` fields left out of every state the verifiers see (see :mod:`envgym.verify.state`)."""
    on_disk: bool = False
    """Each episode's store is a file (its tools need one), not a copy in memory; slower to reset."""
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


def load_domain(domain: Domain | str) -> Domain:
    """``domain`` itself, or the :class:`Domain` a ``"package.module:ATTR"`` reference names (SpecError if none)."""
    if isinstance(domain, Domain):
        return domain
    module_name, _, attr = domain.partition(":")
    try:
        module = importlib.import_module(module_name)
    except (ModuleNotFoundError, ValueError) as exc:  # ValueError: an empty module name
        raise SpecError(f"unknown tool domain {domain!r}: name it as 'package.module:DOMAIN' "
                        f"({getattr(exc, 'name', None) or module_name!r} is not importable)") from exc
    found = getattr(module, attr or "DOMAIN", None)
    if not isinstance(found, Domain):
        raise SpecError(f"tool domain {domain!r}: {module_name}.{attr or 'DOMAIN'} is "
                        f"{type(found).__name__ if found is not None else 'missing'}, not an envgym.tools.Domain")
    return found
