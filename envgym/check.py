"""``envgym check``: prove an environment keeps the contract and its tasks pass the admission gates.

Contract checks (on the env's first task): reset returns an Observation and OpenAI tool schemas; reset with
the same task and seed is deterministic; observations and tasks survive a JSON round trip with the same
hash; a malformed action (empty, unknown tool, bad JSON) is an error observation, not an exception; the
order-enforcing wrapper raises ResetNeeded after the episode and EnvClosed after close; Gymnasium's own
``check_env`` passes on the sync facade. Admission gates (on every task of the env's suites): the oracle
scores 1 and passes with no step of its replay an error (a tool call with an error result, or an action
the env refused: a reference solution that passes although its calls fail is broken, and the gate names
the task, the step and the error), the null agent scores 0 and fails. One exception, explained: in a task
that says nothing may be written (write_action verifiers, none expecting a write: "change my email; if
you can't, tell me why") the domain's refusal *is* the task, so a refused reference call passes there,
unless the env's own tool schemas reject it (unknown tool, arguments not a JSON object, unknown or missing
arguments): a malformed reference call fails the gate everywhere. Another, declared by the env and counted:
where doing nothing is a correct answer (BFCL's irrelevance entries: the right answer is to call no
function), the env's :meth:`~envgym.env.Env.null_accepted` says so for that task, with the reason and a
wrong answer; the null gate is then inverted there: the null agent must pass, and the wrong answer, replayed
like a reference, must score 0, not pass and not end as ``infra_error`` (so the verifier still tells answers
apart). The report names the reason and how many gated tasks it covered (``null_accepted``); tasks the
env does not name keep the null gate, whatever their verifier does. The hack probes go to the other tasks
(where every task accepts the null answer, a probe there fails only by ending as ``infra_error``: a
tampering agent's non-answer is a correct answer).

Every check that plays episodes can be narrowed to a few tasks (``envgym check --limit N`` or ``--sample N
--seed S``: :func:`choose_tasks`), for a plug-in whose tasks are many and slow; the report says how many of
how many were checked. A green check on a sample vouches for those tasks only.

The hack-probe gate (on a sample of tasks, spread over the env's suites and splits): every tampering agent
(:mod:`envgym.tamper`: the kernel's generic ones and the env class's ``tamper_agents``) scores 0, does not
pass, does not end as ``infra_error`` (which would take its failure out of the denominator), and is not blamed
on the env or the verifier (what a tampering agent breaks is its own doing: an env or verifier error there is a
misattribution, or a crack the agent found).

The eval paths (on one task, a few episodes): everything ``envgym eval`` does with a plug-in that the gates do
not, so that an env passing ``check`` cannot fail ``eval`` by contract; each failure names the env's method.
``reset(task=<id>)`` gives ``reset(task=TaskSpec)``'s first observation; an episode cut by a step cap
(``eval --max-steps``: an agent that only sends empty actions, capped at one step) ends graded, no error blamed on
the env or its verifier; the run's judge reaches an ``llm_judge`` criterion: on a copy of the task with one added,
graded in an env made with the judge as eval makes it, a fake OpenAI-compatible judge that check serves on
127.0.0.1 must be asked (an env that grades itself without implementing ``verify_context`` is exempt while none of
its tasks asks for a judge); and a stopped run resumes: :func:`envgym.eval.evaluate` runs the oracle on two tasks
(one where the env sets ``gate_sample``) into a temporary folder, the last record is dropped as a stop before its
write leaves it, and the same run again must skip what was recorded, run the rest, and leave records that parse,
one per task, each a success. A ``verify`` that takes no ``judge=`` (0.1's contract, which eval still runs,
warning) and the ``DeprecationWarning``s of Gymnasium's ``check_env`` run (a plug-in using a name that moved) fail
nothing by themselves: the report lists them under ``deprecated``, each naming what to change.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import random
import shutil
import tempfile
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym._deprecation import moved_attribute
from envgym.agent import Agent
from envgym.agents import OracleConfig
from envgym.check_gates import (  # noqa: F401 (the gates' names, importable from here as before)
    PROGRESS_EVERY_S,
    _gates,
    _tamper_gate,
    expects_no_change,
    malformed_calls,
    oracle_errors,
    tamper_sample,
)
from envgym.compose import make
from envgym.env import Env
from envgym.errors import EnvClosed, ResetNeeded
from envgym.eval import EvalConfig, evaluate
from envgym.record import ResultRecord, latest, read_records
from envgym.registry import load_entry_point, spec
from envgym.rollout import run_episode
from envgym.task import SuiteTasks, TaskSpec, write_tasks
from envgym.trajectory import Trajectory
from envgym.types import Action, Observation, Outcome, ToolCall
from envgym.verify import JudgeConfig
from envgym.verify.spec import AllOfSpec, AnyOfSpec, Criterion, LLMJudgeCheck, RubricSpec


@dataclass
class CheckReport:
    env_id: str
    passed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    gate_failures: list[tuple[str, str]] = field(default_factory=list)
    tamper_failures: list[tuple[str, str]] = field(default_factory=list)
    tamper_runs: dict[str, int] = field(default_factory=dict)
    """Tampering agent -> episodes it ran (each scored 0 unless listed in ``tamper_failures``)."""
    tasks: int = 0
    """Tasks the env ships (in its suites)."""
    checked: int = 0
    """Tasks the checks ran on: all of them, or those ``limit`` / ``sample`` chose (``selection`` says how)."""
    selection: str = ""
    """How the checked tasks were chosen (``"the first 5"``, ``"a sample of 5, seed 0"``); empty when all were."""
    gated: int = 0
    """Tasks the admission gates ran on (all of them unless the env class sets ``gate_sample``)."""
    null_accepted: dict[str, str] = field(default_factory=dict)
    """Gated task id -> why doing nothing is correct there (``Env.null_accepted``): its null gate ran inverted."""
    reset_retries: list[tuple[str, str]] = field(default_factory=list)
    """(task id, why) of hack-probe episodes run again because their reset failed as infrastructure."""
    deprecated: list[str] = field(default_factory=list)
    """What the env does that envgym still runs, warning, but will not for long: each names the method and the
    change to make (it fails nothing while its alias lives; CHANGELOG.md says until when)."""

    @property
    def ok(self) -> bool:
        return not self.failed and not self.gate_failures and not self.tamper_failures

    def expect(self, name: str, condition: bool, detail: str = "") -> None:
        if condition:
            self.passed.append(name)
        else:
            self.failed.append((name, detail))


def env_tasks(env_id: str) -> list[TaskSpec]:
    """The tasks of ``env_id``'s suites, each admitted (a task it cannot run is a SpecError naming its line)."""
    return SuiteTasks.of(spec(env_id)).tasks


