"""acme_stove: a turn-based kitchen engine behind envgym's kernel base for time-evolving envs.

Registered through envgym's public API only: ``envgym.register`` (the env ``acme/stove-v1``) and
``envgym.register_suite`` (the suite ``acme-stove``, JSONL task files shipped in this package). The engine
(:mod:`acme_stove.engine`) knows nothing of envgym; :mod:`acme_stove.env` puts it behind
:class:`envgym.timed.TimedWorldEnv` on a step clock.
"""

from __future__ import annotations

from pathlib import Path


def register_all() -> None:
    import envgym  # inside the hook: the hook may run while ``import envgym`` is in progress

    envgym.register("acme/stove-v1", "acme_stove.env:StoveEnv", suites=("acme-stove",), max_episode_steps=30,
                    description="A turn-based kitchen on a step clock: cooking takes steps and pauses off the burner.")
    envgym.register_suite("acme-stove", Path(__file__).parent / "tasks", description="acme's stove tasks")
