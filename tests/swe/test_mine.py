"""Mining, environment inference, labelling rules, import skips and suite bookkeeping: host side, no Docker.

The containers' side (``envgym swe mine`` end to end, localhost, requirements, flaky tests, deterministic
evidence) is tests/swe/test_mine_docker.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from envgym.errors import SpecError
from envgym_swe import importer
from envgym_swe.demo import REPO, make_demo, make_history
from envgym_swe.environment import IMAGE_PACKAGES, infer_environment
from envgym_swe.images import ImageSpec, install_script
from envgym_swe.label import classify, runnable_test_files
from envgym_swe.mine import is_test_path, mine_repository
from envgym_verifiers.tests import stable_log

ROOT = Path(__file__).resolve().parents[2]
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@localhost", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **ENV}).stdout


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def state(tmp_path, monkeypatch):
    """The remembered-suites index and the user data directory under tmp_path."""
    monkeypatch.setattr(importer, "SUITES_INDEX", tmp_path / "state" / "suites.json")
    monkeypatch.setattr(importer, "REPOS_INDEX", tmp_path / "state" / "repos.json")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


def test_mining_the_demo_history_finds_the_three_fixes_split_and_stated_from_the_history(tmp_path):
    repo = make_history(tmp_path)
    report = mine_repository(repo, repo="demo/shop")
    assert report.commits_seen == 7 and not report.skipped
    fixes = [c["problem_statement"].splitlines()[0] for c in report.candidates]
    assert fixes == ["Fix discount() raising for 0 %", "Fix fetch() requesting the wrong path",
                     "Fix total() ignoring quantities"]  # docs-only, tests-only and the move are not candidates
    for cand in report.candidates:
        parent = git(repo, "rev-parse", cand["fix_commit"] + "^").strip()
        assert cand["base_commit"] == parent and cand["FAIL_TO_PASS"] == [] and cand["repo"] == "demo/shop"
        assert "tests/" not in cand["patch"] and "shop/" in cand["patch"]
        assert all(line.startswith("diff --git a/tests/") for line in cand["test_patch"].splitlines()
                   if line.startswith("diff --git"))
        assert "diff --git" not in cand["problem_statement"] and "@@" not in cand["problem_statement"]
    total = report.candidates[2]
    assert "the quantity of each line was dropped" in total["problem_statement"]
    assert "Signed-off-by" not in total["problem_statement"]
    # Two environments: the flat layout, then src/ (one image each); the test extra's six is a requirement,
    # pytest is the image's own.
    assert [(r.environment.layout, r.count) for r in report.ranges] == [("flat", 2), ("src", 1)]
    assert {c["version"] for c in report.candidates} == {r.version for r in report.ranges}
    assert all(c["requirements"] == ["six"] for c in report.candidates)
    assert [c["fix_commit"] for c in mine_repository(repo, repo="demo/shop", limit=1).candidates] == \
        [report.candidates[0]["fix_commit"]]
    assert not mine_repository(repo, since="2030-01-01").candidates
    with pytest.raises(SpecError, match="not a git repository"):
        mine_repository(tmp_path / "nowhere")
    with pytest.raises(SpecError, match="OWNER/NAME"):
        mine_repository(repo, repo="no-slash")


def test_a_merged_pull_request_joins_the_statement_and_unusable_environments_are_skipped(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"pyproject.toml": '[project]\nname = "r"\nrequires-python = ">=3.8"\n', "r/__init__.py": "X = 1\n",
                  "tests/test_r.py": "def test_x():\n    pass\n"}, "start")
    git(repo, "checkout", "-q", "-b", "topic")
    fix = commit(repo, {"r/__init__.py": "X = 2\n", "tests/test_r.py": "def test_x():\n    assert 1\n"}, "Set X to 2")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "topic", "-m", "Merge pull request #7 from me/topic\n\nX must be 2: see #6.")
    merge = git(repo, "rev-parse", "HEAD").strip()
    commit(repo, {"pyproject.toml": '[project]\nname = "r"\nrequires-python = "<3.10"\n'}, "pin old Pythons")
    old = commit(repo, {"r/__init__.py": "X = 3\n", "tests/test_r.py": "def test_x():\n    assert 2\n"}, "Set X to 3")
    report = mine_repository(repo, repo="me/r")
    # The pull request is the unit: the merge, based on its first parent, its commit not counted again.
    assert [(c["fix_commit"], c["merged_commits"]) for c in report.candidates] == [(merge, [fix])]
    assert report.candidates[0]["base_commit"] == git(repo, "rev-parse", merge + "^1").strip()
    assert report.candidates[0]["problem_statement"] == "X must be 2: see #6.\n\nSet X to 2"
    parent = git(repo, "rev-parse", old + "^").strip()
    assert report.skipped == [(old, f"environment at {parent[:12]}: requires-python '<3.10' excludes the image's "
                                    "Python 3.11")]


def test_environment_inference_reads_the_repositorys_own_files(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    setup_py = ('from setuptools import setup\nsetup(name="r", python_requires=">=3.7", install_requires=["attrs>=20"],'
                ' extras_require={"test": ["hypothesis", "r[extra]"]})\n')
    first = commit(repo, {"setup.py": setup_py, "requirements/test.txt": "-r base.txt\npytest-mock==3.14.0  # mocks\n",
                          "requirements/base.txt": "-e .\nsix\n", "r/__init__.py": ""}, "setup.py")
    env = infer_environment(repo, first)
    assert (env.layout, env.python, env.problem) == ("flat", ">=3.7", None)
    assert env.requirements == ("attrs>=20", "hypothesis", "pytest-mock==3.14.0", "six")  # r[extra] is itself
    assert env.install.startswith("pip install") and "-e . ||" in env.install  # flat: /testbed if it fails
    second = commit(repo, {"setup.cfg": "[options]\npython_requires = >=3.12\n"}, "cfg")
    newer = infer_environment(repo, second)  # setup.cfg before setup.py (pyproject.toml before both)
    assert newer.python == ">=3.12" and newer.problem == "requires-python '>=3.12' excludes the image's Python 3.11"
    bare = tmp_path / "bare"
    bare.mkdir()
    git(bare, "init", "-q", "-b", "main")
    plain = commit(bare, {"src/pkg/__init__.py": "", "pyproject.toml": "[tool.ruff]\nline-length = 1\n"}, "tools")
    assert infer_environment(bare, plain).problem == "a src/ layout without packaging files: nothing installs it"
    git(bare, "rm", "-rq", "src")
    flat = commit(bare, {"pkg.py": ""}, "flat")
    assert infer_environment(bare, flat).install == "true"  # nothing to install: the tests import from /testbed
    assert infer_environment(repo, first).version != infer_environment(bare, flat).version
    ancient = commit(repo, {"requirements-dev.txt": "pytest==2.2.3\npy==1.4.7\nmock\nenum34; python_version < '3.4'\n"},
                     "old pins")
    assert "pytest==2.2.3" not in infer_environment(repo, ancient).requirements  # the image's pytest instead
    assert {"mock", "six"} <= set(infer_environment(repo, ancient).requirements)  # enum34: not for Python 3.11
    assert not any(r.startswith("enum34") for r in infer_environment(repo, ancient).requirements)
    assert infer_environment(repo, ancient).test_cmd is None
    covered = commit(repo, {"tox.ini": "[pytest]\naddopts = --cov=r -q\n"}, "coverage")
    assert infer_environment(repo, covered).test_cmd.endswith("-o addopts=")  # no coverage plugin in the image
    assert not any(r.startswith("py==") for r in infer_environment(repo, ancient).requirements)


def test_the_image_packages_are_what_swe_python_installs():
    pins = dict(line.split("==") for line in (ROOT / "sandboxes/swe-python/requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins == IMAGE_PACKAGES


def test_requirements_are_installed_before_the_install_command():
    spec = ImageSpec(repo="a/b", commits=("c" * 40,), requirements=("six", "pytest-mock==3.14.0"), install="true")
    assert install_script(spec) == ("set -e\npip install --no-index --find-links /wheels six pytest-mock==3.14.0\n"
                                    "true\n")
    assert install_script(spec.model_copy(update={"requirements": ()})) == "set -e\ntrue\n"


def test_test_paths_and_the_test_files_a_label_runs():
    assert all(map(is_test_path, ["tests/test_a.py", "pkg/tests/util.py", "test_x.py", "a/b_test.py", "conftest.py"]))
    assert not any(map(is_test_path, ["pkg/a.py", "pkg/testing_utils.py", "docs/x.md"]))
    patch = ("diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n"
             "diff --git a/tests/conftest.py b/tests/conftest.py\n--- a/tests/conftest.py\n+++ b/tests/conftest.py\n"
             "diff --git a/tests/test_old.py b/tests/test_old.py\ndeleted file mode 100644\n--- a/tests/test_old.py\n"
             "+++ /dev/null\n"
             "diff --git a/tests/data.json b/tests/data.json\n--- a/tests/data.json\n+++ b/tests/data.json\n")
    assert runnable_test_files(patch) == ["tests/test_a.py"]


def test_classify_keeps_stable_tests_and_reports_flaky_ones():
    before = [{"t::fixed": "FAILED", "t::same": "PASSED", "t::flaky": "PASSED", "t::broken": "PASSED"},
              {"t::same": "PASSED", "t::flaky": "FAILED", "t::broken": "PASSED", "t::fixed": "FAILED"}]
    fixed = {"t::fixed": "PASSED", "t::same": "PASSED", "t::flaky": "PASSED", "t::new": "PASSED",
             "t::broken": "FAILED", "t::skip": "SKIPPED"}
    after = [fixed, dict(fixed)]
    f2p, p2p, flaky = classify(before, after)
    assert f2p == ["t::fixed", "t::new"]  # failed, or missing, in every run before; passed in every run after
    assert p2p == ["t::same"] and flaky == ["t::flaky"]  # broken by the fix and skipped: in neither list
    assert classify([{"t": "PASSED"}], [{"t": "PASSED"}, {"t": "ERROR"}])[2] == ["t"]  # flaky after the fix too


def test_stable_log_masks_what_changes_between_runs():
    one = ("serving on localhost:41234 at 2026-12-02T06:41:19.123456 (epoch 1796193679.5, pid 77) 0x7f3a2b1c9d80\n"
           "1 passed in 0.12s; took 3.5 seconds; now 06:41:19\n" "assert total([(2.5, 2)]) == 8")
    two = ("serving on localhost:38001 at 2026-12-03T07:00:00.5 (epoch 1796200000.25, pid 12) 0x55d1c0ffee00\n"
           "1 passed in 1.07s; took 0.25 seconds; now 07:00:01\n" "assert total([(2.5, 2)]) == 8")
    assert stable_log(one) == stable_log(two)
    assert "assert total([(2.5, 2)]) == 8" in stable_log(one) and "localhost:<port>" in stable_log(one)


def test_import_skips_unusable_instances_with_reasons_and_imports_the_rest(state, tmp_path):
    repo, instances = make_demo(tmp_path)
    rows = [instances[0], {**instances[1], "FAIL_TO_PASS": "[]"}, {**instances[1], "instance_id": "bad",
                                                                    "base_commit": "zz"}, instances[0]]
    report = importer.import_instances(rows, {REPO: repo}, "swe-demo", None, build=False, remember=False)
    assert [t.metadata["instance_id"] for t in report.tasks] == ["demo__calc-1"]
    reasons = dict(report.skipped)
    assert reasons["demo__calc-2"].startswith("FAIL_TO_PASS is empty")
    assert "field 'base_commit'" in reasons["bad"]
    assert "duplicate" in reasons["demo__calc-1"]


def test_import_writes_to_the_user_data_dir_and_forget_drops_the_suite(state, tmp_path, capsys):
    from envgym.cli import main

    repo, instances = make_demo(tmp_path)
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in instances[:2]))
    assert main(["swe", "import", str(path), "--repo", f"{REPO}={repo}", "--suite", "swe-mydemo", "--no-build"]) == 0
    folder = tmp_path / "data" / "envgym" / "swe" / "suites" / "swe-mydemo"
    assert (folder / "tasks.jsonl").is_file()
    assert not (ROOT / "tasks" / "swe-mydemo").exists()  # never into envgym's own tree
    assert importer.imported_suites() == {"swe-mydemo": str(folder.resolve())}
    assert main(["swe", "forget", "swe-mydemo"]) == 0
    assert importer.imported_suites() == {} and folder.is_dir()  # forgotten, files kept
    assert main(["swe", "forget", "swe-mydemo"]) == 2
    assert "no imported suite 'swe-mydemo'" in " ".join(capsys.readouterr().err.split())
    importer._remember(importer.SUITES_INDEX, "swe-mydemo", str(folder))
    assert importer.forget_suite("swe-mydemo", delete=True) == folder and not folder.exists()
    importer._remember(importer.SUITES_INDEX, "swe-inside", str(ROOT / "tasks" / "swe-toolz"))
    with pytest.raises(SpecError, match="inside envgym's own tree"):
        importer.forget_suite("swe-inside", delete=True)
    assert (ROOT / "tasks" / "swe-toolz" / "tasks.jsonl").is_file()


async def test_run_tests_reports_every_test_the_run_saw():
    from envgym.sandbox.base import ExecResult
    from envgym.sandbox.fake import FakeSandbox
    from envgym_verifiers.tests import PLAN_PATH, run_tests

    def handler(sb):
        def handle(cmd, cwd, env, user):
            if "\x1eCHANGED" in cmd:
                return "\n\x1eCHANGED " + "t" * 40 + "\n"
            if "run.py" in cmd:
                nonce = json.loads(sb.files[PLAN_PATH])["nonce"]
                recs = [{"test": "t.py::a", "when": "call", "status": "PASSED"},
                        {"test": "t.py::b", "when": "call", "status": "FAILED"},
                        {"test": "test_a_b.py::test_a_b", "when": "call", "status": "FAILED"}]
                report = f"{nonce} CANARIES " + json.dumps(["test_a_b.py::test_a_b"]) + "\n"
                report += "".join(f"{nonce} {json.dumps(r)}\n" for r in recs) + f"{nonce} END 1\n"
                return ExecResult(exit_code=1, stdout=f"at 2026-12-02 06:41:19 ({nonce})\n", stderr=report)
            return ""
        return handle

    sb = FakeSandbox()
    sb.handler = handler(sb)
    async with sb:
        run = await run_tests(sb, base_commit="a" * 40, test_patch="", files=["t.py"])
    assert run.statuses == {"t.py::a": "PASSED", "t.py::b": "FAILED"} and run.reason is None and run.patch_applied
    assert run.log_tail == "at <datetime> (<nonce>)\n"


def test_a_bundled_suite_as_a_fix_history_mines_one_candidate_per_task(tmp_path):
    from envgym_swe.inject.build import load_instances
    from envgym_swe.sources import build_fix_history, library

    lib = library("inflection")
    instances = load_instances(lib)[:3]
    repo = build_fix_history(lib, instances, tmp_path / "inflection")
    report = mine_repository(repo, repo=lib.repo)
    assert report.commits_seen == 7 and not report.skipped  # the clean commit, then a bug and its fix per task
    by_statement = {c["problem_statement"]: c for c in report.candidates}
    assert set(by_statement) == {i["problem_statement"].strip() for i in instances}
    for inst in instances:
        cand = by_statement[inst["problem_statement"].strip()]
        fixed = subprocess.run(["git", "-C", str(repo), "apply", "--check", "--reverse", "-"], input=inst["patch"],
                               text=True, capture_output=True)  # the fix commit's tree is the gold patch applied
        assert fixed.returncode == 0 and cand["patch"].count("diff --git") == inst["patch"].count("diff --git")
        assert {t.split("::")[0] for t in inst["FAIL_TO_PASS"]} <= set(runnable_test_files(cand["test_patch"]))


def test_concurrent_imports_keep_every_remembered_suite(state, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    (tmp_path / "tasks.jsonl").write_text("")  # a suite folder holds task files (an empty one is not indexed)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: importer._remember(importer.SUITES_INDEX, f"swe-s{n}", str(tmp_path)), range(40)))
    assert set(importer.imported_suites()) == {f"swe-s{n}" for n in range(40)}
