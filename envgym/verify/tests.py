"""Deprecated alias of :mod:`envgym_verifiers.tests`, the ``tests`` verifier kind (moved in 0.2; this module goes
in 0.3).

Importing it warns; so does every name read from it, which is then the object of :mod:`envgym_verifiers.tests`
(a family reads the kind's names from :mod:`envgym.plugin.tests`).
"""

from envgym._deprecation import moved_module

__deprecated_alias__ = True  # the warnings point past this module, at the code that imports it
__getattr__, __dir__ = moved_module(
    __name__, "envgym_verifiers.tests",
    ("DIFF_EXCLUDES", "GRADER_DIR", "MODEL_PATCH_PATH", "PASSING", "PATCH_PATH", "PLAN_PATH", "PROTECTED",
     "PROTECTED_DIRS", "PROTECTED_SUFFIXES", "REPORT_PATH", "RUNNER", "Report", "TestRun", "TestsSpec", "TestsTarget",
     "WorkTreeUnreadable", "diff_command", "files_to_run", "grade_patch", "model_patch", "parse_report", "patch_paths",
     "protected", "protection_root", "pytest_args", "run_tests", "stable_log", "unsafe_path", "verify_tests"),
    since="0.2", removal="0.3")
