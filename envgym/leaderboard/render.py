"""Rendering a :class:`~envgym.leaderboard.models.Leaderboard` as Markdown and as static HTML pages.

Both renderings hold the same content, in the same order:

1. **Overview**: a matrix of rows (agent, or agent under one config) by suites, each cell the success
   rate (mean score beside it), and a macro average over the row's suites with its 95% interval (how it
   is computed is written under the matrix: :func:`~envgym.leaderboard.stats.macro_interval`) and how many
   of the suites it covers.
2. **Runs**: the metadata block, one row per run: envgym version, date, host, agent and its settings,
   model, config hash, split, seed, k, limit, and each suite with the content hash of its tasks.
3. Per suite: a chart of success with Wilson 95% whiskers and one of success against mean tokens (or
   cost, when any row has a cost; none when no row used either), the main table (success, interval,
   mean score, episodes, infra errors, tasks, means, cost), and pass@k / pass^k in a table of their
   own when k > 1 (so ``--runs 5`` stays inside a 1,400 px window), and for timed suites the
   virtual-time efficiency, one table per unit (seconds and steps never share a column); for generated
   suites, success rate per difficulty level per agent (a line chart and a table, with the mean
   reference-solution length per level: :mod:`envgym.leaderboard.levels`).
4. **Training**: reward curves (mean reward per step) of ``envgym train`` runs, when given.

The per-task view is a second page, ``tasks.html`` (in Markdown a section): per suite, tasks by rows,
whether each row solved it (successes / episodes, mean score) with links to the trajectory texts.
:func:`render_trajectory` renders one trajectory as that text.

HTML: ``leaderboard/envgym_leaderboard/template.html`` (package ``envgym_leaderboard``) filled per page. The pages are
self-contained (inline CSS and SVG charts drawn here by hand; no scripts, fonts, images or links that
would touch the network; links are relative) and every piece of text from the data goes through
:func:`html.escape`. Every rendering is deterministic for a given model. :func:`write_leaderboard` writes
``leaderboard.json``, ``leaderboard.md``, ``index.html`` and ``tasks.html``.
"""

from __future__ import annotations

import html
import json
import string
from importlib.resources import files
from pathlib import Path
from typing import Any

from envgym.leaderboard.levels import LEVELS_NOTE, level_table, render_levels_svg
from envgym.leaderboard.models import Efficiency, Entry, Leaderboard, RunInfo, TrainCurve
from envgym.record import ResultRecord
from envgym.trajectory import Trajectory

TEMPLATE = "template.html"
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
"""Bar colours (Tableau 10), one per row label, the same for a label in every suite."""

MACRO_NOTE = ("Macro average: the unweighted mean of a row's per-suite success rates, over the suites it "
              "has graded episodes in. Its 95% interval treats suites as independent: each suite's Wilson "
              "interval gives a normal error (half its width / 1.96), the mean's error is the root sum of "
              "squares divided by the number of suites, and the interval is the mean ± 1.96 errors, "
              "clipped to [0, 1].")
NOTE = ("Success rate is over graded episodes, with a Wilson 95% interval; infra errors are counted apart "
        "and excluded from every rate and mean. Mean score is the mean verdict score (partial credit). "
        "pass@k is the chance that at least one of k attempts succeeds, pass^k that all k do (unbiased "
        "estimators, averaged over tasks). Runs of one agent under different configurations are separate rows.")

# Chart geometry in SVG user units.
_WIDTH, _LEFT, _RIGHT, _TOP, _ROW, _BOTTOM = 760, 190, 64, 12, 30, 44
_SW, _SH, _SL, _SB, _ST, _SR = 480, 260, 56, 48, 14, 20  # scatter / curve: width, height, margins
_OBS_CAP = 4000  # characters of one observation in a trajectory text


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def _short(digest: str | None) -> str:
    return "—" if not digest else digest.removeprefix("sha256:")[:8]


SHOWN_KS = 8
"""At most this many k columns each for pass@k and pass^k; ``leaderboard.json`` holds every k."""


