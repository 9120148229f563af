"""How ``envgym eval --workers N`` hands out jobs (:class:`envgym._eval_workers._Lanes`): a task's runs to one worker,
lanes kept level, a task taken over whole-heartedly rather than one job of each of many tasks."""

from collections import Counter

from envgym._eval_workers import _Lanes, _Outstanding


def _lanes(tasks: int, runs: int, lanes: int = 2, balance: int = 12) -> _Lanes:
    made = _Lanes(lanes, balance)
    jid = 0
    for run in range(runs):  # run-major, as evaluate() lists them
        for task in range(tasks):
            made.add(_Outstanding((jid, task, "suite", run, 1)))
            jid += 1
    return made


def _drain(lanes: _Lanes, lane: int, sent: set[int], count: int | None = None) -> list[tuple]:
    taken = []
    while count is None or len(taken) < count:
        item = lanes.take(lane, sent)
        if item is None:
            break
        taken.append(item.job)
        sent.add(item.job[1])
    return taken


def test_a_lane_plays_its_own_tasks_in_turn_run_major():
    lanes = _lanes(tasks=6, runs=3)
    taken = _drain(lanes, 0, set(), 6)
    assert [(task, run) for _, task, _, run, _ in taken] == [(0, 0), (2, 0), (4, 0), (0, 1), (2, 1), (4, 1)]


def test_every_job_is_handed_out_once():
    lanes = _lanes(tasks=7, runs=5)
    sent: list[set[int]] = [set(), set()]
    taken = []
    turn = 0
    while lanes:
        item = lanes.take(turn % 2, sent[turn % 2])
        turn += 1 + (turn % 3 == 0)  # the workers ask unevenly
        if item is not None:
            taken.append(item.job[0])
            sent[(turn - 1) % 2].add(item.job[1])
    assert sorted(taken) == list(range(35))


def test_a_worker_whose_lane_ran_dry_takes_one_task_runs_not_one_run_of_each_task():
    """Until 2026-12-03 it took single jobs from the other lane's end: every one of a task new to it (whose
    per-task caches it then had to work out for that single episode)."""
    lanes = _lanes(tasks=4, runs=10, balance=1000)  # lane 0: tasks 0 and 2; lane 1: tasks 1 and 3
    ours = _drain(lanes, 1, set(), 20)
    assert Counter(task for _, task, *_ in ours) == {1: 10, 3: 10}
    sent = {1, 3}
    stolen = _drain(lanes, 1, sent, 10)
    assert {task for _, task, *_ in stolen} == {0}  # lane 0 holds 20: half of the gap, of one task
    assert len(stolen) == 10


def test_a_task_the_worker_was_sent_before_is_taken_first():
    lanes = _Lanes(2, balance=1000)
    for jid, task in enumerate([0] * 10 + [2] * 4):  # lane 0: task 0 has the most jobs left
        lanes.add(_Outstanding((jid, task, "suite", jid, 1)))
    assert {lanes.take(1, {2}).job[1] for _ in range(4)} == {2}  # but the worker of lane 1 has task 2
    assert lanes.take(1, {2}).job[1] == 0  # then the task with the most jobs left
    assert lanes.sizes == [5, 4]


def test_lanes_are_levelled_before_one_runs_dry():
    """A worker that gets ahead by more than ``balance`` jobs takes some of the fullest lane's."""
    lanes = _lanes(tasks=4, runs=40, balance=12)
    sent = set()
    taken = _drain(lanes, 1, sent, 60)  # worker 1 runs ahead while worker 0 takes nothing
    assert {task for _, task, *_ in taken} - {1, 3}  # it took tasks of lane 0 before its own ran out
    assert abs(lanes.sizes[0] - lanes.sizes[1]) <= 13
