"""The timed verifier: the right writes, in causal order, inside their time windows, and nothing forbidden.

A plug-in kind (``envgym_verifiers``' entry point registers it; until 0.2 it was ``envgym.verify.timed``, now a
warning alias). A ``timed_write`` spec grades an episode's :class:`~envgym.plugin.timed.Timeline` (a timed env,
:class:`~envgym.plugin.timed.TimedWorldEnv`, builds a :class:`TimedVerifyContext`; the env logs the paths of
the spec's ``final_state`` checks, :attr:`TimedWriteSpec.watched_paths`).

Times are a time of day (``"14:00"``) or virtual seconds since the start; references name another expected
call of the spec (by ``id``) or a world event of the timeline. The rules:

- ``after: [R]``: the call was *issued* after R: after the event fired, or after the referenced call was
  *done* (its result known or its effect made), the causal "happened after";
- ``before: [R]``: the call was *done* before R fired (an event that never fired is never too early) or
  before the referenced call was issued;
- ``not_before`` / ``not_after``: window on when the call was done (its effect), +- ``tolerance_s``;
- ``ordered``: each expected call happened after the previous one in the list (as ``after``);
- a forbidden call is one matching ``tool``/``args`` inside the forbidden entry's window (always, if none);
- collateral: a successful write matched by no expected entry (unless ``allow_collateral``);
- ``final_state``: ``table.row_id.field`` paths of the final world state, matched like arguments;
- ``finish_by``: the episode ended (final answer, in-flight calls drained) by then.

Expected calls are assigned to distinct actual calls by backtracking in listed order; a spec that expects no
call has no ``expected_writes`` criterion (its goal is a state, or the absence of writes). The score is
binary like ``write_action``'s; the verdict's evidence carries the efficiency metrics (virtual time to
finish, thinking, waiting, idle, opportunity idle and acting time, and **time to goal**: when the last goal
component was reached for good: the last expected call done, and for each ``final_state`` check the last
logged change of its path (``Timeline.state_changes``), None unless every component was reached) and the
whole timeline, so a run can be re-graded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from envgym.plugin import (
    CriterionResult,
    FrozenModel,
    Matchable,
    MatchArgs,
    Verdict,
    VerifierError,
    VerifyContext,
    args_match,
    value_matches,
)
from envgym.plugin.timed import TimedVerifyContext

if TYPE_CHECKING:
    from envgym.plugin.timed import TimedCall, Timeline

__all__ = ["ForbiddenCall", "StateCheck", "TimedCallSpec", "TimedVerifyContext", "TimedWriteSpec", "verify_timed"]

TimeRef = str | float


class TimedCallSpec(FrozenModel):
    """An expected call: tool, argument matchers, causal references and a time window."""

    id: str | None = None
    tool: str
    args: MatchArgs = Field(default_factory=dict)
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    not_before: TimeRef | None = None
    not_after: TimeRef | None = None


class ForbiddenCall(FrozenModel):
    """A call that must not happen; with a window or references, only inside them."""

    tool: str
    args: MatchArgs = Field(default_factory=dict)
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    not_before: TimeRef | None = None
    not_after: TimeRef | None = None


class StateCheck(FrozenModel):
    """``path`` is ``table.row_id.field`` in the final world state; ``equals`` a value or matcher."""

    path: str
    equals: Matchable


class TimedWriteSpec(FrozenModel):
    type: Literal["timed_write"] = "timed_write"
    expected: tuple[TimedCallSpec, ...] = ()
    ordered: bool = False
    tolerance_s: float = Field(default=0.0, ge=0)
    forbidden: tuple[ForbiddenCall, ...] = ()
    allow_collateral: bool = False
    final_state: tuple[StateCheck, ...] = ()
    finish_by: TimeRef | None = None

    @property
    def watched_paths(self) -> tuple[str, ...]:
        """The world paths the env logs changes of during the episode (``Timeline.state_changes``), for time
        to goal: those of the ``final_state`` checks."""
        return tuple(c.path for c in self.final_state)


def _event_seq(timeline: Timeline, ref: str) -> int | None:
    event = timeline.event(ref)
    return event.seq if event else None


def _done(call: TimedCall) -> tuple[float, int]:
    """When a call was done; only done calls are ever graded, so the fallbacks never apply."""
    return (call.done_at if call.done_at is not None else call.issued_at,
            call.done_seq if call.done_seq is not None else call.issued_seq)


def _window_problems(item: TimedCallSpec | ForbiddenCall, call: TimedCall, timeline: Timeline,
                     tolerance: float) -> list[str]:
    done_at, _ = _done(call)
    problems = []
    if item.not_before is not None and done_at < timeline.to_virtual(item.not_before) - tolerance:
        problems.append(f"done at {timeline.clock(done_at)}, before {item.not_before}")
    if item.not_after is not None and done_at > timeline.to_virtual(item.not_after) + tolerance:
        problems.append(f"done at {timeline.clock(done_at)}, after {item.not_after}")
    return problems


def _event_problems(item: TimedCallSpec | ForbiddenCall, call: TimedCall, timeline: Timeline,
                    local: set[str]) -> list[str]:
    problems = []
    for ref in item.after:
        if ref in local:
            continue
        seq = _event_seq(timeline, ref)
        if seq is None:
            problems.append(f"{ref!r} never happened")
        elif call.issued_seq < seq:
            problems.append(f"issued before {ref!r}")
    for ref in item.before:
        if ref in local:
            continue
        seq = _event_seq(timeline, ref)
        if seq is not None and _done(call)[1] > seq:
            problems.append(f"done after {ref!r}")
    return problems


def _assign(spec: TimedWriteSpec, candidates: list[list[TimedCall]]) -> list[TimedCall] | None:
    """Backtracking: distinct calls for the expected entries honouring references between them."""
    ids = {e.id: i for i, e in enumerate(spec.expected) if e.id}
    chosen: list[TimedCall] = []

    def consistent(i: int, call: TimedCall) -> bool:
        item = spec.expected[i]
        if spec.ordered and i > 0 and call.issued_seq < _done(chosen[i - 1])[1]:
            return False
        for ref in item.after:
            j = ids.get(ref)
            if j is not None and j < i and call.issued_seq < _done(chosen[j])[1]:
                return False
        for ref in item.before:
            j = ids.get(ref)
            if j is not None and j < i and _done(call)[1] > chosen[j].issued_seq:
                return False
        for j in range(i):  # earlier entries that named this one
            other = spec.expected[j]
            if item.id and item.id in other.after and chosen[j].issued_seq < _done(call)[1]:
                return False
            if item.id and item.id in other.before and _done(chosen[j])[1] > call.issued_seq:
                return False
        return all(call is not c for c in chosen)

    def search(i: int) -> bool:
        if i == len(spec.expected):
            return True
        for call in candidates[i]:
            if consistent(i, call):
                chosen.append(call)
                if search(i + 1):
                    return True
                chosen.pop()
        return False

    return list(chosen) if search(0) else None


def _state_value(ctx: VerifyContext, path: str) -> Any:
    if ctx.state is None:
        raise VerifierError("a final_state check needs the world state")
    table, _, rest = path.partition(".")
    row_id, _, column = rest.partition(".")
    rows = ctx.state.snapshot().get(table, [])
    row = next((r for r in rows if str(r.get("id")) == row_id), None)
    return None if row is None else row.get(column)


async def verify_timed(spec: TimedWriteSpec, ctx: VerifyContext) -> Verdict:
    timeline = getattr(ctx, "timeline", None)
    if timeline is None:
        raise VerifierError("a timed_write verifier needs a timed environment's timeline")
    if timeline.unit == "step":
        clocks = [t for item in (*spec.expected, *spec.forbidden) for t in (item.not_before, item.not_after)
                  if isinstance(t, str)] + ([spec.finish_by] if isinstance(spec.finish_by, str) else [])
        if clocks:
            raise VerifierError(f"a step clock has no time of day: {clocks[0]!r} (give a step number)")
    done = [c for c in timeline.calls if c.ok and c.done_seq is not None]
    local = {e.id for e in spec.expected if e.id}
    candidates: list[list[TimedCall]] = []
    missing: list[str] = []
    mistimed: list[str] = []
    for item in spec.expected:
        by_args = [c for c in done if c.name == item.tool and args_match(item.args, c.arguments)]
        fitting = [c for c in by_args if not _window_problems(item, c, timeline, spec.tolerance_s)
                   and not _event_problems(item, c, timeline, local)]
        candidates.append(fitting)
        label = item.id or item.tool
        if not by_args:
            missing.append(label)
        elif not fitting:
            why = _window_problems(item, by_args[0], timeline, spec.tolerance_s) + _event_problems(
                item, by_args[0], timeline, local)
            mistimed.append(f"{label} ({'; '.join(why)})")
    assignment = _assign(spec, candidates) if not missing and not mistimed else None
    if not missing and not mistimed and assignment is None:
        mistimed.append("no assignment keeps the causal order between the expected calls")
    ok_expected = assignment is not None
    detail = (f"{len(spec.expected)} matched in order and on time" if ok_expected else
              "; ".join([*(f"missing: {m}" for m in missing), *(f"mistimed: {m}" for m in mistimed)]))
    goal_times = [_done(c)[0] for c in assignment or ()]
    forbidden: list[str] = []
    flagged: set[int] = set()
    for rule in spec.forbidden:
        for call in done:
            if call.name == rule.tool and args_match(rule.args, call.arguments) and not (
                    _window_problems(rule, call, timeline, 0.0) or _forbidden_refs_miss(rule, call, timeline)):
                forbidden.append(f"{call.name} at {timeline.clock(_done(call)[0])}")
                flagged.add(call.index)
    matched = {c.index for c in assignment or ()}
    collateral = [] if spec.allow_collateral else [
        c.name for c in done if c.kind == "write" and c.index not in matched and c.index not in flagged]
    criteria = [
        *([CriterionResult(name="expected_writes", score=float(ok_expected), passed=ok_expected, detail=detail)]
          if spec.expected else []),
        CriterionResult(name="no_forbidden_writes", score=float(not forbidden), passed=not forbidden,
                        detail=f"forbidden: {', '.join(forbidden)}" if forbidden else ""),
        CriterionResult(name="no_collateral_writes", score=float(not collateral), passed=not collateral,
                        detail=f"collateral: {', '.join(collateral)}" if collateral else ""),
    ]
    goal_reached = ok_expected
    for check in spec.final_state:
        value = _state_value(ctx, check.path)
        ok = value_matches(check.equals, value)
        criteria.append(CriterionResult(name=f"state:{check.path}", score=float(ok), passed=ok,
                                        detail=f"{value!r} (expected {check.equals!r})"))
        changed = [c.time for c in timeline.state_changes if c.path == check.path]
        goal_reached = goal_reached and ok and bool(changed)
        goal_times += changed[-1:]
    if spec.finish_by is not None:
        ok = timeline.end_s <= timeline.to_virtual(spec.finish_by) + spec.tolerance_s
        criteria.append(CriterionResult(name="finish_by", score=float(ok), passed=ok,
                                        detail=f"ended at {timeline.clock(timeline.end_s)} (by {spec.finish_by})"))
    passed = all(c.passed for c in criteria)
    metrics: dict[str, Any] = timeline.metrics()
    has_goal = bool(spec.expected or spec.final_state)
    metrics["time_to_goal_s"] = round(max(goal_times, default=0.0), 3) if has_goal and goal_reached else None
    evidence = {
        "efficiency": metrics,
        "matched": [{"tool": c.name, "issued": timeline.clock(c.issued_at), "done": timeline.clock(_done(c)[0])}
                    for c in assignment or ()],
        "timeline": timeline.model_dump(mode="json"),
    }
    return Verdict(score=float(passed), passed=passed, criteria=tuple(criteria), evidence=evidence)


def _forbidden_refs_miss(rule: ForbiddenCall, call: TimedCall, timeline: Timeline) -> bool:
    """Whether the call falls outside the rule's reference window (so it is allowed)."""
    for ref in rule.after:
        seq = _event_seq(timeline, ref)
        if seq is None or call.issued_seq < seq:
            return True
    for ref in rule.before:
        seq = _event_seq(timeline, ref)
        if seq is not None and call.issued_seq > seq:
            return True
    return False
