"""``envgym swe mine`` end to end on a repository made here, ``envgym swe label``, and labels of bundled tasks.

The repository (``envgym_swe.demo.make_history``) has three fixes with tests: one beside a flaky test, one
whose test serves a page on ``localhost``, one after a move to a ``src/`` layout whose test needs ``six``
(a test requirement). One ``envgym swe mine`` labels (3 runs a side), imports and validates them; the
module's other tests read what it made. About two minutes on 2 cores, most of it the two image builds.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import random

import pytest

from envgym.cli import main
from envgym.task import load_suite
from envgym_swe import containers, grade, importer
from envgym_swe.demo import make_history
from envgym_swe.env import task_image
from envgym_swe.images import ImageSpec
from envgym_swe.label import gold_patch, label_instances
from envgym_verifiers.tests import grade_patch

pytestmark = [pytest.mark.docker, pytest.mark.slow]
FLAKY = "tests/test_cart.py::test_checkout_is_flaky"


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    root = tmp_path_factory.mktemp("mine")
    repo = make_history(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(importer, "SUITES_INDEX", root / "state" / "suites.json")
        mp.setattr(importer, "REPOS_INDEX", root / "state" / "repos.json")
        mp.setenv("XDG_DATA_HOME", str(root / "data"))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main(["swe", "mine", str(repo), "--suite", "swe-shop", "--repo-name", "demo/shop",
                         "--no-resolve", "--runs", "3"])
        folder = root / "data" / "envgym" / "swe" / "suites" / "swe-shop"
        yield {"code": code, "out": " ".join(printed.getvalue().split()), "repo": repo, "folder": folder,
               "tasks": {t.instruction.splitlines()[0]: t for t in load_suite(str(folder))} if folder.is_dir() else {},
               "indexed": importer.imported_suites()}


def test_one_command_mines_labels_imports_and_validates(mined):
    out = mined["out"]
    assert mined["code"] == 0, out
    assert "7 commits read, 3 candidates" in out
    assert "3 of 3 candidates labelled" in out and "gold resolved 3/3, empty resolved 0/3" in out
    assert f"flaky (left out): {FLAKY}" in out and "min per candidate" in out
    assert mined["indexed"] == {"swe-shop": str(mined["folder"].resolve())}  # the user data dir, remembered
    labels = {t: (s.fail_to_pass, s.pass_to_pass) for t, s in
              ((title, grade.tests_spec(task)) for title, task in mined["tasks"].items())}
    assert labels == {
        "Fix total() ignoring quantities": (("tests/test_cart.py::test_total_counts_quantities",),
                                            ("tests/test_cart.py::test_discount_half",
                                             "tests/test_cart.py::test_total_empty")),
        "Fix fetch() requesting the wrong path": (("tests/test_client.py::test_fetch_from_a_local_server",), ()),
        "Fix discount() raising for 0 %": (("tests/test_discount.py::test_zero_discount_is_the_amount",),
                                           ("tests/test_discount.py::test_discount_quarter",)),
    }
    rows = json.loads((mined["folder"] / "instances.swebench.json").read_text())
    assert [r["flaky"] for r in rows if r["flaky"]] == [[FLAKY]]
    # Two environments (flat layout, then src/): two images, each installed at a commit it fits.
    layouts = {t.initial_state["image"]["version"] for t in mined["tasks"].values()}
    assert len(layouts) == 2 and len({task_image(t) for t in mined["tasks"].values()}) == 2


async def _in_container(task, cmd: str) -> tuple[int, str]:
    async with containers.leased(task_image(task)) as sandbox:
        result = await sandbox.exec(["bash", "-c", cmd], timeout=60)
    return result.exit_code, result.stdout + result.stderr


async def test_localhost_resolves_python_is_on_path_and_test_requirements_are_installed(mined):
    tasks = mined["tasks"]
    client, discount = tasks["Fix fetch() requesting the wrong path"], tasks["Fix discount() raising for 0 %"]
    code, text = await _in_container(client, "python -c \"import socket; s = socket.create_server(('localhost', 0)); "
                                             "print('bound', s.getsockname()[0])\"; touch /etc/hosts")
    assert "bound 127.0.0.1" in text and "Read-only file system" in text, text
    code, text = await _in_container(discount, "python -c 'import six, shop.cart; print(shop.cart.__file__)'")
    assert code == 0 and "/testbed/src/shop/cart.py" in text, text  # the src/ image installed at a src/ commit


async def test_grading_evidence_is_the_same_when_a_test_prints_the_time_and_a_port(mined):
    task = mined["tasks"]["Fix fetch() requesting the wrong path"]
    verdicts = []
    for _ in range(2):
        async with containers.leased(task_image(task)) as sandbox:
            verdicts.append(await grade_patch(grade.tests_spec(task), sandbox, gold_patch(task)))
    assert verdicts[0].passed and verdicts[0].evidence == verdicts[1].evidence
    assert "serving on localhost:<port> at <datetime>" in verdicts[0].evidence["log_tail"]


def test_label_cli_labels_what_it_can_and_says_why_not(mined, tmp_path, capsys):
    candidates = json.loads((mined["folder"] / "candidates.swebench.json").read_text())
    flat = [c for c in candidates if c["environment"]["layout"] == "flat"]  # the image built by the fixture
    stale = {**flat[0], "instance_id": "stale", "patch": flat[0]["patch"].replace("lstrip", "rstrip")}
    path = tmp_path / "candidates.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in [*flat, stale]))
    out_path = tmp_path / "labelled.jsonl"
    assert main(["swe", "label", str(path), "--repo", f"demo/shop={mined['repo']}", "--runs", "1",
                 "--out", str(out_path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "skipped stale: gold patch does not apply" in text and "2 of 3 instances labelled" in text
    rows = {r["instance_id"]: r for r in map(json.loads, out_path.read_text().splitlines())}
    client = next(r for r in rows.values() if "fetch()" in r["problem_statement"])
    assert client["FAIL_TO_PASS"] == ["tests/test_client.py::test_fetch_from_a_local_server"]
    assert client["fix_commit"] and client["flaky"] == []  # the fields it came with are kept


def test_labels_of_sampled_bundled_tasks_match_the_stored_ones(tmp_path):
    from envgym_swe.inject.build import load_instances
    from envgym_swe.sources import library, rebuild_repo

    for name in ("toolz", "inflection"):
        lib = library(name)
        stored = {t.metadata["instance_id"]: t for t in load_suite(f"swe-{name}")}
        instances = load_instances(lib)
        sample = random.Random(0).sample(instances, 1)
        repo = tmp_path / name
        rebuild_repo(lib, instances, repo)  # every commit of the bundled image, should it need building
        specs = {i["instance_id"]: ImageSpec.model_validate(stored[i["instance_id"]].initial_state["image"])
                 for i in sample}  # the bundled images (`envgym swe build --all` made them)
        unlabelled = [{**i, "FAIL_TO_PASS": [], "PASS_TO_PASS": []} for i in sample]
        report = asyncio.run(label_instances(unlabelled, {lib.repo: repo}, runs=2, images=specs))
        for inst, row in zip(sample, report.rows, strict=True):
            assert row["FAIL_TO_PASS"] == sorted(inst["FAIL_TO_PASS"]), inst["instance_id"]
            assert set(inst["PASS_TO_PASS"]) <= set(row["PASS_TO_PASS"]) and row["flaky"] == []
