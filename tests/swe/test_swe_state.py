"""Per-suite state: each imported suite records its own repositories (two imports never re-point each other's), the
user-wide index of 0.1 is read with a warning, and imported suites register as the user's, not shipped ones."""

from __future__ import annotations

import json
import shutil

import pytest

from envgym.registry import isolated, suite_spec
from envgym_swe import importer, register_all
from envgym_swe.demo import REPO, make_demo


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "SUITES_INDEX", tmp_path / "state" / "suites.json")
    monkeypatch.setattr(importer, "REPOS_INDEX", tmp_path / "state" / "repos.json")
    return tmp_path


def test_two_imports_of_one_repository_name_each_keep_their_own_path(state):
    repo, instances = make_demo(state / "a")
    other = state / "b" / "demo-calc"
    shutil.copytree(repo, other)  # the same history in another checkout (another user's clone, a worktree)
    first = importer.import_instances(instances[:1], {REPO: repo}, "swe-one", state / "one", build=False)
    second = importer.import_instances(instances[:1], {REPO: other}, "swe-two", state / "two", build=False)
    assert first.tasks and second.tasks
    assert importer.known_repo(REPO, state / "one") == repo.resolve()
    assert importer.known_repo(REPO, state / "two") == other.resolve()
    source = json.loads((state / "one" / importer.SOURCE).read_text())
    assert source == {"made_by": "envgym swe import", "suite": "swe-one", "env_id": "swe/one-v1",
                      "repos": {REPO: str(repo.resolve())}}
    assert not importer.REPOS_INDEX.exists()  # nothing user-wide that a later import would overwrite


def test_a_suite_imported_before_source_json_reads_the_old_index_with_a_warning(state):
    repo, _ = make_demo(state)
    importer.REPOS_INDEX.parent.mkdir(parents=True)
    importer.REPOS_INDEX.write_text(json.dumps({REPO: str(repo)}))
    (state / "old").mkdir()
    with pytest.warns(DeprecationWarning, match="import the suite again"):
        assert importer.known_repo(REPO, state / "old") == repo


def test_imported_suites_register_as_the_users_and_bundled_ones_do_not(state):
    repo, instances = make_demo(state)
    importer.import_instances(instances[:1], {REPO: repo}, "swe-mine-here", state / "suite", build=False)
    with isolated(plugins=True):  # the plug-ins load afresh, the suite is registered, and all of it is undone
        register_all()
        mine = suite_spec("swe-mine-here")
        assert mine is not None and mine.user and mine.path == str((state / "suite").resolve())
        assert suite_spec("swe-toolz") is not None and not suite_spec("swe-toolz").user


def test_an_indexed_folder_without_task_files_is_not_a_suite(state):
    # The CI failure of stop 43: the index named a folder of the checkout whose tasks.jsonl was gone, so the suite
    # registered with no files and ``envgym swe build --all`` stopped with "no task files".
    repo, instances = make_demo(state)
    importer.import_instances(instances[:1], {REPO: repo}, "swe-emptied", state / "suite", build=False)
    for task_file in (state / "suite").glob("*.jsonl"):
        task_file.unlink()
    assert "swe-emptied" not in importer.imported_suites()
    with isolated(plugins=True):
        register_all()
        assert suite_spec("swe-emptied") is None
        assert suite_spec("swe-toolz") is not None
