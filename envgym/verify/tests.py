"""The tests verifier: hidden tests written into the episode's container, FAIL_TO_PASS and PASS_TO_PASS run.

A ``tests`` spec holds what SWE-bench calls the grading half of an instance: ``test_patch`` (the hidden test
files), ``fail_to_pass`` and ``pass_to_pass`` (pytest node ids) and the ``base_commit``. Grading, in the
sandbox the environment puts in ``VerifyContext.sandbox`` (always a container with network ``none``):

1. the agent's work is recorded as a patch against the base tree (``model_patch`` in the evidence: what
   ``envgym eval`` writes to ``predictions.jsonl``);
2. every file the test patch touches, every file holding a listed test, and any ``conftest.py`` /
   ``pytest.ini`` the agent changed are restored to the base commit; then the test patch is applied;
3. the test files of the listed ids are run once (``test_cmd`` + the files; default ``pytest -rA``) under
   ``timeout_s``, and each listed test's status is read from pytest's ``-rA`` summary.

Resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passed (score 1, else 0). The evidence lists each
test's status (``PASSED``, ``FAILED``, ``ERROR``, ``SKIPPED``, ``XFAIL``, ``XPASS``, or ``MISSING`` when
the run did not report it). A run over its timeout is a failure with ``reason: "timeout"``; a container that
died raises :class:`~envgym.sandbox.errors.SandboxCrashed`, which the rollout records as ``infra_error``.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Literal

from pydantic import Field

from envgym.errors import VerifierError
from envgym.types import CriterionResult, FrozenModel, Verdict
from envgym.verify.context import VerifyContext

PASSING = frozenset({"PASSED", "XFAIL"})
_STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$", re.MULTILINE)
_TIMING = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d+:\d+\))? ")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_DIFF_PATHS = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
PATCH_PATH = "/tmp/.envgym_test.patch"
PROTECTED = ("conftest.py", "pytest.ini")
"""Test-harness files an agent's change to is undone before grading (they could mark any test as passed)."""
TEST_ENV = {"PYTHONHASHSEED": "0"}
"""Set iteration order and hashes fixed: the same work graded twice gives the same statuses and log."""
DIFF_EXCLUDES = (":(exclude,glob)**/*.egg-info/**", ":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.pyc",
                 ":(exclude,glob)**/.pytest_cache/**")
"""Build and cache artefacts never part of a model patch (the images also list them in .git/info/exclude)."""


class TestsSpec(FrozenModel):
    """Hidden tests of a repository task (SWE-bench's grading fields)."""

    __test__ = False  # not a pytest class, whatever the name says
    type: Literal["tests"] = "tests"
    base_commit: str
    test_patch: str = ""
    fail_to_pass: tuple[str, ...] = Field(min_length=1)
    pass_to_pass: tuple[str, ...] = ()
    test_cmd: str = "python3 -m pytest -rA --tb=short -p no:cacheprovider"
    """The test runner; the test files of the listed ids are appended. It must print pytest's ``-rA`` summary."""
    workdir: str = "/testbed"
    timeout_s: float = Field(default=300.0, gt=0)
    max_output: int = 8 << 20


def patch_paths(patch: str) -> list[str]:
    """Paths a git-style patch touches (both sides of renames), in order, without duplicates."""
    seen: dict[str, None] = {}
    for a, b in _DIFF_PATHS.findall(patch):
        seen.setdefault(a)
        seen.setdefault(b)
    return list(seen)


def files_to_run(spec: TestsSpec) -> list[str]:
    """The files to run: those of the listed node ids (``path::name``), else the test patch's ``.py`` files."""
    files = {t.split("::", 1)[0] for t in (*spec.fail_to_pass, *spec.pass_to_pass) if "::" in t}
    if not files:
        files = {p for p in patch_paths(spec.test_patch) if p.endswith(".py")}
    return sorted(files)



def parse_pytest(output: str) -> dict[str, str]:
    """Node id -> status from pytest's ``-rA`` short summary (the last status seen wins)."""
    statuses: dict[str, str] = {}
    for status, rest in _SUMMARY.findall(output):
        if status == "SKIPPED" and rest.startswith("["):  # "SKIPPED [1] file:line: reason" names no node id
            continue
        statuses[rest.split(" - ", 1)[0].strip()] = status
    return statuses


def status_of(test: str, statuses: dict[str, str], output: str) -> str:
    if test in statuses:
        return statuses[test]
    for status in _STATUSES:  # an id holding " - " (parametrised) is cut by the split above: match it whole
        if f"\n{status} {test}\n" in f"\n{output}\n" or f"\n{status} {test} - " in f"\n{output}":
            return status
    return "MISSING"


def diff_command(base: str) -> str:
    """Shell command printing the work tree's changes (untracked files included) against ``base``."""
    excludes = " ".join(shlex.quote(p) for p in DIFF_EXCLUDES)
    return (f"git add -A -- . {excludes} >/dev/null 2>&1; git diff --cached --binary {shlex.quote(base)} -- . "
            f"{excludes}; git reset -q >/dev/null 2>&1")


