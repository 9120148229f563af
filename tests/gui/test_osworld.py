"""envgym_gui.osworld's importer: OSWorld task JSON mapped onto the GUI family (with and without OSWorld's cache),
skipped with a reason, or refused as malformed without a traceback. The fixtures are real OSWorld tasks
(``fixtures/osworld/README.md``). Grading with desktop-env's metrics: ``test_osworld_grade.py``."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

import envgym
import envgym_tasks
from envgym.task import load_tasks
from envgym_gui import apps, osworld
from envgym_gui.files import materialize
from envgym_gui.osworld import REASONS, import_tasks, map_task

FIXTURES = Path(__file__).parent / "fixtures" / "osworld"
RENAME = "e0df059f-28a6-4169-924f-b9623e7184cc"
MOVE = "7688b85f-87a4-4e4a-b2f8-f3d6c3f29b82"
HIERARCHY = "4783cc41-c03c-4e1b-89b4-50658f642bd5"
BLUETOOTH = "b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"
CALC = "01b269ae-2111-4a07-81fd-3fcd711993b0"
WRITER = "88fe4b2d-3040-4c70-9a70-546a47764b48"
PDF = "aa3a8974-2e85-438b-b29e-a64df44deb4b"


@pytest.fixture(autouse=True)
def base_desktop(monkeypatch) -> None:
    """The desktop image's own apps only (the importer reads envgym_gui.apps.EXTRA_APPS at import time)."""
    monkeypatch.setattr(apps, "EXTRA_APPS", {})


def fixture(domain: str, oid: str) -> dict[str, Any]:
    return json.loads((FIXTURES / domain / f"{oid}.json").read_text(encoding="utf-8"))


def spec_of(task) -> dict[str, Any]:
    spec = task.verifiers[0].model_dump(mode="json")
    assert spec["type"] == "desktop" and spec["checks"] == []
    return spec


def tool_names(task) -> list[str]:
    return [a.tool_calls[0].name for a in task.solution]


def reason(raw: Any, **kw: Any) -> str:
    with pytest.raises(osworld.Skip) as caught:
        map_task(raw, **kw)
    return str(caught.value)


def download_name(url: str, path: str) -> str:
    """Where OSWorld's setup controller caches a download (``<uuid5(url)>_<basename>``)."""
    return f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{Path(path).name}"


def make_cache(root: Path, raws: list[dict[str, Any]]) -> dict[str, bytes]:
    """A cache holding every file the tasks download or compare with; the bytes name the file."""
    made: dict[str, bytes] = {}
    for raw in raws:
        names = [download_name(f["url"], f["path"]) for s in raw["config"] if s["type"] == "download"
                 for f in s["parameters"]["files"]]
        expected = raw["evaluator"].get("expected")
        if isinstance(expected, dict) and expected.get("type") == "cloud_file":
            names.append(expected["dest"])
        for name in names:
            (root / raw["id"]).mkdir(parents=True, exist_ok=True)
            made[name] = f"cached {name}".encode()
            (root / raw["id"] / name).write_bytes(made[name])
    return made


# ------------------------------------------------------------------------------------------ real tasks


def test_the_fixture_folder_imports_four_tasks_and_says_why_for_the_rest() -> None:
    tasks, skipped = import_tasks(FIXTURES)
    assert [t.id for t in tasks] == sorted(f"osworld-os-{i}" for i in (RENAME, MOVE, HIERARCHY, BLUETOOTH))
    assert all(t.env_id == "gui/osworld-v1" and t.solution for t in tasks)
    why = {key.split("/")[1]: r for key, r in skipped}
    assert {key.split("/")[0] for key, _ in skipped} == {"os", "multi_apps", "libreoffice_calc", "libreoffice_writer",
                                                          "vlc"}
    assert why["28cc3b7e-b194-4bc9-8353-d04c0f4d56d2"].startswith('evaluator: command "pulseaudio --start')
    assert why["13584542-872b-42d8-b299-866967b5c3ef"].startswith("postconfig: grading-time input ")
    assert why["2373b66a-092d-44cb-bfd7-82e86e7a3b4d"].startswith("network: ")
    for oid in (PDF, CALC, WRITER):
        assert why[oid] == ("download: setup step 'download' fetches data over the network (give OSWorld's cache: "
                            "envgym osworld import --cache)")
    assert why["cb130f0d-d36f-4302-9838-b3baf46139b6"] == "app: vlc is not on this desktop"
    malformed = why["a1c3ab35-02de-4999-a7ed-2fd12c972c6e"]
    assert malformed.startswith("malformed: ") and "a1c3ab35" in malformed and "'evaluator'" in malformed
    assert {r.split(":", 1)[0] for r in why.values()} <= set(REASONS)


