"""The write-action verifier: did the agent write what it should, only that, and end in the right state?

Four criteria, each reported by name in the verdict:

- ``expected_writes``: every expected write is matched by a distinct successful write (tool name and
  argument matchers); with ``ordered`` the matches must occur in the listed order.
- ``no_forbidden_writes``: no successful call of a forbidden tool.
- ``no_collateral_writes``: no successful write left unmatched (unless ``allow_collateral``).
- ``final_state``: the store equals the one the reference solution produces (tables diffed row by row).

The episode passes iff every criterion passes, and the score is binary (1 or 0): a half-right write set is
a wrong end state, and partial credit for doing nothing would reward the null agent. The per-criterion
breakdown says what went wrong.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from envgym.types import CriterionResult, Verdict
from envgym.verify.context import CallRecord, Snapshot, VerifyContext, drop_fields
from envgym.verify.matching import args_match
from envgym.verify.spec import WriteActionSpec


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


def _row_key(row: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(row.items()))


def diff_states(actual: Snapshot, expected: Snapshot, *, limit: int = 10) -> dict[str, Any]:
    """Per table: rows only in the actual store and rows only in the expected one (at most ``limit``)."""
    if actual == expected:
        return {}
    diff: dict[str, Any] = {}
    for table in sorted(set(actual) | set(expected)):
        a = Counter(_row_key(r) for r in actual.get(table, []))
        e = Counter(_row_key(r) for r in expected.get(table, []))
        if a == e:
            continue
        extra = [dict(k) for k in (a - e).elements()]
        missing = [dict(k) for k in (e - a).elements()]
        diff[table] = {"unexpected": extra[:limit], "missing": missing[:limit]}
    return diff


async def verify_write_action(spec: WriteActionSpec, ctx: VerifyContext) -> Verdict:
    writes = ctx.writes
    matched, unmatched = _match_writes(spec, writes)
    missing = [e.tool for e, m in zip(spec.expected, matched, strict=True) if m is None]
    forbidden = [w.name for w in writes if w.name in spec.forbidden]
    collateral = [] if spec.allow_collateral else [w.name for w in unmatched if w.name not in spec.forbidden]
    criteria = [
        CriterionResult(name="expected_writes", score=1.0 if not missing else 0.0, passed=not missing,
                        detail=f"missing: {', '.join(missing)}" if missing else f"{len(spec.expected)} matched"),
        CriterionResult(name="no_forbidden_writes", score=float(not forbidden), passed=not forbidden,
                        detail=f"forbidden: {', '.join(forbidden)}" if forbidden else ""),
        CriterionResult(name="no_collateral_writes", score=float(not collateral), passed=not collateral,
                        detail=f"collateral: {', '.join(collateral)}" if collateral else ""),
    ]
    evidence: dict[str, Any] = {
        "writes": [{"tool": w.name, "args": w.arguments} for w in writes],
        "missing_writes": missing, "forbidden_writes": forbidden, "collateral_writes": collateral,
    }
    if spec.compare_final_state and ctx.expected_state is not None and ctx.state is not None:
        actual = drop_fields(ctx.state.snapshot(), spec.ignore_fields)
        expected = drop_fields(ctx.expected_state.snapshot(), spec.ignore_fields)
        state_diff = diff_states(actual, expected)
        criteria.append(CriterionResult(
            name="final_state", score=float(not state_diff), passed=not state_diff,
            detail=f"differs in: {', '.join(state_diff)}" if state_diff else "matches the reference"))
        evidence["state_diff"] = state_diff
    passed = all(c.passed for c in criteria)
    return Verdict(score=float(passed), passed=passed, criteria=tuple(criteria),
                   evidence=evidence)
