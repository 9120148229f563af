"""envgym.leaderboard: virtual time in seconds and in steps never meet in one mean.

Two runs of one agent, under the same settings, on the same tasks of one timed suite: one whose world
runs on a wall-like clock (efficiency evidence in ``s``), one on a step clock (``step``). Before the fix
they pooled into one row whose "Virtual time (units)" was the mean of 2,526 s and 42.1 steps (1,284.0).
"""

from __future__ import annotations

import json
from pathlib import Path

from envgym.clock import SimClock
from envgym.leaderboard import Efficiency, Entry, Leaderboard, build_leaderboard, render_html, render_markdown
from envgym.record import ResultRecord
from envgym.types import Outcome, Timing, Usage, Verdict


def _timed(run_id: str, task: str, unit: str | None, virtual: float, *, outcome: Outcome = Outcome.SUCCESS
           ) -> ResultRecord:
    verdict = None
    if unit is not None:
        metrics = {"virtual_time_s": virtual, "thinking_s": virtual / 2, "waiting_s": virtual / 4,
                   "idle_s": 0.0, "opportunity_idle_s": None, "time_to_goal_s": virtual, "unit": unit}
        verdict = Verdict(score=1.0, passed=True, evidence={"efficiency": metrics})
    return ResultRecord(
        run_id=run_id, task_id=task, task_hash=f"sha256:{task}", suite="timed/kitchen", split="test",
        env_id="timed/kitchen-v1", env_version=1, agent_id="cook", agent={}, config_hash="sha256:cfg",
        run_index=0, attempt=1, outcome=outcome, score=float(outcome is Outcome.SUCCESS),
        passed=outcome is Outcome.SUCCESS, verdict=verdict, steps=4, usage=Usage(), timing=Timing(wall_s=1.0),
        error="boom" if outcome is Outcome.INFRA_ERROR else None)


def _run(root: Path, run_id: str, records: list[ResultRecord]) -> Path:
    run_dir = root / run_id
    run_dir.mkdir()
    meta = {"run_id": run_id, "agent_id": "cook", "agent": {}, "suites": ["timed/kitchen"],
            "config": {"runs": 1, "seed": 0}, "config_hash": "sha256:cfg", "created_at": 0.0}
    (run_dir / "run.json").write_text(json.dumps(meta))
    (run_dir / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return run_dir


def _board(tmp_path: Path) -> Leaderboard:
    seconds = [_timed("in-seconds", "t1", "s", 2526.0), _timed("in-seconds", "t2", "s", 2526.0)]
    # t2's infra error carries no timeline: it belongs to the run's unit, not to a third row
    steps = [_timed("in-steps", "t1", "step", 42.1), _timed("in-steps", "t2", None, 0.0, outcome=Outcome.INFRA_ERROR)]
    return build_leaderboard([_run(tmp_path, "in-seconds", seconds), _run(tmp_path, "in-steps", steps)],
                             clock=SimClock())


def test_runs_in_seconds_and_in_steps_are_separate_rows(tmp_path: Path) -> None:
    board = _board(tmp_path)
    (entries,) = board.suites.values()
    by_unit = {e.efficiency.unit: e for e in entries if e.efficiency is not None}
    assert set(by_unit) == {"s", "step"} and len(entries) == 2
    seconds, steps = by_unit["s"], by_unit["step"]
    assert seconds.efficiency == Efficiency(unit="s", episodes=2, mean_virtual_time=2526.0, mean_thinking=1263.0,
                                            mean_waiting=631.5, mean_idle=0.0, mean_time_to_goal=2526.0,
                                            goal_reached=2)
    assert steps.efficiency is not None and steps.efficiency.mean_virtual_time == 42.1
    assert (seconds.runs, steps.runs) == (("in-seconds",), ("in-steps",))
    assert (steps.episodes, steps.infra_errors) == (1, 1)  # the infra error stayed with its run's row
    assert seconds.name != steps.name and {seconds.name, steps.name} == {"cook [s]", "cook [steps]"}
    assert any("different units" in w and "in-seconds" in w and "in-steps" in w for w in board.warnings)
    assert {row.label for row in board.overview} == {"cook [s]", "cook [steps]"}


def test_markdown_and_html_show_one_efficiency_table_per_unit(tmp_path: Path) -> None:
    board = _board(tmp_path)
    markdown, page = render_markdown(board), render_html(board)
    for text in (markdown, page):
        assert "Virtual time (s)" in text and "Virtual time (steps)" in text
        assert "units)" not in text and "1,284" not in text  # no header without a unit, no mixed mean
        assert "2,526.0" in text and "42.1" in text
        assert "cook [s]" in text and "cook [steps]" in text
    seconds_table = markdown.split("Virtual time (s)")[1].split("Virtual time (steps)")[0]
    assert "cook [s]" in seconds_table and "cook [steps]" not in seconds_table


def test_a_legacy_mixed_entry_shows_no_numbers(tmp_path: Path) -> None:
    """A leaderboard.json written before the fix may hold an entry averaged over units: it is not shown."""
    mixed = Efficiency(unit="mixed", episodes=2, mean_virtual_time=1284.05, goal_reached=2)
    entry = Entry(agent_id="cook", runs=("r",), n_tasks=2, episodes=2, infra_errors=0, successes=2,
                  success_rate=1.0, ci_low=0.3, ci_high=1.0, efficiency=mixed)
    board = Leaderboard(generated_at="2025-01-01T00:00:00+00:00", suites={"timed/kitchen": (entry,)})
    for text in (render_markdown(board), render_html(board)):
        assert "1,284" not in text and "mixed units" in text


def test_one_unit_keeps_the_bare_label(tmp_path: Path) -> None:
    runs = [_run(tmp_path, run, [_timed(run, task, "step", virtual) for task in ("t1", "t2")])
            for run, virtual in (("a", 10.0), ("b", 20.0))]
    board = build_leaderboard(runs, clock=SimClock())
    (entries,) = board.suites.values()
    assert [e.name for e in entries] == ["cook"] and entries[0].efficiency is not None
    assert entries[0].efficiency.mean_virtual_time == 15.0 and board.warnings == ()


def test_the_terminal_shows_the_same_rows_and_the_warning(tmp_path: Path, capsys) -> None:
    from envgym.cli import main

    seconds = _run(tmp_path, "in-seconds", [_timed("in-seconds", "t1", "s", 2526.0)])
    steps = _run(tmp_path, "in-steps", [_timed("in-steps", "t1", "step", 42.1)])
    assert main(["leaderboard", "build", str(seconds), str(steps), "--out", str(tmp_path / "site")]) == 0
    captured = capsys.readouterr()
    assert "cook [s]" in captured.out and "[steps]" in captured.out  # the table may wrap a label
    assert "different units (s: in-seconds; steps: in-steps)" in " ".join(captured.err.split())
    assert "cook [steps]" in (tmp_path / "site" / "index.html").read_text()
