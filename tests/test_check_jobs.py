"""``envgym check --jobs N``: names checked side by side, each in a process of its own, print the same tables as
one by one, each whole, and the run exits as one by one would."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from envgym import cli
from envgym.cli import main

NAMES = ["tool/codes-v1", "timed/kitchen-v1"]
TITLE = re.compile(r"^ *\S+: 1 of \d+ tasks checked", re.MULTILINE)  # rich centres a title over its table


@pytest.fixture
def screen(monkeypatch):
    """The root conftest's screen, with the command line's own console options (soft wrap): the checks run in
    processes of their own print through those."""
    stdout, stderr = io.StringIO(), io.StringIO()
    monkeypatch.setattr(cli, "out", Console(file=stdout, width=160, color_system=None, soft_wrap=True))
    monkeypatch.setattr(cli, "console", Console(file=stderr, width=160, color_system=None, soft_wrap=True))
    return lambda: (stdout.getvalue(), stderr.getvalue())


def blocks(text: str) -> list[str]:
    """The output cut at each table's title line: one block per name checked."""
    starts = [m.start() for m in TITLE.finditer(text)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=False)]


def test_names_checked_side_by_side_print_the_same_tables_each_whole(screen) -> None:
    assert main(["check", *NAMES, "--limit", "1"]) == 0
    one_by_one, _ = screen()
    assert main(["check", *NAMES, "--limit", "1", "--jobs", "2"]) == 0
    side_by_side = screen()[0][len(one_by_one):]
    assert len(blocks(one_by_one)) == 2 and "ok" in one_by_one and "all pass" in one_by_one
    # each name's table arrives whole (nothing of the other inside it), as wide as here, whatever the order
    assert sorted(blocks(side_by_side)) == sorted(blocks(one_by_one))


def test_bad_input_in_one_name_exits_2_after_the_others_ran(screen) -> None:
    assert main(["check", "nosuchgen", "tool/codes-v1", "--limit", "1", "--jobs", "2"]) == 2
    stdout, stderr = screen()
    assert "'nosuchgen' names no task generator" in stderr
    assert [b.split(":")[0].strip() for b in blocks(stdout)] == ["tool/codes-v1"]  # the other name was still checked
    assert "check failed for 1 of 2 envs: nosuchgen (its check exited 2: bad input)" in stdout
    # an unknown env id stops the run before any check starts, as it would one by one
    assert main(["check", "tool/codes-v1", "tool/nope-v1", "--jobs", "2"]) == 2
    assert "unknown env id 'tool/nope-v1'" in screen()[1]
    assert len(blocks(screen()[0])) == 1


def test_names_of_one_family_are_never_checked_at_once() -> None:
    from envgym.cli_check import _family

    # the scheduler keeps one check per family running: a GUI env and the GUI generator count as one family
    assert {_family(n) for n in ("gui/desktop-v1", "gui/osworld-v1", "gui-desktop-gen", "gui-desktop-gen@0:50")} \
        == {"gui"}
    assert _family("text-scienceworld-gen") == "text" and _family("nosuchgen") == "nosuchgen"
