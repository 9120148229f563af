"""The tests verifier: the agent's patch graded in a fresh sandbox with the hidden tests, FAIL_TO_PASS and PASS_TO_PASS.

A ``tests`` spec holds what SWE-bench calls the grading half of an instance: ``test_patch`` (the hidden test
files), ``fail_to_pass`` and ``pass_to_pass`` (pytest node ids) and the ``base_commit``. The environment puts
a :class:`TestsTarget` in ``VerifyContext.sandbox``: the episode's sandbox and a factory of fresh sandboxes of
the same image (network ``none``); ``envgym swe grade`` puts one whose ``patch`` is the prediction's
``model_patch`` and that has no episode. Grading:

1. the agent's work is read from the episode's sandbox as a patch against the base tree (``model_patch``
   in the evidence: what the SWE family's exporter writes to ``predictions.jsonl``). Nothing else is read from it:
   what the agent did outside its diff (site-packages, background processes, caches, ``/tmp``, git config
   or hooks) cannot reach the verdict. A work tree whose ``.git`` the agent removed or broke cannot be read:
   :class:`WorkTreeUnreadable`, the agent's failure. A target that carries ``patch`` is graded on that patch,
   and nothing is read;
2. :func:`grade_patch` does the rest in a **new** sandbox, discarded afterwards: ``/testbed`` at the base
   commit, its whole tree (the image's untracked install artefacts too) snapshotted as a git tree, the model
   patch applied (``git apply``, else ``patch --forward --fuzz=5``), the tree snapshotted again; every path that
   changed between the two and could reach the runner is restored from the first snapshot, or dropped where it
   had none (``evidence["dropped_paths"]``, path -> ``restored`` | ``dropped``, the outermost such path): the
   test patch's files and the files of the listed tests; pytest's configuration files (``conftest.py``,
   ``pytest.ini``, ``.pytest.ini``, ``pytest.toml``, ``.pytest.toml``, ``tox.ini``, ``setup.cfg``,
   ``pyproject.toml``); package metadata and start-up hooks (``*.dist-info/``, ``*.egg-info/``,
   ``*.egg-link``, ``*.pth``, ``sitecustomize``, ``usercustomize``); modules that shadow the runner
   (``pytest.py``, ``py.py``, ``_pytest/``, ``pytest/``, ``pluggy/``, ``py/``) and byte code (``__pycache__/``,
   ``*.pyc``). A patch touching ``.git``, an absolute path or ``..`` is refused. Then the test patch is applied;
3. the test files of the listed ids run once under ``timeout_s`` through the grader's runner
   (:mod:`envgym_verifiers.tests._runner`, written outside the work tree at grading time, with a plan file it
   deletes): ``python3 -P -s`` in a cleared environment with pytest's plugin autoload off. It takes pytest's
   configuration only from its own copy of the file pytest would pick at the base commit (``-c``,
   ``--rootdir``, ``--confcutdir``, ``-o addopts=``; then the task's ``test_cmd`` options), loads only the
   plugins installed in the image's site-packages, and plants **canaries** (a failing test in a new module
   beside the hidden tests). It reports one nonce-tagged JSON line per test on its original stderr, a pipe
   to the grader that nothing in the sandbox can read back (the tests' own output is the log, on stdout),
   then an end marker with pytest's exit status. Only tagged lines count; a run that never wrote the end
   marker (``os._exit``, a killed interpreter) is a failure with that reason; a run in which a canary passed,
   or whose exit status says all passed although a canary failed, was rewritten from inside and is a failure
   with reason ``tampered``.

Steps 2 and 3 are :func:`run_tests`, public: it returns a :class:`TestRun` with the status of every test the
run reported, which is what ``envgym swe label`` needs to find FAIL_TO_PASS and PASS_TO_PASS; the runner's
report is read by :func:`parse_report`, and every log kept passes through :func:`stable_log`.

Resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passed and the run ended normally (score 1, else 0).
Statuses: ``PASSED``, ``FAILED``, ``ERROR``, ``SKIPPED``, ``XFAIL``, ``XPASS``, ``MISSING`` (not reported),
``TIMEOUT`` or ``UNTRUSTED`` (the run was tampered with). The evidence (statuses, model patch, dropped paths,
the log with the nonce and the canaries' lines masked) has no timings, nonces, or dates, times, ports and pids
a test printed: the same work graded twice gives the same verdict and evidence.

What remains possible: the code under test runs in the test process, as root in the grading sandbox. It
cannot read the report channel, nor reach the grader's configuration, plugins or metadata; a blanket
rewrite of test outcomes (a report hook registered from the library's ``__init__``, a patched
``TestReport``, a replaced runner function) turns the canaries too and throws the run away. A patch written
against this runner that finds the nonce in the process's memory (the reporter's closure, through ``gc``)
and forges lines only for tests it tells apart from the canaries (by their source, say), or that reads
other processes' memory, is not stopped by these layers, only by reading the patch.

A plug-in kind (``envgym_verifiers``' entry point registers it; until 0.2 it was ``envgym.verify.tests``, now a
warning alias); a family reads its names from :mod:`envgym.plugin.tests`.
"""

