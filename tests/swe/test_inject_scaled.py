"""The scaled bug-injection set shipped under ``tasks/swe-injected/``: pinned, well-formed, unique; the CLI's
refusals. No container: the instances are re-run by ``python -m envgym_swe.inject validate`` (CI samples)."""

from __future__ import annotations

import json
import lzma
from collections import Counter

import pytest

from envgym.plugin import suites_root
from envgym_swe import sources
from envgym_swe.inject.__main__ import main
from envgym_swe.inject.build import INJECTED, PACKED, instances_file, load_instances, split_of, suite_dir
from envgym_swe.sources import LIBRARIES, SCALED_LIBRARIES, library, patch_paths

FOLDERS = sorted(p for p in (suites_root() / INJECTED).glob("*") if (p / "build.json").is_file())


def test_the_scaled_set_is_apart_from_the_bundled_suites() -> None:
    assert not set(SCALED_LIBRARIES) & set(LIBRARIES)
    for name, lib in SCALED_LIBRARIES.items():
        assert library(name) is lib and suite_dir(lib) == suites_root() / INJECTED / name
        assert (lib.install == "true") == (not lib.pythonpath)
    assert FOLDERS, "no scaled library shipped"
    assert not list((suites_root() / INJECTED).glob("*.jsonl"))  # data only: no suite registers from here


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_each_shipped_library_is_pinned_and_its_instances_well_formed(folder) -> None:
    lib = SCALED_LIBRARIES[folder.name]
    build = json.loads((folder / "build.json").read_text())
    assert instances_file(folder).name == PACKED  # the scaled set ships its instances compressed
    instances = json.loads(lzma.decompress((folder / PACKED).read_bytes()))
    assert (build["library"], build["version"], build["sdist_sha256"]) == (lib.dist, lib.version, lib.sha256)
    assert build["kept"] == len(instances) and build["tried"] == build["kept"] + sum(build["rejected"].values())
    per_function = Counter((i["injection"]["file"], i["injection"]["function"]) for i in instances)
    assert max(per_function.values()) <= build["per_function"]
    for inst in instances:
        assert inst["repo"] == lib.repo and inst["version"] == lib.version and inst["install"] == lib.install
        assert 1 <= len(inst["FAIL_TO_PASS"]) <= build["max_fail"]
        assert set(inst["FAIL_TO_PASS"]).isdisjoint(inst["PASS_TO_PASS"])
        assert {t.split("::")[0] for t in inst["FAIL_TO_PASS"]} <= set(patch_paths(inst["test_patch"]))
        assert patch_paths(inst["patch"]) == [inst["injection"]["file"]]
        assert inst["split"] == split_of(inst["instance_id"])
        statement = inst["problem_statement"]
        # The statement never names the mutated file, unless the test it quotes does (tabulate's CLI tests run
        # ``tabulate/__init__.py`` as a script): then the name comes from the test, not from the diff.
        assert inst["injection"]["file"] not in statement or inst["injection"]["file"] in inst["test_patch"]
        assert "@@" not in statement


def test_instance_ids_are_unique_across_every_suite() -> None:
    bundled = suites_root().glob("swe-*/instances.swebench.json")
    ids = [i["instance_id"] for p in bundled for i in json.loads(p.read_text())]
    ids += [i["instance_id"] for f in FOLDERS for i in load_instances(SCALED_LIBRARIES[f.name])]
    assert len(ids) == len(set(ids))


def test_build_refuses_unknown_libraries_and_bad_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--libs", "six,no-such-lib"]) == 2
    assert "unknown library no-such-lib" in capsys.readouterr().err
    assert main(["build", "--lib", "six", "--workers", "0"]) == 2
    assert "--workers and --batch must be at least 1" in capsys.readouterr().err


def test_export_writes_the_stored_instances_as_plain_json(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = FOLDERS[0]
    out = tmp_path / "plain.json"
    assert main(["export", "--lib", folder.name, "--out", str(out)]) == 0
    plain = json.loads(out.read_text())
    assert plain == json.loads(lzma.decompress((folder / PACKED).read_bytes())) and plain
    assert main(["export", "--lib", "toolz", "--out", str(tmp_path / "toolz.json")]) == 0  # bundled: plain JSON
    assert json.loads((tmp_path / "toolz.json").read_text()) == json.loads(
        (suites_root("swe-toolz") / "instances.swebench.json").read_text())


def test_the_clean_commit_holds_every_sdist_file_its_own_gitignore_names(tmp_path) -> None:
    # humanize ships src/humanize/_version.py and ignores it upstream: the clean commit lacked it, so a checkout of
    # any humanize task's base commit failed to import (the build's containers had it, from the unpacked folder).
    from .test_sources import make_sdist

    files = {"mini/__init__.py": "from ._version import v\n", "mini/_version.py": "v = '1.0'\n",
             ".gitignore": "mini/_version.py\n", "tests/test_mini.py": "def test_v():\n    assert True\n"}
    lib = make_sdist(tmp_path / "cache", files)
    repo, clean = sources.build_repo(lib, tmp_path / "repo", cache=tmp_path / "cache")
    assert "mini/_version.py" in sources.git(repo, "ls-tree", "-r", "--name-only", clean).split()
