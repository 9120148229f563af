"""``envgym check`` on a generator (envgym.check_generator): its sample made once, in a worker thread, with
progress lines for a slow one; the names it had in envgym.check warn and still work; ``envgym tasks generate``
prints a slow generator's rate in figures that mean something."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

import envgym.check_gates
import envgym.generate
from envgym import check_generator as module
from envgym import cli
from envgym.check_generator import check_generator

NAME = "tool-retail-gen"


@pytest.fixture
def made(monkeypatch):
    """Every task this process generates, by id, with the thread that made it (the real generator makes it)."""
    calls: list[tuple[str, int]] = []
    real = envgym.generate.generate

    def counting(name, seed, **kwargs):
        task = real(name, seed, **kwargs)
        calls.append((task.id, threading.get_ident()))
        return task

    monkeypatch.setattr(envgym.generate, "generate", counting)
    return calls


async def test_the_sample_is_made_once_off_the_event_loop_with_progress(made, monkeypatch):
    monkeypatch.setattr(module, "PROGRESS_EVERY_S", 0.0)  # every task reports
    lines: list[str] = []
    report = await check_generator(NAME, sample=4, seed=1, gates=False, gymnasium_check=False, progress=lines.append)
    assert report.ok, report.failed
    assert report.checked == 4 and report.selection == "a sample of 4, seed 1"
    loop = threading.get_ident()
    # made once, in a worker thread: played, compared and hashed alike (the one made on the loop's thread is the
    # env's reset(task=<id>) resolving an id, a contract check)
    by_id = Counter(task_id for task_id, thread in made if thread != loop)
    assert len(by_id) == 4 and set(by_id.values()) == {1}, by_id
    assert [task_id for task_id, thread in made if thread == loop] == [made[0][0]]
    assert all(line.startswith(f"{NAME}@") for line in lines)  # the suite checked: NAME@START:STOP
    progress = [line.split(": ", 1)[1].split(" (")[0] for line in lines[:-1]]
    assert progress == [f"made {k} of 4 tasks to check" for k in range(1, 5)]
    assert lines[-1].split(": ", 1)[1].startswith("made 4 tasks to check in ")


async def test_the_gates_say_how_far_they_got(monkeypatch):
    # a 200-task gate run on the desktop generator takes an hour; it printed nothing until the end
    monkeypatch.setattr(envgym.check_gates, "PROGRESS_EVERY_S", 0.0)
    lines: list[str] = []
    report = await check_generator(NAME, sample=3, seed=2, gymnasium_check=False, tamper=0, progress=lines.append)
    assert report.ok, report.failed
    gates = [line.split(": gates: ", 1)[1] for line in lines if ": gates: " in line]
    assert [g.split(" (")[0] for g in gates[:-1]] == [f"{k} of 3 tasks played, 0 failed" for k in (1, 2, 3)]
    assert gates[-1].startswith("3 tasks played in ")


async def test_a_quick_generation_prints_nothing(made):
    lines: list[str] = []
    report = await check_generator(NAME, limit=2, gates=False, gymnasium_check=False, progress=lines.append)
    assert report.checked == 2 and report.selection == "the first 2"
    assert lines == []


def test_the_moved_names_warn_and_stay_the_same_objects():
    import envgym.check

    for name in ("check_generator", "GENERATOR_SAMPLE", "DETERMINISM_SAMPLE"):
        with pytest.warns(DeprecationWarning, match=f"envgym.check.{name} moved to envgym.check_generator.{name}"):
            assert getattr(envgym.check, name) is getattr(module, name)
    with pytest.raises(AttributeError):
        envgym.check.no_such_name  # noqa: B018


@pytest.mark.parametrize(("n", "seconds", "expected"), [
    (200, 1.0, "200 tasks/s"), (2000, 1.0, "2,000 tasks/s"), (20, 4.0, "5 tasks/s"), (200, 60.0, "3.33 tasks/s"),
    (10, 200.0, "0.05 tasks/s, 20 s a task"), (3, 71.0, "0.042 tasks/s, 23.7 s a task")])
def test_generation_rate_is_printed_to_its_precision(n, seconds, expected):
    assert cli._rate(n, seconds) == expected
