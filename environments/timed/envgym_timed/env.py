"""The timed environment: scenario worlds of JSON tables behind the kernel's time machinery.

``timed/<scenario>-vN`` is a :class:`~envgym.timed.env.TimedWorldEnv` (the kernel base, used here as a
third-party package would use it): the kernel runs thinking, the wait tools, slow tools and their
notifications, the accounting, the virtual-time budget and the timeline; this family supplies a
:class:`~envgym_timed.world.World` built from the task's ``initial_state`` (tables, scripted events,
latencies, the ``sync``/``async`` variant) and the scenario's tools and policy
(:mod:`envgym_timed.scenarios`). See :mod:`envgym.timed.env` for the episode, step by step.

Determinism: the same task, seed and actions (and thinking charges) give the same timeline;
:mod:`envgym_timed.replay` (the kernel's :mod:`envgym.timed.replay`) re-grades a recorded run.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

from envgym.plugin import Clock, SpecError, TamperAgent, TaskSpec
from envgym.plugin.timed import TimedObservation, TimedWorldEnv
from envgym_timed.tamper import TAMPER_AGENTS
from envgym_timed.toolkit import Scenario
from envgym_timed.world import World

__all__ = ["TimedEnv", "TimedObservation", "load_scenario"]


def load_scenario(name: str) -> Scenario:
    try:
        module = importlib.import_module(f"envgym_timed.scenarios.{name}")
    except ModuleNotFoundError as exc:
        raise SpecError(f"unknown timed scenario {name!r}") from exc
    return module.SCENARIO


class TimedEnv(TimedWorldEnv):
    """``timed/<scenario>-vN``: see the module docstring."""

    tamper_agents: ClassVar[tuple[type[TamperAgent], ...]] = TAMPER_AGENTS

    def __init__(self, scenario: str | Scenario, *, thinking: Any = None, realtime: bool = False,
                 speed: float = 1.0, clock: Clock | None = None, max_virtual_time: float | None = None,
                 virtual_time_factor: float | None = None) -> None:
        self.scenario = load_scenario(scenario) if isinstance(scenario, str) else scenario
        self.tools = self.scenario.tools
        super().__init__(thinking=thinking, realtime=realtime, speed=speed, clock=clock,
                         max_virtual_time=max_virtual_time, virtual_time_factor=virtual_time_factor)

    def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> World:
        state = task.initial_state
        return World(state, seed=seed, variant=str(state.get("variant", "async")),
                     opportunity=self.scenario.opportunity)

    def world_policy(self) -> str:
        return self.scenario.policy
