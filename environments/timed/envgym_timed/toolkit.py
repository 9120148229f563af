"""Tools and scenarios: the pieces a timed world of this family is written in.

Tools are the kernel's (:mod:`envgym.timed.tools`, re-exported here as :class:`Tool`, :func:`tool`,
:class:`ToolFailure`): typed functions over the episode's :class:`~envgym_timed.world.World`, declared
``read`` or ``write``, ``slow`` (in a task's ``async`` variant the result arrives later as a notification)
or taking time (``duration``). A :class:`Scenario` bundles the tools, the written policy the agent is shown
and, optionally, ``opportunity(world)``: whether some useful action is available now (the kernel's
``opportunity_idle_s`` measure; None when the scenario cannot say)::

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
from typing import TYPE_CHECKING, Any

from envgym.plugin.timed import TimedTool as Tool
from envgym.plugin.timed import ToolFailure, tool

if TYPE_CHECKING:
    from envgym_timed.world import World

__all__ = ["Scenario", "Tool", "ToolFailure", "tool"]


@dataclass(frozen=True)
class Scenario:
    """A timed scenario family: its tools, the policy the agent is shown, and where it can say so, whether
    an action is available (for the opportunity-idle measure)."""

    name: str
    description: str
    tools: tuple[Tool, ...]
    policy: str
    opportunity: Callable[[World], bool | None] | None = None
    by_name: dict[str, Tool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        if len(names) != len(set(names)):
            raise ValueError(f"scenario {self.name}: duplicate tool names")
        object.__setattr__(self, "by_name", {t.name: t for t in self.tools})

    @functools.cached_property
    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools]
