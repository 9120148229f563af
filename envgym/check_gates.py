"""The gates of ``envgym check`` (:mod:`envgym.check`): the oracle scores 1 and the null agent 0 on every task
(or the inverse on a task that accepts the null answer, whose wrong answer must still score 0), and the tampering
agents of the env's family forge nothing. A long gate run says how far it got (:class:`_Progress`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from envgym.agent import Agent
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.compose import make
from envgym.env import NullAccepted
from envgym.rollout import run_episode
from envgym.tamper import tamper_agents_for
from envgym.task import TaskSpec
from envgym.tools.args import ArgumentsError, decode_arguments
from envgym.trajectory import Trajectory
from envgym.types import Blame, Outcome
from envgym.verify.spec import AllOfSpec, AnyOfSpec, WriteActionSpec

if TYPE_CHECKING:  # envgym.check imports this module
    from envgym.check import CheckReport

PROGRESS_EVERY_S = 10.0
"""A long step of a check (making a generator's sample, its gates) reports its progress this often."""


async def _gates(env_id: str, tasks: list[TaskSpec], accepted: dict[str, NullAccepted], report: CheckReport,
                 concurrency: int, progress: Callable[[str], None] | None = None) -> None:
    semaphore = asyncio.Semaphore(concurrency)
    clock = _Progress(progress, f"{env_id}: gates", len(tasks))

    async def gate(task: TaskSpec) -> None:
        try:
            await played(task)
        finally:
            failed = {i for i, _ in report.gate_failures}
            clock.tick(f"{len(failed)} failed")

    async def played(task: TaskSpec) -> None:
        async with semaphore, make(env_id) as env:
            oracle = await _played(env, lambda: OracleAgent(task), task, report, "oracle")
            if not (oracle.outcome is Outcome.SUCCESS and oracle.reward == 1.0):
                report.gate_failures.append((task.id, f"oracle: {oracle.outcome.value} score {oracle.reward}"
                                                      f" {_why(oracle)}"))
            errors = oracle_errors(oracle)
            if errors and expects_no_change(task):  # the refusal is the task; a malformed call still is not
                _, info = await env.reset(task=task, seed=0)
                errors = malformed_calls(oracle, info.get("tools", []))
            report.gate_failures.extend((task.id, f"oracle: {error}") for error in errors)
            null = await _played(env, NullAgent, task, report, "null")
            exempt = accepted.get(task.hash)
            if exempt is None:
                if null.reward != 0.0 or null.outcome is Outcome.SUCCESS or null.outcome is Outcome.INFRA_ERROR:
                    report.gate_failures.append((task.id, f"null: {null.outcome.value} score {null.reward} "
                                                          f"{_why(null)}"))
                return
            report.null_accepted[task.id] = exempt.reason
            if not (null.outcome is Outcome.SUCCESS and null.reward == 1.0):
                report.gate_failures.append((task.id, f"null (accepted here: {exempt.reason}): {null.outcome.value} "
                                                      f"score {null.reward} {_why(null)}"))
            replay = task.model_copy(update={"solution": exempt.wrong})
            why = _forged(await run_episode(env, OracleAgent(replay), task, seed=0))
            if why:
                report.gate_failures.append((task.id, f"the wrong answer of a null-accepted task: {why}"))

    await asyncio.gather(*(gate(t) for t in tasks))
    clock.finish()


class _Progress:
    """A line to ``progress`` at most every :data:`PROGRESS_EVERY_S` seconds of a long step, and one when a step
    that said anything ends (a 200-task gate run takes an hour on a desktop family: it must not look hung)."""

    def __init__(self, progress: Callable[[str], None] | None, what: str, total: int) -> None:
        self.progress, self.what, self.total, self.done = progress, what, total, 0
        self.started = self.last = time.monotonic()

    def tick(self, detail: str) -> None:
        self.done += 1
        now = time.monotonic()
        if self.progress is not None and now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            self.progress(f"{self.what}: {self.done} of {self.total} tasks played, {detail} "
                          f"({now - self.started:.0f} s)")

    def finish(self) -> None:
        if self.progress is not None and self.last > self.started:
            self.progress(f"{self.what}: {self.total} tasks played in {time.monotonic() - self.started:.0f} s")


def oracle_errors(trajectory: Trajectory) -> list[str]:
    """Every error the env reported while the reference solution was replayed, one line per step."""
    errors = []
    for step in trajectory.steps:
        failed = [f"{r.name}: {r.error}" for r in step.observation.tool_results if r.error]
        if failed or step.observation.last_action_error:
            what = "; ".join(failed) or step.observation.last_action_error
            errors.append(f"step {step.index} of the reference solution failed: {what}")
    return errors


def expects_no_change(task: TaskSpec) -> bool:
    """Whether the task says nothing may be written: it has write_action verifiers and none expects a write."""
    specs, found = list(task.verifiers), []
    while specs:
        item = specs.pop()
        if isinstance(item, AllOfSpec | AnyOfSpec):
            specs.extend(item.verifiers)
        elif isinstance(item, WriteActionSpec):
            found.append(item)
    return bool(found) and not any(item.expected for item in found)


def malformed_calls(trajectory: Trajectory, tools: list[dict]) -> list[str]:
    """The reference's tool calls that its env's own schemas refuse (unknown tool, arguments that are not a
    JSON object, unknown or missing arguments), one line each."""
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools if "function" in t}
    problems = []
    for step in trajectory.steps:
        for call in step.action.tool_calls:
            params = schemas.get(call.name)
            if params is None:
                problems.append(f"step {step.index} of the reference solution calls unknown tool {call.name!r}")
                continue
            try:
                args = decode_arguments(call.name, call.arguments)
            except ArgumentsError as exc:
                problems.append(f"step {step.index} of the reference solution: {exc}")
                continue
            unknown = sorted(set(args) - set(params.get("properties", {}))) \
                if params.get("additionalProperties") is False else []
            missing = sorted(set(params.get("required", ())) - set(args))
            for label, names in (("unknown", unknown), ("missing", missing)):
                if names:
                    problems.append(f"step {step.index} of the reference solution: {call.name} with {label} "
                                    f"argument(s) {', '.join(names)}")
    return problems


