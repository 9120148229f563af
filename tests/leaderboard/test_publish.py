"""envgym.leaderboard: what a citing reader needs. Partial credit, configs never pooled, the overview with
its macro interval, the metadata block, the per-task view with trajectory texts, merging into published
data, reward curves of ``envgym train`` runs; and the page in a real browser at 1,400 px.

Run directories are written here as ``envgym eval`` writes them (``run.json`` with the config, records,
trajectories), from real :class:`ResultRecord` and :class:`Trajectory` objects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envgym.clock import SimClock
from envgym.leaderboard import Leaderboard, build_leaderboard, macro_interval, publish, wilson_interval
from envgym.leaderboard.render import render_html, render_markdown
from envgym.record import ResultRecord
from envgym.trajectory import StepRecord, Trajectory
from envgym.types import Action, CriterionResult, Observation, Outcome, ToolResult, Usage, Verdict

S, F, X = Outcome.SUCCESS, Outcome.FAILURE, Outcome.INFRA_ERROR
CFG_A, CFG_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def _episode(run_id: str, agent_id: str, suite: str, task: str, run_index: int, outcome: Outcome, score: float,
             *, config: str = CFG_A, tokens: int = 100, cost: float = 0.0) -> tuple[ResultRecord, Trajectory]:
    verdict = Verdict(score=score, passed=outcome is S,
                      criteria=(CriterionResult(name="answer", score=score, passed=outcome is S),))
    trajectory = Trajectory(
        task_id=task, task_hash=f"sha256:{task}", env_id=f"{suite}-v1", seed=1000 + run_index,
        initial_observation=Observation(text=f"Please solve {task}."),
        steps=(StepRecord(index=0, action=Action.call("lookup", key=task),
                          observation=Observation(tool_results=(ToolResult(call_id="c1", name="lookup",
                                                                           content=f"value of {task}"),)),
                          reward=0.0, agent_s=0.1, env_s=0.01),
               StepRecord(index=1, action=Action.say(f"the answer to {task}"), observation=Observation(text="done"),
                          reward=score, agent_s=0.1, env_s=0.01)),
        outcome=outcome, verdict=None if outcome is X else verdict, reward=score,
        usage=Usage(prompt_tokens=tokens, cost_usd=cost), error="engine down" if outcome is X else None)
    record = ResultRecord.from_trajectory(trajectory, run_id=run_id, suite=suite, split="test", env_version=1,
                                          agent_id=agent_id, agent={"name": agent_id}, config_hash=config,
                                          run_index=run_index)
    return record, trajectory


def _run(root: Path, run_id: str, agent_id: str, episodes: list[tuple[ResultRecord, Trajectory]], *,
         config: str = CFG_A, old: bool = False, k: int = 1, model: str | None = None) -> Path:
    run_dir = root / run_id
    run_dir.mkdir()
    suites = sorted({r.suite for r, _ in episodes})
    meta = {"run_id": run_id, "agent_id": agent_id, "agent": {"name": agent_id, "temperature": 0.0}, "suites": suites}
    if model:
        meta["agent"]["model"] = model
    if not old:  # what envgym eval writes now; an older run.json holds only the fields above
        agent = {"type": "openai", "temperature": 0.0 if config == CFG_A else 0.7}  # what the config hash hashes
        meta |= {"config": {"suites": suites, "split": "test", "seed": 7, "runs": k, "limit": None, "agent": agent},
                 "config_hash": config, "envgym_version": "9.9.9", "created_at": 1_767_225_600.0,
                 "host": "lab-box-3",
                 "task_sets": {s: "sha256:" + "c" * 64 for s in suites}}
    (run_dir / "run.json").write_text(json.dumps(meta))
    (run_dir / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r, _ in episodes))
    (run_dir / "trajectories.jsonl").write_text("".join(t.model_dump_json() + "\n" for _, t in episodes))
    return run_dir


def test_mean_score_shows_partial_credit(tmp_path: Path) -> None:
    """A 0.8 rubric score on a failed episode: 0% success but mean score 0.8 (it was invisible)."""
    run = _run(tmp_path, "r1", "partial", [_episode("r1", "partial", "s", "t1", 0, F, 0.8),
                                           _episode("r1", "partial", "s", "t2", 0, F, 0.4)])
    board = build_leaderboard([run], clock=SimClock())
    entry = board.suites["s"][0]
    assert entry.success_rate == 0.0 and entry.mean_score == pytest.approx(0.6)
    assert [t.mean_score for t in entry.tasks] == pytest.approx([0.8, 0.4])
    assert "| 0.0% | 0.0–65.8 | 0.600 |" in render_markdown(board)
    assert "<td class=num>0.600</td>" in render_html(board)


def test_runs_of_one_agent_under_different_configs_are_never_pooled(tmp_path: Path) -> None:
    a = _run(tmp_path, "r1", "agent", [_episode("r1", "agent", "s", "t1", 0, S, 1.0)], config=CFG_A)
    b = _run(tmp_path, "r2", "agent", [_episode("r2", "agent", "s", "t1", 0, F, 0.0, config=CFG_B)], config=CFG_B)
    same = _run(tmp_path, "r3", "agent", [_episode("r3", "agent", "s", "t1", 0, S, 1.0)], config=CFG_A)
    board = build_leaderboard([a, b, same], clock=SimClock())
    cold, warm = "agent [agent.temperature=0.0]", "agent [agent.temperature=0.7]"  # labelled by what differs
    rows = {e.label: e for e in board.suites["s"]}
    assert set(rows) == {cold, warm}
    assert rows[cold].runs == ("r1", "r3") and rows[cold].episodes == 2 and rows[cold].config_hash == CFG_A
    assert rows[warm].runs == ("r2",) and rows[warm].episodes == 1 and rows[warm].settings["agent.temperature"] == 0.7
    assert any("2 different settings" in w and "never pooled" in w for w in board.warnings)
    assert [r.label for r in board.overview] == [cold, warm]
    assert warm in render_markdown(board) and "never pooled" in render_html(board)
    # older run.json files (no config): the records' config hash tells them apart
    old_a = _run(tmp_path, "o1", "agent", [_episode("o1", "agent", "s", "t1", 0, S, 1.0)], old=True)
    old_b = _run(tmp_path, "o2", "agent", [_episode("o2", "agent", "s", "t1", 0, F, 0.0, config=CFG_B)],
                 old=True)
    labels = {e.label for e in build_leaderboard([old_a, old_b], clock=SimClock()).suites["s"]}
    assert labels == {"agent [config aaaaaaaa]", "agent [config bbbbbbbb]"}


def test_one_agent_run_suite_by_suite_stays_one_row(tmp_path: Path) -> None:
    """Two runs of one agent with the same settings on different suites (so different config hashes: the
    suites are in the config) are one row of the overview, not two."""
    a = _run(tmp_path, "r1", "agent", [_episode("r1", "agent", "s1", "t1", 0, S, 1.0)])
    b = _run(tmp_path, "r2", "agent", [_episode("r2", "agent", "s2", "u1", 0, F, 0.0)])
    board = build_leaderboard([a, b], clock=SimClock())
    assert [(r.label, r.success) for r in board.overview] == [("agent", {"s1": 1.0, "s2": 0.0})]
    assert board.warnings == ()


def test_overview_matrix_with_macro_average(tmp_path: Path) -> None:
    eps = [_episode("r1", "alpha", "s1", f"t{i}", 0, S if i < 3 else F, 1.0 if i < 3 else 0.5) for i in range(4)]
    eps += [_episode("r1", "alpha", "s2", f"u{i}", 0, S if i < 1 else F, 1.0 if i < 1 else 0.0) for i in range(2)]
    beta = [_episode("r2", "beta", "s1", f"t{i}", 0, F, 0.0) for i in range(4)]
    board = build_leaderboard([_run(tmp_path, "r1", "alpha", eps), _run(tmp_path, "r2", "beta", beta)],
                              clock=SimClock())
    alpha, beta_row = board.overview
    assert alpha.label == "alpha" and alpha.success == {"s1": 0.75, "s2": 0.5}
    mean, low, high = macro_interval([(0.75, *wilson_interval(3, 4)), (0.5, *wilson_interval(1, 2))])
    assert (alpha.macro, alpha.macro_low, alpha.macro_high) == pytest.approx((0.625, low, high)) and mean == 0.625
    assert beta_row.success == {"s1": 0.0} and beta_row.macro == 0.0  # over the one suite it ran
    md = render_markdown(board)
    assert "| Agent | s1 | s2 | Macro avg | 95% CI | Suites |" in md
    assert f"| alpha | 75.0% (0.88) | 50.0% (0.50) | 62.5% | {100 * low:.1f}–{100 * high:.1f} | 2/2 |" in md
    assert "| beta | 0.0% (0.00) | — | 0.0% |" in md and " | 1/2 |" in md  # averaged over fewer suites: said
    page = render_html(board)
    assert page.index('id="overview"') < page.index('id="runs"') < page.index('class="suite"')
    assert "root sum of squares" in page  # the page says how the interval is computed


def test_metadata_block_per_run_and_old_runs_still_build(tmp_path: Path) -> None:
    new = _run(tmp_path, "r1", "alpha", [_episode("r1", "alpha", "s", "t1", 0, S, 1.0)], k=3, model="m-1")
    old = _run(tmp_path, "r2", "beta", [_episode("r2", "beta", "s2", "t1", 0, S, 1.0)], old=True)
    board = build_leaderboard([new, old], clock=SimClock())
    info = board.run_info["r1"]
    assert (info.envgym_version, info.host, info.split, info.seed, info.k, info.model) == (
        "9.9.9", "lab-box-3", "test", 7, 3, "m-1")
    assert info.created_at == "2026-01-01T00:00:00+00:00" and info.config_hash == CFG_A
    assert info.task_sets == {"s": "sha256:" + "c" * 64} and info.agent["temperature"] == 0.0
    bare = board.run_info["r2"]
    assert (bare.envgym_version, bare.host, bare.created_at, bare.k, bare.config_hash) == (None,) * 5
    md = render_markdown(board)
    assert ("| r1 | alpha | name=alpha, temperature=0.0 | m-1 | aaaaaaaa | 9.9.9 | 2026-01-01 00:00:00 | lab-box-3 "
            "| test | 7 | 3 | s (cccccccc) |") in md
    assert "| r2 | beta | name=alpha" not in md and "| r2 | beta | name=beta, temperature=0.0 | — | — | — |" in md
    assert "lab-box-3" in render_html(board) and "cccccccc" in render_html(board)


def test_per_task_view_links_to_trajectory_texts(tmp_path: Path) -> None:
    eps = [_episode("r1", "alpha", "s", "t1", i, S, 1.0) for i in range(2)]
    eps += [_episode("r1", "alpha", "s", "t2", 0, X, 0.0), _episode("r1", "alpha", "s", "t2", 1, F, 0.3)]
    run = _run(tmp_path, "r1", "alpha", eps, k=2)
    board, paths = publish([run], tmp_path / "site", clock=SimClock())
    t1, t2 = board.suites["s"][0].tasks
    assert (t1.task_id, t1.episodes, t1.successes, t2.episodes, t2.infra_errors) == ("t1", 2, 2, 1, 1)
    assert t1.trajectories == ("trajectories/r1/t1-t1-r0.txt", "trajectories/r1/t1-t1-r1.txt")
    text = (tmp_path / "site" / t2.trajectories[1]).read_text()
    assert "task t2 (sha256:t2)" in text and "outcome failure, score 0.300" in text
    assert 'call lookup({"key": "t2"})' in text and "value of t2" in text and "action text:" in text
    infra = (tmp_path / "site" / t2.trajectories[0]).read_text()
    assert "outcome infra_error" in infra and "engine down" in infra
    tasks_page = paths["tasks"].read_text()
    assert '<a href="trajectories/r1/t1-t1-r0.txt">r0</a>' in tasks_page and "solved 2/2" in tasks_page
    assert "not solved 0/1, score 0.30, 1 infra" in tasks_page
    assert "## Per task" in paths["markdown"].read_text()
    assert 'href="tasks.html' in paths["html"].read_text()


def test_update_merges_into_published_data_by_suite(tmp_path: Path) -> None:
    site = tmp_path / "leaderboard"
    first = _run(tmp_path, "r1", "alpha", [_episode("r1", "alpha", "s1", "t1", 0, S, 1.0),
                                           _episode("r1", "alpha", "s2", "u1", 0, S, 1.0)])
    publish([first], site, clock=SimClock())
    second = _run(tmp_path, "r2", "beta", [_episode("r2", "beta", "s1", "t1", 0, F, 0.0)])
    board, paths = publish([second], site, update=True, clock=SimClock())
    data = json.loads(paths["json"].read_text())
    assert list(data["suites"]) == ["s1", "s2"]
    assert [e["agent_id"] for e in data["suites"]["s1"]] == ["alpha", "beta"]
    assert set(data["run_info"]) == {"r1", "r2"} and board.runs == ("r1", "r2")
    assert {r.label for r in board.overview} == {"alpha", "beta"}
    assert (site / "trajectories" / "r1" / "t1-t1-r0.txt").is_file()  # kept from the first publish
    # alpha again: its s1 row is replaced, not added twice
    again = _run(tmp_path, "r3", "alpha", [_episode("r3", "alpha", "s1", "t1", 0, F, 0.0)])
    board, _ = publish([again], site, update=True, clock=SimClock())
    assert [(e.agent_id, e.runs) for e in board.suites["s1"]] == [("alpha", ("r3",)), ("beta", ("r2",))]
    assert "r1" in board.runs  # still the source of s2


def test_reward_curves_of_train_runs(tmp_path: Path) -> None:
    train = tmp_path / "train-sync"
    train.mkdir()
    lines = [{"step": s, "reward_mean": r, "success_rate": r, "wall_s": 10.0 * s, "config_hash": "sha256:t"}
             for s, r in [(1, 0.1), (2, 0.3), (3, 0.5), (3, 0.6)]]  # step 3 twice: a resumed run, the last wins
    (train / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    run = _run(tmp_path, "r1", "alpha", [_episode("r1", "alpha", "s", "t1", 0, S, 1.0)])
    board = build_leaderboard([run, train], clock=SimClock())
    (curve,) = board.training
    assert (curve.label, curve.steps, curve.reward_mean) == ("train-sync", (1, 2, 3), (0.1, 0.3, 0.6))
    page = render_html(board)
    assert 'class="chart curves"' in page and page.count("<polyline") == 1
    assert build_leaderboard([run], train_metrics=[train / "metrics.jsonl"], clock=SimClock()).training == (curve,)


def test_success_against_tokens_or_cost_chart(tmp_path: Path) -> None:
    cheap = [_episode("r1", "cheap", "s", "t1", 0, F, 0.0, tokens=100)]
    dear = [_episode("r2", "dear", "s", "t1", 0, S, 1.0, tokens=400)]
    board = build_leaderboard([_run(tmp_path, "r1", "cheap", cheap), _run(tmp_path, "r2", "dear", dear)],
                              clock=SimClock())
    page = render_html(board)
    assert 'class="chart scatter"' in page and "mean tokens per episode" in page
    assert page.count("<circle") == 2
    costly = build_leaderboard([_run(tmp_path, "r3", "paid", [_episode("r3", "paid", "s", "t1", 0, S, 1.0,
                                                                        cost=0.5)])], clock=SimClock())
    assert "cost (USD)" in render_html(costly)


# --- the page in a real browser, at 1,400 px ---------------------------------------------------------

VIEWPORT = {"width": 1400, "height": 900}




@pytest.fixture
def site(tmp_path: Path) -> tuple[Leaderboard, dict[str, Path]]:
    """Five runs per task (``--runs 5``: pass@1..5 and pass^1..5), three agents with long names, two configs
    of one of them, three suites with long names, a training run: the widest page the data makes."""
    runs, train = [], tmp_path / "train"
    long = "openai:a-rather-long-model-name-for-a-research-checkpoint-2026-01-01"
    for n, (agent, config, rate) in enumerate([("oracle", CFG_A, 1.0), (long, CFG_A, 0.6), (long, CFG_B, 0.4),
                                               ("null", CFG_A, 0.0)]):
        eps = [_episode(f"run{n}", agent, suite, f"{suite.split('/')[0]}-task-{t:02d}", i,
                        S if (t + i) % 5 < 5 * rate else F, 1.0 if (t + i) % 5 < 5 * rate else 0.25,
                        config=config, tokens=500 * (n + 1))
               for suite in ("tool/retail-with-a-long-name", "timed/calendar", "web/shop") for t in range(6)
               for i in range(5)]
        runs.append(_run(tmp_path, f"run{n}", agent, eps, config=config, k=5, model=agent))
    ten = [_episode("run9", "tenfold", suite, f"{suite.split('/')[0]}-task-{t:02d}", i, S if i % 2 else F, 0.5)
           for suite in ("tool/retail-with-a-long-name", "timed/calendar", "web/shop") for t in range(6)
           for i in range(10)]  # --runs 10: pass@1..10, more columns than a row can hold; 1, 2, 3, 5, 10 are shown
    runs.append(_run(tmp_path, "run9", "tenfold", ten, k=10))
    train.mkdir()
    (train / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward_mean": s / 20, "wall_s": s})
                                                 + "\n" for s in range(1, 21)))
    return publish([*runs, train], tmp_path / "site", clock=SimClock())


async def _open(chromium, path: Path) -> tuple[object, list[str], list[str]]:
    page = await chromium.new_page(viewport=VIEWPORT)
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
            if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("request", lambda request: requests.append(request.url))
    await page.goto(path.as_uri(), wait_until="load")
    return page, problems, requests


# Every element's box against the viewport: what sticks out to the right (a horizontal scroll bar).
_OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const wide = [];
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (box.width > 0 && (box.right > width + 0.5 || box.left < -0.5))
      wide.push(`${el.tagName}.${el.getAttribute('class') || ''} ${Math.round(box.left)}..${Math.round(box.right)}`);
  }
  return {width, scroll: document.documentElement.scrollWidth, wide: wide.slice(0, 10)};
}"""


