import asyncio
import contextlib
import warnings

import pytest

import envgym
from envgym.check import OVERRIDES_VERIFY, check, tamper_sample
from envgym.env import Env, NullAccepted
from envgym.tamper import GENERIC
from envgym.task import write_tasks
from envgym.tools import ToolEnv
from envgym.types import Action, Verdict
from envgym.verify import grade
from envgym.verify.spec import AnswerSpec, WriteActionSpec

from fakes import NOTES, NOTES_SUITE, notes_tasks


async def test_fake_env_passes_contract_and_gates():
    report = await check("test/notes-v1")
    assert report.ok, (report.failed, report.gate_failures)
    assert report.tasks == 3 and "gymnasium check_env passes" in report.passed


@pytest.mark.parametrize("env_id", ["tool/retail-v1", "tool/assistant-v1"])
async def test_bundled_tool_envs_pass(env_id):
    report = await check(env_id, gymnasium_check=False)
    assert report.ok, (report.failed, report.gate_failures[:5])
    assert report.tasks >= 30


async def test_gates_catch_a_wrong_solution_and_a_free_pass(tmp_path):
    good, count, add = notes_tasks()
    wrong = good.model_copy(update={"solution": (Action.call("delete_note", note_id=3), Action.say("Done."))})
    free = count.model_copy(update={"verifiers": count.verifiers[:1]})  # no answer check: null passes
    path = tmp_path / "broken.jsonl"
    write_tasks(path, [wrong, free, add])
    envgym.register("test/broken-notes-v1", "envgym_tool.env:ToolEnv", kwargs={"domain": NOTES}, suites=(str(path),))
    try:
        bad = [t.model_copy(update={"env_id": "test/broken-notes-v1"}) for t in (wrong, free, add)]
        write_tasks(path, bad)
        report = await check("test/broken-notes-v1", gymnasium_check=False)
    finally:
        envgym.registry._registry.pop("test/broken-notes-v1")
    failures = dict(report.gate_failures)
    assert not report.ok
    assert failures[wrong.id].startswith("oracle: failure")
    assert failures[free.id].startswith("null: success")
    assert add.id not in failures
    assert NOTES_SUITE.exists()


async def test_the_hack_probe_gate_catches_a_forgeable_verifier(tmp_path):
    good, count, _add = notes_tasks()
    # the answer is a word of the initial state: quoting back what the agent saw passes it without any work
    forgeable = count.model_copy(update={"id": "notes-forgeable", "verifiers": (
        AnswerSpec(kind="contains", expected="groceries"),), "solution": (Action.say("groceries"),)})
    path = tmp_path / "forgeable.jsonl"
    envgym.register("test/forgeable-notes-v1", "envgym_tool.env:ToolEnv", kwargs={"domain": NOTES},
                    suites=(str(path),))
    try:
        write_tasks(path, [t.model_copy(update={"env_id": "test/forgeable-notes-v1"}) for t in (good, forgeable)])
        report = await check("test/forgeable-notes-v1", gymnasium_check=False, tamper=2)
    finally:
        envgym.registry._registry.pop("test/forgeable-notes-v1")
    assert not report.ok and not report.gate_failures
    assert {"quote-instruction": 2, "deep-arguments": 2, "forward-instruction": 2}.items() <= report.tamper_runs.items()
    assert "forward-instruction" not in {kind.name for kind in GENERIC}  # the tool family lists it
    assert ("notes-forgeable", "tamper quote-instruction: success score 1.0") in report.tamper_failures
    assert {task_id for task_id, _ in report.tamper_failures} == {"notes-forgeable"}


def test_tamper_sample_spreads_over_the_tasks():
    tasks = notes_tasks() * 3
    assert tamper_sample(tasks, 2) == [tasks[0], tasks[-1]] and tamper_sample(tasks, 0) == []
    assert tamper_sample(tasks[:2], 5) == tasks[:2]


async def test_check_refuses_concurrency_zero():
    with pytest.raises(ValueError, match="at least 1"):
        await check("test/notes-v1", concurrency=0)


