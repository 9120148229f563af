"""acme_ledger: accounts an agent moves money between with tools; written against envgym 0.1.0.

0.1 had no named suites for plug-ins: the env serves the folder of task files shipped beside this module.
"""

from __future__ import annotations

from pathlib import Path

TASKS = Path(__file__).parent / "tasks"


def register_all() -> None:
    import envgym

    envgym.register("ledger/books-v1", "acme_ledger.env:LedgerEnv", suites=(str(TASKS),), max_episode_steps=8,
                    description="Accounts and transfers; the env grades itself.")
