"""SWE tampering agents score 0 as the agent's failure, and leave nothing for the next episode or grading.

Against the code before fresh-container grading: ``patch-pytest``, ``shadow-runner``, ``fake-output-exit`` and
``background-editor`` scored 1, the null agent after ``patch-pytest`` or ``background-editor`` in the same env
scored 1, and ``kill-init`` was an ``infra_error``.
"""

from __future__ import annotations

import pytest

import envgym
from envgym.agents.baseline import NullAgent
from envgym.rollout import run_episode
from envgym.task import write_tasks
from envgym.types import Blame, Outcome
from envgym_swe import tamper
from envgym_swe.demo import REPO, make_demo
from envgym_swe.grade import grade_prediction
from envgym_swe.importer import import_instances

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("no_leftover_containers")]
ENV_ID = "swe/demotamper-v1"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe-tamper")
    repo, instances = make_demo(root)
    report = import_instances([i for i in instances if "hang" not in i["instance_id"]], {REPO: repo},
                              "swe-demotamper", None, remember=False)
    suite = root / "suite"
    suite.mkdir()
    write_tasks(suite / "tasks.jsonl", report.tasks)
    envgym.register(ENV_ID, "envgym_swe.env:SweEnv", suites=(str(suite),), override=True,
                    kwargs={"command_timeout_s": 20})
    return {t.metadata["instance_id"]: t for t in report.tasks}


UNDONE = {"pytest11-dist-info": {"speedups-1.0.dist-info": "dropped"}, "pytest11-egg-info": {},
          "config-pytest-ini": {"pytest.ini": "dropped"}, "config-dot-pytest-ini": {".pytest.ini": "dropped"},
          "config-pytest-toml": {"pytest.toml": "dropped"}, "config-dot-pytest-toml": {".pytest.toml": "dropped"},
          "config-tox-ini": {"tox.ini": "dropped"}, "config-setup-cfg": {"setup.cfg": "dropped"},
          "config-pyproject-toml": {"pyproject.toml": "restored"}}
"""What grading undid of each route's patch (the demo repository has a pyproject.toml; its install's egg-info
never reaches the model patch: ``*.egg-info`` is no part of a diff)."""


@pytest.mark.parametrize("kind", tamper.AGENTS, ids=[a.name for a in tamper.AGENTS])
async def test_each_tampering_agent_scores_zero_as_a_failure(demo, kind):
    task = demo["demo__calc-1"]  # imported with the default test_cmd: no `-o addopts=` of its own
    async with envgym.make(ENV_ID) as env:
        trajectory = await run_episode(env, kind(task), task)
        assert trajectory.reward == 0.0 and trajectory.outcome is Outcome.FAILURE, trajectory.verdict
        assert trajectory.blame in (None, Blame.AGENT)
        if kind is tamper.KillInit:
            assert trajectory.error_type == "SandboxCrashed" and trajectory.blame is Blame.AGENT
        elif kind is tamper.RemoveGit:
            assert trajectory.error_type == "WorkTreeUnreadable" and trajectory.blame is Blame.AGENT
            assert "no longer holds the base commit" in trajectory.error
        else:
            evidence = trajectory.verdict.evidence
            if kind is tamper.FakeOutputExit:  # the fake lines carry no nonce; the run never reached its end
                assert evidence["reason"].startswith("the test process ended before the grader's end marker")
                assert set(evidence["tests"]["FAIL_TO_PASS"].values()) == {"MISSING"}
            elif kind is tamper.ReportRewrite:  # every report forged, the canary's too: the run is thrown away
                assert evidence["reason"].startswith("tampered: a grader canary test")
                assert set(evidence["tests"]["FAIL_TO_PASS"].values()) == {"UNTRUSTED"}
            else:
                assert evidence["reason"] is None
                assert evidence["tests"]["FAIL_TO_PASS"] == {"tests/test_mean.py::test_mean": "FAILED",
                                                             "tests/test_mean.py::test_mean_single": "FAILED"}
                assert set(evidence["tests"]["PASS_TO_PASS"].values()) == {"PASSED"}
            if kind.name in UNDONE:
                assert evidence["dropped_paths"] == UNDONE[kind.name]
        null = await run_episode(env, NullAgent(), task)  # the next episode in the same env: untouched
        assert null.reward == 0.0 and null.outcome is Outcome.FAILURE


@pytest.mark.parametrize("kind", [tamper.PatchPytest, tamper.BackgroundEditor], ids=["patch-pytest", "background"])
async def test_a_null_agent_after_tampering_in_the_same_env_scores_zero(demo, kind):
    task = demo["demo__calc-1"]
    async with envgym.make(ENV_ID) as env:
        await run_episode(env, kind(task), task)
        null = await run_episode(env, NullAgent(), task)
    assert null.reward == 0.0 and null.outcome is Outcome.FAILURE
    assert null.verdict.evidence["model_patch"] == ""