def _ks(entries: tuple[Entry, ...]) -> list[int]:
    """The k columns of a suite's pass@k / pass^k table: every k some entry reports, or, past
    :data:`SHOWN_KS` of them (``--runs 20``), k = 1, 2, 3, 5, 10, 20, 50, ... and the largest."""
    ks = sorted({k for entry in entries for k in entry.pass_at_k})
    if len(ks) <= SHOWN_KS:
        return ks
    wanted = {1, 2, 3, 5} | {m * 10**e for e in range(1, 6) for m in (1, 2, 5)}
    shown = [k for k in ks[:-1] if k in wanted][: SHOWN_KS - 1]
    return [*shown, ks[-1]]


Table = tuple[list[tuple[str, bool]], list[list[str]]]
"""Headers as ``(title, numeric)`` and rows of plain-text cells, shared by Markdown and HTML."""


def _table(entries: tuple[Entry, ...]) -> Table:
    headers = [("#", True), ("Agent", False), ("Model", False), ("Success", True), ("95% CI", True),
               ("Mean score", True), ("Episodes", True), ("Infra errors", True), ("Tasks", True),
               ("Mean steps", True), ("Mean tokens", True), ("Mean wall (s)", True), ("Cost (USD)", True)]
    rows = []
    for rank, e in enumerate(entries, start=1):
        rows.append([str(rank), e.name, e.model or "—", _pct(e.success_rate) if e.episodes else "—",
                     f"{100 * e.ci_low:.1f}–{100 * e.ci_high:.1f}", _num(e.mean_score, 3),
                     str(e.episodes), str(e.infra_errors), str(e.n_tasks), _num(e.mean_steps),
                     _num(e.mean_tokens, 0), _num(e.mean_wall_s), f"{e.cost_usd:.4f}"])
    return headers, rows


def _pass_table(entries: tuple[Entry, ...]) -> Table | None:
    ks = _ks(entries)
    if not ks:
        return None
    headers = [("Agent", False)] + [(f"pass@{k}", True) for k in ks] + [(f"pass^{k}", True) for k in ks]
    rows = [[e.name] + [_pct(e.pass_at_k.get(k)) for k in ks] + [_pct(e.pass_hat_k.get(k)) for k in ks]
            for e in entries]
    return headers, rows


UNIT_WORDS = {"s": "s", "step": "steps"}
"""How a timeline unit is written in a header (an unknown one as it is)."""


def _efficiency_tables(entries: tuple[Entry, ...]) -> list[tuple[str, Table]]:
    """Virtual-time efficiency of a timed suite's agents, one table per unit (none for other suites).

    Rows in seconds and rows in steps never share a table, so no column mixes them. An entry whose
    efficiency says ``mixed`` (a ``leaderboard.json`` built before rows were split by unit averaged
    seconds with steps) shows no numbers.
    """
    by_unit: dict[str, list[tuple[str, Efficiency]]] = {}
    for e in entries:
        if e.efficiency is not None:
            by_unit.setdefault(e.efficiency.unit, []).append((e.name, e.efficiency))
    tables = []
    for unit, timed in sorted(by_unit.items()):
        word = "mixed units, not shown" if unit == "mixed" else UNIT_WORDS.get(unit, unit)
        headers = [("Agent", False), (f"Virtual time ({word})", True), (f"Thinking ({word})", True),
                   (f"Waiting ({word})", True), (f"Idle ({word})", True), (f"Opportunity idle ({word})", True),
                   (f"Time to goal ({word})", True), ("Goal reached", True)]
        rows = []
        for name, f in timed:
            means = (f.mean_virtual_time, f.mean_thinking, f.mean_waiting, f.mean_idle, f.mean_opportunity_idle,
                     f.mean_time_to_goal)
            rows.append([name, *("—" if unit == "mixed" else _num(m) for m in means),
                         f"{f.goal_reached}/{f.episodes}"])
        tables.append((word, (headers, rows)))
    return tables


