"""envgym_gui.files and .readers: task files built deterministically, LibreOffice's own files read back safely."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from envgym.errors import SpecError
from envgym_gui import files, readers
from envgym_gui.files import formula_from_odf, formula_to_odf, materialize
from envgym_gui.readers import FileFormatError, read_ods, read_odt

FIXTURES = Path(__file__).parent / "fixtures"
"""Files LibreOffice 7.4 wrote (``soffice --headless --convert-to``): ``lo_budget.ods`` and ``lo_styles.odt``
are this module's own output saved again by LibreOffice; ``lo_report.odt`` an HTML page imported by Writer
(headings, spans, lists, a table, line breaks); ``lo_merged.ods`` a flat ODS with a merged cell, repeated
rows and a formula, saved by Calc."""

BUDGET = {"ods": {"sheets": [
    {"name": "Sheet1", "rows": [["Item", "Cost"], ["Rent", 1200], ["Food", 350.5], ["Total", "=SUM(B2:B3)"],
                                ["r", "=ROUND(B3,0)"], [None, True]]},
    {"name": "Other", "rows": [["=Sheet1!B2*2"]]}]}}
STYLED = {"odt": {"paragraphs": ["Hello  world\tTab", {"text": "Title", "style": {"bold": True, "align": "center",
                                                                                 "size": 16}},
                                 {"text": "It", "style": {"italic": True}}]}}


def test_formulas_are_written_as_openformula_and_read_back() -> None:
    assert formula_to_odf("=SUM(B2:B5)") == "of:=SUM([.B2:.B5])"
    assert formula_to_odf("=ROUND(A1,2)+LOG10(100)") == "of:=ROUND([.A1];2)+LOG10(100)"
    assert formula_to_odf('=IF(A1>0,"a,b",Sheet2!$C$3)') == 'of:=IF([.A1]>0;"a,b";[Sheet2.$C$3])'
    for formula in ("=SUM(B2:B5)", "=ROUND(A1,2)", '=IF(A1>0,"a,b",Sheet2!$C$3)', "=AVERAGE(A1:A9)*2"):
        assert formula_from_odf(formula_to_odf(formula)) == formula


def test_materialize_is_deterministic_and_a_valid_odf_package() -> None:
    one = materialize({"/home/user/a.ods": BUDGET, "/home/user/b.odt": STYLED})
    two = materialize({"/home/user/a.ods": BUDGET, "/home/user/b.odt": STYLED})
    assert one == two
    for path, mime in (("/home/user/a.ods", files.MIME["ods"]), ("/home/user/b.odt", files.MIME["odt"])):
        archive = zipfile.ZipFile(io.BytesIO(one[path]))
        first = archive.infolist()[0]
        assert first.filename == "mimetype" and first.compress_type == zipfile.ZIP_STORED
        assert archive.read("mimetype").decode() == mime
        assert {"META-INF/manifest.xml", "content.xml", "styles.xml"} <= set(archive.namelist())


def test_round_trip_of_our_own_files() -> None:
    built = materialize({"/a.ods": BUDGET, "/b.odt": STYLED, "/n.txt": {"text": "hé\n"},
                         "/raw": {"bytes_b64": "AAEC"}})
    sheet, other = read_ods(built["/a.ods"])
    assert sheet.values()[:3] == [["Item", "Cost"], ["Rent", 1200.0], ["Food", 350.5]]
    assert sheet.cell("B4").formula == "=SUM(B2:B3)" and sheet.cell("B4").value is None  # computed on load
    assert sheet.cell("B6").value is True and sheet.cell("Z99").type == "empty"
    assert other.cell("A1").formula == "=Sheet1!B2*2"
    plain, title, italic = read_odt(built["/b.odt"])
    assert plain.text == "Hello  world\tTab" and not plain.bold and plain.size == 12
    assert (title.bold, title.align, title.size, title.italic) == (True, "center", 16, False)
    assert italic.italic and not italic.bold
    assert built["/n.txt"] == "hé\n".encode() and built["/raw"] == b"\0\1\2"


def test_files_libreoffice_saved_are_read() -> None:
    sheet, other = read_ods((FIXTURES / "lo_budget.ods").read_bytes())
    assert sheet.cell("B4").value == 1550.5 and sheet.cell("B4").formula == "=SUM(B2:B3)"
    assert sheet.cell("B5").value == 351 and other.cell("A1").value == 2400
    (data,) = read_ods((FIXTURES / "lo_merged.ods").read_bytes())
    assert data.cell("A1").value == "Merged header" and data.cell("B1").type == "empty"  # covered
    assert data.cell("C1").value == "C1" and data.cell("A2").value == 1 and data.cell("C2").value == 1
    assert data.cell("E6").value == "far  away"  # repeated empty rows/cells expanded, text:s resolved
    assert data.cell("A7").formula == "=SUM(A2:C2)" and data.cell("A7").value == 3
    paragraphs = read_odt((FIXTURES / "lo_styles.odt").read_bytes())
    assert [(p.text, p.bold, p.italic, p.align, p.size) for p in paragraphs] == [
        ("Hello  world\tTab", False, False, "left", 12), ("Title", True, False, "center", 16),
        ("It", False, True, "left", 12)]
    report = {p.text: p for p in read_odt((FIXTURES / "lo_report.odt").read_bytes())}
    assert report["Quarterly Report"].heading == 1 and report["Quarterly Report"].style == "Heading 1"
    assert not report["Plain bold part and italic part."].bold  # bold only in a span
    assert report["Entirely bold paragraph"].bold
    assert report["Centered italic"].italic and report["Centered italic"].align == "center"
    assert report["Right aligned"].align == "right"
    assert {"First item", "Second item", "Cell A", "Cell B"} <= set(report)  # lists and tables
    assert "Two spaces three\nnext line" in report


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_hostile_files_raise_file_format_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(FileFormatError, match="not an ODF package"):
        read_ods(b"plain text")
    with pytest.raises(FileFormatError, match=r"no content\.xml"):
        read_odt(_zip({"mimetype": b"x"}))
    with pytest.raises(FileFormatError, match="DTD or entities"):
        read_ods(_zip({"content.xml": b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>'}))
    with pytest.raises(FileFormatError, match="not well-formed"):
        read_ods(_zip({"content.xml": b"<unclosed"}))
    monkeypatch.setattr(readers, "MAX_MEMBER_BYTES", 1000)
    with pytest.raises(FileFormatError, match="cap"):
        read_ods(_zip({"content.xml": b"<a>" + b" " * 100_000 + b"</a>"}))  # a small zip bomb


def test_a_billion_repeated_rows_are_refused_not_expanded() -> None:
    ns = files._XMLNS
    content = (f'<office:document-content {ns}><office:body><office:spreadsheet><table:table table:name="S">'
               '<table:table-row table:number-rows-repeated="1000000000"><table:table-cell office:value-type="float" '
               'office:value="1"/></table:table-row></table:table></office:spreadsheet></office:body>'
               "</office:document-content>").encode()
    with pytest.raises(FileFormatError, match="over 10000 rows"):
        read_ods(_zip({"content.xml": content}))
    trailing = content.replace(b'office:value-type="float" office:value="1"', b"")
    assert read_ods(_zip({"content.xml": trailing}))[0].rows == []  # empty repeats at the end cost nothing


@pytest.mark.parametrize(("spec", "field"), [
    ({"/a": {"ods": {"sheets": []}}}, "initial_state.files./a.ods"),
    ({"/a": {"ods": {"sheets": [{"name": "S", "rows": [[{"x": 1}]]}]}}}, "initial_state.files./a.ods"),
    ({"/a": {"odt": {"paragraphs": [{"text": "x", "style": {"colour": "red"}}]}}}, "initial_state.files./a.odt"),
    ({"/a": {"odt": {"paragraphs": [{"text": "x", "style": {"align": "middle"}}]}}}, "initial_state.files./a.odt"),
    ({"/a": {"docx": {}}}, "initial_state.files./a"),
    ({"/a": {"text": "x", "ods": {}}}, "initial_state.files./a"),
    ({"relative.txt": {"text": "x"}}, "initial_state.files"),
    ({"/a/../etc/passwd": {"text": "x"}}, "initial_state.files"),
    ({"/a": {"bytes_b64": "not base64!"}}, "initial_state.files./a.bytes_b64"),
])
def test_bad_file_specs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(SpecError) as info:
        materialize(spec)
    assert info.value.field == field


def test_png_and_config_readers() -> None:
    png = materialize({"/i.png": {"png": {"width": 3, "height": 2, "fill": "#ff0000",
                                           "rects": [[0, 0, 1, 1, "#00ff00"]]}}})["/i.png"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and b"IHDR" in png and png.endswith(b"IEND\xaeB`\x82")
    ini = readers.read_ini(b"top = 1\n[editor]\nFontSize = 12\ntheme=dark ; not a comment in values\n")
    assert ini[""] == {"top": "1"} and ini["editor"]["FontSize"] == "12"
    assert readers.read_kv(b"# c\nvolume=7\nname: \"x y\"\nflag\nvolume = 9\n") == {"volume": "9", "name": "x y",
                                                                               "flag": ""}
    assert readers.read_json(b'{"a": [1, {"b": true}]}') == {"a": [1, {"b": True}]}
    with pytest.raises(FileFormatError):
        readers.read_json(b"{nope")
    with pytest.raises(FileFormatError):
        readers.read_ini(b"[unclosed\nx")
