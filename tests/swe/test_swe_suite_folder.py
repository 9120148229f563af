"""Where the SWE authoring paths write, with no container: the bug-injection builder's suite folder is suite
``swe-<lib>``'s as the registry knows it (``tasks/swe-<lib>`` for the bundled ones, a new one under
``suites_root()``), and ``envgym_swe.importer.write_suite`` is a warning alias of ``write_import``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import envgym
import envgym_tasks
from envgym.task import load_suite, suites_root
from envgym_swe import importer
from envgym_swe.inject.build import BuildReport, load_instances, suite_dir, write_build
from envgym_swe.sources import LIBRARIES, library


def test_the_bundled_libraries_resolve_to_their_registered_suites() -> None:
    for name in LIBRARIES:
        assert suite_dir(library(name)) == Path(envgym.registry.suite_spec(f"swe-{name}").path)
    assert suite_dir(library("toolz")) == suites_root() / "swe-toolz"


def test_the_builder_writes_into_the_registered_folder_or_a_new_one_under_suites_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = library("toolz")
    report = BuildReport(lib="toolz", tried=3, rejected=Counter({"no test fails": 2}),
                         instances=[{"instance_id": "toolz-1", "split": "test", "injection": {"kind": "swap"}}])
    monkeypatch.setattr(envgym_tasks, "__path__", [str(tmp_path / "bundled")])
    with envgym.isolated():
        assert write_build(lib, report, 0) == tmp_path / "bundled" / "swe-toolz"  # new: a bundled suite
        assert load_instances(lib) == report.instances
        elsewhere = tmp_path / "mine" / "swe-toolz"
        elsewhere.mkdir(parents=True)
        (elsewhere / "tasks.jsonl").write_text("\n", encoding="utf-8")
        envgym.register_suite("swe-toolz", elsewhere)
        assert write_build(lib, report, 7) == elsewhere.resolve()
    assert json.loads((elsewhere / "build.json").read_text())["seed"] == 7
    assert json.loads((elsewhere / "instances.swebench.json").read_text()) == report.instances


def test_write_suite_is_a_warning_alias_of_write_import(tmp_path: Path) -> None:
    tasks = load_suite("swe-toolz")[:2]
    report = importer.ImportReport(suite="swe-toolz", env_id="swe/toolz-v1", tasks=tasks, skipped=[("x", "why")])
    with pytest.warns(DeprecationWarning, match=r"envgym_swe\.importer\.write_suite moved to envgym_swe\.importer\."
                                                r"write_import \(since 0\.2; the alias goes in 0\.3\)"):
        old = importer.write_suite(report, tmp_path / "old", remember=False)
    new = importer.write_import(report, tmp_path / "new", remember=False)
    for name in ("tasks.jsonl", "README.md"):
        assert (old / name).read_bytes() == (new / name).read_bytes()
    assert [t.hash for t in load_suite(str(new))] == [t.hash for t in tasks]
    assert "- `x`: why" in (new / "README.md").read_text(encoding="utf-8")
