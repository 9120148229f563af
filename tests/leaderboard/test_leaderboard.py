"""envgym.leaderboard: aggregation of synthetic run directories, the JSON/Markdown/HTML outputs, errors.

The fixture writes three runs with real ResultRecord objects: agents ``alpha`` and ``beta`` on suites
``tool/retail`` (3 tasks) and ``tool/airline`` (2 tasks), three runs per task (run_index 0..2), with infra
errors (one left standing, one superseded by a rerun, one task lost entirely) and a second beta run on
airline that pools with the first. Expected numbers are worked out by hand next to each assertion.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from envgym.clock import SimClock
from envgym.errors import SpecError
from envgym.leaderboard import Leaderboard, build_leaderboard, load_run, write_leaderboard
from envgym.leaderboard.render import render_html
from envgym.leaderboard.stats import wilson_interval
from envgym.record import ResultRecord
from envgym.types import Outcome, Timing, Usage

S, F, T, X = Outcome.SUCCESS, Outcome.FAILURE, Outcome.TRUNCATED, Outcome.INFRA_ERROR
STEPS = {S: 3, F: 5, T: 10, X: 99}  # infra errors get outsized numbers, so leaking them into a mean shows


def _record(run_id: str, agent_id: str, suite: str, task: str, run_index: int, outcome: Outcome,
            *, agent: dict | None = None, attempt: int = 1) -> ResultRecord:
    steps = STEPS[outcome]
    return ResultRecord(
        run_id=run_id, task_id=task, task_hash=f"sha256:{task}", suite=suite, split="test",
        env_id=f"{suite}-v1", env_version=1, agent_id=agent_id, agent=agent or {}, config_hash="sha256:cfg",
        run_index=run_index, attempt=attempt, outcome=outcome, score=float(outcome is S),
        passed=outcome is S, steps=steps,
        usage=Usage(prompt_tokens=100 * steps, completion_tokens=10 * steps, calls=steps, cost_usd=0.001 * steps),
        timing=Timing(wall_s=0.5 * steps), error="boom" if outcome is X else None)


def _write_run(root: Path, run_id: str, agent_id: str, agent: dict, records: list[ResultRecord]) -> Path:
    run_dir = root / run_id
    run_dir.mkdir()
    meta = {"run_id": run_id, "agent_id": agent_id, "agent": agent,
            "suites": sorted({r.suite for r in records}), "config_hash": "sha256:cfg", "created_at": 0.0}
    (run_dir / "run.json").write_text(json.dumps(meta))
    (run_dir / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return run_dir


def _grid(run_id: str, agent_id: str, suite: str, outcomes: dict[str, str], agent: dict) -> list[ResultRecord]:
    """``{"t1": "SSF"}`` -> one record per letter, run_index = position."""
    letters = {"S": S, "F": F, "T": T, "X": X}
    return [_record(run_id, agent_id, suite, task, i, letters[ch], agent=agent)
            for task, row in outcomes.items() for i, ch in enumerate(row)]


@pytest.fixture
def run_dirs(tmp_path: Path) -> list[Path]:
    alpha = {"name": "alpha", "model": "m-alpha"}
    alpha_records = _grid("run-alpha", "alpha", "tool/retail", {"t1": "SSS", "t2": "SFS", "t3": "FF"}, alpha)
    # t3 run 2: an infra error, then its rerun (attempt 2) which supersedes it.
    alpha_records += [_record("run-alpha", "alpha", "tool/retail", "t3", 2, X, agent=alpha),
                      _record("run-alpha", "alpha", "tool/retail", "t3", 2, T, agent=alpha, attempt=2)]
    alpha_records += _grid("run-alpha", "alpha", "tool/airline", {"a1": "SSS", "a2": "XXX"}, alpha)
    # beta's records carry no model; run.json names it.
    beta = _grid("run-beta", "beta", "tool/retail", {"t1": "SSX", "t2": "FFF", "t3": "SFS"}, {})
    beta += _grid("run-beta", "beta", "tool/airline", {"a1": "SFF", "a2": "SSF"}, {})
    beta2 = _grid("run-beta2", "beta", "tool/airline", {"a1": "SSS", "a2": "FFF"}, {})
    dirs = [_write_run(tmp_path, "run-alpha", "alpha", alpha, alpha_records),
            _write_run(tmp_path, "run-beta", "beta", {"model": "m-beta"}, beta),
            _write_run(tmp_path, "run-beta2", "beta", {"model": "m-beta"}, beta2)]
    with open(dirs[1] / "records.jsonl", "a") as handle:
        handle.write('{"run_id": "run-beta", "task_id": "t9"')  # a torn last line: ignored
    return dirs


@pytest.fixture
def lb(run_dirs: list[Path]) -> Leaderboard:
    return build_leaderboard(run_dirs, clock=SimClock())


def test_suites_runs_and_order(lb: Leaderboard) -> None:
    assert lb.generated_at == "2026-01-01T00:00:00+00:00"
    assert lb.runs == ("run-alpha", "run-beta", "run-beta2")
    assert list(lb.suites) == ["tool/airline", "tool/retail"]
    assert [e.agent_id for e in lb.suites["tool/retail"]] == ["alpha", "beta"]  # 5/9 > 4/8
    assert [e.agent_id for e in lb.suites["tool/airline"]] == ["alpha", "beta"]  # 3/3 > 6/12


def test_superseded_infra_error_is_replaced_by_its_rerun(lb: Leaderboard) -> None:
    alpha = lb.suites["tool/retail"][0]
    # t1 SSS, t2 SFS, t3 FFT (the infra error was rerun): 9 graded episodes, 5 successes.
    assert (alpha.episodes, alpha.infra_errors, alpha.successes, alpha.n_tasks) == (9, 0, 5, 3)
    assert alpha.success_rate == pytest.approx(5 / 9)
    assert (alpha.ci_low, alpha.ci_high) == pytest.approx(wilson_interval(5, 9))
    assert alpha.model == "m-alpha" and alpha.runs == ("run-alpha",)
    # K = 3. Per task (n, c): (3,3), (3,2), (3,0).
    #   pass@1 = (1 + 2/3 + 0)/3 = 5/9; pass@2 = (1 + 1 + 0)/3; pass@3 = (1 + 1 + 0)/3
    #   pass^2 = (1 + C(2,2)/C(3,2) + 0)/3 = (1 + 1/3)/3 = 4/9; pass^3 = (1 + 0 + 0)/3
    assert alpha.pass_at_k == pytest.approx({1: 5 / 9, 2: 2 / 3, 3: 2 / 3})
    assert alpha.pass_hat_k == pytest.approx({1: 5 / 9, 2: 4 / 9, 3: 1 / 3})
    # Steps S=3, F=5, T=10: 3+3+3 + 3+5+3 + 5+5+10 = 40; tokens 110 per step; wall 0.5 s per step.
    assert alpha.mean_steps == pytest.approx(40 / 9)
    assert alpha.mean_tokens == pytest.approx(4400 / 9) and alpha.total_tokens == 4400
    assert alpha.mean_wall_s == pytest.approx(20 / 9)
    assert alpha.cost_usd == pytest.approx(0.040)


def test_standing_infra_error_is_apart_and_lowers_k(lb: Leaderboard) -> None:
    beta = lb.suites["tool/retail"][1]
    # t1 SS + infra, t2 FFF, t3 SFS: 8 graded, 1 infra error, 4 successes.
    assert (beta.episodes, beta.infra_errors, beta.successes, beta.n_tasks) == (8, 1, 4, 3)
    assert beta.success_rate == pytest.approx(0.5)
    assert (beta.ci_low, beta.ci_high) == pytest.approx(wilson_interval(4, 8))
    assert beta.model == "m-beta"  # from run.json: the records carry none
    # K = min(2, 3, 3) = 2. Per task: (2,2), (3,0), (3,2).
    #   pass@1 = (1 + 0 + 2/3)/3 = 5/9; pass@2 = (1 + 0 + 1)/3; pass^2 = (1 + 0 + 1/3)/3 = 4/9
    assert beta.pass_at_k == pytest.approx({1: 5 / 9, 2: 2 / 3})
    assert beta.pass_hat_k == pytest.approx({1: 5 / 9, 2: 4 / 9})
    # Graded steps: 3+3 + 5+5+5 + 3+5+3 = 32 (the infra error's 99 is left out).
    assert beta.mean_steps == pytest.approx(4.0) and beta.total_tokens == 3520
    assert beta.cost_usd == pytest.approx(0.032)


def test_task_lost_to_infra_errors_and_pooled_runs(lb: Leaderboard) -> None:
    alpha, beta = lb.suites["tool/airline"]
    # alpha: a1 SSS, a2 all infra errors: a2 counts as a task but in no rate; K = 3 from a1 alone.
    assert (alpha.episodes, alpha.infra_errors, alpha.successes, alpha.n_tasks) == (3, 3, 3, 2)
    assert alpha.success_rate == 1.0 and alpha.ci_high == 1.0
    assert alpha.pass_at_k == {1: 1.0, 2: 1.0, 3: 1.0} and alpha.pass_hat_k == {1: 1.0, 2: 1.0, 3: 1.0}
    assert alpha.mean_steps == pytest.approx(3.0)
    # beta: two runs pooled. a1 SFF + SSS = (6, 4), a2 SSF + FFF = (6, 2); K = 6.
    assert beta.runs == ("run-beta", "run-beta2")
    assert (beta.episodes, beta.infra_errors, beta.successes, beta.n_tasks) == (12, 0, 6, 2)
    assert sorted(beta.pass_at_k) == [1, 2, 3, 4, 5, 6]
    #   pass@5 = ((1 - 0) + (1 - C(4,5)/C(6,5)))/2 = 1; pass^2 = (C(4,2) + C(2,2))/C(6,2)/2 = (6 + 1)/30
    assert beta.pass_at_k[5] == pytest.approx(1.0)
    assert beta.pass_hat_k[2] == pytest.approx(7 / 30)
    assert beta.pass_hat_k[6] == 0.0


def test_k_of_one_reports_no_pass_at_k(tmp_path: Path) -> None:
    records = _grid("r1", "solo", "s", {"t1": "S", "t2": "F"}, {})
    entry = build_leaderboard([_write_run(tmp_path, "r1", "solo", {}, records)]).suites["s"][0]
    assert entry.pass_at_k == {} and entry.pass_hat_k == {} and entry.model is None
    assert entry.success_rate == 0.5


def test_agent_with_only_infra_errors(tmp_path: Path) -> None:
    records = _grid("r1", "down", "s", {"t1": "XX"}, {})
    entry = build_leaderboard([_write_run(tmp_path, "r1", "down", {}, records)]).suites["s"][0]
    assert (entry.episodes, entry.infra_errors, entry.success_rate) == (0, 2, 0.0)
    assert (entry.ci_low, entry.ci_high) == (0.0, 1.0)
    assert entry.mean_steps is None and entry.mean_tokens is None and entry.total_tokens == 0


def test_load_run_returns_meta_and_latest_records(run_dirs: list[Path]) -> None:
    meta, records = load_run(run_dirs[0])
    assert meta["run_id"] == "run-alpha" and meta["agent"]["model"] == "m-alpha"
    t3_run2 = [r for r in records if r.task_id == "t3" and r.run_index == 2]
    assert [(r.attempt, r.outcome) for r in t3_run2] == [(2, T)]
    assert len(records) == 15  # 9 retail + 6 airline slots; the superseded attempt is gone


def test_outputs_round_trip_and_markdown(lb: Leaderboard, tmp_path: Path) -> None:
    paths = write_leaderboard(lb, tmp_path / "out" / "site")
    assert set(paths) == {"json", "markdown", "html", "tasks"}
    assert all(path.is_file() for path in paths.values())
    assert Leaderboard.model_validate_json(paths["json"].read_text()) == lb
    data = json.loads(paths["json"].read_text())
    assert list(data["suites"]) == ["tool/airline", "tool/retail"]
    assert data["suites"]["tool/retail"][0]["pass_at_k"]["3"] == pytest.approx(2 / 3)
    md = paths["markdown"].read_text()
    assert "## tool/retail" in md and "## tool/airline" in md and "## Overview" in md and "## Runs" in md
    assert ("| # | Agent | Model | Success | 95% CI | Mean score | Episodes | Infra errors | Tasks | Mean steps "
            "| Mean tokens | Mean wall (s) | Cost (USD) |") in md
    low, high = wilson_interval(5, 9)
    assert (f"| 1 | alpha | m-alpha | 55.6% | {100 * low:.1f}–{100 * high:.1f} | 0.556 | 9 | 0 | 3 | 4.4 | 489 | 2.2 "
            "| 0.0400 |") in md
    # pass@k / pass^k in a table of their own; beta has no pass@3 on retail: a dash in that column.
    assert "| Agent | pass@1 | pass@2 | pass@3 | pass^1 | pass^2 | pass^3 |" in md
    assert "| alpha | 55.6% | 66.7% | 66.7% | 55.6% | 44.4% | 33.3% |" in md
    assert "| beta | 55.6% | 66.7% | — | 55.6% | 44.4% | — |" in md
    assert "| 2 | beta | m-beta | 50.0% |" in md


def test_html_escapes_everything(tmp_path: Path) -> None:
    evil = '<img src=x onerror="alert(1)">&'
    records = _grid("r1", evil, "suite<b>", {"t1": "SF"}, {"model": "<script>x</script>"})
    page = render_html(build_leaderboard([_write_run(tmp_path, "r1", evil, {}, records)]))
    assert "<img" not in page and "<script" not in page and "<b>" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;" in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    assert not re.search(r"\$\{?[a-z_]", page.split("<main>")[1])  # every template placeholder was filled


def test_errors_name_the_directory(tmp_path: Path, run_dirs: list[Path]) -> None:
    with pytest.raises(SpecError, match=r"nowhere.*run directory not found"):
        build_leaderboard([tmp_path / "nowhere"])
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(SpecError, match=r"bare.*no records\.jsonl"):
        build_leaderboard([bare])
    (bare / "records.jsonl").write_text("")
    with pytest.raises(SpecError, match=r"bare.*no run\.json"):
        build_leaderboard([bare])
    (bare / "run.json").write_text("[1, 2]")
    with pytest.raises(SpecError, match="run_id"):
        build_leaderboard([bare])
    with pytest.raises(SpecError, match=r"run-alpha.*also in"):
        build_leaderboard([run_dirs[0], run_dirs[0]])
    with pytest.raises(SpecError, match="no run directories"):
        build_leaderboard([])


# --- the page in a real browser ---------------------------------------------------------------------



@pytest.mark.browser
async def test_page_renders_without_errors(chromium, lb: Leaderboard, tmp_path: Path) -> None:
    html_path = write_leaderboard(lb, tmp_path / "site")["html"]
    page = await chromium.new_page()
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
            if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("request", lambda request: requests.append(request.url))
    await page.goto(html_path.as_uri(), wait_until="load")

    assert await page.title() == "envgym leaderboard"
    retail = page.locator("section.suite", has=page.locator("h2", has_text="tool/retail"))
    rows = retail.locator("table.board").first.locator("tbody tr")
    assert await rows.count() == 2
    assert (await rows.nth(0).locator("td").nth(1).inner_text()) == "alpha"
    assert "pass^3" in await retail.locator("table.passes thead").inner_text()
    bars = retail.locator("svg.bars rect.bar")
    assert await bars.count() == 2
    widths = [(await bars.nth(i).bounding_box())["width"] for i in range(2)]
    assert widths[0] / widths[1] == pytest.approx((5 / 9) / 0.5, rel=0.01)  # drawn to scale
    assert await retail.locator("svg.bars line.ci").count() == 6  # a whisker and two caps per agent
    assert await page.locator("section.suite svg.bars").count() == 2
    assert problems == []
    assert requests == [html_path.as_uri()]  # self-contained: nothing else was fetched


def test_runs_over_different_task_sets_are_not_ranked_together(tmp_path: Path) -> None:
    """Runs without ``task_sets`` in run.json (older runs) compare the task hashes their records hold."""
    same = _grid("r1", "a", "s", {"t1": "S", "t2": "S"}, {})
    edited = [r.model_copy(update={"run_id": "r2", "agent_id": "b", "task_hash": f"{r.task_hash}-edited"})
              for r in _grid("r2", "b", "s", {"t1": "F", "t2": "F"}, {})]
    also_same = _grid("r3", "a", "s", {"t1": "F", "t2": "F"}, {})
    board = build_leaderboard([_write_run(tmp_path, "r1", "a", {}, same), _write_run(tmp_path, "r2", "b", {}, edited),
                               _write_run(tmp_path, "r3", "a", {}, also_same)], clock=SimClock())
    assert len(board.suites) == 2 and all(name.startswith("s (task set ") for name in board.suites)
    tables = {tuple(e.agent_id for e in entries): entries for entries in board.suites.values()}
    assert set(tables) == {("a",), ("b",)} and tables[("a",)][0].episodes == 4  # r1 and r3 pool: same tasks
    assert len(board.warnings) == 1 and "r1, r3" in board.warnings[0] and "r2" in board.warnings[0]


def test_cli_build_with_an_agent_whose_every_episode_is_an_infra_error(tmp_path: Path, capsys) -> None:
    """Mean steps are None for such an agent: the console table shows a dash (it raised TypeError, exit 1)."""
    from envgym.cli import main

    down = _write_run(tmp_path, "r1", "down", {}, _grid("r1", "down", "s", {"t1": "XX", "t2": "X"}, {}))
    up = _write_run(tmp_path, "r2", "up", {}, _grid("r2", "up", "s", {"t1": "SF", "t2": "S"}, {}))
    assert main(["leaderboard", "build", str(down), str(up), "--out", str(tmp_path / "site")]) == 0
    printed = capsys.readouterr().out
    assert "down" in printed and "—" in printed and "wrote" in printed
    assert (tmp_path / "site" / "index.html").is_file()
