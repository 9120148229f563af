import asyncio
import json
from collections import Counter

import pytest

from envgym.agents import NullConfig, OracleConfig
from envgym.agents.baseline import OracleFactory
from envgym.errors import PolicyError, SpecError
from envgym.eval import EvalConfig, evaluate
from envgym.record import latest, read_jsonl, read_records
from envgym.task import load_tasks
from envgym.types import Action, Outcome

from fakes import NOTES_SUITE, ScriptedAgent


def _config(**changes):
    return EvalConfig(suites=(str(NOTES_SUITE),), split=None, agent=OracleConfig(), **changes)


async def test_oracle_run_records_every_episode(tmp_path):
    summary = await evaluate(_config(runs=2), tmp_path / "run", concurrency=4)
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert summary.planned == 6 and summary.ran == 6 and summary.outcomes == Counter(success=6)
    assert len({r.key for r in records}) == 6
    assert {r.config_hash for r in records} == {_config(runs=2).hash}
    assert all(r.agent_id == "oracle" and r.env_version == 1 for r in records)
    assert (tmp_path / "run" / "trajectories.jsonl").read_text().count("\n") == 6
    again = await evaluate(_config(runs=2), tmp_path / "run", concurrency=4)
    assert again.ran == 0 and again.skipped == 6


async def test_other_config_in_same_dir_is_refused(tmp_path):
    await evaluate(_config(), tmp_path / "run")
    with pytest.raises(SpecError, match="different configuration"):
        await evaluate(EvalConfig(suites=(str(NOTES_SUITE),), split=None, agent=NullConfig()), tmp_path / "run")


class SlowOracle(OracleFactory):
    def create(self, task):
        return ScriptedAgent(list(task.solution), delay=0.1)


async def test_interrupted_run_resumes_without_duplicates(tmp_path):
    run = asyncio.create_task(evaluate(_config(runs=4), tmp_path / "run", concurrency=2, factory=SlowOracle()))
    written = tmp_path / "run" / "records.jsonl"
    for _ in range(600):  # cancel once the first record is down (a fixed sleep is too short on a loaded host)
        await asyncio.sleep(0.05)
        if written.exists() and written.read_text().count("\n") >= 1:
            break
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    partial, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert 0 < len(partial) < 12
    summary = await evaluate(_config(runs=4), tmp_path / "run", concurrency=3)
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert summary.skipped == len(partial) and summary.ran == 12 - len(partial)
    assert len(records) == 12 and len({r.key for r in records}) == 12


async def test_torn_line_is_repaired_and_rerun(tmp_path):
    await evaluate(_config(), tmp_path / "run")
    path = tmp_path / "run" / "records.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:30])
    summary = await evaluate(_config(), tmp_path / "run")
    assert summary.torn_repaired and summary.ran == 1
    records, torn = read_records(path)
    assert not torn and len(records) == 3


class FlakyFactory(OracleFactory):
    """The first episode of every task fails to get an agent (endpoint down), later ones work."""

    def __init__(self, broken):
        self.broken = broken

    def create(self, task):
        if self.broken:
            raise PolicyError("endpoint down")
        return super().create(task)


async def test_infra_errors_are_retried_on_rerun(tmp_path):
    first = await evaluate(_config(), tmp_path / "run", factory=FlakyFactory(broken=True))
    assert first.outcomes == Counter(infra_error=3)
    second = await evaluate(_config(), tmp_path / "run", factory=FlakyFactory(broken=False))
    assert second.ran == 3 and second.outcomes == Counter(success=3)
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert len(records) == 6
    final = latest(records)
    assert {r.outcome for r in final} == {Outcome.SUCCESS} and {r.attempt for r in final} == {2}


async def test_unknown_suite_and_env_are_clear(tmp_path):
    with pytest.raises(SpecError, match="unknown suite"):
        await evaluate(EvalConfig(suites=("tool-retial",), agent=OracleConfig()), tmp_path / "x")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(NOTES_SUITE.read_text().replace("test/notes-v1", "test/nots-v1"))
    with pytest.raises(SpecError, match="did you mean 'test/notes-v1'"):
        await evaluate(EvalConfig(suites=(str(bad),), split=None, agent=OracleConfig()), tmp_path / "y")


async def test_limit_overrides_keep_the_task_hash(tmp_path):
    config = _config(max_steps=1, step_timeout_s=5.0)
    summary = await evaluate(config, tmp_path / "run")
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    # one step is too few for the two-step solutions: truncated, and graded as they stand
    assert summary.ran == 3 and all(r.steps == 1 for r in records)
    assert {r.task_hash for r in records} == {t.hash for t in load_tasks(NOTES_SUITE)}
    assert config.hash != _config().hash