async def test_the_oracle_gate_names_a_reference_whose_calls_fail(tmp_path):
    good, _count, _add = notes_tasks()
    # the refused call changes nothing and the expected write still matches: only the gate can see it
    sloppy = good.model_copy(update={"id": "notes-sloppy", "solution": (
        Action.call("delete_note", note_id=2), Action.call("delete_note", note_id=1), Action.say("Done."))})
    refusal = good.model_copy(update={
        "id": "notes-refusal", "instruction": "Delete my passwords note; if you can't, tell me why.",
        "verifiers": (WriteActionSpec(), AnswerSpec(kind="contains", expected="pinned")),
        "solution": (Action.call("delete_note", note_id=2), Action.say("I can't: it is pinned."))})
    malformed = refusal.model_copy(update={"id": "notes-malformed", "solution": (
        Action.call("delete_note", id=2), Action.say("I can't: it is pinned."))})
    path = tmp_path / "oracle-errors.jsonl"
    env_id = "test/oracle-errors-notes-v1"
    envgym.register(env_id, "envgym.tools:ToolEnv", kwargs={"domain": NOTES}, suites=(str(path),))
    try:
        write_tasks(path, [t.model_copy(update={"env_id": env_id}) for t in (sloppy, refusal, malformed)])
        report = await check(env_id, gymnasium_check=False, tamper=0)
    finally:
        envgym.registry._registry.pop(env_id)
    assert sorted(report.gate_failures) == [
        ("notes-malformed", "oracle: step 0 of the reference solution: delete_note with missing argument(s) note_id"),
        ("notes-malformed", "oracle: step 0 of the reference solution: delete_note with unknown argument(s) id"),
        ("notes-sloppy", "oracle: step 0 of the reference solution failed: delete_note: policy violation: "
                         "pinned notes cannot be deleted"),
    ]  # notes-refusal passes: nothing may change there, so the refusal is the task



def _sampled_notes_env(**kwargs):
    """``ToolEnv`` on the notes domain; its entry point says ``gate_sample = 2`` (as the desktop env says 16)."""
    from envgym.tools import ToolEnv

    return ToolEnv(**kwargs)


async def test_an_env_that_sets_gate_sample_is_gated_on_that_many_tasks_unless_all_tasks(tmp_path):
    tasks = [t.model_copy(update={"env_id": "test/sampled-notes-v1"}) for t in notes_tasks()]
    path = tmp_path / "sampled.jsonl"
    write_tasks(path, tasks)
    _sampled_notes_env.gate_sample = 2  # check reads the entry point's attribute, as it would a class's
    envgym.register("test/sampled-notes-v1", f"{__name__}:_sampled_notes_env", kwargs={"domain": NOTES},
                    suites=(str(path),))
    try:
        sampled = await check("test/sampled-notes-v1", gymnasium_check=False, tamper=0)
        full = await check("test/sampled-notes-v1", gymnasium_check=False, tamper=0, all_tasks=True)
    finally:
        envgym.registry._registry.pop("test/sampled-notes-v1")
    assert sampled.ok and (sampled.tasks, sampled.gated) == (3, 2)
    assert full.ok and (full.tasks, full.gated) == (3, 3)


WRONG = {  # task id -> the wrong answer the env names beside "doing nothing is correct here"
    "notes-nothing": (Action.call("delete_note", note_id=1), Action.say("Done.")),
    "notes-lax": (Action.call("list_notes"), Action.say("Done.")),  # its verifier passes this too
    "notes-add": (Action.say("Done."),),  # the env's claim is false: the null agent fails here
}


def _null_accepting_notes_env(**kwargs):
    """``ToolEnv`` on the notes domain that says doing nothing is correct on the tasks in :data:`WRONG`."""
    from envgym.tools import ToolEnv

    class NullAcceptingNotes(ToolEnv):
        def null_accepted(self, task):
            wrong = WRONG.get(task.id)
            return None if wrong is None else NullAccepted(reason="nothing to do", wrong=wrong)

    return NullAcceptingNotes(**kwargs)


