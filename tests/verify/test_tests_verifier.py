"""The ``tests`` verifier against fake sandboxes: a fresh one per grade, dropped paths, nonce-tagged results.

The real thing (a container, a repository, pytest) is exercised end to end in tests/swe/.
"""

from __future__ import annotations

import contextlib
import json

import pytest

from envgym.errors import VerifierError
from envgym.sandbox.base import ExecResult
from envgym.sandbox.errors import SandboxCrashed
from envgym.sandbox.fake import FakeSandbox
from envgym.task import TaskSpec
from envgym.verify import VerifyContext, verify
from envgym_verifiers.tests import (
    PLAN_PATH,
    TestsSpec,
    TestsTarget,
    files_to_run,
    parse_report,
    patch_paths,
    protected,
    protection_root,
)

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


def test_only_nonce_tagged_lines_count_and_the_end_marker_is_required():
    nonce = "n" * 32
    lines = [f"{nonce} " + json.dumps({"test": "tests/test_a.py::test_one", "when": "call", "status": "PASSED"}),
             "PASSED tests/test_a.py::test_two",  # forged by the code under test: no nonce
             "m" * 32 + " " + json.dumps({"test": "tests/test_a.py::test_two", "when": "call", "status": "PASSED"}),
             f"{nonce} " + json.dumps({"test": "tests/test_a.py::test_x", "when": "call", "status": "FAILED"}),
             f"{nonce} " + json.dumps({"test": "tests/test_a.py::test_x", "when": "teardown", "status": "ERROR"}),
             f"{nonce} " + json.dumps({"test": "tests/test_a.py::test_one", "when": "teardown", "status": "ERROR"}),
             f"{nonce} [1, 2]", f"{nonce} END not-a-number"]
    report = parse_report("\n".join(lines), nonce)
    assert report.statuses == {"tests/test_a.py::test_one": "ERROR", "tests/test_a.py::test_x": "FAILED"}
    assert report.end is None and report.canaries == {}
    assert parse_report("\n".join([*lines, f"{nonce} END 1"]), nonce).end == 1


def test_canaries_are_left_out_of_the_statuses_and_one_that_passed_throws_the_run_away():
    nonce = "n" * 32
    canary = "tests/test_value_one_copy.py::test_value_one_copy"

    def report(status, end=1):
        lines = [f"{nonce} CANARIES " + json.dumps([canary]),
                 f"{nonce} " + json.dumps({"test": "tests/test_a.py::test_one", "when": "call", "status": "PASSED"}),
                 *([f"{nonce} " + json.dumps({"test": canary, "when": "call", "status": status})] if status else []),
                 f"{nonce} END {end}"]
        return parse_report("\n".join(lines), nonce)

    honest = report("FAILED")
    assert honest.statuses == {"tests/test_a.py::test_one": "PASSED"} and honest.canaries == {canary: "FAILED"}
    assert honest.tampering() is None
    # a finished run that never reported a canary it was handed: its reports were dropped or renamed from inside
    assert report(None).canaries == {canary: "MISSING"}
    assert report(None).tampering() == "tampered: a grader canary test the run was given was never reported"
    assert report(None, end=None).tampering() is None  # cut short (no end marker): judged as such, not here
    assert report("SKIPPED").tampering() is None  # a skip says nothing: skipped tests never count as passing
    for forged in ("PASSED", "XFAIL", "XPASS"):
        assert report(forged).tampering().startswith("tampered: a grader canary test that fails came out passing")
    assert report("FAILED", end=0).tampering().startswith("tampered: pytest's exit status says every test passed")


def test_protected_paths():
    tests = {"tests/test_a.py", "tests/data"}
    for path in ("conftest.py", "src/pkg/conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                 "pytest.py", "py.py", "sitecustomize.py", "lib/usercustomize.py", "x.pth", "_pytest/main.py",
                 "pluggy/__init__.py", "pkg/__pycache__/m.cpython-311.pyc", "m.pyc", "tests/test_a.py",
                 "tests/data/f.txt", ".pytest.ini", "pytest.toml", "sub/.pytest.toml", "x.egg-link",
                 "evil-1.0.dist-info/entry_points.txt", "src/calc.egg-info/entry_points.txt",
                 "sitecustomize/__init__.py"):
        assert protected(path, tests), path
    for path in ("pkg/core.py", "tests/test_b.py", "pytest_helpers.py", "docs/conf.py", "pkg/distinfo.py"):
        assert not protected(path, tests), path