EFFICIENCY_NOTE = ("Efficiency in virtual time: means over graded episodes; time to goal over the episodes that "
                   "reached their goal; opportunity idle is waiting while the world said another action was "
                   "available (— where it cannot say).")


def _efficiency_caption(word: str) -> str:
    said = {"s": "virtual seconds", "steps": "steps of the world's step clock"}.get(word, word)
    return f"{EFFICIENCY_NOTE} Times in {said}."


def _pass_caption(entries: tuple[Entry, ...]) -> str:
    every = sorted({k for entry in entries for k in entry.pass_at_k})
    shown = _ks(entries)
    if shown == every:
        return "pass@k and pass^k"
    return f"pass@k and pass^k for k = {', '.join(map(str, shown))} of 1..{every[-1]} (every k in leaderboard.json)"


WIDE_OVERVIEW = 6
"""Above this many suites the overview is transposed (suites down the side, agents across), so it fits."""


def _overview_table(lb: Leaderboard) -> Table:
    """Agents x suites (success, mean score in brackets), then macro average, its interval and coverage;
    with more than :data:`WIDE_OVERVIEW` suites, suites x agents with those three as the last rows."""
    suites = list(lb.suites)

    def cell(row: Any, suite: str) -> str:
        rate = row.success.get(suite)
        return "—" if rate is None else f"{_pct(rate)} ({_num(row.mean_score.get(suite), 2)})"

    def summary(row: Any) -> list[str]:
        interval = "—" if row.macro_low is None else f"{100 * row.macro_low:.1f}–{100 * (row.macro_high or 0):.1f}"
        return [_pct(row.macro), interval, f"{len(row.success)}/{len(suites)}"]

    names = ["Macro avg", "95% CI", "Suites"]
    if len(suites) > WIDE_OVERVIEW:
        headers = [("Suite", False)] + [(row.label, True) for row in lb.overview]
        rows = [[suite] + [cell(row, suite) for row in lb.overview] for suite in suites]
        totals = [summary(row) for row in lb.overview]
        rows += [[name] + [t[i] for t in totals] for i, name in enumerate(names)]
        return headers, rows
    headers = [("Agent", False)] + [(s, True) for s in suites] + [(name, True) for name in names]
    return headers, [[row.label] + [cell(row, s) for s in suites] + summary(row) for row in lb.overview]


def _settings(agent: dict[str, Any]) -> str:
    """The agent's settings as ``key=value`` pairs (its name and model have their own columns)."""
    return ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                     for k, v in sorted(agent.items()) if k not in ("model",)) or "—"


def _runs_table(infos: dict[str, RunInfo]) -> Table:
    headers = [("Run", False), ("Agent", False), ("Settings", False), ("Model", False), ("Config", False),
               ("envgym", False), ("Date (UTC)", False), ("Host", False), ("Split", False), ("Seed", True),
               ("k", True), ("Suites (task-set hash)", False)]
    rows = []
    for run_id, info in infos.items():
        suites = ", ".join(f"{s} ({_short(info.task_sets.get(s))})" for s in (info.suites or tuple(info.task_sets)))
        limit = f" (first {info.limit})" if info.limit else ""
        steps = f", max {info.max_steps} steps" if info.max_steps else ""
        rows.append([run_id, info.agent_id or "—", _settings(info.agent), info.model or "—",
                     _short(info.config_hash), info.envgym_version or "—",
                     (info.created_at or "—").replace("T", " ").removesuffix("+00:00"), info.host or "—",
                     info.split or "—", "—" if info.seed is None else str(info.seed),
                     "—" if info.k is None else str(info.k), (suites or "—") + limit + steps])
    return headers, rows