def _with_model_patch(monkeypatch):
    """Answer verdicts carry a ``model_patch`` as SWE verdicts do, so the run writes predictions."""
    import envgym.verify._grade

    real = envgym.verify._grade.verify_answer  # what the registered answer kind calls

    async def patched(spec, answer):
        verdict = await real(spec, answer)
        return verdict.model_copy(update={"evidence": {**verdict.evidence, "model_patch": f"diff {answer}"}})

    monkeypatch.setattr(envgym.verify._grade, "verify_answer", patched)


async def test_crash_between_record_and_prediction_is_repaired_on_resume(tmp_path, monkeypatch):
    _with_model_patch(monkeypatch)

    def crash(**fields):  # the process dies after the record's fsync, before its prediction
        raise RuntimeError("killed")

    with monkeypatch.context() as m:
        m.setattr("envgym_swe.predictions.Prediction", crash)
        with pytest.raises(RuntimeError, match="killed"):
            await evaluate(_config(runs=2), tmp_path / "run", concurrency=1)
    crashed, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert any(r.verdict and "model_patch" in r.verdict.evidence for r in crashed)
    await evaluate(_config(runs=2), tmp_path / "run")
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    with_patch = {(r.task_id, r.run_index) for r in latest(records) if "model_patch" in r.verdict.evidence}
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert len(with_patch) == 2 and sorted((p["instance_id"], p["run_index"]) for p in rows) == sorted(with_patch)
    await evaluate(_config(runs=2), tmp_path / "run")  # a clean resume adds nothing
    assert (tmp_path / "run" / "predictions.jsonl").read_text().count("\n") == 2


async def test_same_task_in_two_suites_of_a_run_is_refused(tmp_path):
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(NOTES_SUITE.read_bytes())
    config = EvalConfig(suites=(str(NOTES_SUITE), str(copy)), split=None, agent=OracleConfig())
    with pytest.raises(SpecError, match=r"is in suite .* and in suite"):
        await evaluate(config, tmp_path / "run")


async def test_concurrency_below_one_is_refused(tmp_path):
    with pytest.raises(SpecError, match="concurrency"):
        await evaluate(_config(), tmp_path / "run", concurrency=0)
    assert not (tmp_path / "run").exists()


async def test_corrupt_run_metadata_is_a_spec_error(tmp_path):
    await evaluate(_config(), tmp_path / "run")
    (tmp_path / "run" / "run.json").write_text("[" * 100_000)
    with pytest.raises(SpecError, match=r"run\.json"):
        await evaluate(_config(), tmp_path / "run")


def test_step_timeout_must_be_finite():
    with pytest.raises(ValueError, match="finite"):
        _config(step_timeout_s=float("inf"))


class SurrogateAgent(OracleFactory):
    """Answers with a lone surrogate, which an OpenAI-compatible endpoint's JSON can carry ("\\ud800")."""

    def create(self, task):
        return ScriptedAgent([Action.say("done \ud800")])


async def test_agent_text_that_is_no_unicode_does_not_end_the_run(tmp_path):
    summary = await evaluate(_config(), tmp_path / "run", factory=SurrogateAgent())
    assert summary.ran == 3 and summary.outcomes == Counter(failure=3)
    records, torn = read_records(tmp_path / "run" / "records.jsonl")
    assert len(records) == 3 and not torn
    assert "done \ufffd" in (tmp_path / "run" / "trajectories.jsonl").read_text(encoding="utf-8")


async def test_torn_trajectory_line_is_cut_before_the_resume_appends(tmp_path):
    await evaluate(_config(), tmp_path / "run")
    records, trajectories = tmp_path / "run" / "records.jsonl", tmp_path / "run" / "trajectories.jsonl"
    lines = records.read_bytes().splitlines(keepends=True)
    records.write_bytes(b"".join(lines[:-1]))  # the crash fell after the trajectory's write began
    trajectories.write_bytes(trajectories.read_bytes()[:-20])
    summary = await evaluate(_config(), tmp_path / "run")
    assert summary.ran == 1
    rows, torn = read_jsonl(trajectories)  # a torn line left in the middle would be a RecordError
    assert not torn and len(rows) == 3
    assert (tmp_path / "run" / "trajectories.jsonl.torn").exists()
