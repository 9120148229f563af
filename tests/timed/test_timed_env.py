"""The timed env: handles and late results, out-of-order arrival, waits, notifications, variants, horizon."""

from __future__ import annotations

import json

from timed_helpers import BACKOFFICE_WORLD, call, calls, timed_task

import envgym
from envgym.types import Action
from envgym.wrappers import Grading
from envgym_timed.env import TimedEnv, TimedObservation


def content(obs, i=0):
    return json.loads(obs.tool_results[i].content)


async def test_make_builds_a_time_evolving_env_with_wait_tools():
    async with envgym.make("timed/kitchen-v1") as env:
        assert env.unwrapped.time_evolving and env.unwrapped.has_write_actions
        obs, info = await env.reset(seed=0)
        names = {t["function"]["name"] for t in info["tools"]}
        assert {"wait", "wait_for_notification", "start_job", "serve"} <= names
        assert isinstance(obs, TimedObservation) and obs.clock == "09:00:00" and obs.time_s == 0


async def test_a_slow_call_returns_a_handle_and_its_result_arrives_later():
    task = timed_task("backoffice", world=BACKOFFICE_WORLD, latency={"get_quote": {"dist": "fixed", "seconds": 300}})
    env = TimedEnv("backoffice", thinking="none")
    await env.reset(task=task)
    obs, *_ = await env.step(call("get_quote", supplier="acme", item="bolts"))
    assert content(obs) == {"handle": "h1", "status": "pending", "tool": "get_quote"}
    assert obs.notifications == ()
    obs, *_ = await env.step(call("wait", seconds=299))
    assert obs.notifications == () and obs.time_s == 299
    obs, *_ = await env.step(call("wait", seconds=1))
    (note,) = obs.notifications
    assert note.kind == "tool_result" and note.source == "h1" and note.clock == "09:05:00"
    assert json.loads(note.content)["result"]["unit_price"] == 0.42
    assert "tool_result from h1" in obs.text


async def test_results_arrive_out_of_order_while_the_agent_keeps_calling():
    latency = {"get_quote": {"dist": "fixed", "seconds": 500}, "check_stock": {"dist": "fixed", "seconds": 100}}
    task = timed_task("backoffice", world=BACKOFFICE_WORLD, latency=latency)
    env = TimedEnv("backoffice", thinking="none")
    await env.reset(task=task)
    await env.step(call("get_quote", supplier="acme", item="bolts"))            # h1, 500 s
    obs, *_ = await env.step(call("check_stock", warehouse="north", sku="sku-7"))  # h2, 100 s
    assert content(obs)["handle"] == "h2"
    obs, *_ = await env.step(call("wait", seconds=600))
    assert [n.source for n in obs.notifications] == ["h2", "h1"]
    assert [n.time for n in obs.notifications] == [100, 500]
    timeline = env.timeline()
    first, second = timeline.calls[0], timeline.calls[1]
    assert first.issued_seq < second.issued_seq and second.done_seq < first.done_seq


async def test_latencies_are_drawn_from_the_seeded_distribution_within_bounds():
    latency = {"get_quote": {"dist": "uniform", "low": 60, "high": 120}}
    task = timed_task("backoffice", world=BACKOFFICE_WORLD, latency=latency)

    async def arrivals(seed: int) -> list[float]:
        env = TimedEnv("backoffice", thinking="none")
        await env.reset(task=task, seed=seed)
        await env.step(calls(*[("get_quote", {"supplier": "acme", "item": "bolts"})] * 5))
        obs, *_ = await env.step(call("wait", seconds=200))
        return [n.time for n in obs.notifications]

    first = await arrivals(1)
    assert first == await arrivals(1)
    assert first != await arrivals(2)
    assert len(first) == 5 and all(60 <= t <= 120 for t in first)


async def test_wait_for_notification_wakes_on_its_source_and_not_on_others():
    events = [{"id": "lee", "at": "09:10", "effects": [{"message": {"from": "lee", "text": "hi"}}]},
              {"id": "courier", "at": "09:25", "effects": [{"message": {"from": "courier", "text": "11:00"}}]}]
    env = TimedEnv("assistant", thinking="none")
    await env.reset(task=timed_task("assistant", events=events))
    obs, *_ = await env.step(call("wait_for_notification", timeout=3600, source="courier"))
    assert content(obs) == {"now": "09:25:00", "timed_out": False, "waited_s": 1500.0, "woke_on": "courier"}
    assert [n.source for n in obs.notifications] == ["lee", "courier"]
    obs, *_ = await env.step(call("wait_for_notification", timeout=60))
    assert content(obs)["timed_out"] is True and obs.clock == "09:26:00"


