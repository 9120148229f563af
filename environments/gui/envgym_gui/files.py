"""Files of a GUI task: built from the task's ``initial_state.files`` at reset, read back at grading.

:func:`materialize` turns a task's file specs into bytes, deterministically (the same spec gives the same
bytes: fixed zip timestamps and order, no generator dates), one spec per path, exactly one key each::

    {"text": "..."}                                   UTF-8 text (notes, CSV, ini/json/key=value configs)
    {"bytes_b64": "..."}                              raw bytes
    {"ods": {"sheets": [{"name": "Sheet1", "rows": [["Item", "Cost"], ["Rent", 1200], ["Total", "=SUM(B2:B2)"]]}]}}
    {"odt": {"paragraphs": ["plain", {"text": "Title", "style": {"bold": true, "italic": false,
                                                                  "size": 16, "align": "center"}}]}}
    {"png": {"width": 64, "height": 48, "fill": "#ffffff", "rects": [[x, y, w, h, "#ff0000"]]}}

ODS cells are numbers, booleans, strings, None (empty), or formulas: a string starting with ``=`` in the
spreadsheet notation a user types (``=SUM(B2:B5)``, ``=ROUND(A1,2)``, ``=Sheet2!A1``), written as an
OpenFormula ``of:=SUM([.B2:.B5])`` without a cached result, so LibreOffice computes it on load (a cell
``{"formula": "=SUM(B2:B5)", "value": 42}`` carries its result, as a file LibreOffice saved does). Documents
are real ODF packages (``mimetype`` first and stored, a manifest, ``content.xml``, ``styles.xml``).

The readers (:func:`read_ods`, :func:`read_odt`, :func:`read_ini`, :func:`read_json`, :func:`read_kv`)
take bytes the agent's apps wrote, so they trust nothing: archive and member sizes are capped (a zip bomb
raises :class:`FileFormatError`, as does a DTD or entity declaration, a missing member or bad XML), and
ODF structure as LibreOffice writes it is understood (repeated rows and columns, covered cells, row
groups, ``text:s``/``text:tab``/``text:line-break``, spans, automatic styles inheriting from named ones,
tracked changes and notes left out of the text).
"""

from __future__ import annotations

import base64
import configparser
import io
import json
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree as ET
from xml.sax.saxutils import escape, quoteattr

from envgym.errors import SpecError

__all__ = ["Cell", "FileFormatError", "Paragraph", "Sheet", "formula_from_odf", "formula_to_odf", "materialize",
           "read_ini", "read_json", "read_kv", "read_ods", "read_odt", "read_text"]

MAX_ARCHIVE_BYTES = 32 * 1024 * 1024
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_MEMBERS = 2000
MAX_ROWS = 10_000
MAX_COLS = 1_024
MAX_TEXT_BYTES = 16 * 1024 * 1024

NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "fo": "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0",
    "of": "urn:oasis:names:tc:opendocument:xmlns:of:1.2",
    "calcext": "urn:org:documentfoundation:names:experimental:calc:xmlns:calcext:1.0",
    "manifest": "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
    "number": "urn:oasis:names:tc:opendocument:xmlns:datastyle:1.0",
}
MIME = {"ods": "application/vnd.oasis.opendocument.spreadsheet", "odt": "application/vnd.oasis.opendocument.text"}
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_XMLNS = " ".join(f"xmlns:{p}={quoteattr(u)}" for p, u in NS.items() if p != "manifest")


class FileFormatError(ValueError):
    """Bytes that are not the document they claim to be (or exceed a size cap). Verifiers report it as
    what the agent left, never as a crash."""


def _q(prefix: str, name: str) -> str:
    return f"{{{NS[prefix]}}}{name}"


# ---------------------------------------------------------------- writing


