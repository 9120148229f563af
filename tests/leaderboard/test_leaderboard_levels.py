"""Difficulty on the leaderboard (envgym.leaderboard.levels): for a generated suite, solve rate per level per
agent and the reference-solution length per level, in leaderboard.json, the Markdown and the HTML page.

The main test evaluates real agents with ``envgym eval`` on ``tool-retail-gen`` (the oracle and the null agent,
six tasks: two per level) and builds the leaderboard from those runs with ``envgym leaderboard build``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from envgym import cli
from envgym.generate import generate, parse_task_id
from envgym.leaderboard import Leaderboard, build_leaderboard
from envgym.leaderboard.levels import level_results
from envgym.leaderboard.render import render_html, render_markdown
from envgym.record import ResultRecord
from envgym.types import Outcome, Timing, Usage

SUITE = "tool-retail-gen@0:6"


def generate_id(task_id: str):
    """The generated task ``task_id`` names, made again."""
    name, split, level, seed = parse_task_id(task_id)
    return generate(name, seed, level=level, split=split)


def test_a_generated_suite_shows_solve_rate_and_reference_length_per_level(tmp_path: Path) -> None:
    runs = []
    for agent in ("oracle", "null"):
        out = tmp_path / agent
        assert cli.main(["eval", "--suite", SUITE, "--agent", agent, "--out", str(out), "--quiet"]) == 0
        runs.append(out)
    assert cli.main(["leaderboard", "build", *map(str, runs), "--out", str(tmp_path / "site")]) == 0
    lb = Leaderboard.model_validate_json((tmp_path / "site" / "leaderboard.json").read_text())
    (entries,) = lb.suites.values()
    by_agent = {e.agent_id: e for e in entries}
    tasks = [t.task_id for t in by_agent["oracle"].tasks]
    made = {tid: generate_id(tid) for tid in tasks}
    expected = {}
    for tid, task in made.items():
        expected.setdefault(parse_task_id(tid)[2], []).append(len(task.solution))
    oracle, null = by_agent["oracle"].levels, by_agent["null"].levels
    assert [lv.level for lv in oracle] == [lv.level for lv in null] == sorted(expected) == [1, 2, 3]
    for lv in oracle:
        assert (lv.tasks, lv.episodes, lv.successes, lv.success_rate) == (2, 2, 2, 1.0)
        assert lv.reference_actions == sum(expected[lv.level]) / 2  # the generator's own solutions
    assert all(lv.successes == 0 and lv.episodes == 2 for lv in null)
    lengths = [lv.reference_actions for lv in oracle]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]  # harder levels take longer solutions

    page = (tmp_path / "site" / "index.html").read_text()
    svg = re.search(r'<svg class="chart levels".*?</svg>', page, re.S)
    assert svg is not None and svg.group(0).count("<polyline") == 2  # one line per agent
    assert "oracle, level 3: 100.0% (2/2)" in svg.group(0) and "null, level 1: 0.0% (0/2)" in svg.group(0)
    table = re.search(r'<table class="board levels">.*?</table>', page, re.S).group(0)
    assert "Level 1" in table and "100.0% (2/2)" in table and "0.0% (0/2)" in table
    assert f"<td class=num>{lengths[2]:.1f}</td>" in table  # the reference row
    markdown = (tmp_path / "site" / "leaderboard.md").read_text()
    assert "| reference solution (mean actions) |" in markdown and "| Level 3 |" in markdown


def _record(task_id: str, task_hash: str, outcome: Outcome, run_index: int = 0) -> ResultRecord:
    return ResultRecord(run_id="r", task_id=task_id, task_hash=task_hash, suite="s", split="test",
                        env_id="tool/retail-v1", env_version=1, agent_id="a", agent={}, config_hash="sha256:c",
                        run_index=run_index, attempt=1, outcome=outcome, score=float(outcome is Outcome.SUCCESS),
                        passed=outcome is Outcome.SUCCESS, steps=1, usage=Usage(), timing=Timing(wall_s=1.0))


def test_levels_count_graded_episodes_and_give_no_length_for_a_task_that_is_not_the_one_that_ran() -> None:
    real = generate_id("tool-retail-gen.test.l2.s4")
    records = [_record(real.id, real.hash, Outcome.SUCCESS, 0), _record(real.id, real.hash, Outcome.INFRA_ERROR, 1),
               _record(real.id, real.hash, Outcome.FAILURE, 2),
               _record("tool-retail-gen.test.l3.s9", "sha256:changed-since", Outcome.FAILURE),  # another task ran
               _record("not-generated-7", "sha256:x", Outcome.SUCCESS)]  # no level: left out
    two, three = level_results(records)
    assert (two.level, two.tasks, two.episodes, two.successes, two.success_rate) == (2, 1, 2, 1, 0.5)
    assert two.reference_actions == len(real.solution) and two.ci_low < 0.5 < two.ci_high
    assert three.reference_actions is None  # the generator here makes a task with another hash
    assert level_results([_record("not-generated-7", "sha256:x", Outcome.SUCCESS)]) == ()


def test_a_suite_without_generated_tasks_draws_no_levels(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "r", "agent_id": "a", "suites": ["s"]}))
    (run / "records.jsonl").write_text(_record("plain-1", "sha256:p", Outcome.SUCCESS).model_dump_json() + "\n")
    lb = build_leaderboard([run])
    assert lb.suites["s"][0].levels == ()
    assert "chart levels" not in render_html(lb) and "reference solution" not in render_markdown(lb)
