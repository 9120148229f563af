"""A plug-in written against envgym 0.1 runs, warning (``envgym._deprecation``; CHANGELOG.md, ``Deprecated``).

``tests/thirdparty/acme_ledger`` is frozen as 0.1's README had a plug-in written: it imports ``envgym.tooling``,
draws its task with ``self._choose_task(task, seed)`` and grades itself in ``verify(self)`` (no ``judge``),
returning the verdict when the agent answers. It is installed as ``tests/test_thirdparty.py`` installs its
packages. ``envgym check`` passes on it and ``envgym.eval.evaluate`` scores its oracle 100% and the null agent
0%; an episode cut by the run's step cap is graded by the env's own ``verify`` (truncated, blamed on nobody,
where 0.1.x recorded a failure blamed on the verifier: ``verify() got an unexpected keyword argument 'judge'``).
Every warning on the way is a ``DeprecationWarning`` naming the old name, the new one and when the alias goes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import envgym
from envgym.agents import NullConfig, OracleConfig
from envgym.cli import main
from envgym.env import Env, StepResult
from envgym.eval import EvalConfig, evaluate
from envgym.task import TaskSpec
from envgym.tools import args as tools_args
from envgym.types import Action, Observation, Verdict
from envgym.verify import JudgeConfig
from envgym.wrappers import Grading, TimeLimit

from fakes import installed_plugin

PACKAGE = Path(__file__).parent / "thirdparty" / "acme_ledger"
SUITE = str(PACKAGE / "acme_ledger" / "tasks")
WHEN = r" \(since 0\.2; the alias goes in 0\.3\)"
TOOLING_NAMES = ("ArgumentsError", "NoArgs", "args_model_of", "decode_arguments", "function_schema")

TOOLING = rf"envgym\.tooling moved to envgym\.tools\.args{WHEN}"
CHOOSE_TASK = rf"envgym\.env\.Env\._choose_task moved to envgym\.env\.Env\.choose_task{WHEN}"
LEDGER_VERIFY = (r"acme_ledger\.env\.LedgerEnv\.verify\(\) takes no judge keyword: .* accept `\*, judge=None` or "
                 r"implement verify_context\(\) instead \(since 0\.2; this compatibility goes in 0\.3\)")
LEDGER_OVERRIDES = (r"acme_ledger\.env\.LedgerEnv overrides verify\(\): the kernel grades, so report through "
                    r"verify_context\(\) and add evidence in graded\(\) instead \(since 0\.2; overriding verify goes "
                    r"in 0\.3\)")
PLUGIN_WARNINGS = (TOOLING, CHOOSE_TASK, LEDGER_OVERRIDES,
                   *(rf"envgym\.tooling\.{n} moved to envgym\.tools\.args\.{n}{WHEN}" for n in TOOLING_NAMES))


def only_deprecations(record: pytest.WarningsRecorder, expected: tuple[str, ...]) -> None:
    """Every warning recorded is a DeprecationWarning matching one of ``expected``, and each was warned."""
    seen = [(w.category, str(w.message)) for w in record]
    assert all(category is DeprecationWarning for category, _ in seen), seen
    for message in (m for _, m in seen):
        assert any(re.fullmatch(p, message) for p in expected), f"unexpected warning: {message}"
    for pattern in expected:
        assert any(re.fullmatch(pattern, m) for _, m in seen), f"not warned: {pattern}\nwarned: {seen}"


@pytest.fixture
def fresh_tooling(monkeypatch):
    """``envgym.tooling`` not imported yet, so its import warns again (and nothing of it stays behind)."""
    monkeypatch.delitem(sys.modules, "envgym.tooling", raising=False)
    vars(envgym).pop("tooling", None)
    yield
    vars(envgym).pop("tooling", None)  # the import binds it on the package


@pytest.fixture
def ledger(tmp_path, monkeypatch, fresh_tooling):
    with installed_plugin(tmp_path, monkeypatch, PACKAGE, "ledger = acme_ledger:register_all"):
        yield


def test_envgym_tooling_is_envgym_tools_args_warning(fresh_tooling):
    with pytest.warns(DeprecationWarning, match=f"^{TOOLING}$") as record:
        import envgym.tooling as tooling
    assert [w.filename for w in record] == [__file__]  # the warning points at the importer, not at envgym
    for name in TOOLING_NAMES:
        with pytest.warns(DeprecationWarning, match=rf"^envgym\.tooling\.{name} moved to envgym\.tools\.args\.{name}"
                                                    rf"{WHEN}$") as record:
            assert getattr(tooling, name) is getattr(tools_args, name)
        assert record[0].filename == __file__
    assert sorted(dir(tooling)) == sorted(TOOLING_NAMES)
    with pytest.raises(AttributeError, match="no attribute 'parse_arguments'"):
        tooling.parse_arguments  # noqa: B018 - not in 0.1's envgym.tooling, so no alias either


class _Scripted(Env):
    """Ends no episode itself: ``TimeLimit`` truncates it, so the kernel asks for the verdict."""

    async def reset(self, *, task=None, seed=None, options=None):
        self.task = task
        return Observation(text="go"), {}

    async def step(self, action: Action) -> StepResult:
        return StepResult(Observation(text="ok"), 0.0, False, False, {})


def _task() -> TaskSpec:
    return TaskSpec(id="t-1", env_id="test/scripted-v1", instruction="go", limits={"max_steps": 1},
                    verifiers=[{"type": "answer", "expected": "yes"}])


def test_choose_task_is_choose_task_warning():
    env, task = _Scripted(), _task()
    with pytest.warns(DeprecationWarning, match=f"^{CHOOSE_TASK}$") as record:
        assert env._choose_task(task, 0) is task
    assert record[0].filename == __file__
    with pytest.warns(DeprecationWarning, match=CHOOSE_TASK):
        assert Env._choose_task is Env.choose_task


async def _truncated_verdict(env: Env, judge: JudgeConfig | None) -> Verdict:
    graded = Grading(TimeLimit(env), judge=judge)  # the task's limit: 1 step
    await graded.reset(task=_task(), seed=0)
    _obs, reward, terminated, truncated, info = await graded.step(Action(text="x"))
    assert (terminated, truncated, info["truncated_by"]) == (False, True, "max_steps")
    assert reward == info["verdict"].score
    return info["verdict"]


@pytest.mark.filterwarnings(r"ignore:.*overrides verify\(\):DeprecationWarning")  # the next test's
async def test_a_verify_without_judge_is_called_without_it_warning_once_per_class():
    judge = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="judge")

    class Old(_Scripted):  # 0.1's contract: the env grades itself
        async def verify(self) -> Verdict:
            return Verdict(score=1.0, passed=True, evidence={"by": "old"})

    class New(_Scripted):
        async def verify(self, *, judge: JudgeConfig | None = None) -> Verdict:
            return Verdict(score=0.5, passed=False, evidence={"judge": judge.model if judge else None})

    class Open(_Scripted):
        async def verify(self, **options) -> Verdict:
            return Verdict(score=0.5, passed=False, evidence={"judge": options["judge"].model})

    pattern = (rf"^{__name__}\.test_a_verify_without_judge_is_called_without_it_warning_once_per_class\.<locals>"
               r"\.Old\.verify\(\) takes no judge keyword: envgym calls it without one, so the run's judge never "
               r"reaches it; accept `\*, judge=None` or implement verify_context\(\) instead \(since 0\.2; this "
               r"compatibility goes in 0\.3\)$")
    with pytest.warns(DeprecationWarning, match=pattern) as record:
        assert (await _truncated_verdict(Old(), judge)).evidence == {"by": "old"}
    assert len([w for w in record if "takes no judge" in str(w.message)]) == 1
    # once per class: a second instance, graded again, warns no more (pytest turns any warning into an error)
    assert (await _truncated_verdict(Old(), None)).evidence == {"by": "old"}
    assert (await _truncated_verdict(New(), judge)).evidence == {"judge": "judge"}
    assert (await _truncated_verdict(Open(), judge)).evidence == {"judge": "judge"}


async def test_an_env_that_overrides_verify_is_still_graded_by_it_warning_once_per_class():
    class Graded(_Scripted):  # 0.2's contract for an env whose grading was not a verifier kind
        async def verify(self, *, judge: JudgeConfig | None = None) -> Verdict:
            return Verdict(score=0.25, passed=False, evidence={"by": "itself"})

    pattern = (r"\.Graded overrides verify\(\): the kernel grades, so report through verify_context\(\) and add "
               r"evidence in graded\(\) instead \(since 0\.2; overriding verify goes in 0\.3\)$")
    with pytest.warns(DeprecationWarning, match=pattern) as record:
        assert (await _truncated_verdict(Graded(), None)).evidence == {"by": "itself"}
    assert len(record) == 1
    assert (await _truncated_verdict(Graded(), None)).evidence == {"by": "itself"}  # once per class


def test_envgym_check_passes_on_the_01_plugin(ledger, screen):
    with pytest.warns(DeprecationWarning) as record:
        assert main(["check", "ledger/books-v1", "--concurrency", "2"]) == 0, screen()
    only_deprecations(record, (*PLUGIN_WARNINGS, LEDGER_VERIFY))  # check grades a step-capped episode too


def _records(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return {record["task_id"]: record for record in map(json.loads, lines)}


async def test_eval_oracle_100_null_0_and_a_capped_episode_is_graded_not_blamed(ledger, tmp_path):
    with pytest.warns(DeprecationWarning) as record:
        for agent in (OracleConfig(), NullConfig()):
            await evaluate(EvalConfig(suites=(SUITE,), split=None, agent=agent), tmp_path / agent.type,
                           concurrency=2)
        # 2 steps of the oracle's 3 on ledger-003: cut by the step cap, graded by the env's own verify()
        await evaluate(EvalConfig(suites=(SUITE,), split=None, agent=OracleConfig(), max_steps=2), tmp_path / "capped",
                       concurrency=2)
    only_deprecations(record, (*PLUGIN_WARNINGS, LEDGER_VERIFY))

    oracle, null, capped = (_records(tmp_path / run) for run in ("oracle", "null", "capped"))
    assert len(oracle) == len(null) == len(capped) == 3
    assert {r["outcome"] for r in oracle.values()} == {"success"} and {r["score"] for r in oracle.values()} == {1.0}
    assert {r["outcome"] for r in null.values()} == {"failure"} and {r["score"] for r in null.values()} == {0.0}
    assert all(r["blame"] is None and r["error"] is None for r in [*oracle.values(), *null.values()])

    cut = capped.pop("ledger-003-split")
    assert (cut["outcome"], cut["steps"], cut["blame"], cut["error"]) == ("truncated", 2, None, None)
    criteria = {c["name"]: c["passed"] for c in cut["verdict"]["criteria"]}
    assert criteria["expected_writes"] is True and cut["score"] == 0.0  # both transfers made, no answer yet
    assert {r["outcome"] for r in capped.values()} == {"success"}


PRIVATE = {"eval_records": "Recorder", "eval_workers": "run_in_workers", "forkserver": "PRELOAD",
           "forkserver_preload": "SUITES_VAR", "entry_points": "installed", "progress": "RunProgress",
           "jsonl": "decode_line", "images": "ImageError"}


@pytest.mark.parametrize(("old", "name"), sorted(PRIVATE.items()))
def test_a_module_made_private_keeps_its_public_path_warning(old, name, monkeypatch):
    import importlib

    monkeypatch.delitem(sys.modules, f"envgym.{old}", raising=False)
    with pytest.warns(DeprecationWarning, match=rf"^envgym\.{old} moved to envgym\._{old}{WHEN}$"):
        alias = importlib.import_module(f"envgym.{old}")
    with pytest.warns(DeprecationWarning, match=rf"^envgym\.{old}\.{name} moved to envgym\._{old}\.{name}{WHEN}$"):
        assert getattr(alias, name) is getattr(importlib.import_module(f"envgym._{old}"), name)
