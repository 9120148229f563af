"""Grading: every spec dispatched by its ``type`` through the registry, and the built-in kinds put there (see
:mod:`envgym.verify`, which re-exports the public names)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from envgym import registry
from envgym.errors import EnvError, VerifierError
from envgym.types import Verdict
from envgym.verify.answer import verify_answer
from envgym.verify.context import JudgeConfig, VerifyContext
from envgym.verify.rubric import verify_rubric
from envgym.verify.spec import (
    BUILTIN_KINDS,
    AllOfSpec,
    AnswerSpec,
    AnyOfSpec,
    LLMJudgeCheck,
    RubricSpec,
    VerifierSpec,
    WriteActionSpec,
)
from envgym.verify.write_action import verify_write_action

if TYPE_CHECKING:
    from envgym.env import Env
    from envgym.task import TaskSpec



async def verify_one(spec: VerifierSpec, ctx: VerifyContext) -> Verdict:
    """Grade one spec by the kind its ``type`` names: built-in and plug-in kinds alike, from the one registry."""
    kind = registry.verifier_kind(getattr(spec, "type", ""))
    if kind is None or not isinstance(spec, kind.model):
        raise VerifierError(f"no verifier is registered for {type(spec).__name__} "
                            f"(type {getattr(spec, 'type', None)!r})")
    verdict = await kind.fn(spec, ctx)
    if not isinstance(verdict, Verdict):
        raise VerifierError(f"verifier {kind.type!r} returned {type(verdict).__name__}, not a Verdict")
    return verdict


async def _answer(spec: AnswerSpec, ctx: VerifyContext) -> Verdict:
    return await verify_answer(spec, ctx.final_answer)


async def _combined(spec: AllOfSpec | AnyOfSpec, ctx: VerifyContext) -> Verdict:
    if any(_waits(child) for child in spec.verifiers):  # a judge or a container: all of them at once
        children = await asyncio.gather(*(verify_one(child, ctx) for child in spec.verifiers))
    else:  # gather would wrap each child in a Task, a loop round-trip each: more than such a check costs
        children = [await verify_one(child, ctx) for child in spec.verifiers]
    return Verdict.combine(list(children), mode="all" if isinstance(spec, AllOfSpec) else "any")


_BUILTIN_CHECKS = {"write_action": verify_write_action, "answer": _answer, "rubric": verify_rubric,
                   "all_of": _combined, "any_of": _combined}
for _type, _fn in _BUILTIN_CHECKS.items():
    registry.register_builtin_verifier(_type, BUILTIN_KINDS[_type], _fn)


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


async def grade_episode(env: Env, *, judge: JudgeConfig | None = None) -> Verdict:
    """Grade ``env``'s current episode as it stands: :func:`grade` on its task and
    :meth:`~envgym.env.Env.verify_context`, plus the evidence its :meth:`~envgym.env.Env.graded` hook adds (the
    verifiers' own keys win)."""
    if env.task is None:
        raise EnvError(f"{type(env).__name__}: verify() without an episode")
    verdict = await grade(env.task, await env.verify_context(), judge=judge)
    extra = await env.graded(verdict)
    if extra:
        verdict = verdict.model_copy(update={"evidence": {**extra, **verdict.evidence}})
    return verdict
