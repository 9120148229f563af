"""envgym's timed family: asynchronous, time-evolving worlds where thinking costs time.

A plug-in registered through the ``envgym.environments`` entry point. Each scenario is a module of
``envgym_timed.scenarios`` exporting ``SCENARIO``; its tasks are the bundled suite ``timed-<scenario>``,
in pairs of ``sync`` and ``async`` variants of the same goals. Seeded task generators
(``envgym_timed.authoring.*_gen``) make tasks by the thousand: ``timed-backoffice-gen@0:10000`` is a suite.
"""

from __future__ import annotations

__all__ = ["BACKOFFICE_TEMPLATES", "KITCHEN_TEMPLATES", "SCENARIOS", "register_all"]

SCENARIOS = {
    "assistant": "A personal assistant whose inbox, messages and calendar change during the day.",
    "backoffice": "Independent errands served by slow tools; finishing early needs interleaving.",
    "kitchen": "A planning world with delayed effects: cooking takes time, food burns if left.",
}
BACKOFFICE_TEMPLATES = {
    "cheapest-order": "train", "most-stock": "train", "credit-batch": "train", "report-digest": "train",
    "approval-order": "train",
    "budget-order": "test", "fewest-sufficient": "test", "threshold-route": "test", "gated-credit": "test",
}
"""``timed-backoffice-gen``'s template families and the split of each (:mod:`envgym_timed.authoring.backoffice_gen`)."""

KITCHEN_TEMPLATES = {
    "pasta": "train", "roast": "train", "breakfast": "train", "stir-fry": "train", "bakery": "train",
    "curry": "test", "soup": "test", "grill": "test", "dessert": "test",
}
"""``timed-kitchen-gen``'s template families (cuisines) and the split of each
(:mod:`envgym_timed.authoring.kitchen_gen`)."""


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register, register_generator

    for scenario, description in SCENARIOS.items():
        register(f"timed/{scenario}-v1", "envgym_timed.env:TimedEnv", kwargs={"scenario": scenario},
                 suites=(f"timed-{scenario}",), max_episode_steps=60, description=description)
    register_generator("timed-backoffice-gen", "envgym_timed.authoring.backoffice_gen:generate", family="timed",
                       env_id="timed/backoffice-v1", levels=(1, 2, 3), templates=BACKOFFICE_TEMPLATES,
                       description="Seeded back-office errands behind slow lookups, gated on scheduled approvals, "
                                   "with a deadline.")
    register_generator("timed-kitchen-gen", "envgym_timed.authoring.kitchen_gen:generate", family="timed",
                       env_id="timed/kitchen-v1", levels=(1, 2, 3), templates=KITCHEN_TEMPLATES,
                       description="Seeded menus whose cooking jobs take time and burn if left, with a deadline "
                                   "and decoy jobs.")