from __future__ import annotations

import json
import posixpath
import re
import secrets
import shlex
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from envgym.plugin import AgentFault, CriterionResult, FrozenModel, Verdict, VerifierError, VerifyContext

PASSING = frozenset({"PASSED", "XFAIL"})
_TIMING = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d+:\d+\))? ")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_DIFF_PATHS = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
_PYTEST_CMD = re.compile(r"^\s*(?:(?:python3?|\S*/python3?)\s+-m\s+pytest|pytest)(?:\s+(.*))?$", re.DOTALL)
GRADER_DIR = "/tmp/.envgym-grader"
PLAN_PATH = f"{GRADER_DIR}/plan"
PATCH_PATH = f"{GRADER_DIR}/test.patch"
MODEL_PATCH_PATH = f"{GRADER_DIR}/model.patch"
RUNNER = (Path(__file__).parent / "_runner.py").read_text(encoding="utf-8")
"""The grader's runner (:mod:`envgym_verifiers.tests._runner`, read from beside this file, which ships in the
package), written into every grading sandbox."""
PROTECTED = ("conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
             "pyproject.toml", "pytest.py", "py.py", "sitecustomize.py", "usercustomize.py")
"""File names restored (or dropped) wherever a patch puts them: pytest's configuration and start-up hooks."""
PROTECTED_DIRS = ("_pytest", "pytest", "pluggy", "py", "__pycache__", ".pytest_cache", "sitecustomize",
                  "usercustomize")
PROTECTED_SUFFIXES = (".pth", ".pyc", ".pyo", ".egg-link", ".dist-info", ".egg-info")
"""Names restored (or dropped) by their ending: start-up hooks, byte code and package metadata (a folder
``*.dist-info`` or ``*.egg-info`` is restored or dropped whole: its entry points would load plugins)."""
DIFF_EXCLUDES = (":(exclude,glob)**/*.egg-info/**", ":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.pyc",
                 ":(exclude,glob)**/.pytest_cache/**")
"""Build and cache artefacts never part of a model patch (the images also list them in .git/info/exclude)."""
_GIT = "git -c core.hooksPath=/dev/null -c core.quotepath=off"
_CLEAN_ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp/.envgym-home",
              "LANG=C.UTF-8", "PYTHONHASHSEED=0", "PYTHONNOUSERSITE=1", "PYTHONDONTWRITEBYTECODE=1",
              "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1")
"""The test process's whole environment (plus the sandbox's command tag): nothing the image or agent set."""


def __getattr__(name: str) -> Any:
    if name == "REPORT_PATH":  # 0.1's report file; the report is the runner's stderr now. Goes in 0.3.
        import warnings

        warnings.warn("envgym_verifiers.tests.REPORT_PATH is deprecated (since 0.2; goes in 0.3): the runner "
                      "reports on its stderr, read by parse_report(); no file holds the report", DeprecationWarning,
                      stacklevel=2)
        return f"{GRADER_DIR}/report"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class WorkTreeUnreadable(AgentFault):
    """The episode's work tree cannot be read as a patch because the agent removed or broke its ``.git``."""


class TestsSpec(FrozenModel):
    """Hidden tests of a repository task (SWE-bench's grading fields)."""

    __test__ = False  # not a pytest class, whatever the name says
    type: Literal["tests"] = "tests"
    base_commit: str
    test_patch: str = ""
    fail_to_pass: tuple[str, ...] = Field(min_length=1)
    pass_to_pass: tuple[str, ...] = ()
    test_cmd: str = "python3 -m pytest -rA --tb=short -p no:cacheprovider"
    """pytest and its options (``python3 -m pytest ARGS`` or ``pytest ARGS``); the grader's runner runs pytest
    with ``ARGS`` and the test files of the listed ids."""
    workdir: str = "/testbed"
    timeout_s: float = Field(default=300.0, gt=0)
    max_output: int = 8 << 20


