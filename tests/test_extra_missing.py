"""An env whose extra is not installed: ``envgym check --all`` says it skipped it; naming it is an error."""

from __future__ import annotations

from envgym import cli
from envgym.env import Env
from envgym.errors import ExtraMissing


class NeedsAnExtra(Env):
    def __init__(self, **kwargs: object) -> None:
        raise ExtraMissing("the acme envs need the acme extra: pip install 'envgym[acme]' (acme-sdk)")

    async def reset(self, *, task=None, seed=None, options=None):  # pragma: no cover - never built
        raise AssertionError

    async def step(self, action):  # pragma: no cover - never built
        raise AssertionError


def test_check_all_skips_an_env_whose_extra_is_missing_and_naming_it_fails(capsys, monkeypatch) -> None:
    import envgym.check

    async def check(env_id: str, **kwargs: object):  # building the env is the first thing check does
        envgym.make(env_id)

    monkeypatch.setattr(envgym.check, "check", check)
    with envgym.isolated():
        envgym.register("acme/needs-v1", f"{__name__}:NeedsAnExtra")
        assert cli.main(["check", "--all", "--no-gates"]) == 0
        out = capsys.readouterr().out
        assert "acme/needs-v1: skipped: the acme envs need the acme extra: pip install 'envgym[acme]'" in out
        assert cli.main(["check", "acme/needs-v1", "--no-gates"]) == 2
        assert "pip install 'envgym[acme]'" in capsys.readouterr().err


def test_extra_missing_is_an_import_error_and_infra() -> None:
    assert issubclass(ExtraMissing, ImportError) and ExtraMissing.blame == "infra"



def test_check_all_ends_naming_the_envs_that_failed(capsys, monkeypatch) -> None:
    """A long ``--all`` run's last line says which envs failed and what (CI keeps only an output's tail)."""
    import envgym.check
    from envgym.check import CheckReport

    async def check(env_id: str, **kwargs: object) -> CheckReport:
        report = CheckReport(env_id, tasks=1, gated=1, passed=["reset returns an Observation"])
        if env_id == "acme/bad-v1":
            report.failed.append(("reset is deterministic", "two resets differ"))
            report.tamper_failures.append(("t1", "forged"))
        return report

    monkeypatch.setattr(envgym.check, "check", check)
    monkeypatch.setattr("envgym.registry.list_envs", lambda: ["acme/good-v1", "acme/bad-v1"])
    monkeypatch.setattr("envgym.registry.list_generators", lambda: [])
    assert cli.main(["check", "--all"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "check failed for 1 of 2 envs: acme/bad-v1 (reset is deterministic; 1 probe(s) forged)" in last
    assert "good" not in last
    assert cli.main(["check", "acme/good-v1"]) == 0
