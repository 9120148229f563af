"""``envgym check --limit N`` / ``--sample N --seed S``: every check that plays episodes runs on those tasks only.

The env here is the notes domain with six tasks, the last three of them broken (their reference solutions
answer wrong, so the oracle gate fails there), and it records which tasks any of its episodes was reset on.
"""

from __future__ import annotations

import pytest

import envgym
from envgym import cli
from envgym.check import check, choose_tasks
from envgym.task import write_tasks
from envgym.tools import ToolEnv
from envgym.types import Action

from fakes import NOTES, notes_tasks

RESET_ON: set[str] = set()
ENV_ID = "test/sampled-six-notes-v1"


class RecordingNotes(ToolEnv):
    """The notes ``ToolEnv``, noting the id of every task an episode is reset on."""

    async def reset(self, *, task=None, seed=None, options=None):
        result = await super().reset(task=task, seed=seed, options=options)
        RESET_ON.add(self.task.id)
        return result


def _six_tasks():
    good = [t.model_copy(update={"env_id": ENV_ID}) for t in notes_tasks()]
    count = good[1]
    broken = [count.model_copy(update={"id": f"notes-broken-{i}",
                                       "solution": (Action.say(f"You have {4 + i} notes."),)}) for i in range(3)]
    return good + broken


@pytest.fixture
def six_notes(tmp_path):
    write_tasks(tmp_path / "six.jsonl", _six_tasks())
    envgym.register(ENV_ID, f"{__name__}:RecordingNotes", kwargs={"domain": NOTES},
                    suites=(str(tmp_path / "six.jsonl"),), max_episode_steps=10)
    RESET_ON.clear()
    try:
        yield ENV_ID
    finally:
        envgym.registry._registry.pop(ENV_ID)


async def test_limit_checks_the_first_tasks_only(six_notes):
    report = await check(six_notes, gymnasium_check=False, limit=3, tamper=1)
    assert report.ok, (report.failed, report.gate_failures, report.tamper_failures)  # the broken three never ran
    assert (report.tasks, report.checked, report.gated, report.selection) == (6, 3, 3, "the first 3")
    assert {"notes-delete", "notes-count", "notes-add"} == RESET_ON


async def test_a_seeded_sample_checks_those_tasks_and_the_same_seed_draws_the_same(six_notes):
    every = _six_tasks()
    # a seed whose draw holds good and broken tasks, so the report shows which ones were gated
    seed = next(s for s in range(100) if 0 < sum(t.id.startswith("notes-broken") for t in
                                                  choose_tasks(every, sample=3, seed=s)[0]) < 3)
    chosen = {t.id for t in choose_tasks(every, sample=3, seed=seed)[0]}
    assert chosen == {t.id for t in choose_tasks(every, sample=3, seed=seed)[0]}
    report = await check(six_notes, gymnasium_check=False, sample=3, seed=seed, tamper=1)
    assert (report.tasks, report.checked, report.gated) == (6, 3, 3)
    assert report.selection == f"a sample of 3, seed {seed}"
    assert {task_id for task_id, _ in report.gate_failures} == {i for i in chosen if i.startswith("notes-broken")}
    assert chosen == RESET_ON


def test_choose_tasks_keeps_suite_order_and_all_when_n_is_not_smaller():
    every = _six_tasks()
    picked, how = choose_tasks(every, sample=4, seed=7)
    assert how == "a sample of 4, seed 7"
    assert [every.index(t) for t in picked] == sorted(every.index(t) for t in picked) and len(picked) == 4
    assert choose_tasks(every, limit=6) == (every, "") and choose_tasks(every, sample=9) == (every, "")
    assert choose_tasks(every) == (every, "")
    for kwargs in ({"limit": 0}, {"sample": -1}, {"limit": 2, "sample": 2}):
        with pytest.raises(ValueError):
            choose_tasks(every, **kwargs)


def test_the_cli_report_says_how_many_of_how_many_were_checked(six_notes, screen):
    assert cli.main(["check", six_notes, "--limit", "2", "--tamper-sample", "0"]) == 0, screen()
    stdout = " ".join(screen()[0].split())
    assert f"{six_notes}: 2 of 6 tasks checked (the first 2)" in stdout
    assert "admission gates (oracle 1, null 0) on 2 of 6 tasks" in stdout


@pytest.mark.parametrize(("argv", "says"), [
    (["--limit", "0"], "argument --limit: must be at least 1, got 0"),
    (["--limit", "-2"], "argument --limit: must be at least 1, got -2"),
    (["--sample", "0"], "argument --sample: must be at least 1, got 0"),
    (["--limit", "2", "--sample", "2"], "argument --sample: not allowed with argument --limit"),
])
def test_bad_counts_exit_2_naming_the_flag(argv, says, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["check", "test/notes-v1", *argv])
    err = capsys.readouterr().err
    assert info.value.code == 2 and says in err and "Traceback" not in err


@pytest.mark.parametrize(("argv", "says"), [
    (["--seed", "3"], "--seed S seeds --sample N"),
    (["--all-tasks", "--limit", "2"], "--all-tasks gates every task and --limit a few of them"),
    (["--all-tasks", "--sample", "2"], "--all-tasks gates every task and --sample a few of them"),
])
def test_flags_that_do_not_go_together_exit_2(argv, says, screen):
    assert cli.main(["check", "test/notes-v1", *argv]) == 2
    stderr = " ".join(screen()[1].split())
    assert says in stderr and "Traceback" not in stderr