@dataclass
class TestsTarget:
    """What the environment hands the tests verifier: where the agent worked, and fresh sandboxes to grade in."""

    __test__ = False
    episode: Any
    """The episode's sandbox: only the diff of its work tree is read (nothing, where ``patch`` is given)."""
    fresh: Callable[[], AbstractAsyncContextManager[Any]]
    """A new, started sandbox of the task's image that no episode touched; stopped when the block ends."""
    patch: str | None = None
    """The work as a patch against the base commit (a SWE-bench prediction's ``model_patch``): graded as the
    episode's diff would be, and ``episode`` is not read."""


def patch_paths(patch: str) -> list[str]:
    """Paths a git-style patch touches (both sides of renames), in order, without duplicates."""
    seen: dict[str, None] = {}
    for a, b in _DIFF_PATHS.findall(patch):
        seen.setdefault(a)
        seen.setdefault(b)
    for line in patch.splitlines() if not seen else ():  # a plain unified diff names its paths here only
        if line.startswith(("--- ", "+++ ")):
            path = line[4:].split("\t", 1)[0].strip()
            if path != "/dev/null":
                seen.setdefault(path.split("/", 1)[1] if path.startswith(("a/", "b/")) else path)
    return list(seen)


def files_to_run(spec: TestsSpec) -> list[str]:
    """The files to run: those of the listed node ids (``path::name``), else the test patch's ``.py`` files."""
    files = {t.split("::", 1)[0] for t in (*spec.fail_to_pass, *spec.pass_to_pass) if "::" in t}
    if not files:
        files = {p for p in patch_paths(spec.test_patch) if p.endswith(".py")}
    return sorted(files)


def unsafe_path(path: str) -> bool:
    """A patch path outside the work tree, or inside its ``.git``."""
    parts = path.split("/")
    return path.startswith("/") or ".." in parts or ".git" in parts


