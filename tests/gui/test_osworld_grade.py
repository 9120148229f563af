"""Imported OSWorld tasks graded by OSWorld's own metric functions (desktop-env): the verdict equals what
desktop-env's function gives on the same end state, for the mapped getter shapes (the importer's former
mapping bugs among them) and for Calc/Writer tasks with cached expected files; on a real desktop for one task
of each kind. Needs ``pip install 'envgym[osworld]' && envgym osworld setup`` (``.venv-osworld``)."""

from __future__ import annotations

import functools
import io
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("desktop_env", reason="needs desktop-env: pip install 'envgym[osworld]' && envgym osworld setup")

import envgym
from envgym.verify import VerifyContext
from envgym_gui import apps, verify
from envgym_gui.files import materialize
from envgym_gui.osworld import import_tasks, install, map_task
from envgym_gui.osworld._evaluator import Cache
from envgym_gui.state import DesktopState

verify.register()

FIXTURES = Path(__file__).parent / "fixtures" / "osworld"
HOME = "/home/user"
NOTES = f"{HOME}/Desktop/notes.txt"
DONE = f"{HOME}/Desktop/done"


@pytest.fixture(autouse=True)
def base_desktop(monkeypatch) -> None:
    monkeypatch.setattr(apps, "EXTRA_APPS", {})


def state(files: dict[str, bytes], folders: set[str] = frozenset(), final: str | None = "done") -> DesktopState:
    everything = set(folders) | {str(Path(p).parent) for p in files}

    async def read_file(path: str) -> bytes | None:
        return files.get(path)

    async def list_dir(path: str) -> list[str] | None:
        if path not in everything:
            return None
        return sorted({q[len(path) + 1:].split("/")[0] for q in [*files, *everything] if q.startswith(path + "/")})

    async def nothing() -> Any:
        return None

    return DesktopState(final=final, answer=None, initial_files={}, _read_file=read_file, _list_dir=list_dir,
                        _windows=nothing, _clipboard=nothing)


async def grade(task, files: dict[str, bytes], folders: set[str] = frozenset(), final: str | None = "done"):
    return await verify.check_desktop(task.verifiers[0], VerifyContext(calls=[], final_answer=None,
                                                                      state=state(files, folders, final)))


