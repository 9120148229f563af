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

Reading them back (what the agent's apps wrote) is :mod:`envgym_gui.readers`.
"""

from __future__ import annotations

import base64
import io
import re
import struct
import zipfile
import zlib
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from envgym.plugin import SpecError

__all__ = ["NS", "formula_from_odf", "formula_to_odf", "materialize", "qname"]

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


def qname(prefix: str, name: str) -> str:
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
