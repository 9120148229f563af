"""acme_counter: named counters an agent increments with tools, graded by the package's own check.

Everything comes from envgym's public API: ``envgym.register`` (the env id), ``envgym.register_suite`` (the
suite ``acme-counter``, a folder of JSONL task files shipped in this package) and ``envgym.register_verifier``
(the verifier kind ``counter_delta``, which compares the counters before and after the episode).
"""

from __future__ import annotations

from pathlib import Path


def register_all() -> None:
    import envgym  # inside the hook: the hook may run while ``import envgym`` is in progress
    from acme_counter.verifier import CounterDeltaSpec, check_counter_delta

    envgym.register("acme/counter-v1", "acme_counter.env:CounterEnv", suites=("acme-counter",),
                    max_episode_steps=10, description="Named counters; graded on the change the agent made.")
    envgym.register_suite("acme-counter", Path(__file__).parent / "tasks", description="acme's counter tasks")
    envgym.register_verifier("counter_delta", CounterDeltaSpec, check_counter_delta)