def test_the_outermost_protected_path_is_undone_whole():
    tests = {"tests/test_a.py", "tests/data"}
    assert protection_root("evil-1.0.dist-info/entry_points.txt") == "evil-1.0.dist-info"
    assert protection_root("src/calc.egg-info/entry_points.txt") == "src/calc.egg-info"
    assert protection_root("pkg/__pycache__/m.cpython-311.pyc") == "pkg/__pycache__"
    assert protection_root("tests/data/deep/f.txt", tests) == "tests/data"
    assert protection_root("pkg/core.py", tests) is None


def test_patch_paths_and_files_to_run():
    assert patch_paths(TEST_PATCH) == ["tests/test_a.py", "tests/helpers.txt"]
    assert files_to_run(spec()) == ["tests/test_a.py", "tests/test_b.py"]
    only_patch = spec(fail_to_pass=("test_one (tests.test_a.Case)",), pass_to_pass=())
    assert files_to_run(only_patch) == ["tests/test_a.py"]  # ids without "::": the patch's .py files


def test_tests_spec_is_a_verifier_kind_in_task_files():
    task = TaskSpec(id="t", env_id="swe/x-v1", instruction="fix", verifiers=(spec(),))
    back = TaskSpec.model_validate_json(task.model_dump_json())
    assert isinstance(back.verifiers[0], TestsSpec) and back.hash == task.hash


class GradingFake:
    """A fresh fake sandbox per grade: answers the verifier's scripts and reports as the runner does (on stderr)."""

    def __init__(self, records=(), *, changed=(), undone=(), timed_out=False, end=1, canary="FAILED",
                 log="===== 1 passed in 0.12s =====\n"):
        self.records, self.changed, self.undone = list(records), list(changed), list(undone)
        self.timed_out, self.end, self.log, self.canary = timed_out, end, log, canary
        self.made: list[FakeSandbox] = []

    def handler(self, sb):
        def handle(cmd, cwd, env, user):
            if "\x1eCHANGED" in cmd:
                return "\n\x1eCHANGED " + "t" * 40 + "\n" + "".join(p + "\0" for p in self.changed)
            if "cat-file -e" in cmd:
                return "".join(f"{how} {p}\n" for how, p in self.undone)
            if "run.py" in cmd:
                plan = json.loads(sb.files[PLAN_PATH])
                nonce, canary = plan["nonce"], "tests/test_one_copy.py::test_one_copy"
                lines = [f"{nonce} CANARIES " + json.dumps([canary]),
                         *(f"{nonce} {json.dumps(r)}" for r in self.records),
                         f"{nonce} " + json.dumps({"test": canary, "when": "call", "status": self.canary})]
                if self.end is not None and not self.timed_out:
                    lines.append(f"{nonce} END {self.end}")
                return ExecResult(exit_code=None if self.timed_out else 0,
                                  stdout=self.log + f"({nonce})\ntests/test_one_copy.py F",
                                  stderr="\n".join(lines) + "\n", timed_out=self.timed_out)
            return ""
        return handle

    @contextlib.asynccontextmanager
    async def fresh(self):
        sb = FakeSandbox()
        sb.handler = self.handler(sb)
        self.made.append(sb)
        async with sb:
            yield sb


def episode_sandbox() -> FakeSandbox:
    return FakeSandbox(lambda cmd, cwd, env, user: "diff --git a/src.py b/src.py\n" if " add -A " in cmd else "")


RECORDS = [{"test": "tests/test_a.py::test_one", "when": "call", "status": "PASSED"},
           {"test": "tests/test_a.py::test_x", "when": "call", "status": "XFAIL"},
           {"test": "tests/test_b.py::test_setup", "when": "setup", "status": "ERROR"}]


async def grade(fake: GradingFake, **kw):
    async with episode_sandbox() as episode:
        ctx = VerifyContext(calls=[], final_answer=None, sandbox=TestsTarget(episode=episode, fresh=fake.fresh))
        verdict = await verify([spec(**kw)], ctx)
        assert not any("run.py" in c or " apply " in c for c in episode.calls)  # never graded where it worked
    return verdict


