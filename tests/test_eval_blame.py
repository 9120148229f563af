"""The eval summary counts whose error ended each episode (agent / env / verifier / infra) beside the outcomes."""

from __future__ import annotations

from collections import Counter

from envgym._eval_records import RecordLine, blame_of
from envgym.agent import Agent
from envgym.agents import OracleConfig
from envgym.agents.baseline import OracleFactory
from envgym.errors import AgentFault
from envgym.eval import EvalConfig, evaluate
from envgym.record import ResultRecord, json_line, read_records
from envgym.testing import BrokenAgent
from envgym.types import Blame, Outcome, Verdict

from fakes import NOTES_SUITE


class _Faulty(Agent):
    name = "faulty"

    async def act(self, observation):
        raise AgentFault("the agent's own action broke the episode")


class _Mixed(OracleFactory):
    """The first episode by the oracle, the second by an agent that breaks it, the rest by one whose endpoint is
    down."""

    def __init__(self) -> None:
        self.made = 0

    def create(self, task):
        self.made += 1
        return super().create(task) if self.made == 1 else _Faulty() if self.made == 2 else BrokenAgent()


async def test_the_summary_counts_errors_by_blame_beside_outcomes(tmp_path):
    config = EvalConfig(suites=(str(NOTES_SUITE),), split=None, agent=OracleConfig())
    summary = await evaluate(config, tmp_path / "run", factory=_Mixed())
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    expected = Counter(r.blame.value for r in records if r.blame is not None)
    assert summary.blames == expected and expected == Counter(agent=1, infra=1)
    assert summary.outcomes == Counter(success=1, failure=1, infra_error=1)


def _record(**changes) -> ResultRecord:
    base = {"run_id": "r", "task_id": "t", "task_hash": "h", "suite": "s", "split": "test", "env_id": "test/x-v1",
            "env_version": 1, "agent_id": "a", "config_hash": "c", "outcome": Outcome.FAILURE, "score": 0.0,
            "passed": False, "steps": 1}
    return ResultRecord(**{**base, **changes})


def test_a_workers_line_is_read_for_its_blame_only_when_it_holds_an_error():
    evidence = Verdict(score=0.0, passed=False, evidence={"blame": "agent", "error_type": None})
    plain = _record(verdict=evidence)  # a failure with no error: a nested "blame" key is not the record's
    blamed = _record(error="VerifierError: broken check", error_type="VerifierError", blame=Blame.VERIFIER)
    for record, blame in ((plain, None), (blamed, "verifier"), (_record(outcome=Outcome.SUCCESS, score=1.0,
                                                                         passed=True), None)):
        line = RecordLine(json_line(record), record.suite, record.outcome)
        assert blame_of(line) == blame_of(record) == blame
        assert (line._record is not None) == (blame is not None)  # parsed only when it held an error
