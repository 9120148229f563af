"""``envgym check --all`` checks what envgym and the installed plug-ins ship, never the suites a user imported or
mined on this machine (``SuiteSpec.user``): a user's import once made the project's own ``make test`` check four
requests suites for many extra minutes, and fail."""

from __future__ import annotations

import envgym
from envgym import cli_check
from envgym.registry import isolated


def test_all_leaves_out_envs_whose_every_suite_is_the_users(tmp_path, screen):
    shipped, imported = tmp_path / "shipped", tmp_path / "imported"
    for folder in (shipped, imported):
        folder.mkdir()
        (folder / "tasks.jsonl").write_text("")
    with isolated():
        envgym.register_suite("acme-shipped", shipped)
        envgym.register_suite("acme-imported", imported, user=True)
        envgym.register("acme/shipped-v1", "x:Y", suites=("acme-shipped",))
        envgym.register("acme/imported-v1", "x:Y", suites=("acme-imported",))
        envgym.register("acme/mixed-v1", "x:Y", suites=("acme-shipped", "acme-imported"))
        envgym.register("acme/bare-v1", "x:Y")
        kept = cli_check._shipped(envgym.list_envs())
    assert kept == ["acme/bare-v1", "acme/mixed-v1", "acme/shipped-v1"]
    stdout, _ = screen()
    assert "left out 1 env(s)" in stdout and "acme/imported-v1" in stdout


def test_list_and_check_moved_to_cli_check_and_the_old_names_warn():
    import pytest

    from envgym import cli

    for name in ("add_list", "add_check"):
        with pytest.warns(DeprecationWarning, match=f"envgym.cli.{name} moved to envgym.cli_check.{name}"):
            assert getattr(cli, name) is getattr(cli_check, name)
