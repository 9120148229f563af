"""envgym's timed family: asynchronous, time-evolving worlds where thinking costs time.

A plug-in registered through the ``envgym.environments`` entry point. Each scenario is a module of
``envgym_timed.scenarios`` exporting ``SCENARIO``; its tasks are the bundled suite ``timed-<scenario>``,
in pairs of ``sync`` and ``async`` variants of the same goals.
"""

from __future__ import annotations

__all__ = ["SCENARIOS", "register_all"]

SCENARIOS = {
    "assistant": "A personal assistant whose inbox, messages and calendar change during the day.",
    "backoffice": "Independent errands served by slow tools; finishing early needs interleaving.",
    "kitchen": "A planning world with delayed effects: cooking takes time, food burns if left.",
}


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register

    for scenario, description in SCENARIOS.items():
        register(f"timed/{scenario}-v1", "envgym_timed.env:TimedEnv", kwargs={"scenario": scenario},
                 suites=(f"timed-{scenario}",), max_episode_steps=60, description=description)
