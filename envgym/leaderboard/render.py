"""Rendering a :class:`~envgym.leaderboard.models.Leaderboard` as Markdown and as a static HTML page.

Markdown: a heading and one table per suite. HTML: ``leaderboard/template.html`` (package
``envgym_leaderboard``) filled with one section per suite, each an inline SVG bar chart of success
rate with Wilson 95% whiskers per agent and the same table as the Markdown. The page is self-contained
(inline CSS, no scripts, fonts, images or links that would touch the network) and every piece of text
from the data goes through :func:`html.escape`. Both renderings are deterministic for a given model.
:func:`write_leaderboard` writes the three files (``leaderboard.json``, ``leaderboard.md``, ``index.html``).
"""

from __future__ import annotations

import html
import string
from importlib.resources import files
from pathlib import Path

from envgym.leaderboard.models import Entry, Leaderboard

TEMPLATE = "template.html"
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
"""Bar colours (Tableau 10), one per agent, the same for an agent in every suite."""

# Chart geometry in SVG user units.
_WIDTH, _LEFT, _RIGHT, _TOP, _ROW, _BOTTOM = 760, 190, 64, 12, 30, 44


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def _ks(entries: tuple[Entry, ...]) -> list[int]:
    """Every k that some entry reports: the pass@k / pass^k columns of a suite's table."""
    return sorted({k for entry in entries for k in entry.pass_at_k})


def _table(entries: tuple[Entry, ...]) -> tuple[list[tuple[str, bool]], list[list[str]]]:
    """Headers as ``(title, numeric)`` and rows of plain-text cells, shared by Markdown and HTML."""
    ks = _ks(entries)
    headers = [("#", True), ("Agent", False), ("Model", False), ("Success", True), ("95% CI", True)]
    headers += [(f"pass@{k}", True) for k in ks] + [(f"pass^{k}", True) for k in ks]
    headers += [("Episodes", True), ("Infra errors", True), ("Tasks", True), ("Mean steps", True),
                ("Mean tokens", True), ("Mean wall (s)", True), ("Cost (USD)", True)]
    rows = []
    for rank, e in enumerate(entries, start=1):
        row = [str(rank), e.agent_id, e.model or "—", _pct(e.success_rate) if e.episodes else "—",
               f"{100 * e.ci_low:.1f}–{100 * e.ci_high:.1f}"]
        row += [_pct(e.pass_at_k.get(k)) for k in ks] + [_pct(e.pass_hat_k.get(k)) for k in ks]
        row += [str(e.episodes), str(e.infra_errors), str(e.n_tasks), _num(e.mean_steps),
                _num(e.mean_tokens, 0), _num(e.mean_wall_s), f"{e.cost_usd:.4f}"]
        rows.append(row)
    return headers, rows


