"""Difficulty on the leaderboard: solve rate per level of a generated suite, per agent, and the reference length.

A generated task's id names its level (``NAME.SPLIT.lLEVEL.sSEED``, :func:`envgym.generate.parse_task_id`), so
records read back from any run say which level each episode was at. :func:`level_results` groups one row's
records by level: distinct tasks, graded episodes, successes and the success rate with its Wilson 95%
interval (infra errors apart, as in every other figure), and the mean length of the tasks' reference
solutions (the actions the oracle plays). That length needs the task itself: it is made again from its id
by the generator installed where the leaderboard is built, and used only when the remade task has the hash
that ran (a generator changed since, or one not installed here, gives None rather than a wrong figure).

:func:`level_table` and :func:`render_levels_svg` draw it for a suite: a table (rows by agent, a column per
level, "rate (successes/episodes)", and a last row with the reference length per level) and a line chart of
solve rate against level, one line per agent in its colour on the page. Rows without generated tasks are
left out; a suite with none draws nothing.
"""

from __future__ import annotations

import functools
import html
from collections import defaultdict

from envgym.generate import generate, parse_task_id
from envgym.leaderboard.models import Entry, LevelResult
from envgym.leaderboard.stats import wilson_interval
from envgym.record import ResultRecord
from envgym.types import Outcome

LEVELS_NOTE = ("Generated suites: success rate per difficulty level (the level is in each task id), with "
               "successes / graded episodes; the last row is the mean length of the level's reference "
               "solutions (actions the oracle plays).")

_W, _H, _L, _R, _T, _B = 480, 260, 56, 170, 14, 48  # width, height, left/right/top/bottom margins


@functools.lru_cache(maxsize=65_536)
def reference_actions(task_id: str, task_hash: str) -> int | None:
    """The length of generated task ``task_id``'s reference solution, if the generator installed here makes
    the task that ran (same hash); else None."""
    parsed = parse_task_id(task_id)
    if parsed is None:
        return None
    name, split, level, seed = parsed
    try:
        task = generate(name, seed, level=level, split=split)
    except Exception:  # any generator failure (not installed, changed, broken): no figure, not a crashed build
        return None
    return len(task.solution or ()) if task.hash == task_hash else None


def level_results(records: list[ResultRecord]) -> tuple[LevelResult, ...]:
    """Per level, easiest first, the generated tasks among ``records`` (one row's latest records)."""
    by_level: dict[int, list[ResultRecord]] = defaultdict(list)
    for record in records:
        parsed = parse_task_id(record.task_id)
        if parsed is not None:
            by_level[parsed[2]].append(record)
    results = []
    for level in sorted(by_level):
        recs = by_level[level]
        graded = [r for r in recs if r.outcome is not Outcome.INFRA_ERROR]
        successes = sum(r.outcome is Outcome.SUCCESS for r in graded)
        low, high = wilson_interval(successes, len(graded))
        tasks = sorted({(r.task_id, r.task_hash) for r in recs})
        lengths = [n for n in (reference_actions(*t) for t in tasks) if n is not None]
        results.append(LevelResult(level=level, tasks=len(tasks), episodes=len(graded), successes=successes,
                                   success_rate=successes / len(graded) if graded else 0.0, ci_low=low, ci_high=high,
                                   reference_actions=sum(lengths) / len(lengths) if lengths else None))
    return tuple(results)


def _levels(entries: tuple[Entry, ...]) -> list[int]:
    return sorted({lv.level for e in entries for lv in e.levels})


def level_table(entries: tuple[Entry, ...]) -> tuple[list[tuple[str, bool]], list[list[str]]] | None:
    """Headers and rows of a suite's per-level table, or None when no row has generated tasks."""
    levels = _levels(entries)
    if not levels:
        return None
    headers = [("Agent", False)] + [(f"Level {level}", True) for level in levels]
    rows = []
    for e in entries:
        if not e.levels:
            continue
        of = {lv.level: lv for lv in e.levels}
        rows.append([e.name] + [f"{100 * of[level].success_rate:.1f}% ({of[level].successes}/{of[level].episodes})"
                                if level in of and of[level].episodes else "—" for level in levels])
    reference = []
    for level in levels:  # over every row's tasks of the level, each row's mean weighted by its tasks
        pairs = [(lv.reference_actions, lv.tasks) for e in entries for lv in e.levels
                 if lv.level == level and lv.reference_actions is not None]
        weight = sum(n for _, n in pairs)
        reference.append(f"{sum(a * n for a, n in pairs) / weight:.1f}" if weight else "—")
    rows.append(["reference solution (mean actions)", *reference])
    return headers, rows


def render_levels_svg(suite: str, entries: tuple[Entry, ...], colours: dict[str, str]) -> str:
    """Success rate against level, one line (and a dot per level, its tooltip the counts) per agent."""
    esc = html.escape
    levels = _levels(entries)
    pw, ph = _W - _L - _R, _H - _T - _B

    def x(level: int) -> float:
        return round(_L + pw * (levels.index(level) / (len(levels) - 1) if len(levels) > 1 else 0.5), 2)

    def y(rate: float) -> float:
        return round(_T + ph * (1 - rate), 2)

    parts = [f'<svg class="chart levels" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" '
             f'height="{_H}" role="img" aria-label="{esc(f"Success rate per difficulty level on {suite}")}">',
             f"<title>{esc(f'Success rate per difficulty level on {suite}')}</title>"]
    for tick in range(0, 101, 25):
        parts.append(f'<line class="grid" x1="{_L}" y1="{y(tick / 100)}" x2="{_L + pw}" y2="{y(tick / 100)}"/>'
                     f'<text class="tick" x="{_L - 6}" y="{y(tick / 100) + 4}" text-anchor="end">{tick}%</text>')
    for level in levels:
        parts.append(f'<text class="tick" x="{x(level)}" y="{_H - _B + 16}" text-anchor="middle">{level}</text>')
    parts.append(f'<text class="axis-title" x="{_L + pw / 2}" y="{_H - 8}" text-anchor="middle">'
                 "difficulty level; y: success rate</text>")
    shown = [e for e in entries if e.levels]
    for i, e in enumerate(shown):
        colour = colours.get(e.name, "#4e79a7")
        graded = [lv for lv in e.levels if lv.episodes]
        points = " ".join(f"{x(lv.level)},{y(lv.success_rate)}" for lv in graded)
        tips = [f"{e.name}, level {lv.level}: {100 * lv.success_rate:.1f}% ({lv.successes}/{lv.episodes})"
                for lv in graded]
        dots = "".join(f'<circle cx="{x(lv.level)}" cy="{y(lv.success_rate)}" r="3.5" fill="{colour}">'
                       f"<title>{esc(tip)}</title></circle>" for lv, tip in zip(graded, tips, strict=True))
        parts.append(f'<g class="level-line" data-agent="{esc(e.name)}"><polyline points="{points}" fill="none" '
                     f'stroke="{colour}" stroke-width="2"/>{dots}</g>'
                     f'<text class="label" x="{_L + pw + 12}" y="{_T + 14 + 18 * i}" fill="{colour}">'
                     f"{esc(e.name[:24])}</text>")
    parts.append("</svg>")
    return "".join(parts)