async def test_waiting_on_a_finished_handle_returns_at_once():
    task = timed_task("backoffice", world=BACKOFFICE_WORLD, latency={"get_quote": {"dist": "fixed", "seconds": 30}})
    env = TimedEnv("backoffice", thinking="none")
    await env.reset(task=task)
    await env.step(call("get_quote", supplier="acme", item="bolts"))
    await env.step(call("wait", seconds=60))
    obs, *_ = await env.step(call("wait_for_notification", timeout=600, source="h1"))
    assert content(obs)["waited_s"] == 0 and content(obs)["woke_on"] == "h1"


async def test_wait_until_a_time_of_day_and_bad_waits_are_error_observations():
    env = TimedEnv("kitchen", thinking="none")
    await env.reset(task=timed_task("kitchen"))
    obs, *_ = await env.step(call("wait", until="09:30"))
    assert obs.clock == "09:30:00"
    obs, *_ = await env.step(call("wait", until="09:00"))  # the past: no time passes
    assert obs.clock == "09:30:00"
    obs, _, terminated, *_ = await env.step(call("wait", seconds=5, until="10:00"))
    assert obs.last_action_error and not terminated
    obs, *_ = await env.step(call("wait", until="25 past"))
    assert "time of day" in obs.last_action_error


async def test_sync_variant_answers_in_the_same_step():
    task = timed_task("backoffice", variant="sync", world=BACKOFFICE_WORLD,
                      latency={"get_quote": {"dist": "fixed", "seconds": 300}})
    env = TimedEnv("backoffice", thinking="none")
    await env.reset(task=task)
    obs, *_ = await env.step(call("get_quote", supplier="boltco", item="bolts"))
    assert content(obs) == {"item": "bolts", "supplier": "boltco", "unit_price": 0.39}
    assert obs.time_s == 0


async def test_a_refused_slow_call_reports_its_error_when_done():
    task = timed_task("backoffice", world=BACKOFFICE_WORLD, latency={"get_quote": {"dist": "fixed", "seconds": 10}})
    env = TimedEnv("backoffice", thinking="none")
    await env.reset(task=task)
    await env.step(call("get_quote", supplier="nobody", item="bolts"))
    obs, *_ = await env.step(call("wait", seconds=10))
    assert json.loads(obs.notifications[0].content)["error"].startswith("no quote for")
    assert env.timeline().calls[0].ok is False


async def test_the_final_answer_drains_calls_in_flight_then_grades():
    task = timed_task("backoffice", world=BACKOFFICE_WORLD, latency={"get_quote": {"dist": "fixed", "seconds": 90}})
    env = Grading(TimedEnv("backoffice", thinking="none"))  # the kernel grades, as make() arranges
    await env.reset(task=task)
    await env.step(call("get_quote", supplier="acme", item="bolts"))
    obs, _, terminated, _, info = await env.step(Action(text="done"))
    assert terminated and "verdict" in info and obs.time_s == 90
    assert info["verdict"].evidence["efficiency"]["virtual_time_s"] == 90


async def test_reaching_the_horizon_truncates_with_a_verdict():
    env = Grading(TimedEnv("kitchen", thinking="none"))
    await env.reset(task=timed_task("kitchen", horizon_s=600))
    obs, _, terminated, truncated, info = await env.step(call("wait", seconds=5000))
    assert truncated and not terminated and obs.time_s == 600 and "verdict" in info


async def test_waiting_and_idle_time_are_accounted_per_step():
    task = timed_task("backoffice", world=BACKOFFICE_WORLD, latency={"get_quote": {"dist": "fixed", "seconds": 100}})
    env = TimedEnv("backoffice", thinking="fixed:5")
    await env.reset(task=task)
    await env.step(call("get_quote", supplier="acme", item="bolts"))   # issued at 5, done at 105
    await env.step(call("wait", seconds=200))                          # 10..210: 95 s busy, 105 s idle
    step = env.timeline().steps[1]
    assert (step.thinking_s, step.waiting_s, step.idle_s) == (5, 200, 105)
    metrics = env.timeline().metrics()
    assert metrics["waiting_s"] == 200 and metrics["idle_s"] == 105 and metrics["thinking_s"] == 10


