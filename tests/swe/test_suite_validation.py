"""End to end in containers: a bug found and kept from a small sdist, and a bundled task re-validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from envgym.sandbox.images import build, tag_for
from envgym_swe import sources
from envgym_swe.inject.build import build_suite
from envgym_swe.inject.validate import check_instance, validate_suite

from .test_sources import make_sdist

pytestmark = pytest.mark.docker

MINI = {
    "mini/__init__.py": (
        "def clamp(x, lo, hi):\n"
        "    if x < lo:\n"
        "        return lo\n"
        "    if x > hi:\n"
        "        return hi\n"
        "    return x\n"
    ),
    "tests/test_mini.py": (
        "from mini import clamp\n\n\n"
        "def test_low():\n    assert clamp(-5, 0, 10) == 0\n\n\n"
        "def test_high():\n    assert clamp(50, 0, 10) == 10\n\n\n"
        "def test_inside():\n    assert clamp(5, 0, 10) == 5\n"
    ),
    "tests/test_other.py": "def test_unrelated():\n    assert True\n",
}


@pytest.fixture(scope="module")
def image() -> str:
    build(["swe-python"], log=lambda _: None)
    return tag_for("swe-python")


async def test_a_bug_is_found_kept_and_revalidated(tmp_path: Path, image: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lib = make_sdist(tmp_path / "cache", MINI)
    monkeypatch.setitem(sources.LIBRARIES, "mini", lib)
    report = await build_suite("mini", 1, 0, image, cache=tmp_path / "cache", log=lambda _: None)
    assert len(report.instances) == 1
    inst = report.instances[0]
    assert inst["FAIL_TO_PASS"] and set(inst["FAIL_TO_PASS"]) <= {
        "tests/test_mini.py::test_low", "tests/test_mini.py::test_high", "tests/test_mini.py::test_inside"}
    assert set(inst["FAIL_TO_PASS"]) | set(inst["PASS_TO_PASS"]) == {
        "tests/test_mini.py::test_low", "tests/test_mini.py::test_high", "tests/test_mini.py::test_inside"}
    assert "`mini.clamp`" in inst["problem_statement"]
    assert "was expected" in inst["problem_statement"] or "raises" in inst["problem_statement"]
    assert "mini/__init__.py" not in inst["problem_statement"]
    repo = sources.repo_path(lib, tmp_path / "cache")
    from envgym_swe.inject.runner import TestRunner

    async with TestRunner(image, repo) as runner:
        check = await check_instance(runner, repo, inst, tmp_path / "trees")
    assert check.ok, check.problems


async def test_a_bundled_task_revalidates_from_the_sdist(image: str) -> None:
    result = await validate_suite("swe-inflection", image, sample=1, seed=0, log=lambda _: None)
    assert result.commits_total >= 10 and result.commits_ok == result.commits_total, result.commit_problems
    assert len(result.tasks) == 1 and result.tasks[0].ok, result.tasks[0].problems