def test_with_a_cache_the_calc_and_writer_tasks_import_with_their_files(tmp_path: Path) -> None:
    calc, writer, pdf = fixture("libreoffice_calc", CALC), fixture("libreoffice_writer", WRITER), \
        fixture("libreoffice_calc", PDF)
    made = make_cache(tmp_path, [calc, writer, pdf])
    tasks, skipped = import_tasks(FIXTURES, cache=tmp_path)
    by_id = {t.metadata["osworld"]["id"]: t for t in tasks}
    assert set(by_id) == {RENAME, MOVE, HIERARCHY, BLUETOOTH, CALC, WRITER}
    why = {key.split("/")[1]: r for key, r in skipped}
    assert why[PDF] == "evaluator: metric 'check_pdf_pages' is not graded offline: it does not run on files read " \
                       "out of the container"
    task = by_id[CALC]
    url, path = calc["config"][0]["parameters"]["files"][0].values()
    cached = made[download_name(url, path)]
    assert materialize(task.initial_state["files"]) == {"/home/user/Student_Level_Fill_Blank.xlsx": cached}
    assert task.initial_state["open"] == {"app": "calc", "path": "/home/user/Student_Level_Fill_Blank.xlsx"}
    # OSWorld saves for the agent after the episode: focus the document, ctrl+s; the env replays it
    assert task.initial_state["postconfig"] == [
        {"type": "activate", "title": r"Student_Level_Fill_Blank\.xlsx\ \-\ LibreOffice\ Calc"},
        {"type": "sleep", "seconds": 0.5}, {"type": "key", "keys": "ctrl+s"}, {"type": "sleep", "seconds": 0.5}]
    ev = spec_of(task)["osworld"]
    gold = made["Student_Level_Fill_Blank_gold.xlsx"]
    assert ev == {"func": ["compare_table"], "conj": "and",
                  "result": [{"type": "vm_file", "paths": ["/home/user/Student_Level_Fill_Blank.xlsx"],
                              "dests": ["Student_Level_Fill_Blank.xlsx"], "gives": [0]}],
                  "expected": [{"type": "expected_file", "gives": [0], "files": [{
                      "name": "Student_Level_Fill_Blank_gold.xlsx", "sha256": hashlib.sha256(gold).hexdigest(),
                      "b64": base64.b64encode(gold).decode()}]}],
                  "options": [{"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}]}
    assert task.solution is None  # no reference written: the CLI keeps it out of the admission-gated suite
    assert spec_of(by_id[WRITER])["osworld"]["func"] == ["compare_docx_files"]


def test_a_file_missing_from_the_cache_is_named(tmp_path: Path) -> None:
    calc = fixture("libreoffice_calc", CALC)
    make_cache(tmp_path, [calc])
    (tmp_path / CALC / "Student_Level_Fill_Blank_gold.xlsx").unlink()
    assert reason(calc, cache=osworld._evaluator.Cache(tmp_path)) == (
        f"download: expected file (cloud_file) 'Student_Level_Fill_Blank_gold.xlsx' is not in the cache "
        f"({tmp_path}/{CALC}/)")
    (tmp_path / CALC).rename(tmp_path / "elsewhere")
    url, path = calc["config"][0]["parameters"]["files"][0].values()
    assert reason(calc, cache=osworld._evaluator.Cache(tmp_path)) == (
        f"download: config[0]'s download '{download_name(url, path)}' is not in the cache ({tmp_path}/{CALC}/)")


def test_a_sudo_mkdir_makes_the_folder_in_the_container_and_no_placeholder_file() -> None:
    task = map_task(fixture("os", RENAME), domain="os")
    assert task.id == f"osworld-os-{RENAME}" and task.tags == ("osworld", "os")
    assert task.initial_state["files"] == {}  # no .envgym-keep the agent could see
    assert task.initial_state["setup"] == [{"type": "execute", "command": ["mkdir", "-p",
                                                                           "/home/user/Desktop/todo_list_Jan_1"]}]
    assert task.initial_state["open"] == {"app": "terminal", "path": "/home/user", "title": "^Terminal$"}
    spec = spec_of(task)
    assert spec["expect"] == "done" and spec["osworld"]["result"] == [{
        "type": "command_output", "how": "test", "test": "d", "path": "/home/user/Desktop/todo_list_Jan_2",
        "command": "[ -d ~/Desktop/todo_list_Jan_2 ] && echo 'Directory exists.' || echo 'Directory does not exist.'",
        "yes": "Directory exists.\n", "no": "Directory does not exist.\n"}]
    assert spec["osworld"]["expected"] == [{"type": "rule", "rules": {"expected": "Directory exists.\n"}}]
    assert tool_names(task) == ["wait", "type", "key", "wait", "done"]


def test_touch_mkdir_chmod_and_an_if_then_file_test() -> None:
    task = map_task(fixture("os", MOVE), domain="os")
    assert task.initial_state["files"] == {"/home/user/Desktop/todo.txt": {"text": ""}}
    assert task.initial_state["setup"] == [{"type": "execute", "command": ["mkdir", "-p", "/home/user/Desktop/done"]}]
    [result] = spec_of(task)["osworld"]["result"]
    assert (result["how"], result["test"], result["path"]) == ("test", "f", "/home/user/Desktop/done/todo.txt")


def test_infeasible_tasks_expect_fail_and_their_reference_fails() -> None:
    task = map_task(fixture("os", HIERARCHY), domain="os")
    spec = spec_of(task)
    assert spec["expect"] == "fail" and spec.get("osworld") is None  # left out of the serialised form
    assert tool_names(task) == ["fail"]
    # sourceDir="/home/user/Desktop/" then mkdir -p "$sourceDir"/dir1/dir2: variables expanded, only the leaves made
    assert task.initial_state["setup"] == [{"type": "execute", "command": [
        "mkdir", "-p", "/home/user/Desktop/dir1/dir2", "/home/user/Desktop/dir3/dir4"]}]
    assert task.initial_state["open"]["app"] == "terminal"
    bare = map_task(fixture("os", BLUETOOTH), domain="os")
    assert spec_of(bare)["expect"] == "fail" and bare.initial_state["files"] == {}
    assert "setup" not in bare.initial_state


# ------------------------------------------------------------------------------------------ mapping rules


def task_with(config: list[Any], evaluator: dict[str, Any], oid: str = "t-1") -> dict[str, Any]:
    return {"id": oid, "snapshot": "os", "instruction": "Do it.", "config": config, "evaluator": evaluator}


VM_FILE = {"type": "vm_file", "path": "/home/user/Desktop/out.txt", "dest": "out.txt"}
CAT = {"type": "vm_command_line", "command": "cat ~/Desktop/out.txt", "shell": True}


def test_getters_are_resolved_and_options_pass_through_as_written() -> None:
    ev = {"func": ["check_include_exclude", "file_contains", "literal_match"], "result": [CAT, VM_FILE, CAT],
          "expected": [{"type": "rule", "rules": {"include": ["a"], "exclude": ["b"]}},
                       {"type": "rule", "rules": {"expected": ["x"]}}, {"type": "rule", "rules": {"expected": "y"}}],
          "options": [{}, {}, {"type": {"nested": "dict"}, "ignore_case": True}]}  # a dict "type" must not raise
    config = [{"type": "execute", "parameters": {"command": "echo -e 'one\\ttwo' > ~/Desktop/in.txt", "shell": True}},
              {"type": "launch", "parameters": {"command": ["gedit", "/home/user/Desktop/in.txt"]}},
              {"type": "sleep", "parameters": {"seconds": 2}}]
    task = map_task(task_with(config, ev))
    assert task.initial_state["files"] == {"/home/user/Desktop/in.txt": {"text": "one\ttwo\n"}}
    assert task.initial_state["open"] == {"app": "editor", "path": "/home/user/Desktop/in.txt"}
    spec = spec_of(task)["osworld"]
    assert [r["type"] for r in spec["result"]] == ["command_output", "vm_file", "command_output"]
    assert spec["result"][0]["how"] == "cat" and spec["result"][0]["path"] == "/home/user/Desktop/out.txt"
    assert spec["expected"][2] == {"type": "rule", "rules": {"expected": "y"}}  # literal_match sees the rules as is
    assert spec["options"][2] == {"type": {"nested": "dict"}, "ignore_case": True}


def test_shell_setup_details() -> None:
    command = "mkdir ~/a && mkdir ~/a/b; echo -e 'caf\u00e9\\n\\\\x' >> ~/a/t.txt\nmkdir -p ~/c/d"
    config = [{"type": "execute", "parameters": {"command": command, "shell": True}}]
    task = map_task(task_with(config, {"func": "infeasible"}))
    assert task.initial_state["files"] == {"/home/user/a/t.txt": {"text": "caf\u00e9\n\\x\n"}}
    assert task.initial_state["setup"] == [{"type": "execute", "command": ["mkdir", "-p", "/home/user/a/b",
                                                                           "/home/user/c/d"]}]


def test_open_and_office_launch_pick_the_app() -> None:
    made = [{"type": "command", "parameters": {"command": "touch ~/notes.txt && mkdir -p ~/Docs/a"}}]
    ev = {"func": "infeasible"}
    opened = map_task(task_with([*made, {"type": "open", "parameters": {"path": "/home/user/notes.txt"}}], ev))
    assert opened.initial_state["open"] == {"app": "editor", "path": "/home/user/notes.txt"}
    folder = map_task(task_with([*made, {"type": "open", "parameters": {"path": "~/Docs"}}], ev))
    assert folder.initial_state["open"] == {"app": "files", "path": "/home/user/Docs"}
    calc = map_task(task_with([{"type": "launch", "parameters": {"command": "libreoffice --calc"}}], ev))
    assert calc.initial_state["open"] == {"app": "calc", "title": "LibreOffice Calc"}


def test_apps_of_an_extra_image_map_when_registered(monkeypatch) -> None:
    gimp = task_with([{"type": "launch", "parameters": {"command": ["gimp"]}}], {"func": "infeasible"})
    impress = task_with([{"type": "launch", "parameters": {"command": ["libreoffice", "--impress"]}}],
                        {"func": "infeasible"})
    assert reason(gimp) == "app: gimp is not on this desktop"
    assert reason(impress) == "app: libreoffice --impress (this desktop's LibreOffice apps: calc, writer)"
    monkeypatch.setattr(apps, "EXTRA_APPS", {"gimp": "desktop-apps", "impress": "desktop-apps"})
    assert map_task(gimp).initial_state["open"] == {"app": "gimp", "title": "."}
    assert map_task(impress).initial_state["open"]["app"] == "impress"


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
    ([{"type": "launch", "parameters": {"command": ["gedit"]}},
      {"type": "launch", "parameters": {"command": ["nautilus"]}}], {"func": "infeasible"},
     "setup: opens more than one app"),
    ([{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://example.com"]}}], {"func": "infeasible"},
     "network: setup step 'chrome_open_tabs' needs the network at run time"),
    ([], {"func": "compare_table", "result": VM_FILE, "expected": {"type": "cloud_file", "path": "https://x"}},
     "download: evaluator step 'cloud_file' fetches data over the network"),
    ([], {"func": "exact_match", "result": {"type": "vm_command_line", "command": "which spotify"},
          "expected": {"type": "rule", "rules": {"expected": "x"}}}, "evaluator: command 'which spotify'"),
    ([], {"func": "compare_image_text", "result": VM_FILE, "expected": {"type": "rule", "rules": {}}},
     "evaluator: metric 'compare_image_text' is not graded offline: it reads text off an image with OCR"),
    ([], {"func": "is_vlc_playing", "result": VM_FILE, "expected": {"type": "rule", "rules": {}}},
     "evaluator: metric 'is_vlc_playing' is not graded offline"),
    ([], {"func": "exact_match", "result": {"type": "vm_terminal_output"}, "expected": {"type": "rule"}},
     "evaluator: getter 'vm_terminal_output' is not graded offline"),
    ([], {"func": "exact_match", "result": {**VM_FILE, "time_suffix": True}, "expected": {"type": "rule"}},
     "evaluator: vm_file with a time suffix"),
    ([], {"func": "exact_match", "result": CAT, "expected": {"type": "rule"},
          "postconfig": [{"type": "close_window", "parameters": {"window_name": "x"}}]},
     "postconfig: grading-time step 'close_window' is not replayed"),
    ([], {"func": "exact_match", "result": CAT, "expected": {"type": "rule"},
          "postconfig": [{"type": "execute", "parameters": {"command": ["libreoffice", "--convert-to", "csv"]}}]},
     "postconfig: grading-time command 'libreoffice --convert-to csv' is not replayed"),
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
    ({"id": "x", "instruction": "i", "evaluator": {"func": "exact_match", "result": CAT, "postconfig": "sleep"}},
     "malformed: evaluator: 'postconfig' must be a list of steps"),
    ({"id": "x", "instruction": "i", "evaluator": {"func": "exact_match", "result": "vm_file", "expected": {}}},
     "malformed: evaluator: exact_match's result getter must be an object"),
    ({"id": "x", "instruction": "i", "evaluator": {"func": "exact_match", "result": {"type": {"a": 1}}}},
     "malformed: evaluator: exact_match's result getter must be an object with a 'type' string"),
    ({"id": "x", "instruction": "i", "evaluator": {"func": ["exact_match", "exact_match"], "result": [VM_FILE],
                                                   "expected": [{}, {}]}},
     "malformed: evaluator: func, result, expected and options differ in length"),
    ({"id": "x", "instruction": "i", "evaluator": {"func": ["exact_match"], "conj": "xor", "result": [CAT]}},
     "malformed: evaluator: conj 'xor'"),
])
def test_malformed_tasks_are_skipped_naming_the_field(raw, expected) -> None:
    assert reason(raw).startswith(expected)


def test_nothing_in_osworlds_own_tasks_raises() -> None:
    """Every real fixture, and each with every dict in it given a dict-valued "type", maps or skips."""
    for path in sorted(FIXTURES.rglob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        bent = copy.deepcopy(raw)
        stack = [bent]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                stack.extend(node.values())
                node["type"] = {"odd": True}
            elif isinstance(node, list):
                stack.extend(node)
        for candidate in (raw, bent):
            try:
                map_task(candidate, domain=path.parent.name)
            except osworld.Skip as why:
                assert str(why).split(":", 1)[0] in REASONS


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
    report = json.loads((SUITE / "import-report.json").read_text(encoding="utf-8"))
    assert len(suite) == report["with_reference"] == report["imported"] >= 15
    assert all(t.solution and t.env_id == "gui/osworld-v1" for t in suite)
    assert not (SUITE / "without-reference").exists()
    by_id = {t.id: t for t in suite}
    for oid in (RENAME, MOVE, HIERARCHY, BLUETOOTH):  # the fixtures are copies of the same OSWorld files
        assert by_id[f"osworld-os-{oid}"] == map_task(fixture("os", oid), domain="os")
    assert report["source"] == "https://github.com/pkueecszc/OSWorld"
    assert report["commit"] == "eac51b51d3e6fcf4e05706059c058421b34ccedd" and report["cache"] is False
    assert sorted(report["imported_tasks"]) == sorted(
        f"{t.metadata['osworld']['domain']}/{t.metadata['osworld']['id']}" for t in suite)
    assert sum(d["imported"] for d in report["by_domain"].values()) == len(suite)
    assert (SUITE / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")
    assert "eac51b51d3e6fcf4e05706059c058421b34ccedd" in (SUITE / "README.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ CLI


def copy_fixtures(dest: Path) -> None:
    for path in FIXTURES.rglob("*.json"):
        (dest / path.relative_to(FIXTURES)).parent.mkdir(parents=True, exist_ok=True)
        (dest / path.relative_to(FIXTURES)).write_bytes(path.read_bytes())
    (dest / "LICENSE").write_text("Apache License\n", encoding="utf-8")


def test_cli_writes_the_gated_suite_the_rest_and_a_report(tmp_path: Path, capsys) -> None:
    copy_fixtures(tmp_path / "src")
    no_ref = task_with([], {"func": "file_contains", "result": VM_FILE,
                            "expected": {"type": "rule", "rules": {"expected": ["x"]}}}, oid="no-ref")
    (tmp_path / "src" / "os" / "no-ref.json").write_text(json.dumps(no_ref), encoding="utf-8")
    out = tmp_path / "suite"
    assert osworld.main(["import", str(tmp_path / "src"), "--out", str(out), "--commit", "abc123",
                         "--repository", "https://example.org/OSWorld"]) == 0
    printed = capsys.readouterr().out
    assert "OSWorld tasks: 13, needing no download: 8, imported: 5, with a reference: 4" in printed
    gated = load_tasks(out / "tasks.jsonl")
    assert len(gated) == 4 and all(t.solution for t in gated)
    [rest] = load_tasks(out / "without-reference" / "tasks.jsonl")
    assert rest.id == "osworld-os-no-ref" and rest.solution is None
    report = json.loads((out / "import-report.json").read_text(encoding="utf-8"))
    assert (report["source"], report["commit"], report["cache"]) == ("https://example.org/OSWorld", "abc123", False)
    assert report["total"] == 13 and report["with_reference"] == 4
    assert report["skipped_by_reason"] == {"app": 1, "download": 3, "evaluator": 1, "malformed": 1, "network": 1,
                                           "postconfig": 1}
    assert report["by_domain"]["libreoffice_calc"] == {"imported": 0, "skipped": {"download": 2}}
    assert report["by_domain"]["os"] == {"imported": 5, "skipped": {"evaluator": 1, "postconfig": 1}}
    assert (out / "LICENSE").read_text(encoding="utf-8") == "Apache License\n"

    make_cache(tmp_path / "cache", [fixture("libreoffice_calc", i) for i in (CALC, PDF)]
               + [fixture("libreoffice_writer", WRITER)])
    assert osworld.main(["import", str(tmp_path / "src"), "--out", str(tmp_path / "cached"), "--cache",
                         str(tmp_path / "cache")]) == 0
    report = json.loads((tmp_path / "cached" / "import-report.json").read_text(encoding="utf-8"))
    assert report["cache"] is True and report["imported"] == 7
    assert report["source"] == str((tmp_path / "src").resolve()) and report["commit"] is None  # not a git checkout
    assert report["by_domain"]["libreoffice_calc"] == {"imported": 1, "skipped": {"evaluator": 1}}


def test_cli_on_a_missing_folder_or_cache_exits_2(tmp_path: Path, capsys) -> None:
    assert osworld.main(["import", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "no OSWorld task JSON" in capsys.readouterr().err
    assert osworld.main(["import", str(FIXTURES), "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "x")]) == 2
    assert f"--cache {tmp_path / 'x'}: not a folder" in capsys.readouterr().err


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


# ------------------------------------------------------------------------------------------ desktop-env missing


async def test_without_desktop_env_grading_and_setup_check_name_the_command(monkeypatch, capsys) -> None:
    from envgym.errors import ExtraMissing
    from envgym.verify import VerifyContext
    from envgym_gui import verify
    from envgym_gui.osworld import install
    from envgym_gui.state import DesktopState

    monkeypatch.setattr(install, "found", lambda: None)
    monkeypatch.setattr(install, "_checked", [])
    with pytest.raises(ExtraMissing, match=r"run pip install 'envgym\[osworld\]' && envgym osworld setup$"):
        install.require()
    assert osworld.main(["setup", "--check"]) == 2
    assert "pip install 'envgym[osworld]' && envgym osworld setup" in capsys.readouterr().err

    async def nothing(*_: Any) -> Any:
        return None

    task = map_task(fixture("os", RENAME), domain="os")
    state = DesktopState(final="done", answer=None, initial_files={}, _read_file=nothing, _list_dir=nothing,
                         _windows=nothing, _clipboard=nothing)
    verify.register()
    with pytest.raises(ExtraMissing, match="envgym osworld setup"):
        await verify.check_desktop(task.verifiers[0], VerifyContext(calls=[], final_answer=None, state=state))