KITCHEN = {"stations": {"burner": {"id": "burner", "capacity": 1}},
           "jobs": {"fish": {"id": "fish", "station": "burner", "seconds": 480, "needs": [], "hold_s": 180,
                             "status": "idle"},
                    "rice": {"id": "rice", "station": "burner", "seconds": 600, "needs": [], "hold_s": None,
                             "status": "idle"}},
           "dishes": {}}


async def test_delayed_effects_complete_later_and_food_left_too_long_burns():
    env = TimedEnv("kitchen", thinking="none")
    await env.reset(task=timed_task("kitchen", world=KITCHEN))
    obs, *_ = await env.step(call("start_job", job="fish"))
    assert content(obs) == {"job": "fish", "ready_in_s": 480.0}
    obs, *_ = await env.step(call("start_job", job="rice"))
    assert "burner is full" in obs.last_action_error
    obs, *_ = await env.step(call("wait_for_notification", timeout=3600, source="fish"))
    assert obs.clock == "09:08:00" and obs.notifications[0].content == "fish is ready"
    obs, *_ = await env.step(call("wait", seconds=181))
    assert obs.notifications[0].content.startswith("fish burnt") and env.world.get("jobs.fish.status") == "burnt"
    assert [e.id for e in env.timeline().events] == ["fish:ready", "fish:burnt"]


async def test_collecting_in_time_cancels_the_burn():
    env = TimedEnv("kitchen", thinking="none")
    await env.reset(task=timed_task("kitchen", world=KITCHEN))
    await env.step(call("start_job", job="fish"))
    await env.step(call("wait", seconds=500))
    obs, *_ = await env.step(calls(("collect", {"job": "fish"}), ("start_job", {"job": "rice"})))
    assert obs.last_action_error is None
    await env.step(call("wait", seconds=3600))
    assert env.world.get("jobs.fish.status") == "collected"
    assert [e.id for e in env.timeline().events] == ["fish:ready", "rice:ready"]


async def test_sync_variant_effects_due_now_happen_before_the_next_call():
    env = TimedEnv("kitchen", thinking="none")
    await env.reset(task=timed_task("kitchen", variant="sync", world=KITCHEN))
    obs, *_ = await env.step(calls(("start_job", {"job": "fish"}), ("collect", {"job": "fish"})))
    assert obs.last_action_error is None and obs.time_s == 0


async def test_created_calendar_ids_are_never_reused():
    world = {"contacts": {}, "calendar": {"ev1": {"id": "ev1", "title": "x", "start": "10:00", "minutes": 30,
                                                  "attendees": []}}}
    env = TimedEnv("assistant", thinking="none")
    await env.reset(task=timed_task("assistant", variant="sync", world=world))
    ids = []
    for _ in range(2):
        obs, *_ = await env.step(call("create_event", title="y", start="11:00", minutes=15))
        ids.append(content(obs)["event_id"])
        await env.step(call("cancel_event", event_id=ids[-1]))
    assert len({"ev1", *ids}) == 3


async def test_the_kitchen_says_when_waiting_wasted_an_opportunity():
    world = {**KITCHEN, "dishes": {"plate": {"id": "plate", "needs": ["fish"], "status": "pending"}}}
    env = TimedEnv("kitchen", thinking="none")
    await env.reset(task=timed_task("kitchen", world=world))
    await env.step(call("wait", seconds=60))                       # the fish could have gone on: 60 s wasted
    await env.step(call("start_job", job="fish"))
    await env.step(call("wait_for_notification", timeout=3600, source="fish"))  # nothing else to do: 480 s
    await env.step(call("wait", seconds=30))                       # the fish is ready to collect: 30 s wasted
    metrics = env.timeline().metrics()
    assert metrics["waiting_s"] == 570 and metrics["opportunity_idle_s"] == 90
    backoffice = TimedEnv("backoffice", thinking="none")           # a scenario that cannot say
    await backoffice.reset(task=timed_task("backoffice", world=BACKOFFICE_WORLD))
    await backoffice.step(call("wait", seconds=60))
    assert backoffice.timeline().metrics()["opportunity_idle_s"] is None
