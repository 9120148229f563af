"""The leaderboard's data: :class:`Leaderboard` (entries per suite, best first) and its :class:`Entry` rows.

Frozen pydantic models, the contents of ``leaderboard.json``. Every field is defined in the docstring of
:mod:`envgym.leaderboard.build`, which fills them; :mod:`envgym.leaderboard.render` only reads them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from envgym.types import LEADERBOARD_SCHEMA_VERSION, FrozenModel


class Entry(FrozenModel):
    """One agent's aggregate on one suite. Every field is defined in :mod:`envgym.leaderboard.build`'s docstring."""

    agent_id: str
    model: str | None = None
    runs: tuple[str, ...]
    n_tasks: int
    episodes: int
    """Graded episodes: every latest record whose outcome is not ``infra_error``."""
    infra_errors: int
    successes: int
    success_rate: float
    ci_low: float
    ci_high: float
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    pass_hat_k: dict[int, float] = Field(default_factory=dict)
    mean_steps: float | None = None
    mean_tokens: float | None = None
    total_tokens: int = 0
    mean_wall_s: float | None = None
    cost_usd: float = 0.0


class Leaderboard(FrozenModel):
    """Entries per suite id, best first."""

    schema_version: Literal[1] = LEADERBOARD_SCHEMA_VERSION
    generated_at: str
    """ISO 8601 time (UTC) the leaderboard was built."""
    runs: tuple[str, ...] = ()
    """Every run id that was read, sorted."""
    suites: dict[str, tuple[Entry, ...]]
    warnings: tuple[str, ...] = ()
    """Why some suites were split into several tables (runs over different task sets)."""
