"""Run a library's own tests in a container (network none) and read back each test's outcome.

A :class:`TestRunner` holds one Docker sandbox for one repository tree: the tree is copied in once, and
each :meth:`TestRunner.run` writes the given files over it (restoring them afterwards), runs pytest on the
given test files with a small reporting plugin (:data:`PLUGIN`) and returns a :class:`RunResult`: the
outcome per test node id plus, for each failing test, what the failure looked like from the test's side
(the failing statement, the exception, the test's source and the values of the names it used), which is
what :mod:`envgym_swe.inject.statement` turns into an issue. :meth:`TestRunner.run_batch` runs many such
jobs with one exec through the in-container driver (:mod:`._driver`: pytest forked per run, bytecode cached,
a run cut short once the bug cannot be kept); the parallel build (:mod:`.parallel`) uses it. Tests never run
on the host.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.plugin.sandbox import DEFAULT, DockerSandbox
from envgym_swe.sources import PYTEST

WORKDIR = "/work/repo"
PLUGIN_DIR = "/tmp/.envgym-inject"  # the root is read-only: only the tmpfs mounts are writable
REPORT = "/tmp/envgym-report.jsonl"
BATCH_IN, BATCH_OUT = "/tmp/envgym-batch.json", "/tmp/envgym-batch.out.jsonl"
DRIVER = Path(__file__).with_name("_driver.py")
PROFILE = DEFAULT.model_copy(update={"name": "inject", "memory": "1g", "cpus": 1.0, "lifetime_s": 4 * 3600})

PLUGIN = '''\
"""pytest plugin: one JSON line per test outcome, with failure details from the test's own frame."""
import inspect, json, os
from _pytest._io.saferepr import saferepr

_OUT = open(os.environ["ENVGYM_REPORT"], "a", encoding="utf-8")
_DETAIL = {}
# ENVGYM_STOP names {"baseline": [...], "max_fail": N}: stop once more than N baseline tests failed (the bug
# is dropped whatever the rest does), leaving a "stop" record.
_LIMIT = json.load(open(os.environ["ENVGYM_STOP"])) if os.environ.get("ENVGYM_STOP") else None
_BASELINE = set(_LIMIT["baseline"]) if _LIMIT else set()
_FAILED = set()
_SESSION = []


def pytest_sessionstart(session):
    _SESSION.append(session)


def _emit(rec):
    _OUT.write(json.dumps(rec) + "\\n")
    _OUT.flush()


def _detail(item, excinfo):
    test_path = str(item.path)
    test_name = getattr(getattr(item, "obj", None), "__name__", None)
    frame_entry = None
    for entry in excinfo.traceback:  # the test function's own frame, else the last frame in the test file
        if str(entry.path) == test_path and (frame_entry is None or frame_entry.frame.code.name != test_name):
            frame_entry = entry
    info = {"exc_type": excinfo.type.__name__, "exc_msg": str(excinfo.value)[:3000],
            "raised_in_test": bool(frame_entry is not None and frame_entry is excinfo.traceback[-1])}
    if frame_entry is not None:
        info["statement"] = str(frame_entry.statement).strip()[:2000]
        names = {}
        for name, value in frame_entry.frame.f_locals.items():
            if name.startswith("@") or name in ("self",):
                continue
            try:
                names[name] = saferepr(value, maxsize=300)
            except Exception:
                pass
        info["locals"] = names
    try:
        info["test_source"] = inspect.getsource(item.obj)[:6000]
    except Exception:
        pass
    return info


import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None and report.when == "call":
        try:
            _DETAIL[item.nodeid] = _detail(item, call.excinfo)
        except Exception as exc:
            _DETAIL[item.nodeid] = {"exc_type": "?", "exc_msg": repr(exc)}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        rec = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome}
        if report.failed:
            rec["detail"] = _DETAIL.pop(report.nodeid, {})
            rec["longrepr"] = report.longreprtext[-3000:]
        _emit(rec)
    if _LIMIT and report.failed and report.nodeid in _BASELINE:
        _FAILED.add(report.nodeid)
        if len(_FAILED) > _LIMIT["max_fail"] and _SESSION and not _SESSION[0].shouldstop:
            _SESSION[0].shouldstop = "envgym: more than max_fail tests fail"
            _emit({"nodeid": "", "when": "stop", "outcome": "stopped"})