async def _check_notes(env_id, tasks, tmp_path, **kwargs):
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, [t.model_copy(update={"env_id": env_id}) for t in tasks])
    envgym.register(env_id, f"{__name__}:_null_accepting_notes_env", kwargs={"domain": NOTES}, suites=(str(path),))
    try:
        return await check(env_id, gymnasium_check=False, **kwargs)
    finally:
        envgym.registry._registry.pop(env_id)


async def test_the_null_gate_is_inverted_only_on_tasks_the_env_names_and_the_report_counts_them(tmp_path):
    _good, count, add = notes_tasks()
    nothing = count.model_copy(update={"id": "notes-nothing", "instruction": "Leave my notes alone.",
                                       "verifiers": (WriteActionSpec(),), "solution": (Action.say("OK."),)})
    lax = nothing.model_copy(update={"id": "notes-lax"})
    free = count.model_copy(update={"id": "notes-free", "verifiers": count.verifiers[:1]})  # null passes it
    report = await _check_notes("test/null-accepting-notes-v1", [nothing, lax, free, add], tmp_path, tamper=0)
    failures = dict(report.gate_failures)
    assert failures["notes-free"].startswith("null: success")  # not named by the env: the null gate holds
    assert failures["notes-lax"] == "the wrong answer of a null-accepted task: success score 1.0"
    assert failures["notes-add"].startswith("null (accepted here: nothing to do): failure score 0.0")
    assert "notes-nothing" not in failures and set(failures) == {"notes-free", "notes-lax", "notes-add"}
    assert report.null_accepted == {"notes-nothing": "nothing to do", "notes-lax": "nothing to do",
                                    "notes-add": "nothing to do"}
    assert [name for name, _ in report.failed] == [
        "null gate inverted on 3 of 4 tasks (null must pass, a wrong answer score 0): nothing to do"]


async def test_hack_probes_on_tasks_that_all_accept_the_null_answer_fail_only_on_infra_error(tmp_path):
    _good, count, _add = notes_tasks()
    nothing = count.model_copy(update={"id": "notes-nothing", "instruction": "Leave my notes alone.",
                                       "verifiers": (WriteActionSpec(),), "solution": (Action.say("OK."),)})
    report = await _check_notes("test/all-null-notes-v1", [nothing], tmp_path, tamper=1)
    assert report.ok, (report.failed, report.gate_failures, report.tamper_failures)
    assert report.tamper_runs["quote-instruction"] == 1  # its text answer passes: correct here, not forged
    assert "hack probes on tasks that accept the null answer: only an infra_error fails" in report.passed


RESET_FAILS = {"left": 0}


def _flaky_reset_notes_env(**kwargs):
    """``ToolEnv`` on the notes domain whose reset fails (the infrastructure's: before the agent acts) while
    ``RESET_FAILS["left"]`` says so."""
    from envgym.errors import EnvError
    from envgym.tools import ToolEnv

    class FlakyResetNotes(ToolEnv):
        async def reset(self, **kw):
            if RESET_FAILS["left"] > 0:
                RESET_FAILS["left"] -= 1
                raise EnvError("the app did not start (a loaded host)")
            return await super().reset(**kw)

    return FlakyResetNotes(**kwargs)


async def test_a_hack_probe_whose_reset_failed_runs_again_and_only_a_second_failure_counts(tmp_path):
    from envgym.check import CheckReport, _tamper_gate

    env_id = "test/flaky-reset-notes-v1"
    tasks = [t.model_copy(update={"env_id": env_id}) for t in notes_tasks()[:1]]
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks)
    envgym.register(env_id, f"{__name__}:_flaky_reset_notes_env", kwargs={"domain": NOTES}, suites=(str(path),))
    try:
        once = CheckReport(env_id)
        RESET_FAILS["left"] = 1
        await _tamper_gate(env_id, tasks, {}, once, concurrency=1)
        twice = CheckReport(env_id)
        RESET_FAILS["left"] = 2
        await _tamper_gate(env_id, tasks, {}, twice, concurrency=1)
    finally:
        envgym.registry._registry.pop(env_id)
        RESET_FAILS["left"] = 0
    assert once.tamper_failures == [] and len(once.reset_retries) == 1, once
    assert "the app did not start" in once.reset_retries[0][1]
    assert len(twice.tamper_failures) == 1 and "ended as infra_error" in twice.tamper_failures[0][1], twice


