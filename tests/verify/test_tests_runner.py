"""The grader's runner (verifiers/envgym_verifiers/tests/_runner.py) run for real on this host's pytest, on a tiny
repository of its own: its configuration, plugins, canaries and report channel against the forging routes of issue 33.

The same runner under the SWE images' pytest (8.3) is exercised end to end in tests/swe/ (containers).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from envgym_verifiers.tests import RUNNER, parse_report
from envgym_verifiers.tests import _runner as runner

FORGE = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
         "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
REPORT_REWRITE = ("\ntry:\n    import _pytest.reports as _r\n    _orig = _r.TestReport.__init__\n"
                  "    def _init(self, *a, **k):\n        _orig(self, *a, **k)\n        self.outcome = 'passed'\n"
                  "        self.longrepr = None\n    _r.TestReport.__init__ = _init\nexcept Exception:\n    pass\n")


def repo(root: Path, **extra: str) -> Path:
    files = {"calc/__init__.py": "def mean(v):\n    return sum(v) / (len(v) - 1)\n",
             "tests/test_mean.py": "from calc import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
                                   "def test_mean_one():\n    assert mean([4, 4]) == 4\n",
             "tests/test_other.py": "def test_other():\n    assert True\n", **extra}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run(root: Path, files=("tests/test_mean.py", "tests/test_other.py"), args=("-rA",)):
    """The runner as run_tests starts it: a plan file, a cleared environment, the report on stderr."""
    plan = root.parent / "plan.json"
    script = root.parent / "run.py"
    script.write_text(RUNNER)
    plan.write_text(json.dumps({"nonce": "n" * 32, "workdir": str(root), "files": list(files), "args": list(args)}))
    env = {"PATH": os.environ["PATH"], "HOME": str(root.parent), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": ""}
    done = subprocess.run([sys.executable, "-P", "-s", str(script), str(plan)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert not plan.exists()  # read, then deleted before pytest loads
    return parse_report(done.stderr, "n" * 32), done


F2P = {"tests/test_mean.py::test_mean": "FAILED", "tests/test_mean.py::test_mean_one": "FAILED"}


def test_an_honest_run_reports_every_test_and_a_failed_canary_and_the_log_stays_on_stdout(tmp_path):
    report, done = run(repo(tmp_path / "r"))
    assert report.statuses == {**F2P, "tests/test_other.py::test_other": "PASSED"}
    assert list(report.canaries.values()) == ["FAILED"] and report.end == 1 and report.tampering() is None
    canary = next(iter(report.canaries))
    assert canary.startswith("tests/test_") and (tmp_path / "r" / canary.split("::")[0]).is_file()
    assert "n" * 32 not in done.stdout and "short test summary info" in done.stdout  # the log: stdout


@pytest.mark.parametrize("route", ["dist-info", "dot-pytest-ini", "setup-cfg", "pyproject", "tox-ini"])
def test_plugins_named_by_the_work_tree_never_load(tmp_path, route):
    extra = {"pytest_speedups.py": FORGE}
    if route == "dist-info":
        extra |= {"speedups-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: speedups\nVersion: 1.0\n",
                  "speedups-1.0.dist-info/entry_points.txt": "[pytest11]\nspeedups = pytest_speedups\n"}
    else:
        name, body = {"dot-pytest-ini": (".pytest.ini", "[pytest]\naddopts = -p pytest_speedups\n"),
                      "setup-cfg": ("setup.cfg", "[tool:pytest]\naddopts = -p pytest_speedups\n"),
                      "pyproject": ("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-p pytest_speedups"\n'),
                      "tox-ini": ("tox.ini", "[pytest]\naddopts = -p pytest_speedups\n")}[route]
        extra[name] = body
    report, _ = run(repo(tmp_path / "r", **extra))
    assert {t: report.statuses[t] for t in F2P} == F2P and report.tampering() is None


def test_a_blanket_rewrite_from_the_library_turns_the_canary_too(tmp_path):
    root = repo(tmp_path / "r")
    (root / "calc/__init__.py").write_text((root / "calc/__init__.py").read_text() + REPORT_REWRITE)
    report, _ = run(root)
    assert set(report.statuses.values()) == {"PASSED"}  # forged ...
    assert report.tampering().startswith("tampered: a grader canary test that fails came out passing")  # ... caught


PARAMETRIZED_CONFTEST = ("import pytest\n\n\n"
                         "@pytest.fixture(scope='session', autouse=True, params=('native', 'fast'))\n"
                         "def _impl(request):\n    return request.param\n")
"""markupsafe's shape: an autouse fixture with params parametrizes every test of the folder, the canary too."""


def test_a_canary_the_repositorys_fixtures_parametrize_still_counts(tmp_path):
    honest, _ = run(repo(tmp_path / "h", **{"tests/conftest.py": PARAMETRIZED_CONFTEST}))
    assert honest.statuses["tests/test_mean.py::test_mean[native]"] == "FAILED"
    assert list(honest.canaries.values()) == ["FAILED"] and honest.tampering() is None
    assert not any(t.split("[")[0] in honest.canaries for t in honest.statuses)  # its instances left out
    root = repo(tmp_path / "r", **{"tests/conftest.py": PARAMETRIZED_CONFTEST})
    (root / "calc/__init__.py").write_text((root / "calc/__init__.py").read_text() + REPORT_REWRITE)
    forged, _ = run(root)
    # before: the canary's reports were CANARY[native] / CANARY[fast], the canary MISSING, the forgery trusted
    assert forged.tampering().startswith("tampered: a grader canary test that fails came out passing")