def materialize(files_spec: dict[str, Any]) -> dict[str, bytes]:
    """Bytes for every path of a task's ``initial_state.files`` (see the module docstring).

    Raises :class:`~envgym.errors.SpecError` naming the path and the field for a spec it cannot build.
    """
    if not isinstance(files_spec, dict):
        raise SpecError("initial_state.files must be an object {path: spec}", field="initial_state.files")
    out: dict[str, bytes] = {}
    for path, spec in files_spec.items():
        where = f"initial_state.files.{path}"
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path or "/../" in f"{path}/":
            raise SpecError(f"file path {path!r} must be absolute, without '..'", field="initial_state.files")
        if not isinstance(spec, dict) or len(spec) != 1:
            raise SpecError("a file spec is an object with exactly one of text, bytes_b64, ods, odt, png",
                            field=where)
        (kind, body), = spec.items()
        try:
            out[path] = _BUILDERS[kind](body)
        except KeyError:
            if kind in _BUILDERS:
                raise
            raise SpecError(f"unknown file kind {kind!r}; known: {', '.join(_BUILDERS)}", field=where) from None
        except (TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, SpecError):
                raise
            raise SpecError(f"bad {kind} spec: {exc}", field=f"{where}.{kind}") from None
    return out


def _text(body: Any) -> bytes:
    if not isinstance(body, str):
        raise TypeError("text must be a string")
    return body.encode("utf-8")


def _bytes_b64(body: Any) -> bytes:
    if not isinstance(body, str):
        raise TypeError("bytes_b64 must be a base64 string")
    return base64.b64decode(body, validate=True)


def _package(kind: str, content: str, styles: str) -> bytes:
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<manifest:manifest xmlns:manifest="{NS["manifest"]}" manifest:version="1.2">'
        f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{MIME[kind]}"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>'
        '</manifest:manifest>')
    meta = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<office:document-meta {_XMLNS} office:version="1.2"><office:meta>'
            '<meta:generator>envgym</meta:generator></office:meta></office:document-meta>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, method in (("mimetype", MIME[kind], zipfile.ZIP_STORED),
                                   ("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED),
                                   ("meta.xml", meta, zipfile.ZIP_DEFLATED),
                                   ("styles.xml", styles, zipfile.ZIP_DEFLATED),
                                   ("content.xml", content, zipfile.ZIP_DEFLATED)):
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = method
            info.external_attr = 0o644 << 16
            info.create_system = 3
            archive.writestr(info, data.encode("utf-8"))
    return buffer.getvalue()


_STYLES_ODS = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    f'<office:document-styles {_XMLNS} office:version="1.2"><office:styles>'
    '<style:default-style style:family="table-cell"><style:text-properties fo:font-size="10pt"/></style:default-style>'
    '<style:style style:name="Default" style:family="table-cell"/>'
    '</office:styles></office:document-styles>')

_STYLES_ODT = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    f'<office:document-styles {_XMLNS} office:version="1.2"><office:styles>'
    '<style:default-style style:family="paragraph"><style:paragraph-properties fo:text-align="start"/>'
    '<style:text-properties fo:font-size="12pt" fo:font-weight="normal" fo:font-style="normal"/>'
    '</style:default-style>'
    '<style:style style:name="Standard" style:family="paragraph" style:class="text"/>'
    '</office:styles></office:document-styles>')

_CELL_REF = re.compile(
    r"(?<![A-Za-z0-9_.$\]])(?:(?P<sheet>[A-Za-z_][A-Za-z0-9_]*)[!.])?"
    r"(?P<a>\$?[A-Za-z]{1,3}\$?\d+)(?::(?P<b>\$?[A-Za-z]{1,3}\$?\d+))?(?![A-Za-z0-9_(])")


def formula_to_odf(formula: str) -> str:
    """``=SUM(B2:B5)`` -> ``of:=SUM([.B2:.B5])``: references bracketed, argument commas as semicolons,
    string literals untouched."""
    if not formula.startswith("="):
        raise ValueError(f"a formula starts with '=': {formula!r}")
    parts = re.split(r'("(?:[^"]|"")*")', formula[1:])
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part)
            continue

        def ref(m: re.Match[str]) -> str:
            sheet = m["sheet"] or ""
            a, b = m["a"].upper(), m["b"]
            return f"[{sheet}.{a}:.{b.upper()}]" if b else f"[{sheet}.{a}]"

        out.append(_CELL_REF.sub(ref, part).replace(",", ";"))
    return "of:=" + "".join(out)