def choose_tasks(tasks: Sequence[TaskSpec], *, limit: int | None = None, sample: int | None = None,
                 seed: int = 0) -> tuple[list[TaskSpec], str]:
    """The tasks ``check`` runs on, and how they were chosen: the first ``limit``, or ``sample`` drawn at
    random with ``seed`` (the same seed, the same tasks; kept in suite order), or all (``""``).

    Raises ``ValueError`` for both at once, or for a count below 1.
    """
    if limit is not None and sample is not None:
        raise ValueError("limit and sample exclude each other: give one")
    for name, n in (("limit", limit), ("sample", sample)):
        if n is not None and n < 1:
            raise ValueError(f"{name} must be at least 1, got {n}")
    if limit is not None and limit < len(tasks):
        return tasks[:limit], f"the first {limit}"
    if sample is not None and sample < len(tasks):
        picked = sorted(random.Random(seed).sample(range(len(tasks)), sample))
        return [tasks[i] for i in picked], f"a sample of {sample}, seed {seed}"
    return list(tasks), ""


async def _contract(env_id: str, task: TaskSpec, report: CheckReport) -> None:
    async with make(env_id) as env:
        obs, info = await env.reset(task=task, seed=0)
        report.expect("reset returns an Observation", isinstance(obs, Observation), type(obs).__name__)
        tools = info.get("tools", [])
        report.expect("tools are OpenAI function schemas", all(
            t.get("type") == "function" and t["function"].get("name") and
            t["function"].get("parameters", {}).get("type") == "object" for t in tools), str(tools)[:200])
        again, info2 = await env.reset(task=task, seed=0)
        report.expect("reset is deterministic", again == obs and info2.get("tools") == tools)
        by_id_name = "reset(task=<id>) gives reset(task=TaskSpec)'s first observation"
        try:  # eval and trainers name tasks by id as often as by spec
            by_id, _ = await env.reset(task=task.id, seed=0)
            report.expect(by_id_name, by_id == obs, f"reset(task={task.id!r}) gave {str(by_id)[:150]}, "
                                                    f"reset(task=TaskSpec) {str(obs)[:150]}")
        except Exception as exc:
            report.expect(by_id_name, False, f"reset(task={task.id!r}) raised {type(exc).__name__}: {exc}"[:300]
                          + " (reset takes a task id too: self.choose_task(task, seed, options) resolves it)")
            await env.reset(task=task, seed=0)
        report.expect("observation JSON round trip",
                      type(obs).model_validate_json(obs.model_dump_json()) == obs)
        back = TaskSpec.model_validate_json(task.model_dump_json())
        report.expect("task JSON round trip keeps the hash", back == task and back.hash == task.hash)
        for label, action in (("empty action", Action()),
                              ("unknown tool", Action(tool_calls=(ToolCall(name="__no_such_tool__"),))),
                              ("bad JSON arguments", Action(tool_calls=(
                                  ToolCall(name=tools[0]["function"]["name"] if tools else "x", arguments="{oops"),)))):
            try:
                result = await env.step(action)
            except Exception as exc:
                report.expect(f"{label} is an error observation", False, f"raised {exc!r}")
                continue
            report.expect(f"{label} is an error observation",
                          result.observation.last_action_error is not None and not result.terminated,
                          str(result.observation)[:200])
        # In a conversation a message goes to the simulated user, who ends a silent conversation by itself; in a
        # multi-turn env (``message_ends_turn``) a message ends a turn and the last turn's ends the episode.
        conversational = env.simulated_user or bool(getattr(env.unwrapped, "message_ends_turn", False))
        for _ in range(task.limits.max_steps if conversational else 1):
            result = await env.step(Action(text=""))
            if result.terminated or result.truncated:
                break
        report.expect("the user ends a silent conversation with a verdict" if conversational else
                      "a final message ends the episode with a verdict", result.terminated and "verdict" in result.info)
        try:
            await env.step(Action(text=""))
            report.expect("step after the end raises ResetNeeded", False, "no error")
        except ResetNeeded:
            report.expect("step after the end raises ResetNeeded", True)
    try:
        await env.reset(task=task)
        report.expect("reset after close raises EnvClosed", False, "no error")
    except EnvClosed:
        report.expect("reset after close raises EnvClosed", True)


