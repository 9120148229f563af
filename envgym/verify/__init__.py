"""Verifiers: turn an episode into a :class:`~envgym.types.Verdict`.

``await verify(specs, ctx)`` grades a task's verifier specs (all must pass). Kinds: ``write_action``,
``answer``, ``rubric`` (programmatic checks and LLM judges), ``tests`` (the episode's diff applied in a
fresh container, hidden tests copied in at grading time: FAIL_TO_PASS / PASS_TO_PASS), and the combinators
``all_of`` / ``any_of``; and every kind a plug-in registers with :func:`envgym.register_verifier` (its check
gets the same :class:`VerifyContext`: the task, the state before the episode and after it, the calls, the
answer). No verifier reads state the agent can write: a host-side store, the env's own call log and
timeline, or a fresh sandbox holding only the agent's output.

:func:`grade` is the one place an episode is graded: :meth:`envgym.env.Env.verify` calls it with the context
the env reports, and the kernel's :class:`~envgym.wrappers.Grading` wrapper calls that once per episode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from envgym.errors import VerifierError
from envgym.types import Verdict
from envgym.verify.answer import verify_answer
from envgym.verify.context import CallRecord, JudgeConfig, StateView, VerifyContext
from envgym.verify.rubric import verify_rubric
from envgym.verify.spec import (
    AllOfSpec,
    AnswerSpec,
    AnyOfSpec,
    LLMJudgeCheck,
    RubricSpec,
    TestsSpec,
    TimedWriteSpec,
    VerifierSpec,
    WriteActionSpec,
)
from envgym.verify.tests import verify_tests
from envgym.verify.timed import verify_timed
from envgym.verify.write_action import verify_write_action

if TYPE_CHECKING:
    from envgym.task import TaskSpec

__all__ = ["CallRecord", "JudgeConfig", "StateView", "VerifyContext", "grade", "verify", "verify_one"]


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
        if any(_waits(child) for child in spec.verifiers):  # a judge or a container: all of them at once
            children = await asyncio.gather(*(verify_one(child, ctx) for child in spec.verifiers))
        else:  # gather would wrap each child in a Task, a loop round-trip each: more than such a check costs
            children = [await verify_one(child, ctx) for child in spec.verifiers]
        return Verdict.combine(list(children), mode="all" if isinstance(spec, AllOfSpec) else "any")
    from envgym.registry import verifier_kind

    kind = verifier_kind(getattr(spec, "type", ""))
    if kind is None or not isinstance(spec, kind.model):
        raise VerifierError(f"no verifier is registered for {type(spec).__name__} "
                            f"(type {getattr(spec, 'type', None)!r})")
    verdict = await kind.fn(spec, ctx)
    if not isinstance(verdict, Verdict):
        raise VerifierError(f"verifier {kind.type!r} returned {type(verdict).__name__}, not a Verdict")
    return verdict


def _waits(spec: VerifierSpec) -> bool:
    """Whether grading ``spec`` may wait on something outside this process (an LLM judge, a container, whatever
    a plug-in's kind does); the in-process kinds (answers, calls, the store) do not."""
    if isinstance(spec, AllOfSpec | AnyOfSpec):
        return any(_waits(child) for child in spec.verifiers)
    if isinstance(spec, RubricSpec):
        return any(isinstance(c.check, LLMJudgeCheck) for c in spec.criteria)
    return not isinstance(spec, AnswerSpec | WriteActionSpec)


async def verify(specs: Sequence[VerifierSpec], ctx: VerifyContext) -> Verdict:
    """Grade all specs; the episode passes iff every one passes."""
    verdicts = [await verify_one(spec, ctx) for spec in specs]
    return Verdict.combine(verdicts, mode="all")


async def grade(task: TaskSpec, ctx: VerifyContext, *, judge: JudgeConfig | None = None) -> Verdict:
    """Grade ``task`` on what the env reported (``ctx``); ``judge`` fills in where the context names none."""
    if ctx.task is None:
        ctx.task = task
    if ctx.judge is None:
        ctx.judge = judge
    return await verify(task.verifiers, ctx)