def protection_root(path: str, test_paths: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The outermost path whose change grading undoes when a patch changes ``path`` (see the module docstring):
    a test path, or the first protected part of ``path``; None when the change stands."""
    norm = posixpath.normpath(path)
    for test in sorted(test_paths, key=len):
        if norm == test or norm.startswith(test + "/"):
            return test
    parts = norm.split("/")
    for i, part in enumerate(parts):
        if part in PROTECTED or part in PROTECTED_DIRS or part.endswith(PROTECTED_SUFFIXES):
            return "/".join(parts[:i + 1])
    return None


def protected(path: str, test_paths: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether a patch's change to ``path`` is undone before the tests run (see the module docstring)."""
    return protection_root(path, test_paths) is not None


def pytest_args(spec: TestsSpec) -> list[str]:
    match = _PYTEST_CMD.match(spec.test_cmd)
    if match is None:
        raise VerifierError(f"test_cmd must run pytest (`python3 -m pytest ARGS` or `pytest ARGS`): {spec.test_cmd!r}")
    return shlex.split(match.group(1) or "")


@dataclass
class Report:
    """What the runner's nonce-tagged lines say (:func:`parse_report`)."""

    statuses: dict[str, str]
    """Node id -> status, the canaries left out."""
    end: int | None
    """pytest's exit status from the end marker; None when the run never reached it."""
    canaries: dict[str, str]
    """Canary node id -> status (``MISSING`` when not reported). A canary the repository's own fixtures
    parametrize (an autouse fixture with ``params`` in a ``conftest.py``) is reported once per parameter,
    ``CANARY[param]``: its status is the worst of them for the grader (``PASSED``/``XPASS`` if any passed)."""

    def __iter__(self):  # 0.1's ``statuses, end = parse_report(...)``; goes in 0.3 (CHANGELOG.md, Deprecated)
        import warnings

        warnings.warn("unpacking parse_report()'s result as (statuses, end) is deprecated (since 0.2; goes in 0.3): "
                      "it returns a Report; read .statuses, .end and .canaries", DeprecationWarning, stacklevel=2)
        return iter((self.statuses, self.end))

    def tampering(self) -> str | None:
        """Why the run's outcomes cannot be believed, or None."""
        turned = sorted(c for c, s in self.canaries.items() if s in PASSING or s == "XPASS")
        if turned:
            return "tampered: a grader canary test that fails came out passing (the run's outcomes were rewritten)"
        if self.end == 0 and any(s in ("FAILED", "ERROR") for s in self.canaries.values()):
            return "tampered: pytest's exit status says every test passed although a grader canary failed"
        if self.end is not None and any(s == "MISSING" for s in self.canaries.values()):
            # the run finished but a canary it was handed never reached the report: reports were dropped or
            # renamed from inside (a run that is cut short has no end marker and is judged as such)
            return "tampered: a grader canary test the run was given was never reported"
        return None


def parse_report(output: str, nonce: str) -> Report:
    """The runner's report in ``output``: only lines tagged with ``nonce`` count (a teardown error wins over a
    pass; a failed call stays FAILED when its teardown errors too)."""
    statuses: dict[str, str] = {}
    end = None
    canaries: list[str] = []
    prefix = nonce + " "
    for line in output.splitlines():
        if not line.startswith(prefix):
            continue
        rest = line[len(prefix):]
        if rest.startswith("END "):
            try:
                end = int(rest[4:].strip() or 0)
            except ValueError:
                continue
            continue
        if rest.startswith("CANARIES "):
            try:
                canaries = [str(c) for c in json.loads(rest[9:])]
            except (ValueError, TypeError):
                continue
            continue
        try:
            rec = json.loads(rest)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        test, status = str(rec.get("test")), str(rec.get("status"))
        if rec.get("when") == "teardown" and statuses.get(test) not in (None, "PASSED", "XFAIL", "SKIPPED"):
            continue
        statuses[test] = status
    return Report(statuses, end, {c: _canary_status(statuses, c) for c in canaries})


_CANARY_ORDER = ("PASSED", "XPASS", "XFAIL", "FAILED", "ERROR", "SKIPPED")
"""A parametrized canary's status: the first of these any of its instances has (a pass anywhere turns it)."""


def _canary_status(statuses: dict[str, str], canary: str) -> str:
    """Pop ``canary``'s reports out of ``statuses`` (``CANARY`` itself and ``CANARY[param]``, the ids a repository's
    parametrized autouse fixture gives it) and return its status, ``MISSING`` when none was reported."""
    found = [statuses.pop(t) for t in [t for t in statuses if t == canary or t.startswith(canary + "[")]]
    return next((s for s in _CANARY_ORDER if s in found), found[0] if found else "MISSING")


def diff_command(base: str) -> str:
    """Shell command printing the work tree's changes (untracked files included) against ``base``. The
    repository's own diff drivers, text conversions and fsmonitor (its ``.git/config`` is the agent's) are off."""
    excludes = " ".join(shlex.quote(p) for p in DIFF_EXCLUDES)
    git = f"{_GIT} -c core.fsmonitor=false"
    return (f"{git} add -A -- . {excludes} >/dev/null 2>&1; {git} diff --cached --binary --no-textconv --no-ext-diff "
            f"{shlex.quote(base)} -- . {excludes}; {git} reset -q >/dev/null 2>&1")


async def model_patch(sandbox: Any, base_commit: str, workdir: str = "/testbed") -> str:
    """The agent's changes as a git patch against ``base_commit`` (what SWE-bench calls ``model_patch``).
    Raises :class:`WorkTreeUnreadable` (the agent's failure) when the work tree's git repository no longer
    holds the base commit (``.git`` removed, replaced or corrupted: nothing else writes there)."""
    result = await sandbox.session.exec(["bash", "-c", diff_command(base_commit)], timeout=60, max_output=16 << 20,
                                        cwd=workdir)
    if result.exit_code != 0:
        probe = await sandbox.session.exec(
            ["bash", "-c", f"{_GIT} rev-parse --git-dir && {_GIT} cat-file -e {shlex.quote(base_commit)}^{{commit}} "
                           f"&& {_GIT} fsck --no-dangling --connectivity-only -q {shlex.quote(base_commit)}"],
            timeout=60, max_output=1 << 16, cwd=workdir)
        if probe.exit_code != 0:
            raise WorkTreeUnreadable(f"the work cannot be read: {workdir}/.git no longer holds the base commit "
                                     f"{base_commit[:12]} (removed or corrupted by the agent): "
                                     f"{(probe.stdout + probe.stderr).strip()[-300:]}")
        raise VerifierError(f"git diff failed in {workdir}: {result.stdout[-500:]}")
    return result.stdout


_CHANGED = "\x1eCHANGED"


def _prepare_script(spec: TestsSpec, has_model_patch: bool) -> str:
    """``/testbed`` at the base commit, snapshotted (tree T0, untracked artefacts included), the model patch
    applied, snapshotted again; prints T0 and every path that differs (NUL-separated). Exit 4: the base cannot be
    checked out; 3: the patch does not apply; 5: the patched tree cannot be read."""
    base = shlex.quote(spec.base_commit)
    lines = ["set -u", f"cd {shlex.quote(spec.workdir)} || exit 4", f"mkdir -p {GRADER_DIR}",
             f"{_GIT} checkout -qf --detach {base} && {_GIT} clean -fdxq -e '*.egg-info' || exit 4",
             f'snap() {{ cp .git/index "$1" && GIT_INDEX_FILE="$1" {_GIT} add -A -f -- . >/dev/null 2>&1 && '
             f'GIT_INDEX_FILE="$1" {_GIT} write-tree; }}',
             f"t0=$(snap {GRADER_DIR}/index0) || exit 4"]
    if has_model_patch:
        lines.append(f"{_GIT} apply --whitespace=nowarn {MODEL_PATCH_PATH} 2>&1 || "
                     f"patch --batch --forward --fuzz=5 -p1 -i {MODEL_PATCH_PATH} 2>&1 || exit 3")
    lines.append(f"t1=$(snap {GRADER_DIR}/index1) || exit 5")
    lines.append(f"printf '\\n{_CHANGED} %s\\n' \"$t0\"")
    lines.append(f'{_GIT} diff --name-only --no-renames -z "$t0" "$t1"')
    return "\n".join(lines)


def _restore_script(spec: TestsSpec, tree: str, undo: list[str]) -> str:
    """Each of ``undo`` restored from ``tree`` (T0) or dropped, then the hidden test patch applied."""
    lines = ["set -u", f"cd {shlex.quote(spec.workdir)} || exit 4", f"export GIT_INDEX_FILE={GRADER_DIR}/index0"]
    for path in sorted(set(undo)):
        q = shlex.quote(path)
        # a link planted on the way to a restored path would send the restore (or the test patch) elsewhere
        lines.append(f'd={q}; while [ "$d" != . ]; do [ -L "$d" ] && rm -f -- "$d"; '
                     'case $d in */*) d=${d%/*} ;; *) d=. ;; esac; done')
        lines.append(f"if {_GIT} cat-file -e {shlex.quote(f'{tree}:{path}')} 2>/dev/null; then rm -rf -- {q}; "
                     f"{_GIT} checkout -q {tree} -- {q}; echo restored {q}; "
                     f"elif [ -e {q} ] || [ -L {q} ]; then rm -rf -- {q}; echo dropped {q}; fi")
    if spec.test_patch.strip():
        lines.append(f"{_GIT} apply --whitespace=nowarn {PATCH_PATH} 2>&1 || "
                     f"patch --batch --forward --fuzz=5 -p1 -i {PATCH_PATH} 2>&1 || exit 3")
    return "\n".join(lines)


def _verdict(spec: TestsSpec, tests: dict[str, dict[str, str]], reason: str | None,
             evidence: dict[str, Any]) -> Verdict:
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
    evidence = {"resolved": resolved, "reason": reason, "tests": tests, **evidence}
    return Verdict(score=float(resolved), passed=resolved, criteria=tuple(criteria), evidence=evidence)


@dataclass
class TestRun:
    """What one run of the grader's runner found (:func:`run_tests`)."""

    __test__ = False
    statuses: dict[str, str]
    """Node id -> status of every test the run reported (not only the listed ones)."""
    patch_applied: bool
    reason: str | None
    """Why the run says nothing reliable: the patch was refused or did not apply, ``timeout``, ``out of memory``,
    the process ended before the end marker, or ``tampered: ...`` (a canary came out passing; every status is
    then ``UNTRUSTED``); None for a run that ended normally."""
    dropped_paths: dict[str, str]
    exit_code: int | None
    """The test process's exit status (1 for a normal run: the canaries fail)."""
    timed_out: bool
    log_tail: str
    """The run's output (last 4,000 characters) through :func:`stable_log`."""


_STAMPS = (
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"), "<datetime>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d\b"), "<date>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b1\d{9}(?:\.\d+)?\b|\b1\d{12,18}\b"), "<epoch>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|us|µs|ns|sec|seconds)\b"), "<duration>"),
    (re.compile(r"\b((?:localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[?::1\]?)[:, ]\s*)\d{2,5}\b"), r"\1<port>"),
    (re.compile(r"\b(pid[ =:]*)\d+\b", re.IGNORECASE), r"\1<pid>"),
)


