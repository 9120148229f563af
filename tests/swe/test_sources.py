"""Pinned sdists and deterministic repositories: the same sdist and patches give the same commit ids."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from envgym_swe.sources import (
    LIBRARIES,
    Library,
    SourceError,
    add_task_commit,
    build_repo,
    diff,
    fetch_sdist,
    patch_paths,
    rebuild_repo,
)

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def make_sdist(cache: Path, files: dict[str, str]) -> Library:
    """A tiny sdist in ``cache/sdists`` (as pip would have left it) and its pinned Library."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"mini-1.0/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 1234567
            tar.addfile(info, io.BytesIO(data))
    (cache / "sdists").mkdir(parents=True)
    path = cache / "sdists" / "mini-1.0.tar.gz"
    path.write_bytes(buf.getvalue())
    return Library("mini", "mini", "1.0", hashlib.sha256(buf.getvalue()).hexdigest(), "someone/mini", "mini",
                   source_globs=("mini/__init__.py",), test_globs=("tests/test_*.py",))


FILES = {"mini/__init__.py": "def add(a, b):\n    return a + b\n",
         "tests/test_mini.py": "from mini import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
         "mini.egg-info/PKG-INFO": "Name: mini\n", "PKG-INFO": "Name: mini\nVersion: 1.0\n"}


def test_repositories_and_task_commits_are_identical_on_every_build(tmp_path: Path) -> None:
    lib = make_sdist(tmp_path / "cache", FILES)
    repo_a, clean_a = build_repo(lib, tmp_path / "a", cache=tmp_path / "cache")
    repo_b, clean_b = build_repo(lib, tmp_path / "b", cache=tmp_path / "cache")
    assert clean_a == clean_b
    assert not (repo_a / "mini.egg-info").exists() and (repo_a / "PKG-INFO").is_file()
    buggy = {"mini/__init__.py": "def add(a, b):\n    return a - b\n"}
    commit_a = add_task_commit(repo_a, "someone__mini-1", buggy, ["tests/test_mini.py"])
    commit_b = add_task_commit(repo_b, "someone__mini-1", buggy, ["tests/test_mini.py"])
    assert commit_a == commit_b
    assert (repo_a / "tests/test_mini.py").is_file()  # the work tree is left at the clean commit
    gold = diff(repo_a, commit_a, "clean", ["mini/__init__.py"])
    test_patch = diff(repo_a, commit_a, "clean", ["tests/test_mini.py"])
    assert "-    return a - b\n+    return a + b" in gold
    assert patch_paths(gold) == ["mini/__init__.py"] and patch_paths(test_patch) == ["tests/test_mini.py"]
    instance = {"instance_id": "someone__mini-1", "patch": gold, "test_patch": test_patch}
    made = rebuild_repo(lib, [instance], tmp_path / "c", cache=tmp_path / "cache")
    assert made == {"someone__mini-1": commit_a}
    tags = subprocess.run(["git", "-C", str(tmp_path / "c"), "tag"], capture_output=True, text=True).stdout.split()
    assert tags == ["clean", "task/someone__mini-1"]


def test_a_tampered_sdist_is_refused(tmp_path: Path) -> None:
    lib = make_sdist(tmp_path / "cache", FILES)
    (tmp_path / "cache" / "sdists" / "mini-1.0.tar.gz").write_bytes(b"not the pinned file")
    with pytest.raises(SourceError, match="pinned"):
        fetch_sdist(lib, tmp_path / "cache")


def test_bundled_suites_come_from_pinned_libraries() -> None:
    suites = sorted(TASKS.glob("swe-*/instances.swebench.json"))
    assert len(suites) >= 3
    total = 0
    for path in suites:
        lib = LIBRARIES[path.parent.name.removeprefix("swe-")]
        instances = json.loads(path.read_text())
        build = json.loads((path.parent / "build.json").read_text())
        assert build["sdist_sha256"] == lib.sha256 and build["version"] == lib.version
        total += len(instances)
        for inst in instances:
            assert inst["repo"] == lib.repo and inst["version"] == lib.version
            assert inst["FAIL_TO_PASS"] and set(inst["FAIL_TO_PASS"]).isdisjoint(inst["PASS_TO_PASS"])
            assert {t.split("::")[0] for t in inst["FAIL_TO_PASS"]} <= set(patch_paths(inst["test_patch"]))
            assert patch_paths(inst["patch"]) == [inst["injection"]["file"]]
            statement = inst["problem_statement"]
            assert inst["injection"]["file"] not in statement and "@@" not in statement
    assert total >= 60