@pytest.mark.browser
async def test_page_at_1400px_overview_suite_table_and_per_task_view(chromium, site, tmp_path: Path) -> None:
    board, paths = site
    page, problems, requests = await _open(chromium, paths["html"])
    assert await page.title() == "envgym leaderboard"
    layout = await page.evaluate(_OVERFLOW)
    assert layout["width"] == 1400 and layout["scroll"] <= 1400 and layout["wide"] == [], layout

    overview = page.locator("section.overview table.matrix")
    assert await overview.is_visible()
    assert await overview.locator("tbody tr").count() == 5  # oracle, two configs of the long one, null, k=10
    header = await overview.locator("thead").inner_text()
    assert "Macro avg" in header and "web/shop" in header
    retail = page.locator("section.suite", has=page.locator("h2", has_text="tool/retail-with-a-long-name"))
    for table in ("table.board >> nth=0", "table.passes"):
        box = await retail.locator(table).bounding_box()
        assert box is not None and box["width"] > 300 and box["x"] >= 0 and box["x"] + box["width"] <= 1400
        assert await retail.locator(table).is_visible()
    passes = await retail.locator("table.passes thead").inner_text()
    assert "pass^5" in passes and "pass^10" in passes and "pass^4" not in passes
    assert await retail.locator("table.board >> nth=0").locator("tbody tr").count() == 5
    bars = retail.locator("svg.bars rect.bar")
    widths = [(await bars.nth(i).bounding_box())["width"] for i in range(await bars.count())]
    oracle_row = board.suites["tool/retail-with-a-long-name"][0]
    assert oracle_row.agent_id == "oracle" and widths[0] == max(widths) > 0  # drawn to scale, best first
    assert await retail.locator("svg.scatter circle").count() == 5  # a point per row with graded episodes
    # every figure fits: the bars, the scatter and the training curves scale down inside the page
    for svg in await page.locator("svg.chart").all():
        box = await svg.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1400
    assert await page.locator("section.training svg.curves polyline").count() == 1
    assert await page.locator("section.runs tbody tr").count() == 5
    shot = tmp_path / "index.png"  # kept for a reader: ENVGYM_SHOT_DIR=DIR copies it there
    await page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000  # a page was painted (layout is checked on the boxes above)
    assert problems == [] and requests == [paths["html"].as_uri()]  # self-contained: nothing else fetched

    await page.click("text=Per-task results and trajectories")
    assert page.url.endswith("tasks.html")
    layout = await page.evaluate(_OVERFLOW)
    assert layout["scroll"] <= 1400 and layout["wide"] == [], layout
    tasks = page.locator("section.tasks", has=page.locator("h2", has_text="web/shop"))
    assert await tasks.locator("tbody tr").count() == 6 and await tasks.locator("td.solved").count() >= 6
    link = tasks.locator("a", has_text="r0").first
    await link.click()
    assert page.url.endswith(".txt") and "outcome " in await page.locator("body").inner_text()
    assert problems == []