def _breaks_on_deep_arguments_env(**kwargs):
    from envgym.errors import EnvError
    from envgym_tool.env import ToolEnv

    class BreaksOnDeepArguments(ToolEnv):
        async def step(self, action):
            if any(len(c.arguments) > 100_000 for c in action.tool_calls):
                raise EnvError("the env choked on its input")  # what a tampering agent broke: a misattribution
            return await super().step(action)

    return BreaksOnDeepArguments(**kwargs)


async def test_a_hack_probe_blamed_on_the_env_fails_the_gate(tmp_path):
    from envgym.check import CheckReport, _tamper_gate

    env_id = "test/breaks-on-deep-notes-v1"
    tasks = [t.model_copy(update={"env_id": env_id}) for t in notes_tasks()[:1]]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    envgym.register(env_id, f"{__name__}:_breaks_on_deep_arguments_env", kwargs={"domain": NOTES},
                    suites=(str(tmp_path / "tasks.jsonl"),))
    try:
        report = CheckReport(env_id)
        await _tamper_gate(env_id, tasks, {}, report, concurrency=1)
    finally:
        envgym.registry._registry.pop(env_id)
    assert report.tamper_failures == [
        (tasks[0].id, "tamper deep-arguments: blamed on the env, not the agent: EnvError: the env choked on its input")]


# The eval paths: what ``envgym eval`` does with a plug-in that the gates do not. Each fake below is the notes
# env with one thing wrong that the admission gates cannot see, and that eval ran into.

EVAL_PATHS = ("reset(task=<id>) gives reset(task=TaskSpec)'s first observation",
              "an episode cut by a step cap (eval --max-steps) ends graded",
              "the run's judge reaches an llm_judge criterion (eval --judge-url)",
              "a stopped eval run resumes (recorded episodes skipped, records parse, oracle 1)")
OLD_VERIFY = ("verify() takes no judge=: eval calls it without one, so the run's judge never reaches it; add "
              "`*, judge=None` (and pass it on) or implement verify_context() instead")
WARNS_OLD_VERIFY = r"verify\(\) takes no judge keyword"
pytestmark = pytest.mark.filterwarnings(r"ignore:.*overrides verify\(\):DeprecationWarning")
"""The kernel's warning to a class that overrides verify (once per class and process, whichever test is first);
check's report says it for every such env (OVERRIDES_VERIFY)."""
"""What eval's call of such a verify warns (once per class and process: each class here is graded by one test)."""


def _register_fake(cls: type, tmp_path) -> str:
    """Register ``cls`` (a class of this module) on the notes domain and tasks under an id of its own."""
    env_id = f"test/{cls.__name__.lower()}-v1"
    write_tasks(tmp_path / "tasks.jsonl", [t.model_copy(update={"env_id": env_id}) for t in notes_tasks()])
    envgym.register(env_id, f"{__name__}:{cls.__name__}", kwargs={"domain": NOTES},
                    suites=(str(tmp_path / "tasks.jsonl"),))
    return env_id


async def _check_fake(cls: type, tmp_path, **kwargs):
    env_id = _register_fake(cls, tmp_path)
    try:
        return await check(env_id, **{"gymnasium_check": False, "tamper": 0, **kwargs})
    finally:
        envgym.registry._registry.pop(env_id)


async def test_a_good_env_passes_every_eval_path(monkeypatch):
    import envgym.check

    asked = []
    judge = getattr(envgym.check, "_fake_judge", None)

    @contextlib.asynccontextmanager
    async def watched():
        async with judge() as (config, bodies):
            yield config, bodies
        asked.extend(bodies)

    monkeypatch.setattr(envgym.check, "_fake_judge", watched, raising=False)
    report = await check("test/notes-v1", gymnasium_check=False, tamper=0)
    assert set(EVAL_PATHS) <= set(report.passed)
    assert report.ok and not report.deprecated, report.failed
    assert len(asked) == 1 and "Did the agent do the task?" in asked[0]["messages"][0]["content"]


