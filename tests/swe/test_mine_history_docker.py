"""A mined suite's README says where its problem statements came from (``envgym swe mine`` end to end)."""

from __future__ import annotations

import pytest

from envgym.cli import main
from envgym_swe import importer
from envgym_swe.demo import make_history

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_the_suite_readme_states_where_statements_came_from(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(importer, "SUITES_INDEX", tmp_path / "state" / "suites.json")
    monkeypatch.setattr(importer, "REPOS_INDEX", tmp_path / "state" / "repos.json")
    repo = make_history(tmp_path)
    out = tmp_path / "swe-shop1"
    code = main(["swe", "mine", str(repo), "--suite", "swe-shop1", "--repo-name", "demo/shop", "--out", str(out),
                 "--no-resolve", "--limit", "1", "--runs", "1"])
    assert code == 0, capsys.readouterr().out
    readme = (out / "README.md").read_text()
    assert "## Problem statements" in readme
    assert "(1 task(s)): 0 from a merged pull request" in " ".join(readme.split())
    assert "1 from a single commit's message (0 squash-merged)" in " ".join(readme.split())
