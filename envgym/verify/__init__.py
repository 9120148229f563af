"""Verifiers: turn an episode into a :class:`~envgym.types.Verdict`.

``await verify(specs, ctx)`` grades a task's verifier specs (all must pass). Kinds: ``write_action``,
``answer``, ``rubric`` (programmatic checks and LLM judges), ``tests`` (the episode's diff applied in a
fresh container, hidden tests copied in at grading time: FAIL_TO_PASS / PASS_TO_PASS), and the combinators
``all_of`` / ``any_of``; and every kind a plug-in registers with :func:`envgym.register_verifier` (its check
gets the same :class:`VerifyContext`: the task, the state before the episode and after it, the calls, the
answer). No verifier reads state the agent can write: a host-side store, the env's own call log and
timeline, or a fresh sandbox holding only the agent's output.

:func:`grade` is the one place an episode is graded, and :func:`grade_episode` the one way an env's episode
reaches it (the context the env reports, then the evidence its :meth:`~envgym.env.Env.graded` hook adds): the
kernel's :class:`~envgym.wrappers.Grading` wrapper calls it once per episode. Every spec is dispatched by its
``type`` through the registry (:func:`envgym.registry.verifier_kind`), where this package puts the built-in
kinds exactly as a plug-in puts its own.
"""

from __future__ import annotations

from envgym.verify._grade import grade, grade_episode, verify, verify_one
from envgym.verify.context import CallRecord, JudgeConfig, StateView, VerifyContext

__all__ = ["CallRecord", "JudgeConfig", "StateView", "VerifyContext", "grade", "grade_episode", "verify", "verify_one"]