_ODF_REF = re.compile(r"\[\$?'?([^\].']*)'?\.(\$?[A-Z]{1,3}\$?\d+)(?::\$?'?([^\].']*)'?\.(\$?[A-Z]{1,3}\$?\d+))?\]")


def formula_from_odf(formula: str) -> str:
    """``of:=SUM([.B2:.B5])`` -> ``=SUM(B2:B5)`` (the inverse of :func:`formula_to_odf`, for comparisons)."""
    body = formula.split(":", 1)[1] if re.match(r"^[a-z]+:", formula) else formula
    body = body.lstrip("=")
    parts = re.split(r'("(?:[^"]|"")*")', body)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part)
            continue

        def ref(m: re.Match[str]) -> str:
            sheet = f"{m[1]}!" if m[1] else ""
            return f"{sheet}{m[2]}:{m[4]}" if m[4] else f"{sheet}{m[2]}"

        out.append(_ODF_REF.sub(ref, part).replace(";", ","))
    return "=" + "".join(out)


def _number(value: float | int) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _ods_cell(value: Any) -> str:
    if value is None:
        return "<table:table-cell/>"
    if isinstance(value, bool):
        text = "TRUE" if value else "FALSE"
        return (f'<table:table-cell office:value-type="boolean" office:boolean-value="{str(value).lower()}">'
                f"<text:p>{text}</text:p></table:table-cell>")
    if isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"cell value {value!r} is not a finite number")
        n = _number(value)
        return f'<table:table-cell office:value-type="float" office:value="{n}"><text:p>{n}</text:p></table:table-cell>'
    if isinstance(value, dict):  # a formula with its cached result, as LibreOffice saves one
        formula, result = value.get("formula"), value.get("value")
        if set(value) != {"formula", "value"} or not isinstance(formula, str) or not isinstance(result, int | float):
            raise ValueError("a cell object is {formula: '=...', value: number}")
        n = _number(result)
        return (f"<table:table-cell table:formula={quoteattr(formula_to_odf(formula))} office:value-type=\"float\" "
                f'office:value="{n}"><text:p>{n}</text:p></table:table-cell>')
    if isinstance(value, str):
        if value.startswith("="):
            return f"<table:table-cell table:formula={quoteattr(formula_to_odf(value))}/>"
        return f'<table:table-cell office:value-type="string"><text:p>{escape(value)}</text:p></table:table-cell>'
    raise TypeError(f"a cell is a number, boolean, string, null or {{formula, value}}, not {type(value).__name__}")


def _ods(body: Any) -> bytes:
    sheets = body.get("sheets") if isinstance(body, dict) else None
    if not isinstance(sheets, list) or not sheets:
        raise ValueError("ods needs 'sheets': a non-empty list of {name, rows}")
    tables = []
    for sheet in sheets:
        if not isinstance(sheet, dict) or not isinstance(sheet.get("name"), str) or not sheet["name"]:
            raise ValueError("every sheet needs a 'name'")
        rows = sheet.get("rows", [])
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise ValueError(f"sheet {sheet['name']!r}: 'rows' must be a list of lists")
        width = max((len(r) for r in rows), default=1) or 1
        xml_rows = "".join("<table:table-row>" + "".join(_ods_cell(v) for v in row) + "</table:table-row>"
                           for row in rows)
        xml_rows = xml_rows or "<table:table-row><table:table-cell/></table:table-row>"
        tables.append(f"<table:table table:name={quoteattr(sheet['name'])}>"
                      f'<table:table-column table:number-columns-repeated="{width}"/>{xml_rows}</table:table>')
    content = ('<?xml version="1.0" encoding="UTF-8"?>\n'
               f'<office:document-content {_XMLNS} office:version="1.2"><office:body><office:spreadsheet>'
               + "".join(tables) + "</office:spreadsheet></office:body></office:document-content>")
    return _package("ods", content, _STYLES_ODS)