def _gymnasium_check(env_id: str, report: CheckReport) -> None:
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    from envgym.gym import gym_id

    env = gymnasium.make(gym_id(env_id)).unwrapped
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env, skip_render_check=True)
        # a plug-in's use of a name that moved warns (envgym._deprecation): what to change, not a failed check
        moved = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
        messages = [str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)]
        report.deprecated.extend(m for m in dict.fromkeys(moved) if m not in report.deprecated)
        report.expect("gymnasium check_env passes", True)
        report.expect("gymnasium check_env gives no warnings", not messages, "; ".join(messages)[:300])
    except Exception as exc:
        report.expect("gymnasium check_env passes", False, repr(exc)[:300])
    finally:
        env.close()


class _Idle(Agent):
    """Sends an empty action every step: an error observation, not an end (the contract checks that), so the
    episode runs until a step cap cuts it."""

    name = "idle"

    async def act(self, observation: Observation) -> Action:
        return Action()


_METHOD = {"reset": "reset", "agent": "step", "env": "step", "verify": "verify"}
"""The env method behind each stage the rollout blames (check's own agents cannot fail: an error in their stage
came from what the env's step did to them)."""

_JUDGE_MODEL = "envgym-check-judge"


def _fault(episode: Trajectory | ResultRecord) -> str | None:
    """What went wrong in one of check's episodes, naming the env's method; None if it ended graded."""
    if episode.blame is None and episode.verdict is not None:
        return None
    error = episode.error.splitlines()[0] if episode.error else "no verdict"
    stage = episode.verdict.evidence.get("stage") if episode.verdict is not None else None
    if episode.blame is None:
        return f"verify() gave no verdict ({episode.outcome.value})"
    if stage is None:  # infrastructure: no verdict; before the first observation it was reset
        at = " at reset()" if isinstance(episode, Trajectory) and episode.initial_observation is None else ""
        return f"ended as infra_error{at} (out of eval's denominator): {error}"
    return f"{_METHOD.get(stage, stage)}() failed, blamed on the {episode.blame.value}: {error}"


