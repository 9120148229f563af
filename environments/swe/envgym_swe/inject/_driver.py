"""In-container batch driver: validate many candidate bugs with one ``docker exec`` (never imported on the host).

:class:`envgym_swe.inject.runner.TestRunner` copies this file into the container and runs
``python3 _driver.py JOBS OUT``. ``JOBS`` is ``{"package", "pythonpath", "jobs": [...]}``; each job names the
test files to run, the files to write over the tree (path -> text; restored afterwards), ``repeat`` (how
many runs), and optionally ``baseline`` (the test ids that passed on the clean tree) with ``max_fail``: then a
run stops as soon as more than ``max_fail`` baseline tests failed (the bug is dropped whatever the rest would
do), and the runs after the first happen only while the first still looks like a keepable bug (no collection
error, exit status 0 or 1, 1 to ``max_fail`` baseline tests failing), so a rejected candidate costs one run,
often a short one. Results go to ``OUT``, one JSON
line per job as it finishes: ``{"key", "runs": [{"report", "exit_code", "timed_out", "output"}]}``.

Why it is cheaper than one ``pytest`` process per run: pytest is imported once here and each run is a
``fork()`` of this process calling ``pytest.main`` (the library itself is never imported by the parent, so
each child imports the tree as it is on disk now); bytecode is cached (the test modules' assertion rewriting
and the library's unchanged modules are compiled once, not per run: that is most of a run's time) and kept
honest by giving each mutated file a modification time it never had before (Python's ``.pyc`` check is by
mtime and size) and the original its own mtime back; and a whole batch costs one exec instead of five. A run past its
deadline is killed with its whole process group.
"""

import contextlib
import json
import os
import signal
import sys
import time

import pytest

COUNTER = "/tmp/envgym-mtime-counter"
STOP = "/tmp/envgym-stop.json"
MTIME_BASE = 10**18  # 2001-09-09 in ns: far from any sdist file's time, so a mutant never matches a clean .pyc
PYTEST_ARGS = ["-p", "no:cacheprovider", "-o", "addopts=", "-q", "-p", "envgym_inject_report", "--tb=short",
               "-vv"]


def run_once(tests, report_path, timeout, pythonpath, limit):
    for path in (report_path, STOP):
        if os.path.exists(path):
            os.remove(path)
    if limit is not None:
        with open(STOP, "w", encoding="utf-8") as f:
            json.dump(limit, f)
    out_path = report_path + ".out"
    pid = os.fork()
    if pid == 0:  # child: a fresh process group, so a timeout kills what the tests started too
        try:
            os.setsid()
            fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.environ["ENVGYM_REPORT"] = report_path
            if limit is not None:
                os.environ["ENVGYM_STOP"] = STOP
            sys.dont_write_bytecode = False  # the cache is what makes a run cheap (see the module docstring)
            sys.path[:0] = [os.getcwd(), *(os.path.abspath(p) for p in pythonpath)]  # ``python -m`` adds the cwd
            code = pytest.main([*PYTEST_ARGS, *tests])
        except BaseException:  # whatever happens, the child must not return into the parent's loop
            code = 3
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    deadline = time.monotonic() + timeout
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = -1
            break
        time.sleep(0.01)
    exit_code = os.waitstatus_to_exitcode(status) if status != -1 else None
    report = _read(report_path)
    output = _read(out_path)[-4000:]
    return {"report": report, "exit_code": exit_code, "timed_out": timed_out, "output": output}


def _read(path):
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def keepable(run, baseline, max_fail):
    """Whether a run could still be a kept bug: it finished and 1..max_fail baseline tests failed."""
    if run["timed_out"] or run["exit_code"] not in (0, 1):
        return False
    failed = set()
    for line in run["report"].splitlines():
        rec = json.loads(line)
        if rec["when"] in ("collect", "stop"):
            return False
        if rec["outcome"] == "failed":
            failed.add(rec["nodeid"])
    return 1 <= len(failed & baseline) <= max_fail


def main(jobs_path, out_path):
    batch = json.loads(_read(jobs_path))
    if batch["package"] in sys.modules:  # pytest imported it from site-packages: the tree's copy never runs
        sys.exit(f"pytest itself imports {batch['package']!r}: this library cannot be tested by forking")
    jobs = batch["jobs"]
    counter = int(_read(COUNTER) or 0)
    report_path = "/tmp/envgym-report.jsonl"
    with open(out_path, "w", encoding="utf-8") as out:
        for job in jobs:
            saved = {}
            for rel, text in job.get("files", {}).items():
                with open(rel, encoding="utf-8") as f:
                    saved[rel] = (f.read(), os.stat(rel).st_mtime_ns)
                with open(rel, "w", encoding="utf-8") as f:
                    f.write(text)
                counter += 1  # a modification time no other text of this file ever had: no stale .pyc
                os.utime(rel, ns=(MTIME_BASE + counter * 10**9,) * 2)
            with open(COUNTER, "w") as f:
                f.write(str(counter))
            try:
                runs = []
                args = [*(f"--deselect={node}" for node in batch.get("deselect", [])), *job["tests"]]
                baseline = set(job["baseline"]) if job.get("baseline") is not None else None
                limit = {"baseline": job["baseline"], "max_fail": job["max_fail"]} if baseline is not None else None
                for i in range(job.get("repeat", 1)):
                    if i and baseline is not None and not keepable(runs[0], baseline, job["max_fail"]):
                        break
                    runs.append(run_once(args, report_path, job["timeout"], batch.get("pythonpath", []), limit))
            finally:
                for rel, (text, mtime_ns) in saved.items():
                    with open(rel, "w", encoding="utf-8") as f:
                        f.write(text)
                    os.utime(rel, ns=(mtime_ns, mtime_ns))
            out.write(json.dumps({"key": job["key"], "runs": runs}) + "\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