_ALIGN_OUT = {"left": "start", "right": "end", "center": "center", "justify": "justify"}


def _odt(body: Any) -> bytes:
    paragraphs = body.get("paragraphs") if isinstance(body, dict) else None
    if not isinstance(paragraphs, list):
        raise ValueError("odt needs 'paragraphs': a list of strings or {text, style}")
    styles: dict[str, str] = {}
    xml_paragraphs = []
    for para in paragraphs:
        if isinstance(para, str):
            para = {"text": para}
        if not isinstance(para, dict) or not isinstance(para.get("text"), str):
            raise ValueError("a paragraph is a string or an object with 'text'")
        style = para.get("style") or {}
        unknown = set(style) - {"bold", "italic", "size", "align", "underline"}
        if unknown:
            raise ValueError(f"unknown paragraph style keys {sorted(unknown)}; known: bold, italic, size, align, "
                             "underline")
        props = []
        if style.get("bold"):
            props.append('fo:font-weight="bold"')
        if style.get("italic"):
            props.append('fo:font-style="italic"')
        if style.get("underline"):
            props.append('style:text-underline-style="solid" style:text-underline-width="auto" '
                         'style:text-underline-color="font-color"')
        if "size" in style:
            if not isinstance(style["size"], int | float) or not 1 <= style["size"] <= 400:
                raise ValueError(f"size must be a number of points, got {style['size']!r}")
            props.append(f'fo:font-size="{_number(style["size"])}pt"')
        align = style.get("align")
        if align is not None and align not in _ALIGN_OUT:
            raise ValueError(f"align must be one of {', '.join(_ALIGN_OUT)}, got {align!r}")
        name = "Standard"
        if props or align:
            definition = ((f'<style:paragraph-properties fo:text-align="{_ALIGN_OUT[align]}"/>' if align else "")
                          + (f"<style:text-properties {' '.join(props)}/>" if props else ""))
            name = styles.setdefault(definition, f"P{len(styles) + 1}")
        xml_paragraphs.append(f'<text:p text:style-name="{name}">{_odt_text(para["text"])}</text:p>')
    automatic = "".join(f'<style:style style:name="{n}" style:family="paragraph" style:parent-style-name="Standard">'
                        f"{d}</style:style>" for d, n in styles.items())
    content = ('<?xml version="1.0" encoding="UTF-8"?>\n'
               f'<office:document-content {_XMLNS} office:version="1.2">'
               f"<office:automatic-styles>{automatic}</office:automatic-styles><office:body><office:text>"
               + "".join(xml_paragraphs) + "</office:text></office:body></office:document-content>")
    return _package("odt", content, _STYLES_ODT)


def _odt_text(text: str) -> str:
    """Escape text for a paragraph: runs of spaces as ``text:s``, tabs and newlines as elements."""
    out = []
    for piece in re.split(r"(\t|\n| {2,})", text):
        if piece == "\t":
            out.append("<text:tab/>")
        elif piece == "\n":
            out.append("<text:line-break/>")
        elif piece.startswith("  "):
            out.append(f' <text:s text:c="{len(piece) - 1}"/>')
        else:
            out.append(escape(piece))
    return "".join(out)


