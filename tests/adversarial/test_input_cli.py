"""Bad command lines and bad files through the CLI: exit 2, one line naming the flag or file:line, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envgym import cli

from fakes import NOTES_SUITE


def _eval(out: Path, *extra: str) -> list[str]:
    return ["eval", "--suite", str(NOTES_SUITE), "--split", "all", "--agent", "oracle", "--quiet",
            "--out", str(out), *extra]


@pytest.mark.parametrize(("flag", "value"), [
    ("--runs", "0"), ("--max-steps", "0"), ("--concurrency", "0"), ("--limit", "0"), ("--runs", "-3"),
    ("--step-timeout", "nan"), ("--step-timeout", "inf"), ("--step-timeout", "-1"), ("--step-timeout", "0"),
])
def test_out_of_range_flags_exit_2_naming_the_flag(tmp_path, capsys, screen, flag, value) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(_eval(tmp_path / "run", flag, value))
    assert info.value.code == 2
    stderr = capsys.readouterr().err + screen()[1]
    assert f"argument {flag}:" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "run").exists()  # refused before anything ran


def test_check_concurrency_zero_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["check", "test/notes-v1", "--concurrency", "0"])
    assert info.value.code == 2 and "argument --concurrency:" in capsys.readouterr().err


def test_eval_out_that_is_a_file(tmp_path, screen) -> None:
    target = tmp_path / "taken"
    target.write_text("keep me")
    assert cli.main(_eval(target)) == 2
    stderr = screen()[1]
    assert "--out" in stderr and "not a directory" in stderr and "Traceback" not in stderr
    assert target.read_text() == "keep me"


def test_leaderboard_out_that_is_a_file(tmp_path, screen) -> None:
    assert cli.main(_eval(tmp_path / "run")) == 0
    target = tmp_path / "board"
    target.write_text("keep me")
    assert cli.main(["leaderboard", "build", str(tmp_path / "run"), "--out", str(target)]) == 2
    assert "--out" in screen()[1] and target.read_text() == "keep me"


OSWORLD_TASKS = Path(__file__).parents[1] / "gui" / "fixtures" / "osworld"
OUT_COMMANDS = {  # every subcommand with an output flag: its command line writing to OUT
    "eval": lambda tmp, out: _eval(out),
    "leaderboard build": lambda tmp, out: ["leaderboard", "build", str(tmp), "--out", out],
    "leaderboard build --update": lambda tmp, out: ["leaderboard", "build", str(tmp), "--update", out],
    "train": lambda tmp, out: ["train", "--recipe", "tiny", "--quiet", "--out", out],
    "train --plot": lambda tmp, out: ["train", "--plot", str(tmp), "--out", out],
    "osworld import": lambda tmp, out: ["osworld", "import", str(OSWORLD_TASKS), "--out", out],
    "swe import": lambda tmp, out: ["swe", "import", str(tmp / "instances.jsonl"), "--no-build", "--out", out],
    "swe label": lambda tmp, out: ["swe", "label", str(tmp / "instances.jsonl"), "--out", out],
    "swe mine": lambda tmp, out: ["swe", "mine", str(Path(__file__).parents[2]), "--suite", "x", "--out", out],
    "swe grade": lambda tmp, out: ["swe", "grade", str(tmp / "preds.jsonl"), "--suite", "swe-toolz", "--out", out],
}


@pytest.mark.parametrize("where", ["below a file", "unwritable"])
@pytest.mark.parametrize("command", sorted(OUT_COMMANDS))
def test_an_unusable_out_exits_2_with_one_line_naming_it(tmp_path, capsys, screen, command, where) -> None:
    # below a regular file: NotADirectoryError; /proc: nothing can be created there, even by root (the tests
    # run as root, who may write anywhere else): FileNotFoundError. Both printed tracebacks.
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me")
    out, why = ((str(blocker / "run" / "deeper"), f"{blocker} is a file, not a directory")
                if where == "below a file" else ("/proc/envgym-out", "cannot write there"))
    assert cli.main(OUT_COMMANDS[command](tmp_path, out)) == 2
    stderr = capsys.readouterr().err + screen()[1]
    flag = "--update" if "--update" in command else "--out"
    assert f"{flag} {out}: {why}" in stderr and stderr.count("\n") == 1 and "Traceback" not in stderr
    assert blocker.read_text() == "keep me"


def test_bad_task_file_is_one_line_naming_file_and_line(tmp_path, screen) -> None:
    folder = tmp_path / "[weird] dir"  # brackets are rich markup: the path must print as written
    folder.mkdir()
    path = folder / "t.jsonl"
    path.write_bytes(NOTES_SUITE.read_bytes().split(b"\n")[0] + b"\n" + b'{"id": "\xff"}\n')
    assert cli.main(["tasks", "validate", str(path)]) == 2
    stderr = screen()[1]
    assert f"{path}:2: not UTF-8" in stderr and stderr.count("\n") == 1 and "Traceback" not in stderr


def test_eval_on_corrupt_records_names_the_line(tmp_path, screen) -> None:
    run = tmp_path / "run"
    assert cli.main(_eval(run)) == 0
    records = run / "records.jsonl"
    lines = records.read_bytes().split(b"\n")
    records.write_bytes(b"\n".join([lines[0], b"[" * 100_000, *lines[1:]]))
    assert cli.main(_eval(run)) == 2
    assert f"{records}:2: corrupt record" in screen()[1]
    assert records.read_bytes().count(b"\n") == 4  # nothing cut or lost


def test_eval_on_corrupt_run_json(tmp_path, screen) -> None:
    run = tmp_path / "run"
    assert cli.main(_eval(run)) == 0
    (run / "run.json").write_bytes(b"\xff\xfe{")
    assert cli.main(_eval(run)) == 2
    assert "run.json" in screen()[1] and "Traceback" not in screen()[1]


def test_leaderboard_flags_runs_over_different_task_sets(tmp_path, screen) -> None:
    assert cli.main(_eval(tmp_path / "full")) == 0
    assert cli.main(_eval(tmp_path / "first", "--limit", "1")) == 0
    assert cli.main(["leaderboard", "build", str(tmp_path / "full"), str(tmp_path / "first"),
                     "--out", str(tmp_path / "lb")]) == 0
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    names = sorted(board["suites"])
    assert len(names) == 2 and all(name.startswith("notes (task set ") for name in names)
    assert sorted(entry["episodes"] for name in names for entry in board["suites"][name]) == [1, 3]
    assert "different task sets" in screen()[1] and any("different task sets" in w for w in board["warnings"])
    assert "different task sets" in (tmp_path / "lb" / "leaderboard.md").read_text()


def test_tasks_validate_unknown_env_names_the_file_and_task(tmp_path, screen) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(NOTES_SUITE.read_text().replace("test/notes-v1", "test/nots-v1"))
    assert cli.main(["tasks", "validate", str(path)]) == 2
    stderr = screen()[1]
    assert f"{path}: task 'notes-delete'" in stderr and "did you mean 'test/notes-v1'" in stderr
    assert "(field 'env_id')" in stderr


@pytest.mark.parametrize("argv", [["swe", "grade", "p.jsonl", "--concurrency", "0"],
                                  ["swe", "import", "i.jsonl", "--test-timeout", "nan"]])
def test_swe_flags_out_of_range_exit_2(capsys, argv) -> None:
    with pytest.raises(SystemExit) as info:  # was silently 1 worker, and a NaN test timeout
        cli.main(argv)
    assert info.value.code == 2 and "argument --" in capsys.readouterr().err