def render_markdown(lb: Leaderboard) -> str:
    """The leaderboard as Markdown: one table per suite."""
    def cell(text: str) -> str:
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    lines = ["# envgym leaderboard", "",
             f"Generated {lb.generated_at} from {len(lb.runs)} run(s). Success rate over graded episodes "
             "with a Wilson 95% interval; infra errors are counted apart and excluded.", ""]
    lines += [f"> **Warning:** {cell(warning)}" for warning in lb.warnings] + ([""] if lb.warnings else [])
    if not lb.suites:
        lines += ["No records.", ""]
    for suite, entries in lb.suites.items():
        headers, rows = _table(entries)
        lines += [f"## {cell(suite)}", "",
                  "| " + " | ".join(cell(title) for title, _ in headers) + " |",
                  "|" + "|".join("---:" if numeric else "---" for _, numeric in headers) + "|"]
        lines += ["| " + " | ".join(cell(text) for text in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def render_svg(suite: str, entries: tuple[Entry, ...], colours: dict[str, str]) -> str:
    """A horizontal bar chart: success rate per agent, whiskers from ``ci_low`` to ``ci_high``."""
    esc = html.escape
    plot = _WIDTH - _LEFT - _RIGHT
    height = _TOP + _ROW * max(1, len(entries)) + _BOTTOM

    def x(rate: float) -> float:
        return round(_LEFT + plot * rate, 2)

    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" '
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
        label = e.agent_id if len(e.agent_id) <= 26 else e.agent_id[:25] + "…"
        lo, hi = x(e.ci_low), x(e.ci_high)
        tip = (f"{e.agent_id}: {_pct(e.success_rate)} ({e.successes}/{e.episodes}), 95% CI "
               f"{_pct(e.ci_low)}–{_pct(e.ci_high)}, {e.infra_errors} infra error(s)")
        parts.append(
            f'<g class="bar-group" data-agent="{esc(e.agent_id)}"><title>{esc(tip)}</title>'
            f'<text class="label" x="{_LEFT - 8}" y="{cy + 4}" text-anchor="end">{esc(label)}</text>'
            f'<rect class="bar" x="{_LEFT}" y="{top + 6}" width="{x(e.success_rate) - _LEFT}" '
            f'height="{_ROW - 12}" fill="{colours[e.agent_id]}"/>'
            f'<line class="ci" x1="{lo}" y1="{cy}" x2="{hi}" y2="{cy}"/>'
            f'<line class="ci" x1="{lo}" y1="{cy - 5}" x2="{lo}" y2="{cy + 5}"/>'
            f'<line class="ci" x1="{hi}" y1="{cy - 5}" x2="{hi}" y2="{cy + 5}"/>'
            f'<text class="value" x="{hi + 6}" y="{cy + 4}">{esc(_pct(e.success_rate))}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _html_table(entries: tuple[Entry, ...]) -> str:
    headers, rows = _table(entries)
    head = "".join(f'<th scope="col"{" class=num" if numeric else ""}>{html.escape(title)}</th>'
                   for title, numeric in headers)
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if numeric else ""}>{html.escape(text)}</td>'
                         for (_, numeric), text in zip(headers, row, strict=True)) + "</tr>"
        for row in rows)
    return f'<table class="board"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def render_html(lb: Leaderboard) -> str:
    """The static page: the template filled with a chart and a table per suite."""
    agents = sorted({e.agent_id for entries in lb.suites.values() for e in entries})
    colours = {agent: PALETTE[i % len(PALETTE)] for i, agent in enumerate(agents)}
    sections = []
    for suite, entries in lb.suites.items():
        sections.append(
            f'<section class="suite" id="{html.escape(suite)}"><h2>{html.escape(suite)}</h2>'
            f'<p class="meta">{len(entries)} agent(s), '
            f"{max((e.n_tasks for e in entries), default=0)} task(s)</p>"
            f"<figure>{render_svg(suite, entries, colours)}</figure>{_html_table(entries)}</section>")
    template = string.Template(files("envgym_leaderboard").joinpath(TEMPLATE).read_text(encoding="utf-8"))
    warnings = [f'<p class="warning">{html.escape(warning)}</p>' for warning in lb.warnings]
    return template.substitute(
        generated_at=html.escape(lb.generated_at),
        n_runs=len(lb.runs),
        suites="\n".join(warnings + sections) or '<p class="empty">No records.</p>',
    )


def write_leaderboard(lb: Leaderboard, out_dir: str | Path) -> dict[str, Path]:
    """Write ``leaderboard.json``, ``leaderboard.md`` and ``index.html`` into ``out_dir`` (created).

    Returns the paths keyed ``"json"``, ``"markdown"`` and ``"html"``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "leaderboard.json", "markdown": out / "leaderboard.md", "html": out / "index.html"}
    paths["json"].write_text(lb.model_dump_json(indent=2) + "\n", encoding="utf-8")
    paths["markdown"].write_text(render_markdown(lb), encoding="utf-8")
    paths["html"].write_text(render_html(lb), encoding="utf-8")
    return paths