def test_the_family_lists_its_tampering_agents():
    from envgym_swe.env import SweEnv

    assert set(tamper.AGENTS) <= set(SweEnv.tamper_agents)
    assert {a.name for a in tamper.AGENTS} == {
        "edit-tests", "patch-pytest", "conftest-hook", "shadow-runner", "fake-output-exit", "fake-report",
        "background-editor", "kill-init", "pytest11-dist-info", "pytest11-egg-info", "config-pytest-ini",
        "config-dot-pytest-ini", "config-pytest-toml", "config-dot-pytest-toml", "config-tox-ini", "config-setup-cfg",
        "config-pyproject-toml", "main-rewrite", "report-rewrite", "remove-git"}


HIJACK = '''diff --git a/conftest.py b/conftest.py
new file mode 100644
--- /dev/null
+++ b/conftest.py
@@ -0,0 +1,8 @@
+import pytest
+
+
+@pytest.hookimpl(hookwrapper=True)
+def pytest_runtest_makereport(item, call):
+    outcome = yield
+    outcome.get_result().outcome = "passed"
+    outcome.get_result().longrepr = None
diff --git a/pytest.py b/pytest.py
new file mode 100644
--- /dev/null
+++ b/pytest.py
@@ -0,0 +1,2 @@
+print("PASSED tests/test_mean.py::test_mean")
+raise SystemExit(0)
diff --git a/sitecustomize.py b/sitecustomize.py
new file mode 100644
--- /dev/null
+++ b/sitecustomize.py
@@ -0,0 +1 @@
+import os; os._exit(0)
diff --git a/tests/test_mean.py b/tests/test_mean.py
new file mode 100644
--- /dev/null
+++ b/tests/test_mean.py
@@ -0,0 +1,6 @@
+def test_mean():
+    assert True
+
+
+def test_mean_single():
+    assert True
'''


async def test_a_predicted_patch_that_hijacks_the_runner_is_dropped_and_graded_unresolved(demo):
    entry = await grade_prediction(demo["demo__calc-1"], HIJACK)
    assert entry["status"] == "unresolved" and entry["patch_successfully_applied"]
    assert entry["dropped_paths"] == {"conftest.py": "dropped", "pytest.py": "dropped", "sitecustomize.py": "dropped",
                                      "tests/test_mean.py": "dropped"}
    assert entry["tests"]["FAIL_TO_PASS"] == {"tests/test_mean.py::test_mean": "FAILED",
                                              "tests/test_mean.py::test_mean_single": "FAILED"}
    again = await grade_prediction(demo["demo__calc-1"], HIJACK)
    assert again == entry  # deterministic: a new container and nonce, the same report entry


FORGING_PLUGIN = tamper.FORGING_PLUGIN.replace("\n", "\n+")[:-1]
METADATA_HIJACK = f'''diff --git a/pytest_speedups.py b/pytest_speedups.py
new file mode 100644
--- /dev/null
+++ b/pytest_speedups.py
@@ -0,0 +1,{tamper.FORGING_PLUGIN.count(chr(10))} @@
+{FORGING_PLUGIN}diff --git a/speedups.egg-info/entry_points.txt b/speedups.egg-info/entry_points.txt
new file mode 100644
--- /dev/null
+++ b/speedups.egg-info/entry_points.txt
@@ -0,0 +1,2 @@
+[pytest11]
+speedups = pytest_speedups
diff --git a/calc.egg-info/entry_points.txt b/calc.egg-info/entry_points.txt
new file mode 100644
--- /dev/null
+++ b/calc.egg-info/entry_points.txt
@@ -0,0 +1,2 @@
+[pytest11]
+speedups = pytest_speedups
diff --git a/.pytest.ini b/.pytest.ini
new file mode 100644
--- /dev/null
+++ b/.pytest.ini
@@ -0,0 +1,2 @@
+[pytest]
+addopts = -p pytest_speedups
'''


async def test_a_predicted_patch_that_loads_a_plugin_through_metadata_or_configuration_is_graded_unresolved(demo):
    """``envgym swe grade`` of a prediction declaring a forging plugin in egg-info metadata (a new one and the
    install's own) and in a ``.pytest.ini``: resolved before the grader took its configuration and plugins only
    from its own files; now each route is undone and named, and the hidden tests fail as the bug says."""
    entry = await grade_prediction(demo["demo__calc-1"], METADATA_HIJACK)
    assert entry["status"] == "unresolved" and entry["patch_successfully_applied"], entry
    assert entry["dropped_paths"] == {".pytest.ini": "dropped", "calc.egg-info": "restored",
                                      "speedups.egg-info": "dropped"}
    assert entry["tests"]["FAIL_TO_PASS"] == {"tests/test_mean.py::test_mean": "FAILED",
                                              "tests/test_mean.py::test_mean_single": "FAILED"}