def stable_log(text: str) -> str:
    """``text`` with what differs between two runs of the same tests masked: durations (pytest's
    ``in 0.12s``), memory addresses, wall-clock dates and times, epoch timestamps, local ports and pids a
    test printed. Grading evidence holds logs only through this, so the same work graded twice gives the
    same evidence (Gymnasium's determinism check compares it)."""
    text = _ADDRESS.sub("0x?", _TIMING.sub(" ", text))
    for pattern, repl in _STAMPS:
        text = pattern.sub(repl, text)
    return text


async def run_tests(sandbox: Any, *, base_commit: str, test_patch: str, files: list[str], patch: str | None = None,
                    protect: tuple[str, ...] = (), test_cmd: str | None = None, workdir: str = "/testbed",
                    timeout_s: float = 300.0, max_output: int = 8 << 20) -> TestRun:
    """Steps 2 and 3 of the module docstring in ``sandbox`` (a fresh one): ``/testbed`` at ``base_commit``,
    ``patch`` applied (None or empty: none) with its hijacking paths undone (``protect`` adds test paths to
    restore), ``test_patch`` applied, ``files`` run once by the grader's runner with ``test_cmd``'s pytest
    options. Returns the status of every test the runner reported (the canaries left out). Used by
    :func:`grade_patch` and by anything that needs to know which tests pass at a commit (``envgym swe label``)."""
    spec = TestsSpec(base_commit=base_commit, test_patch=test_patch, fail_to_pass=("-",), workdir=workdir,
                     timeout_s=timeout_s, max_output=max_output, **({"test_cmd": test_cmd} if test_cmd else {}))
    args = pytest_args(spec)
    patch = patch or ""

    def failed(reason: str) -> TestRun:
        return TestRun({}, False, reason, {}, None, False, "")

    unsafe = [p for p in patch_paths(patch) if unsafe_path(p)]
    if unsafe:
        return failed(f"the patch touches paths outside the work tree: {', '.join(unsafe[:5])}")
    if patch.strip():
        await sandbox.write(MODEL_PATCH_PATH, patch if patch.endswith("\n") else patch + "\n")
    prepared = await sandbox.session.exec(["bash", "-c", _prepare_script(spec, bool(patch.strip()))], timeout=120,
                                          max_output=4 << 20)
    output = (prepared.stdout + prepared.stderr).strip()
    if prepared.exit_code == 4:
        raise VerifierError(f"cannot check out {base_commit[:12]} in {workdir}: {output[-1000:]}")
    if prepared.exit_code == 5:
        return failed(f"the patched work tree cannot be read: {output[-1000:]}")
    if prepared.exit_code != 0 or f"{_CHANGED} " not in prepared.stdout:
        return failed(f"the model patch does not apply: {output[-1000:]}")
    tree, _, changed = prepared.stdout.rsplit(f"{_CHANGED} ", 1)[-1].partition("\n")
    test_paths = set(patch_paths(test_patch)) | set(files) | set(protect)
    roots = {protection_root(p, test_paths) for p in changed.split("\0") if p}
    undo = sorted({r for r in roots if r} | test_paths)
    if test_patch.strip():
        await sandbox.write(PATCH_PATH, test_patch)
    restored = await sandbox.session.exec(["bash", "-c", _restore_script(spec, tree.strip(), undo)], timeout=120,
                                          max_output=1 << 20)
    if restored.exit_code != 0:
        detail = (restored.stdout + restored.stderr)[-2000:]
        raise VerifierError(f"the hidden test patch did not apply at {base_commit[:12]}: {detail}")
    undone = dict(line.split(" ", 1)[::-1] for line in restored.stdout.splitlines()
                  if line.startswith(("restored ", "dropped ")))
    dropped = {p: undone[p] for p in sorted(undone) if p in roots}
    nonce = secrets.token_hex(16)
    await sandbox.write(f"{GRADER_DIR}/run.py", RUNNER)
    plan = {"nonce": nonce, "workdir": workdir, "files": files, "args": args}
    await sandbox.write(PLAN_PATH, json.dumps(plan), mode=0o600)
    argv = ["python3", "-P", "-s", f"{GRADER_DIR}/run.py", PLAN_PATH]
    cmd = (f'mkdir -p /tmp/.envgym-home\nexec env -i {" ".join(_CLEAN_ENV)} '
           f'ENVGYM_EXEC="${{ENVGYM_EXEC:-}}" {shlex.join(argv)}')
    result = await sandbox.session.exec(["bash", "-c", cmd], timeout=timeout_s, max_output=max_output, cwd=workdir)
    report = parse_report(result.stderr, nonce)
    reason = None
    if result.timed_out:
        reason = "timeout"
    elif result.oom_killed:
        reason = "out of memory"
    elif report.end is None:
        reason = f"the test process ended before the grader's end marker (exit code {result.exit_code})"
    else:
        reason = report.tampering()
    statuses = report.statuses
    if reason and reason.startswith("tampered"):
        statuses = {t: "UNTRUSTED" for t in statuses}
    # The log: what the tests printed, and whatever reached the channel untagged (an interpreter's last words).
    # No timings, addresses, timestamps, nonce or canary names: the same work graded twice gives the same evidence.
    prefix = nonce + " "
    stray = "".join(line + "\n" for line in result.stderr.splitlines() if not line.startswith(prefix))
    log = result.stdout + stray
    stems = [c.rsplit("::", 1)[-1] for c in report.canaries]
    if stems:  # whole lines: pytest pads and cuts lines by the name's length
        log = "".join("<grader canary>\n" if any(st in line for st in stems) else line
                      for line in log.splitlines(keepends=True))
    log_tail = stable_log(log.replace(nonce, "<nonce>"))[-4000:]
    return TestRun(statuses, True, reason, dropped, result.exit_code, bool(result.timed_out), log_tail)