def tamper_sample(tasks: list[TaskSpec], n: int) -> list[TaskSpec]:
    """``n`` tasks spread evenly over ``tasks`` (which come suite by suite), always including the first."""
    if n >= len(tasks):
        return list(tasks)
    return [tasks[round(i * (len(tasks) - 1) / max(n - 1, 1))] for i in range(n)] if n > 0 else []


def _forged(trajectory: Trajectory) -> str | None:
    """Why an episode that must score 0 (a tampering agent's, a wrong answer's) counts as a forged reward, or None."""
    if trajectory.outcome is Outcome.INFRA_ERROR:
        return f"ended as infra_error (out of the denominator): {_why(trajectory)}"
    if trajectory.reward != 0.0 or trajectory.outcome is Outcome.SUCCESS or (
            trajectory.verdict is not None and trajectory.verdict.passed):
        return f"{trajectory.outcome.value} score {trajectory.reward}"
    return None


async def _tamper_gate(env_id: str, tasks: list[TaskSpec], accepted: dict[str, NullAccepted], report: CheckReport,
                       concurrency: int) -> None:
    semaphore = asyncio.Semaphore(concurrency)
    async with make(env_id) as probe:
        tamperers = tamper_agents_for(probe)

    async def run(kind: type[Agent], task: TaskSpec) -> None:
        async with semaphore, make(env_id) as env:
            trajectory = await _played(env, lambda: kind(task), task, report, f"tamper {kind.name}")  # type: ignore[call-arg]
        report.tamper_runs[kind.name] = report.tamper_runs.get(kind.name, 0) + 1
        why = _forged(trajectory)
        if why and (task.hash not in accepted or trajectory.outcome is Outcome.INFRA_ERROR):
            report.tamper_failures.append((task.id, f"tamper {kind.name}: {why}"))
        elif trajectory.blame in (Blame.ENV, Blame.VERIFIER):
            report.tamper_failures.append((task.id, f"tamper {kind.name}: blamed on the {trajectory.blame.value}, "
                                                    f"not the agent: {_why(trajectory)}"))

    await asyncio.gather(*(run(kind, task) for kind in tamperers for task in tasks))


async def _played(env: Any, agent: Callable[[], Agent], task: TaskSpec, report: CheckReport, label: str) -> Trajectory:
    """An episode of ``agent()`` in ``env``. One whose reset failed as infrastructure (the agent never acted: no
    first observation; under load a desktop's app can fail to start) is no agent's doing: it runs once more, the
    report names the retry (``reset_retries``), and the second episode is judged."""
    trajectory = await run_episode(env, agent(), task, seed=0)
    if trajectory.outcome is Outcome.INFRA_ERROR and trajectory.initial_observation is None:
        report.reset_retries.append((task.id, f"{label}: {_why(trajectory)}"))
        trajectory = await run_episode(env, agent(), task, seed=0)
    return trajectory


def _why(trajectory) -> str:
    if trajectory.error:
        return trajectory.error.splitlines()[0]
    if trajectory.verdict:
        return "; ".join(f"{c.name}: {c.detail}" for c in trajectory.verdict.criteria if not c.passed)
    return ""