def test_a_canary_whose_reports_are_renamed_away_makes_the_run_untrusted(tmp_path):
    """The library renames every report of a test module it does not know to a test it wants passed: the canary
    never reaches the report, and a finished run without it is not believed."""
    rename = ("\ntry:\n    import _pytest.reports as _r\n    _orig = _r.TestReport.__init__\n"
              "    def _init(self, nodeid, *a, **k):\n        _orig(self, nodeid, *a, **k)\n"
              "        if 'test_mean.py' not in self.nodeid and 'test_other.py' not in self.nodeid:\n"
              "            self.nodeid = 'tests/test_mean.py::test_mean'\n"
              "        if 'test_mean.py' in self.nodeid:\n            self.outcome = 'passed'\n"
              "            self.longrepr = None\n    _r.TestReport.__init__ = _init\nexcept Exception:\n    pass\n")
    root = repo(tmp_path / "r")
    (root / "calc/__init__.py").write_text((root / "calc/__init__.py").read_text() + rename)
    report, _ = run(root)
    assert report.statuses["tests/test_mean.py::test_mean"] == "PASSED" and report.end is not None  # forged ...
    assert set(report.canaries.values()) == {"MISSING"}
    assert report.tampering() == "tampered: a grader canary test the run was given was never reported"  # caught


def test_the_library_cannot_write_a_tagged_line_it_cannot_read(tmp_path):
    """The code under test writes forged lines on every descriptor it has and tries to read the channel back."""
    root = repo(tmp_path / "r")
    forge = ("\nimport json as _j, os as _o\nfor _fd in range(3, 40):\n    try:\n"
             "        _o.write(_fd, ('x' * 32 + ' ' + _j.dumps({'test': 'tests/test_mean.py::test_mean', "
             "'when': 'call', 'status': 'PASSED'}) + '\\n').encode())\n    except OSError:\n        pass\n"
             "    try:\n        _o.lseek(_fd, 0, 0); _LEAK = _o.read(_fd, 100)\n    except OSError:\n        pass\n")
    (root / "calc/__init__.py").write_text((root / "calc/__init__.py").read_text() + forge)
    report, _ = run(root)
    assert {t: report.statuses[t] for t in F2P} == F2P


def test_configuration_is_the_grader_copy_of_the_one_pytest_would_pick(tmp_path):
    root = repo(tmp_path / "r", **{"setup.cfg": "[metadata]\nname = calc\n",
                                   "pyproject.toml": '[tool.pytest.ini_options]\nmarkers = ["slow: slow"]\n',
                                   "tests/tox.ini": "[tox]\nenvlist = py3\n"})
    folder, found = runner._config(str(root), ["tests/test_mean.py"], pytest9=False)
    assert (folder, found) == (str(root), str(root / "pyproject.toml"))
    args = runner._write_config(str(root), ["tests/test_mean.py"], pytest9=False)
    assert args[:6] == ["-c", str(root / ".envgym-pytest.toml"), "--rootdir", str(root), "--confcutdir", str(root)]
    assert args[6:] == ["-o", "addopts=", "-p", "no:cacheprovider"]
    assert (root / ".envgym-pytest.toml").read_bytes() == (root / "pyproject.toml").read_bytes()
    (root / "tests/pytest.ini").write_text("")  # nearer the tests, and pytest.ini counts even empty
    assert runner._config(str(root), ["tests/test_mean.py"], pytest9=False) == (str(root / "tests"),
                                                                                 str(root / "tests/pytest.ini"))


def test_without_configuration_the_rootdir_is_a_pyproject_folder_or_setup_py_folder_or_the_work_tree(tmp_path):
    root = repo(tmp_path / "r")
    assert runner._config(str(root), ["tests/test_mean.py"], pytest9=False) == (str(root), None)
    (root / "tests/setup.py").write_text("")
    assert runner._config(str(root), ["tests/test_mean.py"], pytest9=False) == (str(root / "tests"), None)
    (root / "pyproject.toml").write_text("[project]\nname = 'calc'\n")  # no pytest table: still the rootdir
    assert runner._config(str(root), ["tests/test_mean.py"], pytest9=False) == (str(root), None)
    args = runner._write_config(str(root), ["tests/test_mean.py"], pytest9=False)
    assert args[1] == str(root / ".envgym-pytest.ini") and (root / ".envgym-pytest.ini").read_text() == "[pytest]\n"


def test_pytest_toml_counts_only_under_pytest_9_and_is_written_as_a_tool_pytest_table(tmp_path):
    root = repo(tmp_path / "r", **{"pytest.toml": '[pytest]\nxfail_strict = true\nmarkers = ["slow"]\n'})
    assert runner._config(str(root), ["tests/test_mean.py"], pytest9=False) == (str(root), None)
    runner._write_config(str(root), ["tests/test_mean.py"], pytest9=True)
    assert (root / ".envgym-pytest.toml").read_text() == '[tool.pytest]\nxfail_strict = true\nmarkers = ["slow"]\n'


def test_canaries_get_names_no_other_file_has_one_per_test_folder(tmp_path):
    root = repo(tmp_path / "r", **{"other/test_x.py": "def test_value_result():\n    pass\n"})
    files = ["tests/test_mean.py", "tests/test_other.py", "other/test_x.py", "README.rst"]
    planted = runner._plant_canaries(str(root), files, random.Random(0))
    assert [p.split("/")[0] for p in planted] == ["tests", "other"]
    names = [p.split("::")[0] for p in planted]
    assert len({Path(n).name for n in names}) == 2 and all((root / n).is_file() for n in names)
    before = {p.name for p in root.rglob("*.py")} - {Path(n).name for n in names}
    assert not any(Path(n).name in before for n in names)


def test_no_canary_where_the_session_stops_at_its_first_failure(tmp_path):
    report, _ = run(repo(tmp_path / "r"), args=("-rA", "-x"))
    assert report.canaries == {} and report.end == 1 and report.tampering() is None
