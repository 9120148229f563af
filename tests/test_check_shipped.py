"""``envgym check --all`` checks what envgym and the installed plug-ins ship, never the suites a user imported or
mined on this machine (``SuiteSpec.user``): a user's import once made the project's own ``make test`` check four
requests suites for many extra minutes, and fail."""

from __future__ import annotations

import envgym
from envgym import cli
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
        kept = cli._shipped(envgym.list_envs())
    assert kept == ["acme/bare-v1", "acme/mixed-v1", "acme/shipped-v1"]
    stdout, _ = screen()
    assert "left out 1 env(s)" in stdout and "acme/imported-v1" in stdout