async def test_real_eval_runs_to_the_page(tmp_path: Path) -> None:
    """``envgym eval`` run directories (oracle and null on a bundled suite) through ``publish``: run.json
    carries what the metadata block needs (``host`` is new), and every record links to its trajectory text."""
    import socket

    from envgym.agents import NullConfig, OracleConfig
    from envgym.eval import EvalConfig, evaluate

    dirs = []
    for name, agent in (("oracle", OracleConfig()), ("null", NullConfig())):
        config = EvalConfig(suites=("tool-codes",), split=None, agent=agent, limit=2, runs=2, seed=3)
        await evaluate(config, tmp_path / name, concurrency=2)
        dirs.append(tmp_path / name)
    board, paths = publish(dirs, tmp_path / "site", clock=SimClock())
    infos = list(board.run_info.values())
    assert {i.agent_id for i in infos} == {"oracle", "null"}
    assert all(i.host == socket.gethostname() and i.envgym_version and i.created_at and i.k == 2 and i.seed == 3
               and i.task_sets.get("tool-codes", "").startswith("sha256:") for i in infos)
    oracle, null = board.suites["tool-codes"]
    assert (oracle.agent_id, oracle.success_rate, oracle.mean_score) == ("oracle", 1.0, 1.0)
    assert null.agent_id == "null" and null.mean_score is not None and null.mean_score < 1.0
    links = [link for e in (oracle, null) for t in e.tasks for link in t.trajectories]
    assert len(links) == 8 and all((tmp_path / "site" / link).is_file() for link in links)
    assert "outcome success" in (tmp_path / "site" / oracle.tasks[0].trajectories[0]).read_text()
    assert f'href="{oracle.tasks[0].trajectories[0]}"' in paths["tasks"].read_text()


