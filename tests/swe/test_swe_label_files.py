"""Which files of a test patch labelling runs: pytest collects any file named on its command line, so a test
folder's helper or type-checker example (attrs' ``tests/dataclass_transform_example.py``) is not run beside
the test modules the patch changes."""

from __future__ import annotations

from envgym_swe.label import runnable_test_files


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
