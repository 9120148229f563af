"""acme_kitchen: a gym-style, turn-based kitchen engine behind envgym's kernel base for time-evolving envs.

Registered through envgym's public API only (``envgym.plugin``): the env ``acme/kitchen-v1`` and the suite
``acme-kitchen`` (JSONL task files shipped in this package). The engine (:mod:`acme_kitchen.engine`) knows
nothing of envgym; :mod:`acme_kitchen.env` puts it behind the timed base on a step clock.
"""

from __future__ import annotations

from pathlib import Path


def register_all() -> None:
    from envgym.plugin import register, register_suite  # inside the hook: it may run while envgym imports

    register("acme/kitchen-v1", "acme_kitchen.env:KitchenEnv", suites=("acme-kitchen",), max_episode_steps=40,
             description="A gym-style turn-based kitchen on a step clock; the episode ends when the order is plated.")
    register_suite("acme-kitchen", Path(__file__).parent / "tasks", description="acme's kitchen orders")
