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

