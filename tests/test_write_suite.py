"""One ``write_suite``: a suite's task files go into its folder as the registry knows it (a registered suite's own
folder, wherever that is; a new suite under ``suites_root()``), byte for byte what ``write_tasks`` writes, so a
regenerated suite keeps every task hash. And no family finds ``tasks/`` by a path relative to its own file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import envgym
import envgym.plugin
import envgym_tasks
from envgym.errors import SpecError
from envgym.task import TaskSpec, load_suite, suites_root, write_suite, write_tasks

from fakes import notes_tasks

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def bundled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh registry whose bundled suites live in a tmp folder."""
    root = tmp_path / "bundled"
    root.mkdir()
    monkeypatch.setattr(envgym_tasks, "__path__", [str(root)])
    with envgym.isolated():
        yield root


def _expected(tmp_path: Path, tasks: list[TaskSpec]) -> bytes:
    path = tmp_path / "expected.jsonl"
    write_tasks(path, tasks)
    return path.read_bytes()


def test_a_registered_suite_is_written_into_its_own_folder(bundled: Path, tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere" / "my-notes"
    folder.mkdir(parents=True)
    tasks = notes_tasks()
    write_tasks(folder / "tasks.jsonl", tasks[:1])
    envgym.register_suite("my-notes", folder)
    assert suites_root("my-notes") == folder.resolve()

    path = write_suite("my-notes", tasks, log=None)

    assert path == folder.resolve() / "tasks.jsonl"
    assert path.read_bytes() == _expected(tmp_path, tasks)
    assert not (bundled / "my-notes").exists()  # not beside the bundled suites
    assert [t.hash for t in load_suite("my-notes")] == [t.hash for t in tasks]


def test_a_suite_registered_as_one_file_keeps_its_file(bundled: Path, tmp_path: Path) -> None:
    file = tmp_path / "one.jsonl"
    write_tasks(file, notes_tasks()[:1])
    envgym.register_suite("one-file", file)

    assert write_suite("one-file", notes_tasks(), log=None) == file.resolve()
    assert file.read_bytes() == _expected(tmp_path, notes_tasks())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundled", "expected.jsonl", "one.jsonl"]


def test_a_new_suite_goes_under_suites_root_with_its_readme(bundled: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    tasks = notes_tasks()
    assert suites_root() == bundled and suites_root("fresh") == bundled / "fresh"

    path = write_suite("fresh", tasks, readme="# Fresh notes\n\nMore words.\n")

    assert path == bundled / "fresh" / "tasks.jsonl"
    assert path.read_bytes() == _expected(tmp_path, tasks)
    assert (bundled / "fresh" / "README.md").read_text(encoding="utf-8") == "# Fresh notes\n\nMore words.\n"
    assert capsys.readouterr().out == f"wrote {len(tasks)} tasks to {path}\n"  # the 0.1 call form, unchanged
    envgym.task.register_bundled_suites()  # what the envgym_tasks hook does at the next start
    assert envgym.registry.suite_spec("fresh").description == "Fresh notes"
    assert [t.hash for t in load_suite("fresh")] == [t.hash for t in tasks]


def test_an_explicit_folder_and_a_file_in_a_subfolder(bundled: Path, tmp_path: Path) -> None:
    out = tmp_path / "import"
    path = write_suite("fresh", notes_tasks()[:2], file="without-reference/tasks.jsonl", folder=out, log=None)

    assert path == out / "without-reference" / "tasks.jsonl"
    assert path.read_bytes() == _expected(tmp_path, notes_tasks()[:2])
    assert not (bundled / "fresh").exists()


@pytest.mark.parametrize("name", ["../escape", "Upper", "a/b", ""])
def test_a_malformed_name_is_refused_before_anything_is_written(bundled: Path, name: str) -> None:
    with pytest.raises(SpecError, match="malformed suite name"):
        write_suite(name, notes_tasks(), log=None)
    assert list(bundled.iterdir()) == []


def test_the_plugin_surface_gives_the_same_function() -> None:
    assert envgym.plugin.write_suite is write_suite and envgym.plugin.suites_root is suites_root


def _relative_paths(path: Path) -> list[str]:
    """``file:line`` of every ``X.parents[...]`` and ``X.parent.parent`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
            found.append(f"{path.relative_to(REPO)}:{node.lineno}: .parents[...]")
        elif (isinstance(node, ast.Attribute) and node.attr == "parent" and isinstance(node.value, ast.Attribute)
              and node.value.attr == "parent"):
            found.append(f"{path.relative_to(REPO)}:{node.lineno}: .parent.parent")
    return found


def test_no_family_finds_its_suites_by_a_path_relative_to_its_file() -> None:
    # An installed family's file is in site-packages, nowhere near tasks/: suites are found by name
    # (envgym.plugin.suites_root(name), write_suite(name, ...)).
    files = sorted(REPO.glob("environments/**/*.py"))
    assert len(files) > 50
    found = [line for path in files for line in _relative_paths(path)]
    assert not found, "find a suite through envgym.plugin.suites_root / write_suite, not parents:\n" + "\n".join(found)