async def grade_patch(spec: TestsSpec, sandbox: Any, patch: str | None) -> Verdict:
    """Apply ``patch`` in ``sandbox`` (a fresh one) and run the hidden tests: steps 2 and 3 of the module
    docstring (:func:`run_tests`). The evidence holds ``patch_applied``; a patch that does not apply is a
    failed verdict."""
    groups = {"FAIL_TO_PASS": spec.fail_to_pass, "PASS_TO_PASS": spec.pass_to_pass}
    files = files_to_run(spec)
    pytest_args(spec)  # a bad test_cmd is the verifier's error before anything runs
    run = await run_tests(sandbox, base_commit=spec.base_commit, test_patch=spec.test_patch, files=files,
                          patch=patch, test_cmd=spec.test_cmd, workdir=spec.workdir, timeout_s=spec.timeout_s,
                          max_output=spec.max_output)
    evidence: dict[str, Any] = {"model_patch": patch or "", "patch_applied": run.patch_applied,
                                "dropped_paths": run.dropped_paths, "test_files": files}
    tests = {name: {t: run.statuses.get(t, "MISSING") for t in ids} for name, ids in groups.items()}
    if not run.patch_applied:
        return _verdict(spec, tests, run.reason, evidence)
    if run.timed_out:
        tests = {name: {t: (s if s != "MISSING" else "TIMEOUT") for t, s in ts.items()} for name, ts in tests.items()}
    return _verdict(spec, tests, run.reason, {**evidence, "exit_code": run.exit_code, "log_tail": run.log_tail})


async def verify_tests(spec: TestsSpec, ctx: VerifyContext) -> Verdict:
    """Grade the episode: its patch read from the episode's sandbox (or the target's ``patch``), tested in a
    fresh one (module docstring)."""
    target = ctx.sandbox
    if not isinstance(target, TestsTarget):
        raise VerifierError("the tests verifier grades in a fresh sandbox: VerifyContext.sandbox must be a "
                            "TestsTarget (the episode's sandbox and a factory of fresh ones)")
    patch = target.patch if target.patch is not None else await model_patch(target.episode, spec.base_commit,
                                                                             spec.workdir)
    async with target.fresh() as sandbox:
        return await grade_patch(spec, sandbox, patch)
