"""The scheduler's firing rules, on the simulated clock."""

from __future__ import annotations

import pytest

from envgym.timed.scheduler import EventState, Scheduler


def ids(fired):
    return [(f.id, f.time) for f in fired]


def test_absolute_times_fire_in_time_order_and_ties_in_scheduling_order():
    s = Scheduler()
    s.schedule("c", at=30)
    s.schedule("a", at=10)
    s.schedule("b1", at=20)
    s.schedule("b2", at=20)
    assert ids(s.run_until(100)) == [("a", 10), ("b1", 20), ("b2", 20), ("c", 30)]
    assert s.now == 100
    assert [f.seq for f in s.fired] == sorted(f.seq for f in s.fired)


def test_run_until_stops_at_the_target_and_leaves_later_events_pending():
    s = Scheduler()
    s.schedule("early", delay=5)
    s.schedule("late", delay=50)
    assert ids(s.run_until(10)) == [("early", 5)]
    assert s.now == 10 and s.pending == 1 and s.next_time() == 50
    assert ids(s.run_until(50)) == [("late", 50)]


def test_delay_counts_from_scheduling_time_and_past_at_means_now():
    s = Scheduler()
    s.run_until(100)
    s.schedule("later", delay=15)
    s.schedule("overdue", at=20)
    assert ids(s.run_until(200)) == [("overdue", 100), ("later", 115)]


def test_dependencies_release_after_the_last_one_fires_plus_delay():
    s = Scheduler()
    s.schedule("boil", at=480)
    s.schedule("chop", at=300)
    s.schedule("cook", after=("boil", "chop"), delay=600)
    s.schedule("serve", after=("cook",))
    assert ids(s.run_until(5000)) == [("chop", 300), ("boil", 480), ("cook", 1080), ("serve", 1080)]


def test_at_and_dependency_together_fire_at_the_later_of_both():
    s = Scheduler()
    s.schedule("dep", at=10)
    s.schedule("wait_for_dep", after=("dep",), at=50)
    s.schedule("dep_late", at=80)
    s.schedule("after_late", after=("dep_late",), at=50)
    assert ids(s.run_until(100)) == [("dep", 10), ("wait_for_dep", 50), ("dep_late", 80), ("after_late", 80)]


def test_a_dependency_that_already_fired_counts_at_once():
    s = Scheduler()
    s.schedule("first", at=5)
    s.run_until(10)
    s.schedule("second", after=("first",), delay=1)
    assert ids(s.run_until(20)) == [("second", 11)]


def test_conditions_are_evaluated_after_firings_and_on_poke():
    world = {"sent": False, "ready": False}
    s = Scheduler()
    s.schedule("reply", when=lambda: world["sent"], delay=600)
    s.schedule("on_ready", when=lambda: world["ready"])
    s.schedule("make_ready", at=30, action=lambda e: world.update(ready=True))
    s.run_until(100)
    assert ids(s.fired) == [("make_ready", 30), ("on_ready", 30)]
    world["sent"] = True  # an agent's action, outside the scheduler
    s.poke()
    assert ids(s.run_until(1000)) == [("reply", 700)]


def test_a_condition_true_at_release_arms_at_once():
    s = Scheduler()
    s.schedule("now", when=lambda: True, delay=3)
    assert ids(s.run_until(10)) == [("now", 3)]


def test_guard_failing_skips_the_event_and_its_dependents():
    state = {"collected": True}
    s = Scheduler()
    burn = s.schedule("burn", at=10, only_if=lambda: not state["collected"])
    follow = s.schedule("smoke_alarm", after=("burn",))
    assert s.run_until(20) == []
    assert burn.state is EventState.SKIPPED and follow.state is EventState.CANCELLED
    assert s.pending == 0


def test_cancel_stops_an_event_and_its_dependents():
    s = Scheduler()
    s.schedule("a", at=10)
    s.schedule("b", after=("a",))
    assert s.cancel("a") is True
    assert s.cancel("a") is False
    assert s.run_until(100) == [] and s.pending == 0


def test_actions_may_schedule_more_events_and_they_interleave_in_time():
    s = Scheduler()
    s.schedule("start", at=0, action=lambda e: s.schedule("done", delay=30))
    s.schedule("middle", at=10)
    assert ids(s.run_until(60)) == [("start", 0), ("middle", 10), ("done", 30)]


def test_duplicate_ids_and_negative_delays_are_refused():
    s = Scheduler()
    s.schedule("x")
    with pytest.raises(ValueError, match="already"):
        s.schedule("x")
    with pytest.raises(ValueError, match="negative"):
        s.schedule("y", delay=-1)


def test_the_timeline_is_a_pure_function_of_the_inputs():
    def build() -> list[tuple[str, float]]:
        s = Scheduler()
        for i in range(200):
            s.schedule(f"e{i}", at=(i * 7919) % 97)
        return ids(s.run_until(1000))

    assert build() == build()
    times = [t for _, t in build()]
    assert times == sorted(times)
