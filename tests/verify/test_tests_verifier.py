"""The ``tests`` verifier against a fake sandbox: pytest -rA parsing, restore script, timeout and errors.

The real thing (a container, a repository, pytest) is exercised end to end in tests/swe/.
"""

from __future__ import annotations

import pytest

from envgym.errors import VerifierError
from envgym.sandbox.base import ExecResult
from envgym.sandbox.errors import SandboxCrashed
from envgym.sandbox.fake import FakeSandbox
from envgym.task import TaskSpec
from envgym.verify import VerifyContext, verify
from envgym.verify.tests import TestsSpec, files_to_run, parse_pytest, patch_paths

SUMMARY = """\
============================= test session starts ==============================
collected 5 items

tests/test_a.py .F.sx                                                    [100%]
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[a - b]
FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2
SKIPPED [1] tests/test_a.py:9: unconditional skip
XFAIL tests/test_a.py::test_x - reason: later
ERROR tests/test_b.py::test_setup - RuntimeError
==================== 1 failed, 2 passed, 1 skipped, 1 xfailed in 0.12s =========
"""
TEST_PATCH = """diff --git a/tests/test_a.py b/tests/test_a.py
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1 +1,2 @@
 x
+y
diff --git a/tests/helpers.txt b/tests/helpers.txt
new file mode 100644
"""


def spec(**kw) -> TestsSpec:
    base = {"base_commit": "a" * 40, "test_patch": TEST_PATCH, "fail_to_pass": ("tests/test_a.py::test_one",),
            "pass_to_pass": ("tests/test_a.py::test_x", "tests/test_b.py::test_setup")}
    return TestsSpec(**{**base, **kw})


def test_parse_pytest_summary():
    statuses = parse_pytest(SUMMARY)
    assert statuses["tests/test_a.py::test_one"] == "PASSED"
    assert statuses["tests/test_a.py::test_two"] == "FAILED"
    assert statuses["tests/test_a.py::test_x"] == "XFAIL"
    assert statuses["tests/test_b.py::test_setup"] == "ERROR"
    assert not any(k.startswith("[") for k in statuses)  # "SKIPPED [1] file:line" names no node id


def test_patch_paths_and_files_to_run():
    assert patch_paths(TEST_PATCH) == ["tests/test_a.py", "tests/helpers.txt"]
    assert files_to_run(spec()) == ["tests/test_a.py", "tests/test_b.py"]
    only_patch = spec(fail_to_pass=("test_one (tests.test_a.Case)",), pass_to_pass=())
    assert files_to_run(only_patch) == ["tests/test_a.py"]  # ids without "::": the patch's .py files


def test_tests_spec_is_a_verifier_kind_in_task_files():
    task = TaskSpec(id="t", env_id="swe/x-v1", instruction="fix", verifiers=(spec(),))
    back = TaskSpec.model_validate_json(task.model_dump_json())
    assert isinstance(back.verifiers[0], TestsSpec) and back.hash == task.hash


def handler_for(output: str, *, timed_out: bool = False):
    def handler(cmd, cwd, env, user):
        if "git add -A" in cmd:
            return "diff --git a/src.py b/src.py\n"
        if "git apply" in cmd:
            return ""
        return ExecResult(exit_code=None if timed_out else 1, stdout=output, stderr="", timed_out=timed_out)
    return handler


async def test_verdict_lists_each_test_and_resolves_only_when_all_pass():
    async with FakeSandbox(handler_for(SUMMARY)) as sb:
        verdict = await verify([spec()], VerifyContext(calls=[], final_answer=None, sandbox=sb))
        restore = next(c for c in sb.calls if "git apply" in c)
        assert "git checkout -q" in restore and "tests/helpers.txt" in restore and "conftest.py" in restore
        assert sb.files["/tmp/.envgym_test.patch"].decode() == TEST_PATCH
    assert verdict.evidence["tests"] == {
        "FAIL_TO_PASS": {"tests/test_a.py::test_one": "PASSED"},
        "PASS_TO_PASS": {"tests/test_a.py::test_x": "XFAIL", "tests/test_b.py::test_setup": "ERROR"}}
    assert not verdict.passed and verdict.score == 0.0
    assert [c.passed for c in verdict.criteria] == [True, False]
    assert "tests/test_b.py::test_setup (ERROR)" in verdict.criteria[1].detail
    assert verdict.evidence["model_patch"].startswith("diff --git a/src.py")
    assert "0.12s" not in verdict.evidence["log_tail"]  # timings dropped: regrading gives the same verdict

    async with FakeSandbox(handler_for(SUMMARY)) as sb:
        ok = await verify([spec(pass_to_pass=("tests/test_a.py::test_x",))],
                          VerifyContext(calls=[], final_answer=None, sandbox=sb))
    assert ok.passed and ok.score == 1.0 and ok.evidence["resolved"]


async def test_a_hanging_run_fails_with_reason_timeout():
    async with FakeSandbox(handler_for("", timed_out=True)) as sb:
        verdict = await verify([spec(timeout_s=2)], VerifyContext(calls=[], final_answer=None, sandbox=sb))
    assert not verdict.passed and verdict.evidence["reason"] == "timeout"
    assert set(verdict.evidence["tests"]["FAIL_TO_PASS"].values()) == {"TIMEOUT"}
    assert "timeout after 2s" in verdict.criteria[0].detail


async def test_a_dead_sandbox_raises_and_no_sandbox_is_a_verifier_error():
    sb = FakeSandbox(handler_for(SUMMARY))
    await sb.start()
    sb.crash()
    with pytest.raises(SandboxCrashed):
        await verify([spec()], VerifyContext(calls=[], final_answer=None, sandbox=sb))
    with pytest.raises(VerifierError, match="sandbox"):
        await verify([spec()], VerifyContext(calls=[], final_answer=None))