def test_cli_update_and_train_metrics(tmp_path: Path, capsys) -> None:
    """``envgym leaderboard build``: ``--update DIR`` merges into the data published there, by suite id;
    ``--train-metrics`` adds reward curves; ``--out`` or ``--update`` is required."""
    from envgym.cli import main

    site = tmp_path / "leaderboard"
    a = _run(tmp_path, "r1", "alpha", [_episode("r1", "alpha", "s1", "t1", 0, S, 1.0)])
    b = _run(tmp_path, "r2", "beta", [_episode("r2", "beta", "s2", "t1", 0, F, 0.5)])
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"step": 1, "reward_mean": 0.2}\n{"step": 2, "reward_mean": 0.4}\n')
    assert main(["leaderboard", "build", str(a), "--out", str(site)]) == 0
    assert main(["leaderboard", "build", str(b), "--update", str(site), "--train-metrics", str(metrics)]) == 0
    data = json.loads((site / "leaderboard.json").read_text())
    assert list(data["suites"]) == ["s1", "s2"] and [c["steps"] for c in data["training"]] == [[1, 2]]
    assert "0.500" in capsys.readouterr().out  # the console table's mean score
    assert (site / "tasks.html").is_file() and (site / "trajectories" / "r2" / "t1-t1-r0.txt").is_file()
    assert main(["leaderboard", "build", str(b)]) == 2
    assert "--out DIR" in capsys.readouterr().err


