"""``envgym train`` on the command line: config errors, a tiny run on the real tool-codes suite, plots."""

from __future__ import annotations

import json

import pytest

from envgym.cli import main


@pytest.mark.parametrize(("argv", "field"), [
    (["--recipe", "nope"], "recipe"),
    (["--recipe", "tiny", "--set", "lr=-1"], "lr"),
    (["--recipe", "tiny", "--set", "clip_eps_low=2"], "clip_eps_low"),
    (["--recipe", "tiny", "--set", "no_such_knob=1"], "no_such_knob"),
    (["--recipe", "tiny", "--set", "lr"], "set"),
    (["--recipe", "tiny", "--mode", "sync", "--max-staleness", "2"], None),
    (["--recipe", "tiny", "--set", "is_mode=\"magic\""], "is_mode"),
    (["--recipe", "tiny"], "out"),
])
def test_bad_configs_are_one_line_errors(argv, field, tmp_path, capsys):
    out = [] if field == "out" else ["--out", str(tmp_path / "run")]
    assert main(["train", *argv, *out]) == 2
    err = capsys.readouterr().err
    assert "error:" in err
    if field:
        assert f"'{field}'" in err
    assert not (tmp_path / "run").exists()


def test_a_tiny_run_on_the_codes_suite_then_a_plot(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "--recipe", "tiny", "--steps", "1", "--quiet", "--out", str(run)]) == 0
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1]
    assert lines[0]["episodes"] == 4 and lines[0]["infra_errors"] == 0
    assert json.loads((run / "config.json").read_text())["config_hash"] == lines[0]["config_hash"]
    assert (run / "checkpoints" / "step-00001" / "learner.pt").is_file()
    assert main(["train", "--plot", f"tiny={run}", "--out", str(tmp_path / "curves")]) == 0
    assert (tmp_path / "curves.png").stat().st_size > 1000
    assert (tmp_path / "curves.csv").read_text().splitlines()[1].startswith("tiny,1,")
