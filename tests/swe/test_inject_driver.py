"""The in-container batch driver, in a real container: honest bytecode cache, early stop, gated reruns, timeouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from envgym.sandbox.images import build, tag_for
from envgym_swe.inject.runner import TestRunner

pytestmark = pytest.mark.docker

CLEAN = "def lt(a, b):\n    return a < b\n"
BUGGY = "def lt(a, b):\n    return a > b\n"  # the same size: only the modification time tells the .pyc apart
HANG = "def lt(a, b):\n    while True:\n        pass\n"
TEST = "from mini import lt\n\n\n" + "".join(
    f"def test_{i}():\n    assert lt({i}, {i + 1})\n\n\n" for i in range(6))
TESTS = ["tests/test_mini.py"]
IDS = [f"tests/test_mini.py::test_{i}" for i in range(6)]


@pytest.fixture(scope="module")
def image() -> str:
    build(["swe-python"], log=lambda _: None)
    return tag_for("swe-python")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "mini").mkdir()
    (tmp_path / "mini" / "__init__.py").write_text(CLEAN)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mini.py").write_text(TEST)
    return tmp_path


def job(key: str, text: str | None = None, **extra: object) -> dict[str, object]:
    return {"key": key, "tests": TESTS, "files": {"mini/__init__.py": text} if text else {}, "repeat": 1,
            "timeout": 30, **extra}


async def test_the_driver_reruns_honestly_stops_early_and_kills_hung_runs(image: str, tree: Path) -> None:
    async with TestRunner(image, tree) as runner:
        out = await runner.run_batch("mini", [
            job("clean1"), job("bug1", BUGGY), job("clean2"), job("bug2", BUGGY), job("clean3"),
            # a keepable bug runs twice; one failing more than max_fail baseline tests stops at max_fail + 1
            job("gated", BUGGY, repeat=2, baseline=IDS[:1], max_fail=3),
            job("many", BUGGY, repeat=2, baseline=IDS, max_fail=2),
            job("hang", HANG, timeout=3), job("after"),
        ], timeout=120)
    for key in ("clean1", "clean2", "clean3", "after"):
        assert [r.failed() for r in out[key]] == [set()] and out[key][0].passed() == set(IDS), key
    for key in ("bug1", "bug2"):  # the same-size mutant after a cached clean run: never the stale .pyc
        assert out[key][0].failed() == set(IDS), key
    assert len(out["gated"]) == 2 and all(r.failed() == set(IDS) for r in out["gated"])
    many = out["many"]
    assert len(many) == 1 and many[0].stopped_early and len(many[0].failed()) == 3
    hang = out["hang"]
    assert len(hang) == 1 and hang[0].timed_out and not hang[0].passed()


async def test_deselected_tests_never_run_and_the_cpu_weight_reaches_the_container(image: str, tree: Path) -> None:
    skipped = {IDS[0], IDS[3]}
    async with TestRunner(image, tree, deselect=sorted(skipped), cpu_shares=256) as runner:
        batch = await runner.run_batch("mini", [job("clean")], timeout=60)
        single = await runner.run(TESTS, timeout=60)
        assert runner.sandbox is not None
        info = await runner.sandbox.engine.call("inspect_container", runner.sandbox.id)
    assert batch["clean"][0].passed() == single.passed() == set(IDS) - skipped
    assert not batch["clean"][0].status.keys() & skipped and not single.status.keys() & skipped
    assert info["HostConfig"]["CpuShares"] == 256