def osworld_output(command: str, files: dict[str, bytes], folders: set[str], tmp: Path) -> str:
    """What OSWorld's VM prints for ``command``: bash over a folder holding the end state."""
    for folder in folders:
        (tmp / folder.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        (tmp / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp / path.lstrip("/")).write_bytes(data)
    moved = command.replace("~/", f"{tmp}{HOME}/").replace(f" {HOME}", f" {tmp}{HOME}")
    return subprocess.run(["bash", "-c", moved], capture_output=True, text=True, check=False).stdout


def one(func: str, result: dict[str, Any], expected: Any, options: dict[str, Any] | None = None):
    ev = {"func": func, "result": result, "expected": expected}
    if options is not None:
        ev["options"] = options
    return map_task({"id": "t", "snapshot": "os", "instruction": "x", "config": [], "evaluator": ev})


END_STATES = {
    "absent": ({}, set()), "folder": ({}, {NOTES, DONE}), "exact": ({NOTES: b"hello world\n"}, {DONE}),
    "bare": ({NOTES: b"hello world"}, set()), "spaced": ({NOTES: b"  hello world  \n"}, set()),
    "lines": ({NOTES: b"first: apple\nsecond: pear\n"}, set()), "across": ({NOTES: b"first: apple second: pear\n"},
                                                                          set()),
}


@pytest.mark.parametrize("end", sorted(END_STATES))
@pytest.mark.parametrize(("command", "want"), [
    (f"[ -d {DONE} ] && echo yes || echo no", "no\n"),  # negative tests were mapped to "nothing there"
    (f"[ -f {NOTES} ] && echo yes || echo no", "no\n"),
    (f"if [ -e {NOTES} ]; then echo yes; else echo no; fi", "yes\n"),
    (f"cat {NOTES}", "hello world"),  # byte for byte: no trimming
])
async def test_command_outputs_grade_as_desktop_envs_function_on_the_vms_output(end, command, want, tmp_path):
    files, folders = END_STATES[end]
    task = one("exact_match", {"type": "vm_command_line", "command": command, "shell": True},
               {"type": "rule", "rules": {"expected": want}})
    theirs = install.metric("exact_match")(osworld_output(command, files, folders, tmp_path), {"expected": want})
    assert (await grade(task, files, folders)).score == theirs


@pytest.mark.parametrize("end", sorted(END_STATES))
@pytest.mark.parametrize(("func", "rules", "options"), [
    ("literal_match", {"expected": "hello world\n"}, {}),  # a rule dict: OSWorld compares str(dict)
    ("literal_match", "hello world\n", {"ignore_case": True}),
    ("check_include_exclude", {"include": ["hello"], "exclude": ["World"]}, {}),
    ("is_in_list", {"expected": "world"}, {}),
])
async def test_text_metrics_on_cat(end, func, rules, options, tmp_path) -> None:
    files, folders = END_STATES[end]
    command = f"cat {NOTES}"
    task = one(func, {"type": "vm_command_line", "command": command}, {"type": "rule", "rules": rules}, options)
    output = osworld_output(command, files, folders, tmp_path)
    theirs = install.metric(func)(output, rules, **options)
    assert (await grade(task, files, folders)).score == theirs


@pytest.mark.parametrize("end", sorted(END_STATES))
@pytest.mark.parametrize(("func", "rules"), [
    ("check_list", {"expect": ["^first: apple$", "^second: pear$"]}),  # per line, as OSWorld reads the file
    ("check_list", {"expect": ["apple"], "unexpect": ["pear"]}),
    ("file_contains", {"expected": ["apple", "pear"]}),
])
async def test_file_metrics_on_a_vm_file(end, func, rules, tmp_path) -> None:
    files, folders = END_STATES[end]
    task = one(func, {"type": "vm_file", "path": NOTES, "dest": "notes.txt"}, {"type": "rule", "rules": rules})
    path = None
    if NOTES in files:  # OSWorld's controller sends a file, nothing for a folder or an absent path
        path = tmp_path / "notes.txt"
        path.write_bytes(files[NOTES])
    theirs = install.metric(func)(None if path is None else str(path), rules)
    assert (await grade(task, files, folders)).score == theirs


# ------------------------------------------------------------------------------------------ Calc and Writer


def xlsx(rows: list[list[Any]]) -> bytes:
    """The same rows give the same bytes: openpyxl stamps the save time into the package (its properties and zip
    entries), so two saves a second apart differed and the start-file comparison failed now and then."""
    return _xlsx(json.dumps(rows))


@functools.cache
def _xlsx(rows_json: str) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    for row in json.loads(rows_json):
        book.active.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def docx(paragraphs: list[str]) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def cached(tmp: Path, domain: str, oid: str, start: bytes, gold: bytes):
    """The fixture task imported with a cache holding its download (``start``) and its expected file."""
    raw = json.loads((FIXTURES / domain / f"{oid}.json").read_text(encoding="utf-8"))
    [entry] = raw["config"][0]["parameters"]["files"]
    folder = tmp / "cache" / oid
    folder.mkdir(parents=True)
    (folder / f"{uuid.uuid5(uuid.NAMESPACE_URL, entry['url'])}_{Path(entry['path']).name}").write_bytes(start)
    (folder / raw["evaluator"]["expected"]["dest"]).write_bytes(gold)
    return map_task(raw, domain=domain, cache=Cache(tmp / "cache")), raw["evaluator"]["result"]["path"]


CALC = "01b269ae-2111-4a07-81fd-3fcd711993b0"
WRITER = "88fe4b2d-3040-4c70-9a70-546a47764b48"
START = [["Student", "Level"], ["Ann", "A"], ["Bo", None], ["Cy", "B"], ["Di", None]]
GOLD = [["Student", "Level"], ["Ann", "A"], ["Bo", "A"], ["Cy", "B"], ["Di", "B"]]


async def test_compare_table_against_the_cached_gold_file(tmp_path: Path) -> None:
    task, path = cached(tmp_path, "libreoffice_calc", CALC, xlsx(START), xlsx(GOLD))
    start = materialize(task.initial_state["files"])
    assert start == {path: xlsx(START)}
    null = await grade(task, start)
    assert null.score == 0 and not null.passed
    assert null.evidence["desktop"][-1]["metrics"] == [
        {"metric": "compare_table", "score": 0.0, "result": "Student_Level_Fill_Blank.xlsx"}]
    done = await grade(task, {path: xlsx(GOLD)})
    assert done.score == 1 and done.passed
    assert (await grade(task, {path: xlsx(GOLD)}, final="fail")).score == 0  # OSWorld: FAIL ends with 0
    assert (await grade(task, {path: b"not a workbook"})).score == 0
    assert (await grade(task, {})).score == 0  # nothing saved where the task reads


async def test_compare_docx_files_against_the_cached_gold_file(tmp_path: Path) -> None:
    task, path = cached(tmp_path, "libreoffice_writer", WRITER, docx(["Tutorial", "draft"]),
                        docx(["Tutorial", "final guidelines"]))
    assert not (await grade(task, materialize(task.initial_state["files"]))).passed
    assert (await grade(task, {path: docx(["Tutorial", "final guidelines"])})).passed
    assert not (await grade(task, {path: docx(["Tutorial", "final guidelines", "extra"])})).passed
    assert (await grade(task, {path: b"not a document"})).score == 0


async def test_a_metric_that_raises_on_the_agents_file_scores_0_with_the_error_in_the_evidence(tmp_path) -> None:
    task = one("check_list", {"type": "vm_file", "path": NOTES, "dest": "notes.txt"},
               {"type": "rule", "rules": {"expect": ["a"]}})
    (tmp_path / "notes.txt").write_bytes(b"\xff\xfe\x00a")
    with pytest.raises(UnicodeDecodeError):  # OSWorld's own function, on the same bytes
        install.metric("check_list")(str(tmp_path / "notes.txt"), {"expect": ["a"]})
    verdict = await grade(task, {NOTES: b"\xff\xfe\x00a"})
    assert verdict.score == 0 and verdict.evidence["desktop"][-1]["metrics"][0]["error"].startswith("UnicodeDecode")


# ------------------------------------------------------------------------------------------ a real desktop


@pytest.mark.docker
@pytest.mark.slow
async def test_on_a_real_desktop_setup_runs_in_the_container_and_grading_reads_it_out(tmp_path: Path) -> None:
    tasks, _ = import_tasks(FIXTURES)
    move = next(t for t in tasks if t.metadata["osworld"]["id"] == "7688b85f-87a4-4e4a-b2f8-f3d6c3f29b82")
    start = xlsx(START)
    calc, path = cached(tmp_path, "libreoffice_calc", CALC, start, xlsx(GOLD))
    async with envgym.make("gui/osworld-v1") as env:
        await env.reset(task=move)
        desktop = env.unwrapped.desktop
        assert await desktop.list_dir(DONE) == []  # made by the setup step as the user: empty, no placeholder
        await env.step(envgym.Action.call("done"))
        assert not (await env.verify()).passed  # nothing moved
        await env.reset(task=move)
        for action in move.solution:
            await env.step(action)
        moved = await env.verify()
        assert moved.passed and moved.evidence["desktop"][-1]["metrics"][0]["result"] == "File exists.\n"

        await env.reset(task=calc)
        await env.step(envgym.Action.call("done"))
        null = await env.verify()  # the workbook read out of the container is the downloaded one
        assert null.score == 0 and null.evidence["desktop"][-1]["metrics"][0]["score"] == 0.0
        # an agent that fills in the two levels in Calc and does not save: OSWorld's postconfig (focus the
        # document, ctrl+s), replayed by the env before grading, saves them
        await env.reset(task=calc)
        for cell, level in (("B3", "A"), ("B5", "B")):
            for name, args in (("key", {"keys": "Escape ctrl+shift+F5"}), ("type", {"text": cell}),
                               ("key", {"keys": "Return"}), ("type", {"text": level}), ("key", {"keys": "Return"})):
                await env.step(envgym.Action.call(name, **args))
        assert await env.unwrapped.desktop.read_file(path) == start  # nothing saved by the agent
        await env.step(envgym.Action.call("done"))
        assert (await env.verify()).passed
