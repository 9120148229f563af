"""Which files of a test patch labelling runs: pytest collects any file named on its command line, so a test
folder's helper or type-checker example (attrs' ``tests/dataclass_transform_example.py``) is not run beside
the test modules the patch changes."""

from __future__ import annotations

from envgym.plugin.tests import TestRun
from envgym_swe.label import _no_fix_detail, runnable_test_files


def _changed(*paths: str) -> str:
    return "".join(f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1,2 @@\n x\n+y\n" for p in paths)


def test_helpers_in_a_test_folder_are_not_run_beside_test_modules():
    # attrs 0f6a9b4753 (#1065): before, the example module's collection error (reveal_type) failed both runs
    patch = _changed("tests/dataclass_transform_example.py", "tests/test_functional.py", "tests/typing_example.py",
                     "tests/strategies.py", "pkg/tests/checks_test.py")
    assert runnable_test_files(patch) == ["pkg/tests/checks_test.py", "tests/test_functional.py"]


def test_a_folder_whose_tests_have_other_names_still_runs_them():
    assert runnable_test_files(_changed("tests/unit/parsing.py", "tests/helpers.py")) == [
        "tests/helpers.py", "tests/unit/parsing.py"]


def _run(statuses: dict[str, str]) -> TestRun:
    return TestRun(statuses, True, None, {}, 1, False, "")


def test_no_fix_names_what_the_runs_saw_not_skips_or_tests_failing_on_both_sides():
    # requests 8dd3b26bf5: 203 passed and 13 Windows-only skips on both sides, 1 network test failing on both;
    # the reason said "with the gold patch 13 test(s) still do not pass" and listed the skips
    same = {"t.py::test_new": "PASSED", "t.py::test_win": "SKIPPED", "t.py::test_net": "FAILED"}
    why = _no_fix_detail([_run(same)], [_run(same)], ["t.py"])
    assert why.startswith("the tests of t.py pass before the gold patch too")
    assert "1 fail with and without it (t.py::test_net)" in why and "test_win" not in why
    # a test the gold patch breaks is named as such
    broke = {**same, "t.py::test_new": "FAILED"}
    assert _no_fix_detail([_run(same)], [_run(broke)], ["t.py"]).startswith(
        "with the gold patch 1 test(s) fail that pass without it (t.py::test_new)")