def _restore_script(spec: TestsSpec) -> str:
    base = shlex.quote(spec.base_commit)
    paths = sorted(set(patch_paths(spec.test_patch)) | set(files_to_run(spec)))
    lines = ["set -u", f"cd {shlex.quote(spec.workdir)}"]
    changed = (f"git diff --name-only {base} -- {' '.join(shlex.quote(f':(glob)**/{p}') for p in PROTECTED)}; "
               f"git ls-files --others --exclude-standard -- "
               f"{' '.join(shlex.quote(f':(glob)**/{p}') for p in PROTECTED)}")
    lines.append(f"for p in $({changed}) {' '.join(shlex.quote(p) for p in paths)}; do")
    lines.append(f'  if git cat-file -e {base}:"$p" 2>/dev/null; then git checkout -q {base} -- "$p"; '
                 f'else rm -rf -- "$p"; fi')
    lines.append("done")
    if spec.test_patch.strip():
        lines.append(f"git apply --whitespace=nowarn {PATCH_PATH} 2>&1 || "
                     f"patch --batch --forward --fuzz=5 -p1 -i {PATCH_PATH} 2>&1 || exit 3")
    return "\n".join(lines)


async def run_hidden_tests(spec: TestsSpec, sandbox: Any) -> Verdict:
    """Steps 2 and 3 of the module docstring in ``sandbox``; the verdict (without ``model_patch``)."""
    if spec.test_patch.strip():
        await sandbox.write(PATCH_PATH, spec.test_patch)
    # Through the session (milliseconds), not a ``docker exec`` per command (a large share of grading under load).
    restored = await sandbox.session.exec(["bash", "-c", _restore_script(spec)], timeout=120, max_output=1 << 16)
    if restored.exit_code != 0:
        detail = (restored.stdout + restored.stderr)[-2000:]
        raise VerifierError(f"the hidden test patch did not apply at {spec.base_commit[:12]}: {detail}")
    files = files_to_run(spec)
    cmd = f"{spec.test_cmd} {' '.join(shlex.quote(f) for f in files)}"
    result = await sandbox.session.exec(["bash", "-c", f"exec 2>&1\n{cmd}"], timeout=spec.timeout_s,
                                        max_output=spec.max_output, cwd=spec.workdir, env=TEST_ENV)
    output = result.stdout
    statuses = parse_pytest(output)
    groups = {"FAIL_TO_PASS": spec.fail_to_pass, "PASS_TO_PASS": spec.pass_to_pass}
    tests = {name: {t: status_of(t, statuses, output) for t in ids} for name, ids in groups.items()}
    reason = None
    if result.timed_out:
        reason = "timeout"
        tests = {name: {t: (s if s != "MISSING" else "TIMEOUT") for t, s in ts.items()} for name, ts in tests.items()}
    elif result.oom_killed:
        reason = "out of memory"
    criteria = []
    for name, results in tests.items():
        bad = [t for t, s in results.items() if s not in PASSING]
        ok = not bad
        detail = f"{len(results) - len(bad)}/{len(results)} passed"
        if bad:
            detail += "; not passing: " + ", ".join(f"{t} ({results[t]})" for t in bad[:5]) + (
                f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        if reason:
            detail += f" [{reason} after {spec.timeout_s:g}s]" if reason == "timeout" else f" [{reason}]"
        criteria.append(CriterionResult(name=name, score=float(ok), passed=ok, detail=detail))
    resolved = all(c.passed for c in criteria) and reason is None
    # No timings in the evidence: the same work graded twice gives the same verdict.
    evidence = {"resolved": resolved, "reason": reason, "tests": tests, "test_files": files,
                "exit_code": result.exit_code, "log_tail": _ADDRESS.sub("0x?", _TIMING.sub(" ", output))[-4000:]}
    return Verdict(score=float(resolved), passed=resolved, criteria=tuple(criteria), evidence=evidence)


async def model_patch(sandbox: Any, base_commit: str, workdir: str = "/testbed") -> str:
    """The agent's changes as a git patch against ``base_commit`` (what SWE-bench calls ``model_patch``)."""
    result = await sandbox.session.exec(["bash", "-c", diff_command(base_commit)], timeout=60, max_output=16 << 20,
                                        cwd=workdir)
    if result.exit_code != 0:
        raise VerifierError(f"git diff failed in {workdir}: {result.stdout[-500:]}")
    return result.stdout


async def verify_tests(spec: TestsSpec, ctx: VerifyContext) -> Verdict:
    """Grade the episode in ``ctx.sandbox`` (see the module docstring)."""
    if ctx.sandbox is None:
        raise VerifierError("the tests verifier needs the episode's sandbox (VerifyContext.sandbox)")
    patch = await model_patch(ctx.sandbox, spec.base_commit, spec.workdir)
    verdict = await run_hidden_tests(spec, ctx.sandbox)
    return verdict.model_copy(update={"evidence": {**verdict.evidence, "model_patch": patch}})
