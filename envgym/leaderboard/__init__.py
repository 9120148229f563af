"""The leaderboard: evaluation runs' result records aggregated per suite and agent, rendered as JSON,
Markdown and a static HTML page (``envgym leaderboard build RUN_DIR... --out DIR``).

Four modules, each depending only on those before it (no import cycle; ``tests/test_layers.py`` checks):

- :mod:`envgym.leaderboard.stats` — Wilson intervals, pass@k and pass^k: pure functions on counts
- :mod:`envgym.leaderboard.models` — :class:`Leaderboard` and :class:`Entry`, the data (``leaderboard.json``)
- :mod:`envgym.leaderboard.render` — Markdown, HTML and SVG from a :class:`Leaderboard`; :func:`write_leaderboard`
- :mod:`envgym.leaderboard.build` — reading run directories and aggregating them; every definition

    from envgym.leaderboard import build_leaderboard, write_leaderboard
    write_leaderboard(build_leaderboard([Path("runs/a"), Path("runs/b")]), "site/")
"""

from __future__ import annotations

from envgym.leaderboard.build import RECORDS_FILE, RUN_FILE, build_leaderboard, load_run
from envgym.leaderboard.models import Entry, Leaderboard
from envgym.leaderboard.render import render_html, render_markdown, write_leaderboard
from envgym.leaderboard.stats import pass_at_k, pass_hat_k, wilson_interval

__all__ = [
    "RECORDS_FILE",
    "RUN_FILE",
    "Entry",
    "Leaderboard",
    "build_leaderboard",
    "load_run",
    "pass_at_k",
    "pass_hat_k",
    "render_html",
    "render_markdown",
    "wilson_interval",
    "write_leaderboard",
]
