import json

import pytest

from envgym import cli

from fakes import NOTES_SUITE


def test_list_shows_envs_and_suites(screen):
    assert cli.main(["list"]) == 0
    stdout, _ = screen()
    assert "tool/retail-v1" in stdout and "tool/assistant-v1" in stdout
    assert "task generators" in stdout and "tool-retail-gen" in stdout  # generators have no file to list


def test_eval_then_resume_then_leaderboard(screen, tmp_path):
    args = ["eval", "--suite", str(NOTES_SUITE), "--split", "all", "--agent", "oracle", "--out", str(tmp_path / "run")]
    assert cli.main(args) == 0
    assert "ran 3, skipped 0 of 3" in screen()[0]
    assert cli.main(args) == 0
    assert "ran 0, skipped 3 of 3" in screen()[0]
    assert cli.main(["leaderboard", "build", str(tmp_path / "run"), "--out", str(tmp_path / "lb")]) == 0
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert "notes" in json.dumps(board)
    assert (tmp_path / "lb" / "index.html").exists() and (tmp_path / "lb" / "leaderboard.md").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "--suite", "tool-retial", "--agent", "oracle", "--out", "x"], "did you mean 'tool-retail'"),
    (["eval", "--suite", "tool-retail", "--agent", "orcale", "--out", "x"], "did you mean 'oracle'"),
    (["eval", "--suite", "tool-retail", "--agent", "openai", "--out", "x"], "needs a model"),
    (["check", "tool/retial-v1"], "did you mean 'tool/retail-v1'"),
])
def test_user_errors_are_one_clear_line(screen, argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    _, stderr = screen()
    assert message in stderr and "Traceback" not in stderr


def test_tasks_validate_names_line_and_field(screen, tmp_path):
    lines = NOTES_SUITE.read_text().splitlines()
    broken = json.loads(lines[1])
    broken["split"] = "holdout"
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(broken)]) + "\n")
    assert cli.main(["tasks", "validate", str(path)]) == 2
    assert "t.jsonl:2" in screen()[1] and "split" in screen()[1]
    assert cli.main(["tasks", "validate", str(NOTES_SUITE)]) == 0
    assert "3 tasks valid" in screen()[0]


def test_check_table_says_how_many_tasks_ran_the_null_gate_inverted(capsys, monkeypatch) -> None:
    import envgym.check

    async def check(env_id: str, **kwargs: object) -> envgym.check.CheckReport:
        return envgym.check.CheckReport(env_id, tasks=5, gated=5, null_accepted={"a": "no call", "b": "no call"})

    monkeypatch.setattr(envgym.check, "check", check)
    assert cli.main(["check", "tool/retail-v1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "admission gates (oracle 1, null 0; null 1 on 2 declared)" in out
