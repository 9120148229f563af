"""envgym._progress: the run's progress state (ETA, in flight, per-suite counts, infra causes) and the
non-TTY line schedule, on a fake clock."""

from __future__ import annotations

from envgym._progress import PlainLines, RunProgress, format_duration
from envgym.record import ResultRecord
from envgym.types import Outcome


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def record(suite: str, outcome: Outcome, error: str | None = None) -> ResultRecord:
    return ResultRecord(run_id="r", task_id="t", task_hash="h", suite=suite, split="test", env_id="test/notes-v1",
                        env_version=1, agent_id="a", config_hash="c", outcome=outcome, score=0.0,
                        passed=outcome is Outcome.SUCCESS, steps=1, error=error)


def test_eta_in_flight_suites_and_infra_causes() -> None:
    clock = FakeClock()
    progress = RunProgress(clock=clock)
    progress.plan({"alpha": 6, "beta": 4}, {"alpha": 2})
    assert (progress.total, progress.done, progress.eta_s) == (10, 2, None)  # no rate before an episode ends
    for suite in ("alpha", "alpha", "beta"):
        progress.started(suite)
    clock.now += 10
    progress.finished(record("alpha", Outcome.SUCCESS))
    progress.finished(record("beta", Outcome.INFRA_ERROR, "PolicyError: http://127.0.0.1:9/v1 failed\nafter 4"))
    assert progress.in_flight == 1 and progress.done == 4
    assert progress.eta_s == 30.0  # 6 left at 2 episodes per 10 s
    line = progress.line()
    assert "4/10 episodes (40%), 1 in flight" in line and "ETA 0:30" in line and "elapsed 0:10" in line
    assert "alpha 3/6 (success 1, 2 recorded before)" in line and "beta 1/4 (infra_error 1)" in line
    assert "infra errors 1, latest: PolicyError: http://127.0.0.1:9/v1 failed after 4" in line
    progress.in_flight_of = lambda: 7  # the pool's own count wins when given
    assert progress.in_flight == 7


def test_plain_lines_every_tenth_and_every_interval() -> None:
    clock = FakeClock()
    progress = RunProgress(clock=clock)
    progress.plan({"s": 20}, {})
    lines: list[str] = []
    plain = PlainLines(progress, lines.append, interval_s=30)
    plain.tick()
    assert len(lines) == 1 and "0/20" in lines[0]  # the start
    progress.started("s")
    progress.finished(record("s", Outcome.FAILURE))  # 5%: no new tenth
    plain.tick()
    assert len(lines) == 1
    progress.finished(record("s", Outcome.FAILURE))  # 10%
    plain.tick()
    assert len(lines) == 2 and "2/20 episodes (10%)" in lines[1]
    clock.now += 29
    plain.tick()
    assert len(lines) == 2
    clock.now += 1  # nothing finished, but the interval passed: a line anyway (long episodes)
    plain.tick()
    assert len(lines) == 3
    for _ in range(18):
        progress.finished(record("s", Outcome.SUCCESS))
    plain.tick()
    plain.close()  # the 100% line was printed already: not twice
    assert len(lines) == 4 and "20/20 episodes (100%)" in lines[3]


def test_format_duration() -> None:
    assert [format_duration(s) for s in (None, 0, 61.4, 3725)] == ["--", "0:00", "1:01", "1:02:05"]