def pytest_collectreport(report):
    if report.failed:
        _emit({"nodeid": report.nodeid, "when": "collect", "outcome": "error", "longrepr": report.longreprtext[-3000:]})
'''


@dataclass
class RunResult:
    """What one pytest run did: ``status`` per test node id (passed / failed / skipped)."""

    status: dict[str, str] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    """node id -> the failure as the test saw it (exc_type, exc_msg, statement, locals, test_source)."""
    collect_errors: list[str] = field(default_factory=list)
    stopped_early: bool = False
    """The run stopped as soon as more than ``max_fail`` baseline tests had failed (the batch driver's runs)."""
    timed_out: bool = False
    exit_code: int | None = None
    output: str = ""

    @property
    def broken(self) -> bool:
        """The run says nothing reliable: it timed out, or a module failed to import (collection error)."""
        return self.timed_out or bool(self.collect_errors) or self.exit_code not in (0, 1)

    def failed(self) -> set[str]:
        return {t for t, s in self.status.items() if s == "failed"}

    def passed(self) -> set[str]:
        return {t for t, s in self.status.items() if s == "passed"}


def parse_report(text: str) -> RunResult:
    result = RunResult()
    for line in text.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        nodeid, outcome = rec["nodeid"], rec["outcome"]
        if rec["when"] == "stop":
            result.stopped_early = True
            continue
        if rec["when"] == "collect":
            result.collect_errors.append(nodeid)
            continue
        if outcome == "failed":
            result.status[nodeid] = "failed"
            if rec.get("detail"):
                result.details.setdefault(nodeid, rec["detail"])
            result.details.setdefault(nodeid, {}).setdefault("longrepr", rec.get("longrepr", ""))
        elif result.status.get(nodeid) != "failed":
            result.status[nodeid] = outcome
    return result


class TestRunner:
    """One container holding one repository tree; see the module docstring."""

    __test__ = False  # not a pytest class

    def __init__(self, image: str, tree: Path, *, pythonpath: Sequence[str] = (), deselect: Sequence[str] = (),
                 cpu_shares: int | None = None) -> None:
        self.image, self.tree = image, tree
        self.pythonpath = tuple(pythonpath)
        """Folders of the tree to import from besides its root (a ``src`` layout's ``src``)."""
        self.deselect = tuple(deselect)
        """Test node ids no run includes (:attr:`envgym_swe.sources.Library.deselect`)."""
        self.cpu_shares = cpu_shares
        """Docker's relative CPU weight (1024 by default): a build that should yield to other containers on a
        busy host asks for less. Only a weight, not a limit: an idle CPU is still used."""
        self.sandbox: DockerSandbox | None = None

    async def __aenter__(self) -> TestRunner:
        profile = PROFILE
        if self.cpu_shares is not None:
            profile = PROFILE.model_copy(update={"extra_host_config": {"CpuShares": self.cpu_shares}})
        self.sandbox = DockerSandbox(self.image, profile, labels={"envgym.purpose": "swe-inject"})
        await self.sandbox.start()
        try:
            await self.sandbox.exec(["mkdir", "-p", WORKDIR, PLUGIN_DIR])
            await self.sandbox.write(f"{PLUGIN_DIR}/envgym_inject_report.py", PLUGIN)
            await self.sandbox.write(f"{PLUGIN_DIR}/driver.py", await asyncio.to_thread(DRIVER.read_text))
            await self.load(self.tree)
        except BaseException:
            await self.sandbox.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.sandbox is not None:
            await self.sandbox.stop()

    async def load(self, tree: Path) -> None:
        """Replace the container's repository with the host directory ``tree`` (its .git left out)."""
        sb = self._sb()
        await sb.exec(["rm", "-rf", WORKDIR])
        await sb.exec(["mkdir", "-p", WORKDIR])
        for child in await asyncio.to_thread(lambda: sorted(tree.iterdir())):
            if child.name != ".git":
                await sb.copy_in(child, WORKDIR)

    def _sb(self) -> DockerSandbox:
        if self.sandbox is None:
            raise RuntimeError("TestRunner used outside 'async with'")
        return self.sandbox

    async def run(self, test_files: Sequence[str], files: Mapping[str, str] | None = None, *,
                  originals: Mapping[str, str | None] | None = None, timeout: float = 60) -> RunResult:  # noqa: ASYNC109 - the test run's own deadline
        """Run pytest on ``test_files`` with ``files`` (path -> text) written over the tree, then restore.

        ``originals`` gives the text to restore per path (None: delete it); paths in ``files`` without an
        entry are restored from the host tree.
        """
        sb = self._sb()
        files = dict(files or {})
        try:
            for rel, text in files.items():
                await sb.write(f"{WORKDIR}/{rel}", text)
            await sb.exec(["rm", "-f", REPORT])
            path = ":".join([PLUGIN_DIR, *(f"{WORKDIR}/{p}" for p in self.pythonpath)])
            cmd = (f"find . -name __pycache__ -prune -exec rm -rf {{}} + ; PYTHONPATH={path} "
                   f"ENVGYM_REPORT={REPORT} {shlex.join(PYTEST)} -p envgym_inject_report --tb=short -vv "
                   f"{shlex.join([*(f'--deselect={d}' for d in self.deselect), *test_files])}")
            proc = await sb.exec(["sh", "-c", cmd], cwd=WORKDIR, timeout=timeout, max_output=1 << 16)
            report = await sb.exec(["cat", REPORT])
            result = parse_report(report.stdout if report.ok else "")
            result.timed_out, result.exit_code = proc.timed_out or proc.oom_killed, proc.exit_code
            result.output = (proc.stdout + proc.stderr)[-4000:]
            return result
        finally:
            for rel in files:
                original = (originals or {}).get(rel) if rel in (originals or {}) else \
                    await asyncio.to_thread(_host_text, self.tree / rel)
                if original is None:
                    await sb.exec(["rm", "-f", f"{WORKDIR}/{rel}"])
                else:
                    await sb.write(f"{WORKDIR}/{rel}", original)


    async def run_batch(self, package: str, jobs: Sequence[Mapping[str, Any]], *,
                        timeout: float) -> dict[str, list[RunResult]]:  # noqa: ASYNC109 - the batch's own deadline
        """Run many jobs with one exec of the in-container driver (:mod:`._driver`); key -> its runs.

        A job is ``{"key", "tests", "files", "repeat", "timeout"}`` plus optionally ``"baseline"`` and
        ``"max_fail"`` (then later runs happen only while the first could still be kept). ``timeout`` bounds
        the whole batch; the driver enforces each run's own.
        """
        sb = self._sb()
        batch = {"package": package, "pythonpath": list(self.pythonpath), "jobs": list(jobs)}
        if self.deselect:
            batch["deselect"] = list(self.deselect)
        await sb.write(BATCH_IN, json.dumps(batch))
        proc = await sb.exec(["sh", "-c", f"rm -f {BATCH_OUT}; PYTHONPATH={PLUGIN_DIR} "
                                          f"python3 {PLUGIN_DIR}/driver.py {BATCH_IN} {BATCH_OUT}"],
                             cwd=WORKDIR, timeout=timeout, max_output=1 << 14)
        if proc.timed_out or proc.exit_code != 0:
            raise RuntimeError(f"the batch driver failed (exit {proc.exit_code}, timed out {proc.timed_out}): "
                               f"{(proc.stdout + proc.stderr)[-1500:]}")
        out: dict[str, list[RunResult]] = {}
        for line in (await sb.read(BATCH_OUT, max_bytes=1 << 28)).decode().splitlines():
            rec = json.loads(line)
            runs = []
            for run in rec["runs"]:
                result = parse_report(run["report"])
                result.timed_out, result.exit_code, result.output = run["timed_out"], run["exit_code"], run["output"]
                runs.append(result)
            out[rec["key"]] = runs
        return out


def _host_text(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None
