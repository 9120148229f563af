"""envgym_gui.osworld: OSWorld task JSON mapped onto the GUI family, skipped with a reason, or refused as
malformed without a traceback. The fixtures are real OSWorld tasks (``fixtures/osworld/README.md``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import envgym
import envgym_tasks
from envgym.task import load_tasks
from envgym.verify import VerifyContext
from envgym_gui import osworld, verify
from envgym_gui.files import materialize
from envgym_gui.osworld import KEEP, REASONS, import_tasks, map_task
from envgym_gui.state import DesktopState
from envgym_gui.verify import check_desktop

verify.register()  # what the family's entry point does, for a checkout whose install predates it

FIXTURES = Path(__file__).parent / "fixtures" / "osworld"
RENAME = "e0df059f-28a6-4169-924f-b9623e7184cc"
MOVE = "7688b85f-87a4-4e4a-b2f8-f3d6c3f29b82"
HIERARCHY = "4783cc41-c03c-4e1b-89b4-50658f642bd5"
BLUETOOTH = "b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"


def fixture(domain: str, oid: str) -> dict[str, Any]:
    return json.loads((FIXTURES / domain / f"{oid}.json").read_text(encoding="utf-8"))


def checks(task) -> tuple[list[dict[str, Any]], str]:
    spec = task.verifiers[0].model_dump(mode="json")
    assert spec["type"] == "desktop"
    return spec["checks"], spec["expect"]


def tool_names(task) -> list[str]:
    return [a.tool_calls[0].name for a in task.solution]


def reason(raw: Any, **kw: Any) -> str:
    with pytest.raises(osworld.Skip) as caught:
        map_task(raw, **kw)
    return str(caught.value)


# ------------------------------------------------------------------------------------------ real tasks


def test_the_fixture_folder_imports_four_tasks_and_says_why_for_the_rest() -> None:
    tasks, skipped = import_tasks(FIXTURES)
    assert [t.id for t in tasks] == sorted(f"osworld-os-{i}" for i in (RENAME, MOVE, HIERARCHY, BLUETOOTH))
    assert all(t.env_id == "gui/osworld-v1" and t.solution for t in tasks)
    why = {key.split("/")[1]: r for key, r in skipped}
    assert {key.split("/")[0] for key, _ in skipped} == {"os", "multi_apps", "libreoffice_calc", "vlc"}
    assert why["28cc3b7e-b194-4bc9-8353-d04c0f4d56d2"].startswith('evaluator: command "pulseaudio --start')
    assert why["13584542-872b-42d8-b299-866967b5c3ef"].startswith("postconfig: ")
    assert why["2373b66a-092d-44cb-bfd7-82e86e7a3b4d"].startswith("network: ")
    assert why["aa3a8974-2e85-438b-b29e-a64df44deb4b"] == (
        "download: setup step 'download' fetches data over the network")
    assert why["cb130f0d-d36f-4302-9838-b3baf46139b6"] == "app: vlc is not on this desktop"
    malformed = why["a1c3ab35-02de-4999-a7ed-2fd12c972c6e"]
    assert malformed.startswith("malformed: ") and "a1c3ab35" in malformed and "'evaluator'" in malformed
    assert {r.split(":", 1)[0] for r in why.values()} <= set(REASONS)


def test_a_sudo_mkdir_and_a_directory_test_become_a_folder_and_an_exists_check() -> None:
    task = map_task(fixture("os", RENAME), domain="os")
    assert task.id == f"osworld-os-{RENAME}" and task.tags == ("osworld", "os")
    assert task.instruction.startswith('I have a directory named "todo_list_Jan_1"')
    assert task.initial_state["files"] == {f"/home/user/Desktop/todo_list_Jan_1/{KEEP}": {"text": ""}}
    assert task.initial_state["open"] == {"app": "terminal", "path": "/home/user", "title": "^Terminal$"}
    [check], expect = checks(task)
    assert expect == "done"
    assert_exists(check, "/home/user/Desktop/todo_list_Jan_2", folder=True, present=True)
    assert tool_names(task) == ["wait", "type", "key", "wait", "done"]
    assert "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2" in task.solution[1].tool_calls[0].arguments
    assert set(materialize(task.initial_state["files"])) == {f"/home/user/Desktop/todo_list_Jan_1/{KEEP}"}


def test_touch_mkdir_chmod_and_an_if_then_file_test() -> None:
    task = map_task(fixture("os", MOVE), domain="os")
    assert task.initial_state["files"] == {"/home/user/Desktop/todo.txt": {"text": ""},
                                           f"/home/user/Desktop/done/{KEEP}": {"text": ""}}
    [check], expect = checks(task)
    assert expect == "done"
    assert_exists(check, "/home/user/Desktop/done/todo.txt", folder=False, present=True)


def test_infeasible_tasks_expect_fail_and_their_reference_fails() -> None:
    task = map_task(fixture("os", HIERARCHY), domain="os")
    assert checks(task) == ([], "fail")
    assert tool_names(task) == ["fail"]
    # sourceDir="/home/user/Desktop/" then mkdir -p "$sourceDir"/dir1/dir2: variables expanded, parents implied
    assert task.initial_state["files"] == {f"/home/user/Desktop/dir1/dir2/{KEEP}": {"text": ""},
                                           f"/home/user/Desktop/dir3/dir4/{KEEP}": {"text": ""}}
    # the ctrl+alt+t script opens the terminal; activate_window('Terminal') is dropped
    assert task.initial_state["open"]["app"] == "terminal"
    bare = map_task(fixture("os", BLUETOOTH), domain="os")
    assert checks(bare) == ([], "fail") and bare.initial_state["files"] == {}


# ------------------------------------------------------------------------------------------ mapping rules


def task_with(config: list[Any], evaluator: dict[str, Any], oid: str = "t-1") -> dict[str, Any]:
    return {"id": oid, "snapshot": "os", "instruction": "Do it.", "config": config, "evaluator": evaluator}


VM_FILE = {"type": "vm_file", "path": "/home/user/Desktop/out.txt", "dest": "out.txt"}


CAT = {"type": "vm_command_line", "command": "cat ~/Desktop/out.txt", "shell": True}


def test_output_and_file_metrics_map_onto_text_checks() -> None:
    ev = {"func": ["check_include_exclude", "file_contains", "exact_match", "is_in_list"],
          "result": [CAT, VM_FILE, CAT, CAT],
          "expected": [{"type": "rule", "rules": {"include": ["a"], "exclude": ["b"]}},
                       {"type": "rule", "rules": {"expected": ["x", "y"]}},
                       {"type": "rule", "rules": {"expected": "whole\n"}},
                       {"type": "rule", "rules": {"expected": "part"}}]}
    config = [{"type": "execute", "parameters": {"command": "echo -e 'one\\ttwo' > ~/Desktop/in.txt", "shell": True}},
              {"type": "launch", "parameters": {"command": ["gedit", "/home/user/Desktop/in.txt"]}},
              {"type": "sleep", "parameters": {"seconds": 2}}]
    task = map_task(task_with(config, ev))
    assert task.initial_state["files"] == {"/home/user/Desktop/in.txt": {"text": "one\ttwo\n"}}
    assert task.initial_state["open"] == {"app": "editor", "path": "/home/user/Desktop/in.txt"}
    assert task.solution is None  # no reference written for it: the CLI keeps it out of the gated suite
    found, expect = checks(task)
    assert expect == "done" and len(found) == 6
    out = "/home/user/Desktop/out.txt"
    assert_text(found[0:2], out, contains=["a"], excludes=["b"])
    assert_text(found[2:4], out, contains=["x", "y"], must_exist=True)
    assert_text(found[4:5], out, exact="whole\n")
    assert_text(found[5:6], out, contains=["part"])


def test_a_text_metric_on_a_vm_file_compares_its_path_in_osworld_and_is_skipped() -> None:
    for name, expected in (("exact_match", {"expected": "x"}), ("check_include_exclude", {"include": ["x"]})):
        why = reason(task_with([], {"func": name, "result": VM_FILE, "expected": {"type": "rule", "rules": expected}}))
        assert why == f"evaluator: {name} on a vm_file (its local path) is not mapped"
    why = reason(task_with([], {"func": "file_contains", "result": CAT,
                                "expected": {"type": "rule", "rules": {"expected": ["x"]}}}))
    assert why == "evaluator: file_contains on a command's output is not mapped"


def test_shell_setup_details() -> None:
    command = "mkdir ~/a && mkdir ~/a/b; echo -e 'caf\u00e9\\n\\\\x' >> ~/a/t.txt\nmkdir -p ~/c/d"
    config = [{"type": "execute", "parameters": {"command": command, "shell": True}}]
    files = map_task(task_with(config, {"func": "infeasible"})).initial_state["files"]
    assert files == {"/home/user/a/t.txt": {"text": "caf\u00e9\n\\x\n"}, f"/home/user/a/b/{KEEP}": {"text": ""},
                     f"/home/user/c/d/{KEEP}": {"text": ""}}  # a holds b and t.txt: no placeholder of its own


def test_open_and_office_launch_pick_the_app() -> None:
    made = [{"type": "command", "parameters": {"command": "touch ~/notes.txt && mkdir -p ~/Docs/a"}}]
    ev = {"func": "infeasible"}
    opened = map_task(task_with([*made, {"type": "open", "parameters": {"path": "/home/user/notes.txt"}}], ev))
    assert opened.initial_state["open"] == {"app": "editor", "path": "/home/user/notes.txt"}
    folder = map_task(task_with([*made, {"type": "open", "parameters": {"path": "~/Docs"}}], ev))
    assert folder.initial_state["open"] == {"app": "files", "path": "/home/user/Docs"}
    calc = map_task(task_with([{"type": "launch", "parameters": {"command": "libreoffice --calc"}}], ev))
    assert calc.initial_state["open"] == {"app": "calc", "title": "LibreOffice Calc"}


@pytest.mark.parametrize(("config", "evaluator", "expected"), [
    ([{"type": "open", "parameters": {"path": "/home/user/x.xlsx"}}], {"func": "infeasible"},
     "setup: config[0] opens /home/user/x.xlsx, which no setup step creates"),
    ([{"type": "execute", "parameters": {"command": "mkdir /srv/data", "shell": True}}], {"func": "infeasible"},
     "setup: config[0] mkdir names /srv/data, outside /home/user"),
    ([{"type": "execute", "parameters": {"command": "touch $(date).txt", "shell": True}}], {"func": "infeasible"},
     "setup: config[0]: command substitution"),
    ([{"type": "execute", "parameters": {"command": "mkdir $UNSET/x", "shell": True}}], {"func": "infeasible"},
     "setup: config[0]: shell variable $UNSET is not set"),
    ([{"type": "execute", "parameters": {"command": ["python", "-c", "import pyautogui; pyautogui.write('hi')"]}}],
     {"func": "infeasible"}, "setup: config[0]: GUI input at setup"),
    ([{"type": "launch", "parameters": {"command": ["libreoffice", "--impress"]}}], {"func": "infeasible"},
     "app: libreoffice --impress"),
    ([{"type": "launch", "parameters": {"command": ["gedit"]}},
      {"type": "launch", "parameters": {"command": ["nautilus"]}}], {"func": "infeasible"},
     "setup: opens more than one app"),
    ([{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://example.com"]}}], {"func": "infeasible"},
     "download: setup step 'chrome_open_tabs'"),
    ([], {"func": "compare_table", "result": VM_FILE, "expected": {"type": "cloud_file", "path": "https://x"}},
     "download: evaluator step 'cloud_file'"),
    ([], {"func": "exact_match", "result": {"type": "vm_command_line", "command": "which spotify"},
          "expected": {"type": "rule", "rules": {"expected": "x"}}}, "evaluator: command 'which spotify'"),
    ([], {"func": "compare_pptx_files", "result": VM_FILE, "expected": {"type": "rule", "rules": {}}},
     "evaluator: metric 'compare_pptx_files' is not mapped"),
    ([], {"func": ["exact_match", "exact_match"], "conj": "or", "result": [VM_FILE, VM_FILE],
          "expected": [{"type": "rule", "rules": {"expected": "a"}}, {"type": "rule", "rules": {"expected": "b"}}]},
     "evaluator: conj 'or'"),
    ([], {"func": "", "result": {}, "expected": {}}, "unfinished: "),
    ([{"type": "launch", "parameters": {"command": ["libreoffice", "--calc", "/home/user/Desktop/movies.xlsx"]}}],
     {"func": "infeasible"}, "setup: config[0] launches calc on /home/user/Desktop/movies.xlsx, which no setup"),
])
def test_what_cannot_be_reproduced_is_skipped_with_its_reason(config, evaluator, expected) -> None:
    assert reason(task_with(config, evaluator)).startswith(expected)


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(("raw", "expected"), [
    ([1, 2], "malformed: task: a task is a JSON object, not list"),
    ({"id": "x", "evaluator": {"func": "infeasible"}}, "malformed: task: field 'instruction' is missing"),
    ({"id": 7, "instruction": "i", "evaluator": {}}, "malformed: task: field 'id' is missing or not a str"),
    ({"id": "x", "instruction": "i", "config": {"type": "open"}, "evaluator": {"func": "infeasible"}},
     "malformed: task: field 'config' must be a list of steps"),
    ({"id": "x", "instruction": "i", "config": [{"type": "launch", "parameters": []}],
      "evaluator": {"func": "infeasible"}}, "malformed: config[0].parameters must be an object"),
    ({"id": "x", "instruction": "i", "config": [{"type": "execute", "parameters": {"command": 5}}],
      "evaluator": {"func": "infeasible"}}, "malformed: config[0].parameters.command must be a string or a list"),
    ({"id": "x", "instruction": "i", "evaluator": {"func": "exact_match", "postconfig": "sleep"}},
     "malformed: evaluator: 'postconfig' must be a list of steps"),
    ({"id": "x", "instruction": "i", "evaluator": {"func": "exact_match", "result": "vm_file", "expected": {}}},
     "malformed: evaluator: exact_match's result getter must be an object"),
    ({"id": "x", "instruction": "i", "evaluator": {"func": ["exact_match", "exact_match"], "result": [VM_FILE],
                                                   "expected": [{}, {}]}},
     "malformed: evaluator: func, result, expected and options differ in length"),
])
def test_malformed_tasks_are_skipped_naming_the_field(raw, expected) -> None:
    assert reason(raw).startswith(expected)


def test_a_folder_with_broken_files_never_raises(tmp_path: Path) -> None:
    (tmp_path / "os").mkdir()
    (tmp_path / "os" / "broken.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "os" / "latin.json").write_bytes(b"\xff\xfe{")
    (tmp_path / "os" / "list.json").write_text("[]", encoding="utf-8")
    good = fixture("os", BLUETOOTH)
    (tmp_path / "os" / f"{BLUETOOTH}.json").write_text(json.dumps(good), encoding="utf-8")
    tasks, skipped = import_tasks(tmp_path)
    assert [t.metadata["osworld"]["id"] for t in tasks] == [BLUETOOTH]
    why = {Path(i).name: r for i, r in skipped}
    assert why["broken.json"].startswith("malformed: ") and "broken.json: not JSON" in why["broken.json"]
    assert "latin.json: not JSON" in why["latin.json"]
    assert why["list.json"].endswith("list.json: a task is a JSON object, not list")


def test_a_folder_without_tasks_is_a_clear_error(tmp_path: Path) -> None:
    from envgym.errors import SpecError

    with pytest.raises(SpecError, match="no OSWorld task JSON here"):
        import_tasks(tmp_path)


def test_dicts_are_accepted_and_not_mutated() -> None:
    raw = fixture("os", RENAME)
    before = copy.deepcopy(raw)
    tasks, skipped = import_tasks([raw, {"id": "y"}])
    assert raw == before and len(tasks) == 1 and skipped[0][0] == "y"


def test_a_file_whose_id_is_not_its_name_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "os").mkdir()
    raw = fixture("os", BLUETOOTH)
    (tmp_path / "os" / "other.json").write_text(json.dumps(raw), encoding="utf-8")
    (tmp_path / "os" / f"{BLUETOOTH}-win.json").write_text(json.dumps(raw), encoding="utf-8")
    tasks, skipped = import_tasks(tmp_path)
    why = dict(skipped)
    assert not tasks
    assert why["os/other"].startswith("malformed: ") and f"its 'id' is {BLUETOOTH!r}" in why["os/other"]
    assert why[f"os/{BLUETOOTH}-win"].startswith("windows: a Windows variant")


# ------------------------------------------------------------------------------------------ the bundled suite

SUITE = Path(__file__).parents[2] / "tasks" / "gui-osworld"


def test_the_bundled_suite_is_the_importers_output_and_every_task_has_a_reference() -> None:
    suite = load_tasks(SUITE / "tasks.jsonl")
    assert len(suite) == 15 and all(t.solution and t.env_id == "gui/osworld-v1" for t in suite)
    assert not (SUITE / "without-reference").exists()
    by_id = {t.id: t for t in suite}
    for oid in (RENAME, MOVE, HIERARCHY, BLUETOOTH):  # the fixtures are copies of the same OSWorld files
        assert by_id[f"osworld-os-{oid}"] == map_task(fixture("os", oid), domain="os")
    report = json.loads((SUITE / "import-report.json").read_text(encoding="utf-8"))
    assert report["commit"] == "89426951c97d750c388ebbafcc923cfce5577616"
    assert sorted(report["imported_tasks"]) == sorted(
        f"{t.metadata['osworld']['domain']}/{t.metadata['osworld']['id']}" for t in suite)
    assert (SUITE / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")
    assert "89426951c97d750c388ebbafcc923cfce5577616" in (SUITE / "README.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ CLI


def test_cli_writes_the_gated_suite_the_rest_and_a_report(tmp_path: Path, capsys) -> None:
    extra = tmp_path / "src" / "os"
    extra.mkdir(parents=True)
    for path in FIXTURES.rglob("*.json"):
        (tmp_path / "src" / path.relative_to(FIXTURES)).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / path.relative_to(FIXTURES)).write_bytes(path.read_bytes())
    (tmp_path / "src" / "LICENSE").write_text("Apache License\n", encoding="utf-8")
    no_ref = task_with([], {"func": "file_contains", "result": VM_FILE,
                            "expected": {"type": "rule", "rules": {"expected": ["x"]}}}, oid="no-ref")
    (extra / "no-ref.json").write_text(json.dumps(no_ref), encoding="utf-8")
    out = tmp_path / "suite"
    assert osworld.main(["import", str(tmp_path / "src"), "--out", str(out), "--commit", "abc123"]) == 0
    printed = capsys.readouterr().out
    assert "OSWorld tasks: 11, needing no download: 8, imported: 5, with a reference: 4" in printed
    gated = load_tasks(out / "tasks.jsonl")
    assert len(gated) == 4 and all(t.solution for t in gated)
    [rest] = load_tasks(out / "without-reference" / "tasks.jsonl")
    assert rest.id == "osworld-os-no-ref" and rest.solution is None
    report = json.loads((out / "import-report.json").read_text(encoding="utf-8"))
    assert report["commit"] == "abc123" and report["total"] == 11 and report["with_reference"] == 4
    assert report["skipped_by_reason"] == {"app": 1, "download": 1, "evaluator": 1, "malformed": 1, "network": 1,
                                           "postconfig": 1}
    assert (out / "LICENSE").read_text(encoding="utf-8") == "Apache License\n"


def test_cli_on_a_missing_folder_exits_2(tmp_path: Path, capsys) -> None:
    assert osworld.main(["import", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "no OSWorld task JSON" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ graded for real


def fake_state(files: dict[str, bytes], final: str | None) -> DesktopState:
    async def read_file(path: str) -> bytes | None:
        return files.get(path)

    async def list_dir(path: str) -> list[str] | None:
        names = {p[len(path) + 1:].split("/")[0] for p in files if p.startswith(path.rstrip("/") + "/")}
        return sorted(names) if names else None

    async def nothing() -> Any:
        return None

    return DesktopState(final=final, answer=None, initial_files={}, _read_file=read_file, _list_dir=list_dir,
                        _windows=nothing, _clipboard=nothing)


async def grade(task, files: dict[str, bytes], final: str | None = "done") -> bool:
    spec = task.verifiers[0]
    verdict = await check_desktop(spec, VerifyContext(calls=[], final_answer=None, state=fake_state(files, final)))
    return verdict.passed


async def test_imported_checks_grade_like_osworld() -> None:
    rename = map_task(fixture("os", RENAME), domain="os")
    start = materialize(rename.initial_state["files"])
    renamed = {p.replace("todo_list_Jan_1", "todo_list_Jan_2"): b for p, b in start.items()}
    assert await grade(rename, renamed)
    assert not await grade(rename, start)  # nothing done
    assert not await grade(rename, {"/home/user/Desktop/todo_list_Jan_2": b""})  # a file, not a folder
    assert not await grade(rename, renamed, final="fail")

    move = map_task(fixture("os", MOVE), domain="os")
    moved = {"/home/user/Desktop/done/todo.txt": b"", f"/home/user/Desktop/done/{KEEP}": b""}
    assert await grade(move, moved)
    assert not await grade(move, materialize(move.initial_state["files"]))

    infeasible = map_task(fixture("os", BLUETOOTH), domain="os")
    assert await grade(infeasible, {}, final="fail")
    assert not await grade(infeasible, {}, final="done") and not await grade(infeasible, {}, final=None)


async def test_file_contains_needs_the_file_and_cat_output_does_not() -> None:
    contains = map_task(task_with([], {"func": "file_contains", "result": VM_FILE,
                                       "expected": {"type": "rule", "rules": {"expected": ["good"]}}}))
    out = "/home/user/Desktop/out.txt"
    assert await grade(contains, {out: b"all good"})
    assert not await grade(contains, {out: b"bad"})
    assert not await grade(contains, {})
    excluded = map_task(task_with([], {"func": "check_include_exclude", "result": CAT,
                                       "expected": {"type": "rule", "rules": {"include": [], "exclude": ["bad"]}}}))
    assert await grade(excluded, {out: b"good"}) and not await grade(excluded, {out: b"bad"})
    assert await grade(excluded, {})  # cat of an absent file prints nothing: OSWorld passes it too


async def test_check_list_and_literal_match_grade_per_line_and_case() -> None:
    listed = map_task(task_with([], {"func": "check_list", "result": VM_FILE,
                                     "expected": {"type": "rule", "rules": {"expect": ["^b\\d$", "^a"]}}}))
    out = "/home/user/Desktop/out.txt"
    assert await grade(listed, {out: b"zz\nb7\napple\n"})  # each pattern matches some line
    assert not await grade(listed, {out: b"zz b7\napple\n"})
    assert reason(task_with([], {"func": "check_list", "result": VM_FILE, "expected": {
        "type": "rule", "rules": {"expect": ["a"], "unexpect": ["b"]}}})).startswith("evaluator: check_list with")
    literal = map_task(task_with([], {"func": "literal_match", "result": CAT,
                                      "expected": {"type": "rule", "rules": {"expected": "Yes"}},
                                      "options": {"ignore_case": True}}))
    assert await grade(literal, {out: b"yes\n"}) and not await grade(literal, {out: b"no"})


# ------------------------------------------------------------------------------------------ helpers


def assert_exists(check: dict[str, Any], path: str, *, folder: bool, present: bool) -> None:
    assert present
    if folder:
        assert check["get"] == {"kind": "dir_listing", "path": path, "hidden": True}
        assert check["metric"] == {"kind": "exclude_any", "expected": ["/"], "ignore_case": False}
    else:
        assert check["get"] == {"kind": "file_text", "path": path}
        assert check["metric"] == {"kind": "regex", "pattern": "", "ignore_case": False}


def assert_text(checks_: list[dict[str, Any]], path: str, *, contains: list[str] | None = None,
                excludes: list[str] | None = None, exact: str | None = None, must_exist: bool = False) -> None:
    if must_exist:
        exists, *checks_ = checks_
        assert exists["get"] == {"kind": "file_exists", "path": path} and exists["metric"]["expected"] is True
    assert all(c["get"] == {"kind": "file_text", "path": path} for c in checks_)
    metrics = [(c["metric"]["kind"], c["metric"]["expected"]) for c in checks_]
    wanted = ([("exact", exact)] if exact is not None else
              ([("include_all", contains)] if contains else []) + ([("exclude_any", excludes)] if excludes else []))
    assert metrics == wanted


def test_import_without_out_writes_the_registered_suite_folder(tmp_path: Path, monkeypatch) -> None:
    elsewhere = tmp_path / "installed" / "gui-osworld"
    elsewhere.mkdir(parents=True)
    (elsewhere / "tasks.jsonl").write_text("\n", encoding="utf-8")
    monkeypatch.setattr(envgym_tasks, "__path__", [str(tmp_path / "bundled")])
    with envgym.isolated():
        envgym.register_suite("gui-osworld", elsewhere)
        report = osworld.import_suite(FIXTURES, commit="abc123")
    written = load_tasks(elsewhere / "tasks.jsonl")
    assert len(written) == report["with_reference"] > 0
    assert json.loads((elsewhere / "import-report.json").read_text(encoding="utf-8")) == report
    assert not (tmp_path / "bundled").exists()


def test_write_suite_is_a_warning_alias_of_import_suite(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match=r"envgym_gui\.osworld\.write_suite moved to envgym_gui\.osworld\."
                                                r"import_suite \(since 0\.2; the alias goes in 0\.3\)"):
        report = osworld.write_suite(FIXTURES, tmp_path / "old", commit="abc123")
    assert report == osworld.import_suite(FIXTURES, tmp_path / "new", commit="abc123")
    assert (tmp_path / "old" / "tasks.jsonl").read_bytes() == (tmp_path / "new" / "tasks.jsonl").read_bytes()
