"""Verifiers: turn an episode into a :class:`~envgym.types.Verdict`.

``await verify(specs, ctx)`` grades a task's verifier specs (all must pass). Kinds: ``write_action``,
``answer``, ``rubric`` (programmatic checks and LLM judges), ``tests`` (the episode's diff applied in a
fresh container, hidden tests copied in at grading time: FAIL_TO_PASS / PASS_TO_PASS), and the combinators
``all_of`` / ``any_of``. No verifier reads state the agent can write: a host-side store, the env's own call
log and timeline, or a fresh sandbox holding only the agent's output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from envgym.types import Verdict
from envgym.verify.answer import verify_answer
from envgym.verify.context import CallRecord, JudgeConfig, StateView, VerifyContext
from envgym.verify.rubric import verify_rubric
from envgym.verify.spec import (
    AllOfSpec,
    AnswerSpec,
    AnyOfSpec,
    RubricSpec,
    TestsSpec,
    TimedWriteSpec,
    VerifierSpec,
    WriteActionSpec,
)
from envgym.verify.tests import verify_tests
from envgym.verify.timed import verify_timed
from envgym.verify.write_action import verify_write_action

__all__ = ["CallRecord", "JudgeConfig", "StateView", "VerifyContext", "verify", "verify_one"]


async def verify_one(spec: VerifierSpec, ctx: VerifyContext) -> Verdict:
    if isinstance(spec, WriteActionSpec):
        return await verify_write_action(spec, ctx)
    if isinstance(spec, AnswerSpec):
        return await verify_answer(spec, ctx.final_answer)
    if isinstance(spec, RubricSpec):
        return await verify_rubric(spec, ctx)
    if isinstance(spec, TimedWriteSpec):
        return await verify_timed(spec, ctx)
    if isinstance(spec, TestsSpec):
        return await verify_tests(spec, ctx)
    if isinstance(spec, AllOfSpec | AnyOfSpec):
        children = await asyncio.gather(*(verify_one(child, ctx) for child in spec.verifiers))
        return Verdict.combine(list(children), mode="all" if isinstance(spec, AllOfSpec) else "any")
    raise TypeError(f"unknown verifier spec {type(spec).__name__}")


async def verify(specs: Sequence[VerifierSpec], ctx: VerifyContext) -> Verdict:
    """Grade all specs; the episode passes iff every one passes."""
    verdicts = [await verify_one(spec, ctx) for spec in specs]
    return Verdict.combine(verdicts, mode="all")