def _task_table(entries: tuple[Entry, ...]) -> tuple[list[tuple[str, bool]], list[list[tuple[str, list[str]]]]]:
    """Per suite: tasks by rows, a column per agent; each cell its text and its trajectory links."""
    names = [e.name for e in entries]
    tasks: dict[tuple[str, str], dict[str, Any]] = {}
    for e in entries:
        for t in e.tasks:
            tasks.setdefault((t.task_id, t.task_hash), {})[e.name] = t
    headers = [("Task", False)] + [(name, False) for name in names]
    rows = []
    for (task_id, _), by_agent in sorted(tasks.items()):
        row: list[tuple[str, list[str]]] = [(task_id, [])]
        for name in names:
            t = by_agent.get(name)
            if t is None:
                row.append(("—", []))
                continue
            mark = "solved" if t.successes == t.episodes and t.episodes else "partly" if t.successes else "not solved"
            text = f"{mark} {t.successes}/{t.episodes}, score {_num(t.mean_score, 2)}"
            text += f", {t.infra_errors} infra" if t.infra_errors else ""
            row.append((text, list(t.trajectories)))
        rows.append(row)
    return headers, rows


def _md(headers: list[tuple[str, bool]], rows: list[list[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(cell(title) for title, _ in headers) + " |",
             "|" + "|".join("---:" if numeric else "---" for _, numeric in headers) + "|"]
    return lines + ["| " + " | ".join(cell(text) for text in row) + " |" for row in rows] + [""]


def render_markdown(lb: Leaderboard) -> str:
    """The leaderboard as Markdown: overview, runs, a table (and a pass@k table) per suite, per-task results."""
    def text(t: str) -> str:
        return t.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    lines = ["# envgym leaderboard", "", f"Generated {lb.generated_at} from {len(lb.runs)} run(s). {NOTE}", ""]
    lines += [f"> **Warning:** {text(warning)}" for warning in lb.warnings] + ([""] if lb.warnings else [])
    if not lb.suites:
        lines += ["No records.", ""]
    else:
        lines += ["## Overview", "", *_md(*_overview_table(lb)), MACRO_NOTE, ""]
    if lb.run_info:
        lines += ["## Runs", "", *_md(*_runs_table(lb.run_info))]
    for suite, entries in lb.suites.items():
        lines += [f"## {text(suite)}", "", *_md(*_table(entries))]
        passes = _pass_table(entries)
        if passes:
            lines += [_pass_caption(entries) + ":", "", *_md(*passes)]
        for word, efficiency in _efficiency_tables(entries):
            lines += [_efficiency_caption(word), "", *_md(*efficiency)]
        levels = level_table(entries)
        if levels:
            lines += [LEVELS_NOTE, "", *_md(*levels)]
    if lb.training:
        lines += ["## Training", ""]
        lines += [f"- {text(c.label)}: {len(c.steps)} step(s), mean reward {c.reward_mean[0]:.3f} → "
                  f"{c.reward_mean[-1]:.3f}" if c.steps else f"- {text(c.label)}: no steps" for c in lb.training]
        lines.append("")
    if lb.suites:
        lines += ["## Per task", ""]
        for suite, entries in lb.suites.items():
            headers, rows = _task_table(entries)
            lines += [f"### {text(suite)}", "", *_md(headers, [
                [cell + "".join(f" [r{i}]({link})" for i, link in enumerate(links)) for cell, links in row]
                for row in rows])]
    return "\n".join(lines)


def render_svg(suite: str, entries: tuple[Entry, ...], colours: dict[str, str]) -> str:
    """A horizontal bar chart: success rate per agent, whiskers from ``ci_low`` to ``ci_high``."""
    esc = html.escape
    plot = _WIDTH - _LEFT - _RIGHT
    height = _TOP + _ROW * max(1, len(entries)) + _BOTTOM

    def x(rate: float) -> float:
        return round(_LEFT + plot * rate, 2)

    parts = [f'<svg class="chart bars" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" '
             f'width="{_WIDTH}" height="{height}" role="img" '
             f'aria-label="{esc(f"Success rate per agent on {suite}")}">',
             f"<title>{esc(f'Success rate per agent on {suite}, with Wilson 95% intervals')}</title>"]
    axis_y = _TOP + _ROW * max(1, len(entries))
    for tick in range(0, 101, 20):
        tx = x(tick / 100)
        parts.append(f'<line class="grid" x1="{tx}" y1="{_TOP}" x2="{tx}" y2="{axis_y}"/>'
                     f'<text class="tick" x="{tx}" y="{axis_y + 16}" text-anchor="middle">{tick}%</text>')
    parts.append(f'<text class="axis-title" x="{x(0.5)}" y="{axis_y + 36}" text-anchor="middle">'
                 "success rate (bar) and Wilson 95% interval (whisker)</text>")
    for i, e in enumerate(entries):
        top = _TOP + _ROW * i
        cy = top + _ROW / 2
        label = e.name if len(e.name) <= 26 else e.name[:25] + "…"
        lo, hi = x(e.ci_low), x(e.ci_high)
        tip = (f"{e.name}: {_pct(e.success_rate)} ({e.successes}/{e.episodes}), 95% CI "
               f"{_pct(e.ci_low)}–{_pct(e.ci_high)}, {e.infra_errors} infra error(s)")
        parts.append(
            f'<g class="bar-group" data-agent="{esc(e.name)}"><title>{esc(tip)}</title>'
            f'<text class="label" x="{_LEFT - 8}" y="{cy + 4}" text-anchor="end">{esc(label)}</text>'
            f'<rect class="bar" x="{_LEFT}" y="{top + 6}" width="{x(e.success_rate) - _LEFT}" '
            f'height="{_ROW - 12}" fill="{colours[e.name]}"/>'
            f'<line class="ci" x1="{lo}" y1="{cy}" x2="{hi}" y2="{cy}"/>'
            f'<line class="ci" x1="{lo}" y1="{cy - 5}" x2="{lo}" y2="{cy + 5}"/>'
            f'<line class="ci" x1="{hi}" y1="{cy - 5}" x2="{hi}" y2="{cy + 5}"/>'
            f'<text class="value" x="{hi + 6}" y="{cy + 4}">{esc(_pct(e.success_rate))}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def render_scatter(suite: str, entries: tuple[Entry, ...], colours: dict[str, str]) -> str:
    """Success (with Wilson whiskers) against mean tokens per episode, or cost when any row has one."""
    esc = html.escape
    by_cost = any(e.cost_usd > 0 for e in entries)
    what = "cost (USD)" if by_cost else "mean tokens per episode"
    points = [(e, e.cost_usd if by_cost else (e.mean_tokens or 0.0)) for e in entries if e.episodes]
    top = max((v for _, v in points), default=0.0) or 1.0
    pw, ph = _SW - _SL - _SR, _SH - _ST - _SB

    def x(v: float) -> float:
        return round(_SL + pw * v / top, 2)

    def y(rate: float) -> float:
        return round(_ST + ph * (1 - rate), 2)

    parts = [f'<svg class="chart scatter" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_SW} {_SH}" '
             f'width="{_SW}" height="{_SH}" role="img" aria-label="{esc(f"Success against {what} on {suite}")}">',
             f"<title>{esc(f'Success rate against {what} on {suite}')}</title>"]
    for tick in range(0, 101, 25):
        ty = y(tick / 100)
        parts.append(f'<line class="grid" x1="{_SL}" y1="{ty}" x2="{_SW - _SR}" y2="{ty}"/>'
                     f'<text class="tick" x="{_SL - 6}" y="{ty + 4}" text-anchor="end">{tick}%</text>')
    for i in range(5):
        v = top * i / 4
        tick = f"${v:,.2f}" if by_cost else f"{v:,.0f}" if top >= 10 else f"{v:.2g}"
        parts.append(f'<text class="tick" x="{x(v)}" y="{_SH - _SB + 16}" text-anchor="middle">{esc(tick)}</text>')
    parts.append(f'<text class="axis-title" x="{_SL + pw / 2}" y="{_SH - 8}" text-anchor="middle">'
                 f'{esc(what)}; y: success rate, whisker: Wilson 95%</text>')
    for e, v in points:
        cx = x(v)
        tip = f"{e.name}: {_pct(e.success_rate)} at {v:,.4g} {what}"
        parts.append(f'<g class="point" data-agent="{esc(e.name)}"><title>{esc(tip)}</title>'
                     f'<line class="ci" x1="{cx}" y1="{y(e.ci_low)}" x2="{cx}" y2="{y(e.ci_high)}"/>'
                     f'<circle cx="{cx}" cy="{y(e.success_rate)}" r="5" fill="{colours[e.name]}"/>'
                     f'<text class="label" x="{cx - 8 if cx > _SL + pw / 2 else cx + 8}" y="{y(e.success_rate) - 7}" '
                     f'text-anchor="{"end" if cx > _SL + pw / 2 else "start"}">{esc(e.name[:18])}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _scatter_figure(suite: str, entries: tuple[Entry, ...], colours: dict[str, str]) -> str:
    """The cost chart, or a line saying why there is none (no row used tokens or money: scripted agents)."""
    if not any(e.cost_usd > 0 or (e.mean_tokens or 0) > 0 for e in entries if e.episodes):
        return '<p class="meta no-cost">No tokens or cost recorded: no success-against-cost chart.</p>'
    return f"<figure>{render_scatter(suite, entries, colours)}</figure>"


def render_curves(curves: tuple[TrainCurve, ...]) -> str:
    """Mean reward per training step, one line per ``envgym train`` run."""
    esc = html.escape
    width = 2 * _SW
    pw, ph = width - _SL - _SR - 160, _SH - _ST - _SB
    last = max((c.steps[-1] for c in curves if c.steps), default=1) or 1
    values = [v for c in curves for v in c.reward_mean]
    low, high = min(values, default=0.0), max(values, default=1.0)
    low, high = min(low, 0.0), max(high, 1.0) if high <= 1.0 else high

    def x(step: float) -> float:
        return round(_SL + pw * step / last, 2)

    def y(v: float) -> float:
        return round(_ST + ph * (1 - (v - low) / ((high - low) or 1.0)), 2)

    parts = [f'<svg class="chart curves" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {_SH}" '
             f'width="{width}" height="{_SH}" role="img" aria-label="Mean reward per training step">',
             "<title>Mean reward per training step</title>"]
    for i in range(5):
        v = low + (high - low) * i / 4
        parts.append(f'<line class="grid" x1="{_SL}" y1="{y(v)}" x2="{_SL + pw}" y2="{y(v)}"/>'
                     f'<text class="tick" x="{_SL - 6}" y="{y(v) + 4}" text-anchor="end">{v:.2f}</text>')
        step = last * i / 4
        parts.append(f'<text class="tick" x="{x(step)}" y="{_SH - _SB + 16}" text-anchor="middle">{step:.0f}</text>')
    parts.append(f'<text class="axis-title" x="{_SL + pw / 2}" y="{_SH - 8}" text-anchor="middle">'
                 "step (policy version); y: mean reward</text>")
    for i, c in enumerate(curves):
        colour = PALETTE[i % len(PALETTE)]
        pts = " ".join(f"{x(s)},{y(r)}" for s, r in zip(c.steps, c.reward_mean, strict=True))
        parts.append(f'<g class="curve" data-run="{esc(c.label)}"><title>{esc(c.label)}</title>'
                     f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/></g>'
                     f'<text class="label" x="{_SL + pw + 12}" y="{_ST + 14 + 18 * i}" fill="{colour}">'
                     f"{esc(c.label[:24])}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _html_table(table: Table, cls: str = "board") -> str:
    headers, rows = table
    head = "".join(f'<th scope="col"{" class=num" if numeric else ""}>{html.escape(title)}</th>'
                   for title, numeric in headers)
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if numeric else ""}>{html.escape(text)}</td>'
                         for (_, numeric), text in zip(headers, row, strict=True)) + "</tr>"
        for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _anchor(suite: str) -> str:
    return "suite-" + "".join(ch if ch.isalnum() else "-" for ch in suite)


def _page(title: str, body: str, lb: Leaderboard) -> str:
    template = string.Template(files("envgym_leaderboard").joinpath(TEMPLATE).read_text(encoding="utf-8"))
    return template.substitute(title=html.escape(title), generated_at=html.escape(lb.generated_at),
                               n_runs=len(lb.runs), body=body)


def _colours(lb: Leaderboard) -> dict[str, str]:
    names = sorted({e.name for entries in lb.suites.values() for e in entries})
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def render_html(lb: Leaderboard) -> str:
    """``index.html``: overview, runs, then a section per suite (charts and tables), then training."""
    esc = html.escape
    colours = _colours(lb)
    parts = [f'<p class="note">{esc(NOTE)} <a href="tasks.html">Per-task results and trajectories</a>.</p>']
    parts += [f'<p class="warning">{esc(warning)}</p>' for warning in lb.warnings]
    if lb.suites:
        nav = " · ".join(f'<a href="#{_anchor(s)}">{esc(s)}</a>' for s in lb.suites)
        parts.append(f'<section class="overview" id="overview"><h2>Overview</h2><p class="meta">Suites: {nav}. '
                     "Cells: success rate (mean score).</p>"
                     f'{_html_table(_overview_table(lb), "board matrix")}'
                     f'<p class="note">{esc(MACRO_NOTE)}</p></section>')
    else:
        parts.append('<p class="empty">No records.</p>')
    if lb.run_info:
        runs = _html_table(_runs_table(lb.run_info), "board runs")
        parts.append(f'<section class="runs" id="runs"><h2>Runs</h2>{runs}</section>')
    for suite, entries in lb.suites.items():
        passes = _pass_table(entries)
        sets = sorted({_short(e.task_set) for e in entries if e.task_set})
        parts.append(
            f'<section class="suite" id="{esc(_anchor(suite))}"><h2>{esc(suite)}</h2>'
            f'<p class="meta">{len(entries)} agent(s), {max((e.n_tasks for e in entries), default=0)} task(s), '
            f'task set {esc(", ".join(sets) or "—")} · <a href="tasks.html#{esc(_anchor(suite))}">per task</a></p>'
            f'<div class="figures"><figure>{render_svg(suite, entries, colours)}</figure>'
            f"{_scatter_figure(suite, entries, colours)}</div>{_html_table(_table(entries))}"
            + (f'<p class="meta">{esc(_pass_caption(entries))}</p>{_html_table(passes, "board passes")}'
               if passes else "")
            + "".join(f'<p class="meta">{esc(_efficiency_caption(word))}</p>{_html_table(table, "board efficiency")}'
                      for word, table in _efficiency_tables(entries))
            + _levels_html(suite, entries, colours)
            + "</section>")
    if lb.training:
        parts.append(f'<section class="training" id="training"><h2>Training</h2><p class="meta">Reward curves of '
                     f"{len(lb.training)} <code>envgym train</code> run(s).</p>"
                     f"<figure>{render_curves(lb.training)}</figure></section>")
    return _page("envgym leaderboard", "\n".join(parts), lb)


def _levels_html(suite: str, entries: tuple[Entry, ...], colours: dict[str, str]) -> str:
    table = level_table(entries)
    if table is None:
        return ""
    return (f'<div class="levels"><p class="meta">{html.escape(LEVELS_NOTE)}</p><div class="figures"><figure>'
            f'{render_levels_svg(suite, entries, colours)}</figure></div>{_html_table(table, "board levels")}</div>')


def render_tasks_html(lb: Leaderboard) -> str:
    """``tasks.html``: per suite, which tasks each row solved, with links to the trajectory texts."""
    esc = html.escape
    parts = ['<p class="note"><a href="index.html">Back to the leaderboard</a>. A cell: solved / partly / not '
             "solved, successes / graded episodes, mean score; r0, r1, … open each episode's trajectory.</p>"]
    for suite, entries in lb.suites.items():
        headers, rows = _task_table(entries)
        head = "".join(f'<th scope="col">{esc(title)}</th>' for title, _ in headers)
        body = "".join(
            "<tr>" + "".join(
                f'<td class="{cell.split(" ")[0] if i else "task"}">{esc(cell)}'
                + "".join(f' <a href="{esc(link)}">r{n}</a>' for n, link in enumerate(links)) + "</td>"
                for i, (cell, links) in enumerate(row)) + "</tr>"
            for row in rows)
        parts.append(f'<section class="tasks" id="{esc(_anchor(suite))}"><h2>{esc(suite)}</h2>'
                     f'<table class="board per-task"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
                     "</section>")
    return _page("envgym leaderboard: per task", "\n".join(parts), lb)


def render_trajectory(trajectory: Trajectory, record: ResultRecord) -> str:
    """One episode as plain text: what it was, how it was graded, then every step's action and observation."""
    def obs(o: Any) -> list[str]:
        out = []
        if o.text:
            body = o.text if len(o.text) <= _OBS_CAP else o.text[:_OBS_CAP] + f"… [{len(o.text) - _OBS_CAP} more chars]"
            out += ["  " + line for line in body.splitlines()]
        out += [f"  tool result {r.call_id}: " + " ".join(str(getattr(r, "content", "") or "").split())[:_OBS_CAP]
                + (f" (error: {r.error})" if getattr(r, "error", None) else "") for r in o.tool_results]
        if o.last_action_error:
            out.append(f"  last action error: {o.last_action_error}")
        return out

    verdict = trajectory.verdict
    lines = [f"task {record.task_id} ({record.task_hash})", f"suite {record.suite}, env {trajectory.env_id}, "
             f"split {record.split}, seed {trajectory.seed}",
             f"run {record.run_id}, episode r{record.run_index} (attempt {record.attempt}), agent {record.agent_id}"
             + (f", model {record.agent['model']}" if record.agent.get("model") else ""),
             f"outcome {trajectory.outcome.value}, score {trajectory.reward:.3f}, {len(trajectory.steps)} step(s), "
             f"{trajectory.usage.total_tokens} tokens, {trajectory.timing.wall_s:.2f} s"]
    if trajectory.error:
        lines.append(f"error ({trajectory.blame.value if trajectory.blame else '?'}): {trajectory.error}")
    if verdict is not None:
        lines.append(f"verdict: {'passed' if verdict.passed else 'not passed'}, score {verdict.score:.3f}")
        lines += [f"  {'✓' if c.passed else '✗'} {c.name} {c.score:.2f} (weight {c.weight:g})"
                  + (f": {c.detail}" if c.detail else "") for c in verdict.criteria]
    if trajectory.initial_observation is not None:
        lines += ["", "== initial observation", *obs(trajectory.initial_observation)]
    for step in trajectory.steps:
        lines += ["", f"== step {step.index} (reward {step.reward:g}, agent {step.agent_s:.2f} s, "
                  f"env {step.env_s:.2f} s)"]
        if step.action.text:
            lines += ["action text:", *("  " + line for line in step.action.text.splitlines())]
        lines += [f"call {c.name}({c.arguments})" for c in step.action.tool_calls]
        lines += ["observation:", *obs(step.observation)]
    return "\n".join(lines) + "\n"


def write_leaderboard(lb: Leaderboard, out_dir: str | Path) -> dict[str, Path]:
    """Write ``leaderboard.json``, ``leaderboard.md``, ``index.html`` and ``tasks.html`` into ``out_dir``.

    The folder is created. Returns the paths keyed ``"json"``, ``"markdown"``, ``"html"`` and ``"tasks"``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "leaderboard.json", "markdown": out / "leaderboard.md", "html": out / "index.html",
             "tasks": out / "tasks.html"}
    paths["json"].write_text(lb.model_dump_json(indent=2) + "\n", encoding="utf-8")
    paths["markdown"].write_text(render_markdown(lb), encoding="utf-8")
    paths["html"].write_text(render_html(lb), encoding="utf-8")
    paths["tasks"].write_text(render_tasks_html(lb), encoding="utf-8")
    return paths