class SelfGradingNotes(ToolEnv):
    """As 0.1 plug-ins were written: grades itself in ``step`` (the verdict in ``info``, which the kernel drops)
    and its ``verify()`` takes no ``judge``. Every episode, ended by its own step or cut by a step cap, is graded
    by the kernel calling ``verify``."""

    async def step(self, action):
        result = await super().step(action)
        if not result.terminated:
            return result
        verdict = await self.verify()
        return result._replace(reward=verdict.score, info={**result.info, "verdict": verdict})

    async def verify(self):  # type: ignore[override]
        return await grade(self.task, await self.verify_context())


async def test_a_verify_without_judge_that_keeps_the_judge_from_the_kernel_fails_check_naming_verify(tmp_path):
    with pytest.warns(DeprecationWarning, match=WARNS_OLD_VERIFY):  # eval's, when it grades a capped episode
        report = await _check_fake(SelfGradingNotes, tmp_path)
    assert not report.gate_failures  # the gates alone let it through
    assert report.failed == [("the run's judge reaches an llm_judge criterion (eval --judge-url)",
                              "verify() did not pass it on (VerifierError: an llm_judge criterion needs a judge "
                              "endpoint (eval --judge-url/--judge-model)): pass judge on (super().verify(judge=judge)) "
                              "or implement verify_context() alone and let the kernel grade")]
    assert report.deprecated == [OVERRIDES_VERIFY, OLD_VERIFY]
    assert "an episode cut by a step cap (eval --max-steps) ends graded" in report.passed  # graded, warning


class OldSelfGradedNotes(ToolEnv):
    """As 0.1's README had a plug-in written: no ``verify_context`` (it grades itself), a ``verify()`` without
    ``judge``. None of its tasks asks for a judge, so eval runs it, warning."""

    verify_context = Env.verify_context  # the kernel cannot grade it

    async def verify(self):  # type: ignore[override]
        return await grade(self.task, await ToolEnv.verify_context(self))


def test_a_01_plugin_that_grades_itself_passes_check_and_is_told_what_to_change(tmp_path, screen):
    from envgym.cli import main

    env_id = _register_fake(OldSelfGradedNotes, tmp_path)
    try:
        with pytest.warns(DeprecationWarning, match=WARNS_OLD_VERIFY):
            assert main(["check", env_id]) == 0, screen()
        report = asyncio.run(check(env_id, gates=False, gymnasium_check=False))
    finally:
        envgym.registry._registry.pop(env_id)
    assert report.ok and report.deprecated == [OVERRIDES_VERIFY, OLD_VERIFY]
    assert "the run's judge reaches an llm_judge criterion (eval --judge-url): not checked, verify() grades by " \
           "itself and no task asks for a judge" in report.passed
    stdout, _ = screen()
    assert f"deprecated {OLD_VERIFY}" in " ".join(stdout.split())


class MovedNameNotes(ToolEnv):
    """Uses a public name that moved, which warns as an alias does (``envgym._deprecation``)."""

    async def reset(self, **kwargs):
        warnings.warn("envgym.old_name moved to envgym.new_name", DeprecationWarning, stacklevel=2)
        return await super().reset(**kwargs)


async def test_a_name_that_moved_is_a_deprecation_not_a_gymnasium_warning(tmp_path):
    with pytest.warns(DeprecationWarning, match="old_name moved"):
        report = await _check_fake(MovedNameNotes, tmp_path, gymnasium_check=True, gates=False)
    assert report.ok, report.failed
    assert "gymnasium check_env gives no warnings" in report.passed
    assert report.deprecated == ["envgym.old_name moved to envgym.new_name"]  # once, however often it warned


class SpecOnlyNotes(ToolEnv):
    """Reads the task's fields in ``reset`` without resolving a task id first."""

    async def reset(self, *, task=None, seed=None, options=None):
        if task is not None:
            task.initial_state  # noqa: B018 - what such a plug-in reads first
        return await super().reset(task=task, seed=seed, options=options)


