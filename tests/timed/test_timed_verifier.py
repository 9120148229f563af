"""The timed verifier on hand-built timelines: causal order, time windows, forbidden and collateral writes."""

from __future__ import annotations

import pytest

from envgym.errors import VerifierError
from envgym.plugin.timed import TimedVerifyContext, TimedWriteSpec
from envgym.timed.timeline import TimedCall, Timeline, TimelineEvent
from envgym.verify import VerifyContext, verify

START = 9 * 3600  # 09:00


def write(index: int, name: str, issued: tuple[float, int], done: tuple[float, int] | None = None,
          kind: str = "write", **args) -> TimedCall:
    done = done or issued
    return TimedCall(index=index, step=index, name=name, kind=kind, arguments=args, ok=True,
                     issued_at=issued[0], issued_seq=issued[1], done_at=done[0], done_seq=done[1])


def timeline(*calls: TimedCall, events: tuple[tuple[str, float, int], ...] = (), end: float = 3600) -> Timeline:
    return Timeline(day_start_s=START, end_s=end, calls=calls,
                    events=tuple(TimelineEvent(id=i, time=t, seq=s) for i, t, s in events))


async def grade(spec: dict, tl: Timeline, state=None):
    ctx = TimedVerifyContext(calls=[], final_answer="done", timeline=tl, state=state)
    return await verify([TimedWriteSpec.model_validate({"type": "timed_write", **spec})], ctx)


def failed(verdict) -> dict[str, str]:
    return {c.name: c.detail for c in verdict.criteria if not c.passed}


COURIER = (("courier_msg", 1500, 10),)
SPEC = {"expected": [{"tool": "send_message", "args": {"to": "sam"}, "after": ["courier_msg"],
                      "not_after": "10:00"}]}


async def test_a_write_after_the_event_and_inside_the_window_passes_with_efficiency_evidence():
    verdict = await grade(SPEC, timeline(write(0, "send_message", (1600, 11), (1630, 12), to="sam"),
                                         events=COURIER, end=1700))
    assert verdict.passed and verdict.score == 1
    efficiency = verdict.evidence["efficiency"]
    assert efficiency["virtual_time_s"] == 1700 and efficiency["time_to_goal_s"] == 1630
    assert verdict.evidence["matched"] == [{"tool": "send_message", "issued": "09:26:40", "done": "09:27:10"}]
    assert Timeline.model_validate(verdict.evidence["timeline"]).calls[0].name == "send_message"


async def test_a_write_issued_before_the_event_is_out_of_causal_order():
    verdict = await grade(SPEC, timeline(write(0, "send_message", (1400, 5), (1600, 11), to="sam"), events=COURIER))
    assert not verdict.passed
    assert "issued before 'courier_msg'" in failed(verdict)["expected_writes"]


async def test_an_event_that_never_happened_cannot_be_waited_for():
    verdict = await grade(SPEC, timeline(write(0, "send_message", (1600, 11), to="sam")))
    assert "'courier_msg' never happened" in failed(verdict)["expected_writes"]


async def test_time_windows_apply_to_when_the_write_was_done_with_tolerance():
    late = timeline(write(0, "send_message", (3590, 11), (3630, 12), to="sam"), events=COURIER)
    assert "after 10:00" in failed(await grade(SPEC, late))["expected_writes"]
    assert (await grade({**SPEC, "tolerance_s": 60}, late)).passed
    early = {"expected": [{"tool": "send_message", "not_before": "09:30"}]}
    assert not (await grade(early, timeline(write(0, "send_message", (60, 1), to="sam")))).passed


async def test_references_between_expected_writes_need_the_first_one_done():
    spec = {"expected": [{"id": "move", "tool": "move_event"}, {"tool": "send_message", "after": ["move"]}]}
    racing = timeline(write(0, "move_event", (10, 1), (50, 4)), write(1, "send_message", (12, 2), (30, 3)))
    assert "causal order" in failed(await grade(spec, racing))["expected_writes"]
    waited = timeline(write(0, "move_event", (10, 1), (50, 4)), write(1, "send_message", (52, 5), (60, 6)))
    assert (await grade(spec, waited)).passed


async def test_ordered_and_backtracking_find_an_assignment_when_one_exists():
    spec = {"ordered": True, "allow_collateral": True,
            "expected": [{"tool": "send_message", "args": {"to": "a"}}, {"tool": "send_message"}]}
    # The second expected entry matches both calls; only the later one keeps the order.
    tl = timeline(write(0, "send_message", (1, 1), to="b"), write(1, "send_message", (5, 2), to="a"),
                  write(2, "send_message", (9, 3), to="c"))
    assert (await grade(spec, tl)).passed
    backwards = timeline(write(0, "send_message", (1, 1), to="c"), write(1, "send_message", (5, 2), to="a"))
    assert not (await grade({**spec, "allow_collateral": False}, backwards)).passed


async def test_forbidden_writes_only_inside_their_window_and_collateral_writes():
    spec = {"expected": [{"tool": "send_message", "args": {"to": "sam"}, "after": ["courier_msg"]}],
            "forbidden": [{"tool": "send_message", "args": {"to": "sam"}, "before": ["courier_msg"]}]}
    premature = timeline(write(0, "send_message", (100, 1), to="sam"), write(1, "send_message", (1600, 11), to="sam"),
                         events=COURIER)
    verdict = await grade(spec, premature)
    assert set(failed(verdict)) == {"no_forbidden_writes"}
    extra = timeline(write(0, "send_message", (1600, 11), to="sam"), write(1, "send_message", (1700, 12), to="lee"),
                     events=COURIER)
    assert set(failed(await grade(spec, extra))) == {"no_collateral_writes"}
    reads_are_free = timeline(write(0, "send_message", (1600, 11), to="sam"),
                              write(1, "read_inbox", (1700, 12), kind="read"), events=COURIER)
    assert (await grade(spec, reads_are_free)).passed


async def test_final_state_and_finish_by():
    class State:
        def snapshot(self):
            return {"calendar": [{"id": "ev1", "start": "16:00"}]}

        def query(self, sql):
            raise NotImplementedError

    spec = {"final_state": [{"path": "calendar.ev1.start", "equals": "16:00"}], "finish_by": "09:30"}
    assert (await grade(spec, timeline(end=1800), state=State())).passed
    verdict = await grade({**spec, "final_state": [{"path": "calendar.ev1.start", "equals": "14:00"}]},
                          timeline(end=1801), state=State())
    assert set(failed(verdict)) == {"state:calendar.ev1.start", "finish_by"}


async def test_a_context_without_a_timeline_is_a_verifier_error():
    with pytest.raises(VerifierError, match="timeline"):
        await verify([TimedWriteSpec()], VerifyContext(calls=[], final_answer=None))