def _colour(value: Any) -> tuple[int, int, int]:
    if not isinstance(value, str) or not re.fullmatch(r"#[0-9a-fA-F]{6}", value):
        raise ValueError(f"a colour is '#rrggbb', got {value!r}")
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def _png(body: Any) -> bytes:
    if not isinstance(body, dict):
        raise TypeError("png must be an object {width, height, fill, rects}")
    width, height = body.get("width"), body.get("height")
    if not all(isinstance(v, int) and 1 <= v <= 4096 for v in (width, height)):
        raise ValueError("png width and height must be integers in 1..4096")
    pixels = [[_colour(body.get("fill", "#ffffff"))] * width for _ in range(height)]
    for rect in body.get("rects", []):
        x, y, w, h, colour = rect
        rgb = _colour(colour)
        for row in pixels[max(0, y):max(0, y + h)]:
            row[max(0, x):max(0, x + w)] = [rgb] * len(row[max(0, x):max(0, x + w)])
    raw = b"".join(b"\0" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


_BUILDERS = {"text": _text, "bytes_b64": _bytes_b64, "ods": _ods, "odt": _odt, "png": _png}


# ---------------------------------------------------------------- reading


def _member(data: bytes, name: str, *, required: bool = True) -> bytes | None:
    if len(data) > MAX_ARCHIVE_BYTES:
        raise FileFormatError(f"archive of {len(data)} bytes is over the {MAX_ARCHIVE_BYTES}-byte cap")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise FileFormatError(f"not an ODF package (zip): {exc}") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise FileFormatError(f"{len(infos)} members, over the {MAX_MEMBERS} cap")
        try:
            info = archive.getinfo(name)
        except KeyError:
            if required:
                raise FileFormatError(f"the package has no {name}") from None
            return None
        if info.file_size > MAX_MEMBER_BYTES:
            raise FileFormatError(f"{name} unpacks to {info.file_size} bytes, over the {MAX_MEMBER_BYTES} cap")
        try:
            with archive.open(info) as stream:
                body = stream.read(MAX_MEMBER_BYTES + 1)
        except (zipfile.BadZipFile, zlib.error, OSError, NotImplementedError, RuntimeError) as exc:
            raise FileFormatError(f"cannot unpack {name}: {exc}") from None
        if len(body) > MAX_MEMBER_BYTES:
            raise FileFormatError(f"{name} unpacks past the {MAX_MEMBER_BYTES}-byte cap")
        return body


def _parse_xml(body: bytes, name: str) -> ET.Element:
    head = body[:4096].upper()
    if b"<!DOCTYPE" in head or b"<!ENTITY" in body.upper():
        raise FileFormatError(f"{name} declares a DTD or entities (refused)")
    try:
        return ET.fromstring(body)
    except ET.ParseError as exc:
        raise FileFormatError(f"{name} is not well-formed XML: {exc}") from None


@dataclass(frozen=True)
class Cell:
    """One spreadsheet cell: ``value`` (float, str, bool or None), its ODF ``type`` (float, percentage,
    currency, string, boolean, date, time, or empty), its ``formula`` in user notation (``=SUM(B2:B5)``)
    or None, and the ``text`` it displays."""

    value: Any = None
    type: str = "empty"
    formula: str | None = None
    text: str = ""


EMPTY = Cell()


@dataclass(frozen=True)
class Sheet:
    name: str
    rows: list[list[Cell]]

    def cell(self, address: str) -> Cell:
        col, row = parse_address(address)
        if row < len(self.rows) and col < len(self.rows[row]):
            return self.rows[row][col]
        return EMPTY

    def values(self) -> list[list[Any]]:
        return [[c.value for c in row] for row in self.rows]


def parse_address(address: str) -> tuple[int, int]:
    """``B6`` -> (column 1, row 5), zero-based; ``$`` signs are ignored."""
    m = re.fullmatch(r"\$?([A-Za-z]{1,3})\$?(\d+)", address.strip())
    if not m or int(m[2]) < 1:
        raise ValueError(f"not a cell address: {address!r} (expected e.g. 'B6')")
    col = 0
    for ch in m[1].upper():
        col = col * 26 + ord(ch) - 64
    return col - 1, int(m[2]) - 1


def _paragraph_text(element: ET.Element) -> str:
    """The text of a ``text:p``/``text:h``: spaces, tabs and line breaks resolved; notes, annotations and
    tracked deletions left out."""
    out: list[str] = []
    skip = {_q("text", "note"), _q("office", "annotation"), _q("text", "tracked-changes"),
            _q("text", "bookmark-ref")}

    def walk(node: ET.Element) -> None:
        if node.text:
            out.append(node.text)
        for child in node:
            tag = child.tag
            if tag == _q("text", "s"):
                out.append(" " * _int(child.get(_q("text", "c")), 1))
            elif tag == _q("text", "tab"):
                out.append("\t")
            elif tag == _q("text", "line-break"):
                out.append("\n")
            elif tag not in skip:
                walk(child)
            if child.tail:
                out.append(child.tail)

    walk(element)
    return "".join(out)


def _int(text: str | None, default: int) -> int:
    try:
        return max(1, int(text)) if text is not None else default
    except ValueError:
        return default


def _cell(element: ET.Element) -> Cell:
    kind = element.get(_q("office", "value-type")) or element.get(_q("calcext", "value-type"))
    formula = element.get(_q("table", "formula"))
    texts = [_paragraph_text(p) for p in element.iter(_q("text", "p"))]
    text = "\n".join(texts)
    if kind in ("float", "percentage", "currency"):
        try:
            value: Any = float(element.get(_q("office", "value"), "nan"))
        except ValueError:
            value = None
    elif kind == "boolean":
        value = element.get(_q("office", "boolean-value"), "").lower() == "true"
    elif kind == "date":
        value = element.get(_q("office", "date-value"))
    elif kind == "time":
        value = element.get(_q("office", "time-value"))
    elif kind == "string":
        value = element.get(_q("office", "string-value"), text)
    elif kind == "error":
        value = text
    else:
        kind, value = ("string", text) if text else ("empty", None)
    if kind == "empty" and formula is None:
        return EMPTY
    return Cell(value=value, type=kind or "empty", formula=formula_from_odf(formula) if formula else None, text=text)


def read_ods(data: bytes) -> list[Sheet]:
    """The sheets of an ODS file, each a list of rows of :class:`Cell` (trailing empty rows and cells cut).

    Raises :class:`FileFormatError` for anything that is not a readable spreadsheet within the caps.
    """
    root = _parse_xml(_member(data, "content.xml") or b"", "content.xml")
    body = root.find(f"{_q('office', 'body')}/{_q('office', 'spreadsheet')}")
    if body is None:
        raise FileFormatError("content.xml holds no spreadsheet")
    sheets = []
    for table in body.iter(_q("table", "table")):
        rows: list[list[Cell]] = []
        pending_rows = 0
        for row in _rows(table):
            cells: list[Cell] = []
            pending_cells = 0
            for cell in row:
                if cell.tag not in (_q("table", "table-cell"), _q("table", "covered-table-cell")):
                    continue
                repeat = _int(cell.get(_q("table", "number-columns-repeated")), 1)
                parsed = _cell(cell)
                if parsed is EMPTY:
                    pending_cells += repeat
                    continue
                if len(cells) + pending_cells + repeat > MAX_COLS:
                    raise FileFormatError(f"a row of sheet {table.get(_q('table', 'name'))!r} is over {MAX_COLS} "
                                          "columns")
                cells.extend([EMPTY] * pending_cells + [parsed] * repeat)
                pending_cells = 0
            repeat = _int(row.get(_q("table", "number-rows-repeated")), 1)
            if not cells:
                pending_rows += repeat
                continue
            if len(rows) + pending_rows + repeat > MAX_ROWS:
                raise FileFormatError(f"sheet {table.get(_q('table', 'name'))!r} is over {MAX_ROWS} rows")
            rows.extend([[] for _ in range(pending_rows)] + [list(cells) for _ in range(repeat)])
            pending_rows = 0
        sheets.append(Sheet(name=table.get(_q("table", "name"), ""), rows=rows))
    return sheets


def _rows(table: ET.Element):
    """The ``table:table-row`` elements of a table, inside header rows and row groups too, in order."""
    for child in table:
        if child.tag == _q("table", "table-row"):
            yield child
        elif child.tag in (_q("table", "table-header-rows"), _q("table", "table-row-group"),
                           _q("table", "table-rows")):
            yield from _rows(child)


@dataclass(frozen=True)
class Paragraph:
    """One paragraph (or heading) of a text document with its resolved formatting: ``bold``/``italic``/
    ``underline`` hold when every visible character has them; ``size`` (points) is the size of every
    visible character, or None when sizes are mixed; ``align`` is left, right, center or justify."""

    text: str
    bold: bool = False
    italic: bool = False
    underline: bool = False
    size: float | None = None
    align: str = "left"
    style: str = ""
    heading: int | None = None


_ALIGN_IN = {"start": "left", "left": "left", "end": "right", "right": "right", "center": "center",
             "justify": "justify"}


class _Styles:
    """Paragraph and text styles of a document, with inheritance (automatic -> named -> default)."""

    def __init__(self, roots: list[ET.Element]) -> None:
        self.styles: dict[tuple[str, str], ET.Element] = {}
        self.defaults: dict[str, ET.Element] = {}
        for root in roots:
            for element in root.iter(_q("style", "style")):
                key = (element.get(_q("style", "family"), ""), element.get(_q("style", "name"), ""))
                self.styles[key] = element
            for element in root.iter(_q("style", "default-style")):
                self.defaults[element.get(_q("style", "family"), "")] = element

    def props(self, family: str, name: str | None) -> dict[str, str]:
        """Resolved properties (text and paragraph attributes by local name) of a style and its parents."""
        chain: list[ET.Element] = []
        seen: set[str] = set()
        while name and name not in seen and len(chain) < 32:
            seen.add(name)
            element = self.styles.get((family, name))
            if element is None:
                break
            chain.append(element)
            name = element.get(_q("style", "parent-style-name"))
        if family in self.defaults:
            chain.append(self.defaults[family])
        out: dict[str, str] = {}
        for element in reversed(chain):
            for props in element:
                if props.tag in (_q("style", "text-properties"), _q("style", "paragraph-properties")):
                    for attr, value in props.attrib.items():
                        out[attr.split("}", 1)[-1] if attr.startswith(f"{{{NS['fo']}}}") else attr] = value
        return out

    def text_props(self, name: str | None) -> dict[str, str]:
        own = self.props("text", name)
        return {k: v for k, v in own.items() if k in ("font-weight", "font-style", "font-size", _UNDERLINE)}


_UNDERLINE = _q("style", "text-underline-style")


def _size(value: str | None, base: float | None) -> float | None:
    if value is None:
        return base
    if value.endswith("pt"):
        try:
            return float(value[:-2])
        except ValueError:
            return base
    if value.endswith("%") and base is not None:
        try:
            return round(base * float(value[:-1]) / 100, 2)
        except ValueError:
            return base
    return base


def _runs(element: ET.Element, props: dict[str, str], styles: _Styles) -> list[tuple[str, dict[str, str]]]:
    runs: list[tuple[str, dict[str, str]]] = []
    skip = {_q("text", "note"), _q("office", "annotation"), _q("text", "tracked-changes")}

    def walk(node: ET.Element, current: dict[str, str]) -> None:
        if node.text:
            runs.append((node.text, current))
        for child in node:
            if child.tag == _q("text", "s"):
                runs.append((" " * _int(child.get(_q("text", "c")), 1), current))
            elif child.tag == _q("text", "tab"):
                runs.append(("\t", current))
            elif child.tag == _q("text", "line-break"):
                runs.append(("\n", current))
            elif child.tag not in skip:
                name = child.get(_q("text", "style-name"))
                walk(child, {**current, **styles.text_props(name)} if name and child.tag == _q("text", "span")
                     else current)
            if child.tail:
                runs.append((child.tail, current))

    walk(element, props)
    return runs


def read_odt(data: bytes) -> list[Paragraph]:
    """The paragraphs and headings of an ODT file in order (inside lists, sections and tables too), with
    formatting resolved through automatic styles, their parents and spans."""
    content = _parse_xml(_member(data, "content.xml") or b"", "content.xml")
    styles_xml = _member(data, "styles.xml", required=False)
    roots = [content] + ([_parse_xml(styles_xml, "styles.xml")] if styles_xml else [])
    styles = _Styles(roots)
    body = content.find(f"{_q('office', 'body')}/{_q('office', 'text')}")
    if body is None:
        raise FileFormatError("content.xml holds no text document")
    out: list[Paragraph] = []
    skip = {_q("text", "tracked-changes"), _q("office", "annotation"), _q("text", "note"),
            _q("text", "sequence-decls"), _q("office", "forms")}

    def walk(node: ET.Element) -> None:
        for child in node:
            if child.tag in (_q("text", "p"), _q("text", "h")):
                out.append(_paragraph(child, styles))
            elif child.tag not in skip:
                walk(child)

    walk(body)
    return out


def _paragraph(element: ET.Element, styles: _Styles) -> Paragraph:
    name = element.get(_q("text", "style-name"))
    props = styles.props("paragraph", name)
    runs = _runs(element, props, styles)
    text = "".join(t for t, _ in runs)
    visible = [(t, p) for t, p in runs if t.strip()]
    base = _size(props.get("font-size"), None)

    def every(test) -> bool:
        return bool(visible) and all(test(p) for _, p in visible)

    sizes = {_size(p.get("font-size"), base) for _, p in visible} or {base}

    def weight(p: dict[str, str]) -> bool:
        return p.get("font-weight", "normal") in ("bold", "600", "700", "800", "900")

    level = element.get(_q("text", "outline-level")) if element.tag == _q("text", "h") else None
    return Paragraph(
        text=text,
        bold=every(weight),
        italic=every(lambda p: p.get("font-style", "normal") in ("italic", "oblique")),
        underline=every(lambda p: p.get(_UNDERLINE, "none") not in ("none", "")),
        size=sizes.pop() if len(sizes) == 1 else None,
        align=_ALIGN_IN.get(props.get("text-align", "start"), "left"),
        style=_display_name(styles, name),
        heading=_int(level, 1) if element.tag == _q("text", "h") else None,
    )


def _display_name(styles: _Styles, name: str | None) -> str:
    """The named (user-visible) paragraph style: an automatic style's parent, ``_20_`` decoded."""
    element = styles.styles.get(("paragraph", name or ""))
    if element is not None and re.fullmatch(r"P\d+", name or ""):
        name = element.get(_q("style", "parent-style-name")) or name
    return (name or "").replace("_20_", " ")


# ---------------------------------------------------------------- plain text and configuration


def read_text(data: bytes) -> str:
    if len(data) > MAX_TEXT_BYTES:
        raise FileFormatError(f"text of {len(data)} bytes is over the {MAX_TEXT_BYTES}-byte cap")
    return data.decode("utf-8", errors="replace")


def read_ini(data: bytes) -> dict[str, dict[str, str]]:
    """Sections of an ini file (keys as written, case kept; no interpolation; keys before any section
    under ``""``)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False, allow_no_value=True,
                                       default_section="\0none")
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    text = read_text(data)
    try:
        parser.read_string(text if re.match(r"\s*\[", text) or not text.strip() else "[\0top]\n" + text)
    except configparser.Error as exc:
        raise FileFormatError(f"not an ini file: {exc}".splitlines()[0]) from None
    return {("" if s == "\0top" else s): dict(parser.items(s, raw=True)) for s in parser.sections()}


def read_json(data: bytes) -> Any:
    try:
        return json.loads(read_text(data))
    except json.JSONDecodeError as exc:
        raise FileFormatError(f"not JSON: {exc}") from None


def read_kv(data: bytes) -> dict[str, str]:
    """``key=value`` (or ``key: value``, ``key value``) lines; ``#``/``;`` comments and blank lines skipped;
    the last occurrence of a key wins."""
    out: dict[str, str] = {}
    for line in read_text(data).splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        m = re.match(r"([^=:\s]+)\s*(?:[=:]\s*|\s+)(.*)$", line)
        if m:
            out[m[1]] = m[2].strip().strip('"')
        else:
            out[line] = ""
    return out
