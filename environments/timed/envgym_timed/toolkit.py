"""Tools and scenarios: the pieces a timed world is written in.

A :class:`Tool` is a typed function over the episode's :class:`~envgym_timed.world.World`, declared
``read`` or ``write`` and ``slow`` or not, whose arguments are a pydantic model (its JSON schema becomes the
OpenAI function schema). In a task's ``async`` variant a slow tool returns a handle at once and its result
arrives later as a notification, after a latency drawn from the task's distribution for that tool; in the
``sync`` variant, and for tools that are not slow, the result comes back in the same step. A tool refuses
with :class:`ToolFailure` (shown to the agent, nothing changes). A :class:`Scenario` bundles the tools and
the written policy the agent is shown::

    class Quote(BaseModel):
        supplier: str
        item: str

    @tool("read", "Ask a supplier for a price quote (slow).", slow=True)
    def get_quote(world: World, args: Quote) -> dict: ...
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from envgym.tools.args import args_model_of, function_schema

if TYPE_CHECKING:
    from envgym_timed.world import World

Kind = Literal["read", "write", "control"]


class ToolFailure(Exception):
    """The call was understood but cannot be done (not found, wrong state). Shown to the agent."""


@dataclass(frozen=True)
class Tool:
    name: str
    kind: Kind
    description: str
    args_model: type[BaseModel]
    fn: Callable[[World, Any], Any]
    slow: bool = False

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        tag = f"{self.kind}, slow" if self.slow else self.kind
        return function_schema(self.name, f"[{tag}] {self.description}", self.args_model)


def tool(kind: Kind, description: str, *, slow: bool = False) -> Callable[[Callable[[World, Any], Any]], Tool]:
    """Decorator: the function's ``args`` parameter is annotated with the arguments model."""

    def wrap(fn: Callable[[World, Any], Any]) -> Tool:
        return Tool(name=fn.__name__, kind=kind, description=description, args_model=args_model_of(fn), fn=fn,
                    slow=slow)

    return wrap


@dataclass(frozen=True)
class Scenario:
    """A timed scenario family: its tools and the policy the agent is shown."""

    name: str
    description: str
    tools: tuple[Tool, ...]
    policy: str
    by_name: dict[str, Tool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        if len(names) != len(set(names)):
            raise ValueError(f"scenario {self.name}: duplicate tool names")
        object.__setattr__(self, "by_name", {t.name: t for t in self.tools})

    @functools.cached_property
    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools]
