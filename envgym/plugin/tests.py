"""The ``tests`` verifier kind, for a family graded by a repository's own tests run in a sandbox (part of the
plug-in surface).

Covered by Semantic Versioning like all of :mod:`envgym.plugin` (see ``CHANGELOG.md``).

- the spec a task carries: :class:`TestsSpec` (FAIL_TO_PASS / PASS_TO_PASS, the hidden test patch), and
  :func:`files_to_run` / :func:`patch_paths` (the files a spec or patch names);
- grading: :class:`TestsTarget` (the image and work tree a verdict is taken from), :func:`grade_patch` (a
  model patch on a clean image), :func:`run_tests` and its :class:`TestRun`; :data:`PASSING` (the statuses
  that count as passed); :func:`pytest_args` (a spec's ``test_cmd`` as grading reads it, or the
  :class:`~envgym.errors.VerifierError` grading would raise: an importer checks it before writing a task).

The kind itself is the plug-in package :mod:`envgym_verifiers.tests` (registered through its entry point);
these names are re-exported from it.
"""

from __future__ import annotations

from envgym_verifiers.tests import (
    PASSING,
    TestRun,
    TestsSpec,
    TestsTarget,
    files_to_run,
    grade_patch,
    patch_paths,
    pytest_args,
    run_tests,
)

__all__ = [
    "PASSING",
    "TestRun",
    "TestsSpec",
    "TestsTarget",
    "files_to_run",
    "grade_patch",
    "patch_paths",
    "pytest_args",
    "run_tests",
]
