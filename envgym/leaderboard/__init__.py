"""The leaderboard: evaluation runs' result records aggregated per suite and agent, rendered as JSON,
Markdown and static HTML pages (``envgym leaderboard build RUN_DIR... --out DIR | --update DIR``).

Five modules, each depending only on those before it (no import cycle; ``tests/test_layers.py`` checks):

- :mod:`envgym.leaderboard.stats` — Wilson intervals, pass@k and pass^k: pure functions on counts
- :mod:`envgym.leaderboard.models` — :class:`Leaderboard` and :class:`Entry`, the data (``leaderboard.json``)
- :mod:`envgym.leaderboard.levels` — solve rate per difficulty level of generated suites (aggregation, table,
  chart)
- :mod:`envgym.leaderboard.render` — Markdown, HTML pages and SVG charts from a :class:`Leaderboard`, trajectory
  texts; :func:`write_leaderboard`
- :mod:`envgym.leaderboard.build` — reading run directories and aggregating them, merging into published
  data, :func:`publish`; every definition

    from envgym.leaderboard import build_leaderboard, publish, write_leaderboard
    write_leaderboard(build_leaderboard([Path("runs/a"), Path("runs/b")]), "site/")   # the four files
    publish([Path("runs/a")], "leaderboard/", update=True)   # + trajectory texts, merged by suite id
"""

from __future__ import annotations

from envgym.leaderboard.build import (
    METRICS_FILE,
    RECORDS_FILE,
    RUN_FILE,
    build_leaderboard,
    load_run,
    load_train_curve,
    merge_leaderboards,
    publish,
    write_trajectories,
)
from envgym.leaderboard.models import (
    Efficiency,
    Entry,
    Leaderboard,
    LevelResult,
    OverviewRow,
    RunInfo,
    TaskResult,
    TrainCurve,
)
from envgym.leaderboard.render import (
    render_html,
    render_markdown,
    render_tasks_html,
    render_trajectory,
    write_leaderboard,
)
from envgym.leaderboard.stats import macro_interval, pass_at_k, pass_hat_k, wilson_interval

__all__ = [
    "METRICS_FILE",
    "RECORDS_FILE",
    "RUN_FILE",
    "Efficiency",
    "Entry",
    "Leaderboard",
    "LevelResult",
    "OverviewRow",
    "RunInfo",
    "TaskResult",
    "TrainCurve",
    "build_leaderboard",
    "load_run",
    "load_train_curve",
    "macro_interval",
    "merge_leaderboards",
    "pass_at_k",
    "pass_hat_k",
    "publish",
    "render_html",
    "render_markdown",
    "render_tasks_html",
    "render_trajectory",
    "wilson_interval",
    "write_leaderboard",
    "write_trajectories",
]
