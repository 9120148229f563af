"""The ``desktop`` verifier kind against a DesktopState whose reads are fakes (the container side)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from envgym.verify import VerifyContext
from envgym_gui.files import materialize
from envgym_gui.state import DesktopState
from envgym_gui.verify import DesktopSpec, check_desktop

HOME = "/home/user"
BUDGET = f"{HOME}/budget.ods"
REPORT = f"{HOME}/report.odt"
INITIAL = materialize({
    BUDGET: {"ods": {"sheets": [{"name": "Sheet1", "rows": [["Item", "Cost"], ["Rent", 1200], ["Food", 300]]}]}},
    REPORT: {"odt": {"paragraphs": ["Intro", {"text": "Results", "style": {"bold": True}}]}},
    f"{HOME}/notes.txt": {"text": "alpha\nbeta\n"},
    f"{HOME}/.config/app/app.ini": {"text": "[view]\nzoom = 100\n"},
    f"{HOME}/settings.json": {"text": '{"editor": {"tabs": [2, 4]}}'},
})


def state(files: dict[str, bytes], *, final: str | None = "done", answer: str | None = None,
          windows: list[dict[str, Any]] | None = None, clipboard: str | None = None) -> DesktopState:
    async def read_file(path: str) -> bytes | None:
        return files.get(path)

    async def list_dir(path: str) -> list[str] | None:
        names = {p[len(path) + 1:].split("/")[0] for p in files if p.startswith(path.rstrip("/") + "/")}
        return sorted(names) if names else None

    async def get_windows() -> list[dict[str, Any]]:
        return windows or []

    async def get_clipboard() -> str | None:
        return clipboard

    return DesktopState(final=final, answer=answer, initial_files=dict(INITIAL), _read_file=read_file,
                        _list_dir=list_dir, _windows=get_windows, _clipboard=get_clipboard)


async def grade(spec: dict[str, Any], st: DesktopState) -> Any:
    return await check_desktop(DesktopSpec.model_validate({"type": "desktop", **spec}),
                               VerifyContext(calls=[], final_answer=st.answer, state=st))


def edited(**changes: bytes | None) -> dict[str, bytes]:
    files = dict(INITIAL)
    for path, data in changes.items():
        full = f"{HOME}/{path}"
        if data is None:
            files.pop(full, None)
        else:
            files[full] = data
    return files


BUDGET_TOTAL = materialize({"/x": {"ods": {"sheets": [{"name": "Sheet1", "rows": [
    ["Item", "Cost"], ["Rent", 1200], ["Food", 300], ["Total", "=SUM(B2:B3)"]]}]}}})["/x"]


async def test_cells_formulas_and_collateral() -> None:
    spec = {"checks": [
        {"get": {"kind": "ods_cell", "path": BUDGET, "cell": "B4", "field": "formula"},
         "metric": {"kind": "regex", "pattern": r"^=SUM\(B2:B3\)$", "ignore_case": True}},
        {"get": {"kind": "ods_cell", "path": BUDGET, "cell": "A4"}, "metric": {"kind": "exact", "expected": "Total"}},
        {"get": {"kind": "ods_table", "path": BUDGET, "range": "A1:B3"},
         "metric": {"kind": "table_equal", "expected": [["Item", "Cost"], ["Rent", "1200"], ["Food", 300.0]]}}],
        "unchanged": [REPORT, f"{HOME}/never.txt"]}
    good = await grade(spec, state(edited(**{"budget.ods": BUDGET_TOTAL})))
    assert good.passed and good.score == 1.0, good.evidence
    untouched = await grade(spec, state(dict(INITIAL)))
    assert not untouched.passed and untouched.score == 0.0
    failed = {e["check"] for e in untouched.evidence["desktop"] if not e["passed"]}
    assert len(failed) == 2 and any("formula" in e or "B4" in e for e in failed)
    collateral = await grade(spec, state(edited(**{"budget.ods": BUDGET_TOTAL, "report.odt": b"x",
                                                   "never.txt": b"new"})))
    assert not collateral.passed
    details = {c.name: c.detail for c in collateral.criteria if not c.passed}
    assert details == {f"unchanged {REPORT}": f"changed ({len(INITIAL[REPORT])} -> 1 bytes)",
                       f"unchanged {HOME}/never.txt": "created"}


async def test_the_ending_decides_before_anything_else() -> None:
    feasible = {"checks": [{"get": {"kind": "file_text", "path": f"{HOME}/notes.txt"},
                            "metric": {"kind": "contains", "expected": "alpha"}}]}
    assert (await grade(feasible, state(dict(INITIAL)))).passed
    assert (await grade(feasible, state(dict(INITIAL), final=None))).passed  # graded on the state, like OSWorld
    assert not (await grade(feasible, state(dict(INITIAL), final="fail"))).passed
    infeasible = {"expect": "fail", "unchanged": [f"{HOME}/notes.txt"]}
    assert (await grade(infeasible, state(dict(INITIAL), final="fail"))).passed
    assert not (await grade(infeasible, state(dict(INITIAL), final="done"))).passed
    assert not (await grade(infeasible, state(dict(INITIAL), final=None))).passed
    assert not (await grade(infeasible, state(edited(**{"notes.txt": b""}), final="fail"))).passed


async def test_document_paragraph_styles() -> None:
    bolded = materialize({"/x": {"odt": {"paragraphs": [{"text": "Intro", "style": {"italic": True,
                                                                                      "align": "center"}},
                                                        {"text": "Results", "style": {"bold": True}}]}}})["/x"]
    spec = {"checks": [
        {"get": {"kind": "odt_paragraph", "path": REPORT, "containing": "Intro", "field": "italic"},
         "metric": {"kind": "exact", "expected": True}},
        {"get": {"kind": "odt_paragraph", "path": REPORT, "index": 0, "field": "align"},
         "metric": {"kind": "exact", "expected": "center"}},
        {"get": {"kind": "odt_paragraphs", "path": REPORT},
         "metric": {"kind": "exact", "expected": ["Intro", "Results"]}},
        {"get": {"kind": "odt_text", "path": REPORT}, "metric": {"kind": "exclude_any", "expected": ["Draft"]}}]}
    assert (await grade(spec, state(edited(**{"report.odt": bolded})))).passed
    before = await grade(spec, state(dict(INITIAL)))
    assert [e["got"] for e in before.evidence["desktop"][1:3]] == [False, "left"]
    gone = await grade(spec, state(edited(**{"report.odt": None})))
    notes = [e.get("note", "") for e in gone.evidence["desktop"][1:]]
    assert not gone.passed and all("is absent" in n for n in notes)
    corrupt = await grade(spec, state(edited(**{"report.odt": b"PK\x03\x04 not really"})))
    assert not corrupt.passed and "not an ODF package" in corrupt.evidence["desktop"][1]["note"]


async def test_config_listing_windows_clipboard_answer() -> None:
    spec = {"checks": [
        {"get": {"kind": "config_key", "path": f"{HOME}/.config/app/app.ini", "format": "ini", "section": "view",
                 "key": "zoom"}, "metric": {"kind": "numeric", "expected": 150}},
        {"get": {"kind": "config_key", "path": f"{HOME}/settings.json", "format": "json", "key": "editor.tabs.1"},
         "metric": {"kind": "exact", "expected": 4}},
        {"get": {"kind": "dir_listing", "path": HOME}, "metric": {"kind": "include_all",
                                                                   "expected": ["budget.ods", "archive"]}},
        {"get": {"kind": "file_exists", "path": f"{HOME}/archive/notes.txt"}, "metric": {"kind": "exact",
                                                                                         "expected": True}},
        {"get": {"kind": "file_absent", "path": f"{HOME}/notes.txt"}, "metric": {"kind": "exact", "expected": True}},
        {"get": {"kind": "window_title"}, "metric": {"kind": "contains", "expected": "budget"}},
        {"get": {"kind": "clipboard"}, "metric": {"kind": "exact", "expected": "1500"}},
        {"get": {"kind": "answer"}, "metric": {"kind": "numeric", "expected": 1500, "tolerance": 0.5}}]}
    files = edited(**{".config/app/app.ini": b"[view]\nzoom = 150\n", "notes.txt": None,
                      "archive/notes.txt": b"alpha\n", ".~lock.budget.ods#": b"lock"})
    windows = [{"title": "notes", "focused": False}, {"title": "budget.ods - LibreOffice Calc", "focused": True}]
    good = await grade(spec, state(files, answer="The total is 1,500.", windows=windows, clipboard="1500"))
    assert good.passed, good.evidence
    bad = await grade(spec, state(dict(INITIAL), answer="1400", windows=windows[:1], clipboard=None))
    passed = [e["passed"] for e in bad.evidence["desktop"][1:]]
    assert passed == [False, True, False, False, False, False, False, False]


@pytest.mark.parametrize(("entry", "field"), [
    ({"checks": []}, "desktop"),
    ({"checks": [{"get": {"kind": "ods_cell", "path": BUDGET, "cell": "B0"}, "metric": {"kind": "exact",
                                                                                          "expected": 1}}]}, "cell"),
    ({"checks": [{"get": {"kind": "ods_cel", "path": BUDGET}, "metric": {"kind": "exact", "expected": 1}}]}, "get"),
    ({"checks": [{"get": {"kind": "file_text", "path": "rel.txt"}, "metric": {"kind": "exact", "expected": 1}}]},
     "path"),
    ({"checks": [{"get": {"kind": "answer"}, "metric": {"kind": "regex", "pattern": "("}}]}, "pattern"),
    ({"checks": [{"get": {"kind": "config_key", "path": "/a", "format": "ini", "key": "k"},
                  "metric": {"kind": "exact", "expected": 1}}]}, "get"),
    ({"checks": [{"get": {"kind": "odt_paragraph", "path": "/a"}, "metric": {"kind": "exact", "expected": 1}}]},
     "get"),
    ({"expect": "maybe"}, "expect"),
])
def test_bad_specs_name_the_field(entry: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        DesktopSpec.model_validate({"type": "desktop", **entry})
    locations = [".".join(str(p) for p in e["loc"]) for e in info.value.errors()]
    if field == "desktop":
        assert "needs at least one check" in str(info.value)
    else:
        assert any(field in loc.split(".") for loc in locations), locations


def test_registered_kind_validates_task_entries() -> None:
    import envgym
    from envgym.task import TaskSpec
    from envgym_gui.verify import register

    register()
    assert "desktop" in envgym.list_verifier_kinds()
    task = TaskSpec.model_validate({"id": "t", "env_id": "gui/desktop-v1", "instruction": "x", "verifiers": [
        {"type": "desktop", "checks": [{"get": {"kind": "answer"}, "metric": {"kind": "exact", "expected": "y"}}]}]})
    assert isinstance(task.verifiers[0], DesktopSpec)
    with pytest.raises(Exception, match="desktop"):
        TaskSpec.model_validate({"id": "t", "env_id": "gui/desktop-v1", "instruction": "x", "verifiers": [
            {"type": "desktop", "checks": [{"get": {"kind": "answer"}, "metric": {"kind": "nearly"}}]}]})