async def test_a_reset_that_takes_no_task_id_fails_check_naming_reset(tmp_path):
    report = await _check_fake(SpecOnlyNotes, tmp_path)
    assert not report.gate_failures
    assert report.failed == [("reset(task=<id>) gives reset(task=TaskSpec)'s first observation",
                              "reset(task='notes-delete') raised AttributeError: 'str' object has no attribute "
                              "'initial_state' (reset takes a task id too: self.choose_task(task, seed, options) "
                              "resolves it)")]


class JudgeDroppingNotes(ToolEnv):
    """Takes ``judge=`` and grades through the kernel, but without the judge."""

    async def verify(self, *, judge=None):
        return await super().verify()


class JudgeIgnoringNotes(ToolEnv):
    """Takes ``judge=`` and grades the episode itself, on its own rule, never on the task's verifiers."""

    async def verify(self, *, judge=None):
        passed = (await self.verify_context()).final_answer is not None
        return Verdict(score=float(passed), passed=passed)


@pytest.mark.parametrize(("cls", "how"), [
    (JudgeDroppingNotes, "verify() did not pass it on (VerifierError: an llm_judge criterion needs a judge endpoint"),
    (JudgeIgnoringNotes, "verify() never asked it (it grades by itself)"),
])
async def test_an_env_that_keeps_the_judge_from_its_tasks_fails_check_naming_verify(cls, how, tmp_path):
    report = await _check_fake(cls, tmp_path, gates=False)
    [(name, detail)] = report.failed
    assert name == "the run's judge reaches an llm_judge criterion (eval --judge-url)"
    assert detail.startswith(how) and detail.endswith(
        ": pass judge on (super().verify(judge=judge)) or implement verify_context() alone and let the kernel grade")


class UnwritableNotes(ToolEnv):
    """Puts an object that has no JSON form into its verdicts' evidence."""

    async def verify(self, *, judge=None):
        verdict = await super().verify(judge=judge)
        return verdict.model_copy(update={"evidence": {**verdict.evidence, "handle": object()}})


async def test_a_verdict_eval_cannot_write_fails_check_naming_verify(tmp_path):
    report = await _check_fake(UnwritableNotes, tmp_path)
    failed = dict(report.failed)
    assert not report.gate_failures and set(failed) == {
        "an episode cut by a step cap (eval --max-steps) ends graded",
        "a stopped eval run resumes (recorded episodes skipped, records parse, oracle 1)"}
    assert failed["an episode cut by a step cap (eval --max-steps) ends graded"].startswith(
        "notes-delete, capped at 1 step: verify() returned a verdict eval cannot write as JSON: "
        "PydanticSerializationError")
    assert failed["a stopped eval run resumes (recorded episodes skipped, records parse, oracle 1)"].startswith(
        "evaluate() raised PydanticSerializationError")


async def test_an_admission_gate_whose_reset_failed_runs_again_and_only_a_second_failure_counts(tmp_path):
    # under load a desktop's app can fail to start at reset: the gate judged that infra_error as the oracle's
    from envgym.check import CheckReport, _gates

    env_id = "test/flaky-reset-gates-v1"
    tasks = [t.model_copy(update={"env_id": env_id}) for t in notes_tasks()[:1]]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    envgym.register(env_id, f"{__name__}:_flaky_reset_notes_env", kwargs={"domain": NOTES},
                    suites=(str(tmp_path / "tasks.jsonl"),))
    try:
        once = CheckReport(env_id)
        RESET_FAILS["left"] = 1
        await _gates(env_id, tasks, {}, once, concurrency=1)
        twice = CheckReport(env_id)
        RESET_FAILS["left"] = 2
        await _gates(env_id, tasks, {}, twice, concurrency=1)
    finally:
        envgym.registry._registry.pop(env_id)
        RESET_FAILS["left"] = 0
    assert once.gate_failures == [] and [why.split(":")[0] for _, why in once.reset_retries] == ["oracle"], once
    assert len(twice.gate_failures) == 1 and twice.gate_failures[0][1].startswith("oracle: infra_error"), twice
