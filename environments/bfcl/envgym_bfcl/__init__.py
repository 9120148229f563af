"""envgym's BFCL adapter: the Berkeley Function Calling Leaderboard as envgym suites (``envgym.environments`` plug-in).

One env id per included category (``bfcl/<category>-v1``, :class:`envgym_bfcl.env.BfclEnv`), one suite each
(``tasks/bfcl-<category>/``, written by ``python -m envgym_bfcl.build``), and the ``bfcl`` verifier kind
(:mod:`envgym_bfcl.verify`: BFCL's own checker). Data and checker come from the PyPI package ``bfcl-eval``,
installed by ``pip install 'envgym[bfcl]' && envgym bfcl setup`` (:mod:`envgym_bfcl.install`); without it the ids
are registered, and using one says exactly what to run.
"""

from __future__ import annotations

__all__ = ["CATEGORIES", "MULTI_TURN", "SINGLE_TURN", "register_all"]

SINGLE_TURN = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "live_simple",
               "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance")
"""Single-turn categories envgym includes: AST-checked against the possible answers, or relevance-checked."""
MULTI_TURN = ("multi_turn_base", "multi_turn_long_context")
"""Multi-turn categories envgym includes: calls executed on BFCL's API simulators, state and responses compared."""
CATEGORIES = SINGLE_TURN + MULTI_TURN


def register_all() -> None:
    from envgym.plugin import register, register_verifier

    # by reference: its checker is imported when a task is graded, not by every envgym command
    register_verifier("bfcl", "envgym_bfcl.verify:BfclSpec", "envgym_bfcl.verify:bfcl_check")
    for category in CATEGORIES:
        dashed = category.replace("_", "-")
        register(f"bfcl/{dashed}-v1", "envgym_bfcl.env:BfclEnv", kwargs={"category": category},
                 suites=(f"bfcl-{dashed}",), max_episode_steps=200 if category in MULTI_TURN else 5,
                 description=f"BFCL {category} (bfcl-eval), graded by BFCL's checker.")