def test_no_cost_chart_without_tokens_or_cost(tmp_path: Path) -> None:
    """Scripted agents use no tokens: every point would sit at 0, so the chart gives way to a line."""
    eps = [_episode("r1", "oracle", "s", "t1", 0, S, 1.0, tokens=0)]
    page = render_html(build_leaderboard([_run(tmp_path, "r1", "oracle", eps)], clock=SimClock()))
    assert 'class="chart scatter"' not in page and "No tokens or cost recorded" in page


def test_an_overview_of_many_suites_is_transposed_so_it_fits(tmp_path: Path) -> None:
    """13 suites x 4 agents overflowed 1,400 px (the macro average fell off the right edge)."""
    suites = [f"family{i:02d}/suite" for i in range(13)]
    runs = [_run(tmp_path, f"run-{agent}", agent,
                 [_episode(f"run-{agent}", agent, suite, f"t-{suite[:8]}", 0, S if agent == "oracle" else F, 1.0 if
                           agent == "oracle" else 0.0) for suite in suites]) for agent in ("oracle", "null")]
    markdown = render_markdown(build_leaderboard(runs))
    overview = markdown.split("## Overview", 1)[1].split("\n\n")[1].splitlines()
    assert overview[0].startswith("| Suite | ") and "oracle" in overview[0] and "null" in overview[0]
    assert len(overview) == 2 + 13 + 3 and overview[-3].startswith("| Macro avg | 100.0% |")