async def test_grading_runs_in_a_fresh_sandbox_and_resolves_only_when_all_pass():
    fake = GradingFake(RECORDS, changed=["src.py", "conftest.py", "tests/sitecustomize.py"],
                       undone=[("restored", "conftest.py"), ("dropped", "tests/sitecustomize.py"),
                               ("restored", "tests/test_a.py")])
    verdict = await grade(fake)
    assert len(fake.made) == 1
    sb = fake.made[0]
    restore = next(c for c in sb.calls if "cat-file -e" in c)
    assert "tests/helpers.txt" in restore and "conftest.py" in restore and "sitecustomize.py" in restore
    assert PLAN_PATH not in sb.files  # (the fake runner did not delete it; the stop cleared it)
    run = next(c for c in sb.calls if "run.py" in c)
    assert "python3 -P -s" in run and "env -i" in run and "PYTHONNOUSERSITE=1" in run
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1" in run and "2>&1" not in run  # stderr is the report channel
    assert verdict.evidence["tests"] == {
        "FAIL_TO_PASS": {"tests/test_a.py::test_one": "PASSED"},
        "PASS_TO_PASS": {"tests/test_a.py::test_x": "XFAIL", "tests/test_b.py::test_setup": "ERROR"}}
    assert verdict.evidence["dropped_paths"] == {"conftest.py": "restored", "tests/sitecustomize.py": "dropped"}
    assert not verdict.passed and verdict.score == 0.0
    assert [c.passed for c in verdict.criteria] == [True, False]
    assert "tests/test_b.py::test_setup (ERROR)" in verdict.criteria[1].detail
    assert verdict.evidence["model_patch"].startswith("diff --git a/src.py")
    assert "0.12s" not in verdict.evidence["log_tail"] and "(<nonce>)\n<grader canary>" in verdict.evidence["log_tail"]

    ok = await grade(GradingFake(RECORDS), pass_to_pass=("tests/test_a.py::test_x",))
    again = await grade(GradingFake(RECORDS), pass_to_pass=("tests/test_a.py::test_x",))
    assert ok.passed and ok.score == 1.0 and ok.evidence["resolved"]
    assert ok == again  # a fresh nonce each time, the same verdict and evidence


async def test_a_run_that_never_wrote_the_end_marker_fails_with_a_reason():
    verdict = await grade(GradingFake(RECORDS[:1], end=None), pass_to_pass=())
    assert not verdict.passed
    assert verdict.evidence["reason"] == "the test process ended before the grader's end marker (exit code 0)"


async def test_a_hanging_run_fails_with_reason_timeout():
    verdict = await grade(GradingFake(timed_out=True), timeout_s=2)
    assert not verdict.passed and verdict.evidence["reason"] == "timeout"
    assert set(verdict.evidence["tests"]["FAIL_TO_PASS"].values()) == {"TIMEOUT"}
    assert "timeout after 2s" in verdict.criteria[0].detail


async def test_a_patch_outside_the_work_tree_is_refused_without_running_anything():
    fake = GradingFake(RECORDS)
    async with fake.fresh() as sb:
        from envgym_verifiers.tests import grade_patch

        verdict = await grade_patch(spec(), sb, "diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\n")
        assert sb.calls == []
    assert not verdict.passed and not verdict.evidence["patch_applied"]
    assert "outside the work tree: .git/hooks/post-checkout" in verdict.evidence["reason"]


async def test_a_dead_sandbox_raises_and_a_bare_sandbox_is_a_verifier_error():
    sb = episode_sandbox()
    await sb.start()
    sb.crash()
    with pytest.raises(SandboxCrashed):
        await verify([spec()], VerifyContext(calls=[], final_answer=None,
                                             sandbox=TestsTarget(episode=sb, fresh=GradingFake().fresh)))
    with pytest.raises(VerifierError, match="fresh sandbox"):  # the episode's own sandbox is never graded in
        await verify([spec()], VerifyContext(calls=[], final_answer=None, sandbox=episode_sandbox()))
    with pytest.raises(VerifierError, match="fresh sandbox"):
        await verify([spec()], VerifyContext(calls=[], final_answer=None))


def test_the_names_that_moved_in_0_2_still_work_warning():
    import envgym_verifiers.tests as tests_module

    nonce = "n" * 32
    report = parse_report(f"{nonce} " + json.dumps({"test": "t.py::a", "when": "call", "status": "PASSED"})
                          + f"\n{nonce} END 0\n", nonce)
    with pytest.deprecated_call(match="returns a Report"):
        statuses, end = report
    assert statuses == {"t.py::a": "PASSED"} and end == 0
    with pytest.deprecated_call(match="REPORT_PATH is deprecated"):
        assert tests_module.REPORT_PATH == "/tmp/.envgym-grader/report"
    with pytest.raises(AttributeError):
        tests_module.NO_SUCH_NAME  # noqa: B018