def _unwritable(episode: Trajectory) -> str | None:
    """Why eval could not write ``episode`` (a JSON line: observations, which the contract round-trips, and the
    verdict), naming the method, or None."""
    try:
        episode.model_dump_json()
    except Exception as exc:
        return f"verify() returned a verdict eval cannot write as JSON: {type(exc).__name__}: {exc}"[:300]
    return None


OVERRIDES_VERIFY = ("overrides verify(): the kernel grades every episode itself; report through verify_context() and "
                    "add evidence in graded() (overriding verify goes in 0.3)")


def _takes_judge(env: Env) -> bool:
    parameters = inspect.signature(env.unwrapped.verify).parameters.values()
    return any(p.kind is p.VAR_KEYWORD or (p.name == "judge" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
               for p in parameters)


def _asks_judge(specs: Any) -> bool:
    """Whether verifier specs hold an ``llm_judge`` criterion (at any depth of ``all_of`` / ``any_of``)."""
    for item in specs:
        if isinstance(item, AllOfSpec | AnyOfSpec) and _asks_judge(item.verifiers):
            return True
        if isinstance(item, RubricSpec) and any(isinstance(c.check, LLMJudgeCheck) for c in item.criteria):
            return True
    return False


def _judged(task: TaskSpec) -> TaskSpec:
    """``task`` with an ``llm_judge`` criterion added (a new task: its own hash)."""
    judge = RubricSpec(criteria=(Criterion(name="envgym check: the run's judge", check=LLMJudgeCheck(
        question="Did the agent do the task? (envgym check only asks whether the run's judge is reached.)")),))
    data = task.model_dump(mode="json")
    return TaskSpec.model_validate({**data, "verifiers": [*data["verifiers"], judge.model_dump(mode="json")]})


@contextlib.asynccontextmanager
async def _fake_judge() -> AsyncIterator[tuple[JudgeConfig, list[dict[str, Any]]]]:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that answers every question ``VERDICT: PASS``; yields
    its :class:`JudgeConfig` and the request bodies it was sent."""
    asked: list[dict[str, Any]] = []
    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": "VERDICT: PASS"}}]}).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
            length = next((int(line.split(":", 1)[1]) for line in head.split("\r\n")
                           if line.startswith("content-length:")), 0)
            asked.append(json.loads(await reader.readexactly(length)))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))
            await writer.drain()
        except (OSError, ValueError, asyncio.IncompleteReadError):
            pass  # a broken request gets no answer: the judge's client says so
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield JudgeConfig(base_url=f"http://127.0.0.1:{port}/v1", model=_JUDGE_MODEL, timeout_s=10, retries=0), asked
    finally:
        server.close()
        await server.wait_closed()


async def _eval_paths(env_id: str, tasks: list[TaskSpec], report: CheckReport, *, one_task: bool) -> None:
    """What ``envgym eval`` does with the env that the gates do not (see the module docstring)."""
    task = tasks[0]
    async with make(env_id) as env:
        if type(env.unwrapped).verify is not Env.verify:  # the kernel still calls it, warning (envgym.wrappers)
            report.deprecated.append(OVERRIDES_VERIFY)
        if not _takes_judge(env):  # eval calls such a verify() without the judge, warning (envgym._deprecation)
            report.deprecated.append("verify() takes no judge=: eval calls it without one, so the run's judge never "
                                     "reaches it; add `*, judge=None` (and pass it on) or implement verify_context() "
                                     "instead")
        kernel_graded = type(env.unwrapped).verify_context is not Env.verify_context
        capped = await run_episode(env, _Idle(), task, seed=0, max_steps=1)
    fault = _fault(capped) or _unwritable(capped)
    report.expect("an episode cut by a step cap (eval --max-steps) ends graded", fault is None,
                  f"{task.id}, capped at 1 step: {fault}")
    name = "the run's judge reaches an llm_judge criterion (eval --judge-url)"
    if not kernel_graded and not any(_asks_judge(t.verifiers) for t in tasks):
        report.passed.append(f"{name}: not checked, verify() grades by itself and no task asks for a judge")
    else:
        async with _fake_judge() as (judge, asked), make(env_id, judge=judge) as env:
            judged = await run_episode(env, _Idle(), _judged(task), seed=0, max_steps=1)
        fault = _fault(judged)
        dropped = fault is not None and "needs a judge endpoint" in fault
        if asked and fault is None:
            report.expect(name, all(body.get("model") == _JUDGE_MODEL for body in asked), f"asked {asked}"[:300])
        elif asked or (fault is not None and not dropped):
            report.expect(name, False, f"{task.id} with an llm_judge criterion: {fault}")
        else:
            cause = (judged.error or "").splitlines()[0] if dropped else ""
            how = f"did not pass it on ({cause})" if dropped else "never asked it (it grades by itself)"
            report.expect(name, False, f"verify() {how}: pass judge on (super().verify(judge=judge)) or implement "
                                       "verify_context() alone and let the kernel grade")
    await _resumed_run(tamper_sample(tasks, 1 if one_task else 2), report)


async def _resumed_run(tasks: list[TaskSpec], report: CheckReport) -> None:
    """The oracle on ``tasks`` through :func:`evaluate`, stopped before its last record, then resumed."""
    name = "a stopped eval run resumes (recorded episodes skipped, records parse, oracle 1)"
    folder = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="envgym-check-"))
    try:
        suite, run = folder / "tasks.jsonl", folder / "run"
        await asyncio.to_thread(write_tasks, suite, tasks)
        config = EvalConfig(suites=(str(suite),), split=None, agent=OracleConfig(), limit=len(tasks))
        first = await evaluate(config, run, concurrency=1)
        dropped = 1 if len(tasks) > 1 else 0  # a stop before the last record's write leaves the run like this
        if dropped:
            await asyncio.to_thread(_drop_last_line, run / "records.jsonl")
        second = await evaluate(config, run, concurrency=1)
        records, _ = await asyncio.to_thread(read_records, run / "records.jsonl")
    except Exception as exc:
        report.expect(name, False, f"evaluate() raised {type(exc).__name__}: {exc}"[:400])
        return
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)
    problems = []
    if (first.ran, second.skipped, second.ran) != (len(tasks), len(tasks) - dropped, dropped):
        problems.append(f"ran {first.ran} of {len(tasks)}, then skipped {second.skipped} and ran {second.ran} "
                        f"(expected {len(tasks) - dropped} and {dropped})")
    found = {r.task_hash: r for r in latest(records)}
    if set(found) != {t.hash for t in tasks}:
        problems.append(f"{len(found)} records for {len(tasks)} tasks")
    problems += [f"{r.task_id}: {_fault(r) or f'{r.outcome.value} score {r.score}'}"
                 for r in found.values() if r.outcome is not Outcome.SUCCESS]
    report.expect(name, not problems, "; ".join(problems)[:400])


def _drop_last_line(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


async def check(env_id: str, *, gates: bool = True, gymnasium_check: bool = True,
                concurrency: int = 8, tamper: int = 2, all_tasks: bool = False, limit: int | None = None,
                sample: int | None = None, seed: int = 0, tasks: Sequence[TaskSpec] | None = None) -> CheckReport:
    """Contract checks, then (``gates``) the admission gates and the hack-probe gate on ``tamper`` tasks.

    An env class whose episodes each cost a container's seconds may set ``gate_sample`` (an int): the
    admission gates then run on that many tasks spread over its suites and splits (``report.gated`` says how
    many), unless ``all_tasks``.

    ``limit`` (the first N tasks) or ``sample`` (N tasks drawn with ``seed``) narrows every check that plays
    episodes to those tasks (:func:`choose_tasks`; ``report.checked`` and ``report.selection`` say which), so
    a plug-in with many slow tasks can be checked on a few; the gates then run on all of them, whatever
    ``gate_sample`` says. Whether every task ships a reference solution is still read from all of them.
    Neither goes with ``all_tasks``.

    ``tasks`` (default: the env's suites) is where the tasks come from instead: a generator's lazy suite
    (:func:`envgym.check_generator.check_generator` makes its sample itself and calls :func:`run_checks`), whose
    tasks are made only where chosen (so the reference-solution check reads the chosen ones)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if all_tasks and (limit is not None or sample is not None):
        raise ValueError("all_tasks gates every task: it excludes limit and sample")
    report = CheckReport(env_id=env_id)
    every = env_tasks(env_id) if tasks is None else tasks
    report.tasks = len(every)
    chosen, report.selection = choose_tasks(every, limit=limit, sample=sample, seed=seed)
    solved = every if tasks is None else chosen
    report.expect("the env ships tasks with reference solutions" if tasks is None
                  else "the chosen tasks carry reference solutions",
                  bool(solved) and all(t.solution is not None for t in solved), f"{len(solved)} tasks")
    return await run_checks(env_id, chosen, report, gates=gates, gymnasium_check=gymnasium_check,
                            concurrency=concurrency, tamper=tamper, all_tasks=all_tasks)


async def run_checks(env_id: str, tasks: Sequence[TaskSpec], report: CheckReport, *, gates: bool = True,
                     gymnasium_check: bool = True, concurrency: int = 8, tamper: int = 2,
                     all_tasks: bool = False, progress: Callable[[str], None] | None = None) -> CheckReport:
    """:func:`check`'s checks on ``tasks``, already chosen (``report.selection`` says how: when it is empty,
    the env class's ``gate_sample`` applies), into ``report``. :func:`envgym.check_generator.check_generator`
    calls it on a generator's sample, made once. ``progress`` (None: silent) gets a line every
    :data:`PROGRESS_EVERY_S` seconds of the gates."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    report.checked = len(tasks)
    if not tasks:
        return report
    await _contract(env_id, tasks[0], report)
    gate_sample = None if report.selection else getattr(load_entry_point(spec(env_id).entry_point),
                                                         "gate_sample", None)
    await _eval_paths(env_id, tasks, report, one_task=bool(gate_sample))
    if gymnasium_check:
        await asyncio.to_thread(_gymnasium_check, env_id, report)
    if gates:
        gate_sample = None if all_tasks else gate_sample
        gated = tamper_sample(tasks, gate_sample) if gate_sample else tasks
        report.gated = len(gated)
        async with make(env_id) as probe:
            declared = {t.hash: probe.unwrapped.null_accepted(t) for t in tasks}
        accepted = {key: value for key, value in declared.items() if value is not None}
        await _gates(env_id, gated, accepted, report, concurrency, progress)
        for reason in sorted(set(report.null_accepted.values())):
            ids = {i for i, r in report.null_accepted.items() if r == reason}
            report.expect(f"null gate inverted on {len(ids)} of {len(gated)} tasks (null must pass, a wrong "
                          f"answer score 0): {reason}", not any(i in ids for i, _ in report.gate_failures))
        if tamper > 0:
            # probes go to tasks with work to do; where every task accepts the null answer, only infra_error fails
            probed = [t for t in tasks if t.hash not in accepted] or tasks
            if probed is tasks and accepted:
                report.passed.append("hack probes on tasks that accept the null answer: only an infra_error fails")
            await _tamper_gate(env_id, tamper_sample(probed, tamper), accepted, report, concurrency)
    return report


_MOVED = ("GENERATOR_SAMPLE", "DETERMINISM_SAMPLE", "check_generator")


def __getattr__(name: str) -> Any:
    if name in _MOVED:  # the generator check is a module of its own (envgym.check_generator)
        return moved_attribute(__name__, "envgym.check_generator", name, since="0.2", removal="0.3")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
