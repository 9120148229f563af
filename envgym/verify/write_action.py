"""The write-action verifier: did the agent write what it should, only that, and end in the right state?

Four criteria, each reported by name in the verdict:

- ``expected_writes``: every expected write is matched by a distinct successful write (tool name and
  argument matchers, :mod:`envgym.verify.matching`); with ``ordered`` the matches must occur in the listed
  order. A missing write's detail names the closest call of that tool and each argument that differed
  (``missing: refund_order (call #3: amount: expected 12.5, got 13.0)``); ``evidence["mismatches"]`` has them.
- ``no_forbidden_writes``: no successful call of a forbidden tool.
- ``no_collateral_writes``: no successful write left unmatched (unless ``allow_collateral``).
- ``final_state`` (with ``compare_final_state``, the default): the store equals the one the reference
  solution produces, tables diffed row by row as :mod:`envgym.verify.state` specifies, ``ignore_fields``
  left out (a misspelt entry is a VerifierError); only the tables either side changed are read when the
  env's views say which (:func:`~envgym.verify.state.diff_views`). When the env has no expected state to
  compare with (the task has no reference solution the env can replay) or no final state, the criterion
  **fails**, saying so:
  a task that does not want the comparison sets ``compare_final_state: false``. It used to be dropped
  silently, so a task without a reference solution graded writes only while its file said otherwise.

The episode passes iff every criterion passes, and the score is binary (1 or 0): a half-right write set is
a wrong end state, and partial credit for doing nothing would reward the null agent. The per-criterion
breakdown says what went wrong.
"""

from __future__ import annotations

from typing import Any

from envgym.types import CriterionResult, Verdict
from envgym.verify.context import CallRecord, VerifyContext
from envgym.verify.matching import args_match, mismatches
from envgym.verify.spec import ExpectedWrite, WriteActionSpec
from envgym.verify.state import diff_states, diff_views

__all__ = ["diff_states", "verify_write_action"]


def _match_writes(spec: WriteActionSpec, writes: list[CallRecord]) -> tuple[list[int | None], list[CallRecord]]:
    """Greedy matching of expected writes to actual ones. Returns matched indices and unmatched writes."""
    used: set[int] = set()
    matched: list[int | None] = []
    floor = -1
    for expected in spec.expected:
        hit = None
        for i, write in enumerate(writes):
            if i in used or (spec.ordered and i <= floor):
                continue
            if write.name == expected.tool and args_match(expected.args, write.arguments):
                hit = i
                break
        matched.append(hit)
        if hit is not None:
            used.add(hit)
            floor = hit
    return matched, [w for i, w in enumerate(writes) if i not in used]


def _closest(expected: ExpectedWrite, writes: list[CallRecord]) -> dict[str, Any]:
    """The call of ``expected.tool`` whose arguments differ least from the expected ones, and how."""
    best: dict[str, Any] | None = None
    for write in writes:
        if write.name != expected.tool:
            continue
        lines = mismatches(expected.args, write.arguments) or [
            "a matching call is taken by another expected write or out of the listed order"]
        if best is None or len(lines) < len(best["differences"]):
            best = {"tool": expected.tool, "call": write.index, "differences": lines}
    return best or {"tool": expected.tool, "call": None, "differences": [f"no successful {expected.tool} call"]}


async def verify_write_action(spec: WriteActionSpec, ctx: VerifyContext) -> Verdict:
    writes = ctx.writes
    matched, unmatched = _match_writes(spec, writes)
    unmatched_expected = [e for e, m in zip(spec.expected, matched, strict=True) if m is None]
    missing = [e.tool for e in unmatched_expected]
    why = [_closest(e, unmatched if any(w.name == e.tool for w in unmatched) else writes)
           for e in unmatched_expected]
    forbidden = [w.name for w in writes if w.name in spec.forbidden]
    collateral = [] if spec.allow_collateral else [w.name for w in unmatched if w.name not in spec.forbidden]
    criteria = [
        CriterionResult(name="expected_writes", score=1.0 if not missing else 0.0, passed=not missing,
                        detail=_missing_detail(why) if missing else f"{len(spec.expected)} matched"),
        CriterionResult(name="no_forbidden_writes", score=float(not forbidden), passed=not forbidden,
                        detail=f"forbidden: {', '.join(forbidden)}" if forbidden else ""),
        CriterionResult(name="no_collateral_writes", score=float(not collateral), passed=not collateral,
                        detail=f"collateral: {', '.join(collateral)}" if collateral else ""),
    ]
    evidence: dict[str, Any] = {
        "writes": [{"tool": w.name, "args": w.arguments} for w in writes],
        "missing_writes": missing, "forbidden_writes": forbidden, "collateral_writes": collateral,
    }
    if why:
        evidence["mismatches"] = why
    if spec.compare_final_state:
        if ctx.expected_state is None or ctx.state is None:
            lacking = "no expected state (the env replays no reference solution for this task)" \
                if ctx.expected_state is None else "no final state (the env reported none)"
            criteria.append(CriterionResult(
                name="final_state", score=0.0, passed=False,
                detail=f"cannot compare: {lacking}; set compare_final_state: false to grade without it"))
        else:
            state_diff = diff_views(ctx.state, ctx.expected_state, spec.ignore_fields)
            criteria.append(CriterionResult(
                name="final_state", score=float(not state_diff), passed=not state_diff,
                detail=f"differs in: {', '.join(state_diff)}" if state_diff else "matches the reference"))
            evidence["state_diff"] = state_diff
    passed = all(c.passed for c in criteria)
    return Verdict(score=float(passed), passed=passed, criteria=tuple(criteria),
                   evidence=evidence)


def _missing_detail(why: list[dict[str, Any]]) -> str:
    parts = []
    for item in why:
        where = f"call #{item['call']}: " if item["call"] is not None else ""
        parts.append(f"{item['tool']} ({where}{'; '.join(item['differences'])})")
    return "missing: " + ", ".join(parts)
