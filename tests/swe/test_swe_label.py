"""``envgym swe label`` a person can follow and stop: results recorded as they come, resumed like ``envgym eval``,
Ctrl-C / SIGTERM that stop within seconds and leave no container, skips that name their cause.

The containers run the demo repository's image (``envgym_swe.demo.make_demo``; one small image, built once).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import docker
import pytest

from envgym.errors import SpecError
from envgym_swe import causes, containers
from envgym_swe.demo import REPO, make_demo
from envgym_swe.label import RECORDS, label_instances, open_records

IMPORT_ERROR_LOG = """\
==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_api.py ______________________
ImportError while importing test module '/testbed/tests/test_api.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
tests/test_api.py:3: in <module>
    import requests
requests/__init__.py:43: in <module>
    import urllib3
E   ModuleNotFoundError: No module named 'urllib3'
=========================== short test summary info ============================
ERROR tests/test_api.py
"""
COLLECTION_LOG = """\
_____________________ ERROR collecting tests/test_utils.py _____________________
tests/test_utils.py:12: in <module>
    from requests.compat import StringIO
E   AttributeError: module 'requests.compat' has no attribute 'StringIO'
"""


def test_cause_names_the_import_error_the_collection_and_a_hint():
    found = causes.explain("the test process ended before the grader's end marker (exit code 1)", IMPORT_ERROR_LOG)
    assert ("import error collecting tests/test_api.py: ModuleNotFoundError: No module named 'urllib3'" in found
            and "add it to the instance's `requirements`" in found and "`urllib3`" in found)
    wrong = "E   ImportError: cannot import name 'soft_unicode' from 'markupsafe' (/usr/lib/markupsafe/__init__.py)"
    assert "cannot import name 'soft_unicode'" in causes.cause(wrong) and "pin it" in causes.hint(wrong)
    assert causes.cause(COLLECTION_LOG) == ("collecting tests/test_utils.py failed: AttributeError: module "
                                            "'requests.compat' has no attribute 'StringIO'")
    usage = "ERROR: usage: pytest [options] [file_or_dir]\npytest: error: unrecognized arguments: -Z"
    assert causes.cause(usage).startswith("pytest refused its command line") and "test_cmd" in causes.hint(usage)
    tail = "\n".join(f"line {n}" for n in range(20))
    assert causes.cause(tail) == "the log ends: " + " | ".join(f"line {n}" for n in range(14, 20))
    assert causes.cause("") is None and "-v" in causes.explain("timeout", "")


def test_records_refuse_another_configuration_and_cut_a_torn_line(tmp_path):
    assert open_records(tmp_path / "l", {"runs": 2, "test_timeout_s": 300.0}) == {}
    line = {"key": "k1", "instance_id": "a", "fail_to_pass": ["t::x"], "seconds": 1.5}
    (tmp_path / "l" / RECORDS).write_text(json.dumps(line) + "\n" + '{"key": "k2", "inst')
    found = open_records(tmp_path / "l", {"runs": 2, "test_timeout_s": 300.0})
    assert list(found) == ["k1"] and found["k1"].fail_to_pass == ("t::x",)
    assert (tmp_path / "l" / RECORDS).read_text().endswith("1.5}\n")  # the torn tail cut off (kept beside)
    with pytest.raises(SpecError, match="another configuration"):
        open_records(tmp_path / "l", {"runs": 3, "test_timeout_s": 300.0})
    (tmp_path / "l" / RECORDS).write_text('{"key": "k1"}\n')
    with pytest.raises(SpecError, match="instance_id") as err:
        open_records(tmp_path / "l", {"runs": 2, "test_timeout_s": 300.0})
    assert err.value.line == 1


def _unlabelled(instances):
    return [{**i, "FAIL_TO_PASS": [], "PASS_TO_PASS": []} for i in instances]


def _missing_module_instance(inst):
    """A candidate whose new test imports a module the image lacks."""
    test = ("diff --git a/tests/test_yaml.py b/tests/test_yaml.py\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/tests/test_yaml.py\n@@ -0,0 +1,5 @@\n+import yaml_is_not_installed\n+\n+\n"
            "+def test_loads():\n+    assert yaml_is_not_installed\n")
    return {**inst, "instance_id": "demo__calc-missing", "test_patch": test}


@pytest.mark.docker
async def test_results_are_recorded_as_they_come_and_a_rerun_resumes(tmp_path, no_leftover_containers):
    repo, instances = make_demo(tmp_path)
    rows = _unlabelled([instances[0], instances[1], _missing_module_instance(instances[0])])
    lines: list[str] = []
    report = await label_instances(rows, {REPO: repo}, runs=1, record_dir=tmp_path / "rec", progress=lines.append)
    assert [(r.instance_id, bool(r.reason)) for r in report.results] == [
        ("demo__calc-1", False), ("demo__calc-2", False), ("demo__calc-missing", True)]
    assert report.rows[0]["FAIL_TO_PASS"] == ["tests/test_mean.py::test_mean", "tests/test_mean.py::test_mean_single"]
    # a line per run and per candidate as it finishes, numbered, with the ETA until the last
    done = [line for line in lines if line.startswith("[")]
    assert [line.split("]")[0] for line in done] == ["[1/3", "[2/3", "[3/3"]
    assert "ETA" in done[0] and "ETA" not in done[-1] and "s of runs" in done[0]
    assert sum(" before 1/1: " in line for line in lines) == 3 and sum(" after 1/1: " in line for line in lines) == 3
    first_after = next(n for n, line in enumerate(lines) if "demo__calc-1 after" in line)
    assert first_after < lines.index(done[0]) < next(n for n, line in enumerate(lines) if "demo__calc-missing" in line)
    # the skip names the cause and what would fix it
    why = report.results[2].reason
    assert "No module named 'yaml_is_not_installed'" in why and "`requirements`" in why, why
    # every result is on disk, with the runs' own time
    recorded = [json.loads(line) for line in (tmp_path / "rec" / RECORDS).read_text().splitlines()]
    assert sorted(r["instance_id"] for r in recorded) == ["demo__calc-1", "demo__calc-2", "demo__calc-missing"]
    assert all(0 < r["seconds"] < 120 for r in recorded)

    again: list[str] = []
    second = await label_instances(rows, {REPO: repo}, runs=1, record_dir=tmp_path / "rec", progress=again.append)
    assert second.resumed == 3 and not any(" before " in line for line in again)
    assert "resuming: 3 of 3 candidates already labelled" in " ".join(again)
    assert second.rows == report.rows and [r.reason for r in second.results] == [r.reason for r in report.results]


@pytest.mark.docker
async def test_cancelling_keeps_what_is_done_and_the_rest_resumes(tmp_path):
    repo, instances = make_demo(tmp_path)
    rows = _unlabelled(instances[:2] + [{**instances[0], "instance_id": f"copy-{n}"} for n in range(3)])
    lines: list[str] = []
    first_done = asyncio.Event()

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("[1/"):
            first_done.set()

    run = asyncio.create_task(label_instances(rows, {REPO: repo}, runs=1, concurrency=1,
                                              record_dir=tmp_path / "rec", progress=progress))
    await asyncio.wait_for(first_done.wait(), timeout=300)
    asked = time.monotonic()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert time.monotonic() - asked < 15
    kept = (tmp_path / "rec" / RECORDS).read_text().splitlines()
    assert 1 <= len(kept) < len(rows)
    assert not containers.pools_in_use()  # every pool closed before the cancellation propagated
    rest = await label_instances(rows, {REPO: repo}, runs=1, concurrency=1, record_dir=tmp_path / "rec")
    assert rest.resumed == len(kept) and len(rest.rows) == len(rows)
    assert len((tmp_path / "rec" / RECORDS).read_text().splitlines()) == len(rows)
    # A container whose start an engine thread finished after the cancel can outlive the pool (the CLI removes
    # its own at exit, see the SIGTERM test; the reaper removes a dead process's): removed here for the next test.
    api = docker.APIClient(version="auto")
    try:
        for c in api.containers(all=True, filters={"label": f"envgym.owner_pid={os.getpid()}"}):
            api.remove_container(c["Id"], force=True)
    finally:
        api.close()


@pytest.mark.docker
def test_the_cli_stops_on_sigterm_within_seconds_and_says_how_to_resume(tmp_path):
    repo, instances = make_demo(tmp_path)
    rows = _unlabelled([{**instances[0], "instance_id": f"copy-{n}"} for n in range(4)])
    path = tmp_path / "candidates.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "labelled.jsonl"
    envgym = "import sys; from envgym.cli import main; sys.exit(main(sys.argv[1:]))"
    cmd = [sys.executable, "-c", envgym, "swe", "label", str(path), "--repo", f"{REPO}={repo}", "--runs", "1",
           "--concurrency", "1", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200"})
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("[1/4]"):
                break
        asked = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    took = time.monotonic() - asked
    assert proc.returncode == 143 and took < 15, (proc.returncode, took, "".join(seen) + rest)
    assert "run the same command again to resume" in rest
    api = docker.APIClient(version="auto")
    try:
        left = api.containers(all=True, filters={"label": f"envgym.owner_pid={proc.pid}"})
    finally:
        api.close()
    assert not left  # stopped by the run's finally blocks, the rest removed by the CLI before it exits
    records = out.with_suffix(".label") / RECORDS
    assert 1 <= len(records.read_text().splitlines()) < 4
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "4 of 4 instances labelled" in " ".join(done.stdout.split()), done.stdout
    assert "resuming:" in done.stdout
