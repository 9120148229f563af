"""Reading back what the agent's apps wrote: LibreOffice documents, text and config files, for the verifiers.

The readers (:func:`read_ods`, :func:`read_odt`, :func:`read_ini`, :func:`read_json`, :func:`read_kv`)
take bytes the agent's apps wrote, so they trust nothing: archive and member sizes are capped (a zip bomb
raises :class:`FileFormatError`, as does a DTD or entity declaration, a missing member or bad XML), and
ODF structure as LibreOffice writes it is understood (repeated rows and columns, covered cells, row
groups, ``text:s``/``text:tab``/``text:line-break``, spans, automatic styles inheriting from named ones,
tracked changes and notes left out of the text).
"""

from __future__ import annotations

import configparser
import io
import json
import re
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree as ET

from envgym.plugin import EnvgymError
from envgym_gui.files import NS, formula_from_odf, qname

__all__ = ["Cell", "FileFormatError", "Paragraph", "Sheet", "parse_address", "read_ini", "read_json", "read_kv",
           "read_ods", "read_odt", "read_text"]

MAX_ARCHIVE_BYTES = 32 * 1024 * 1024
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_MEMBERS = 2000
MAX_ROWS = 10_000
MAX_COLS = 1_024
MAX_TEXT_BYTES = 16 * 1024 * 1024


class FileFormatError(EnvgymError, ValueError):
    """Bytes that are not the document they claim to be (or exceed a size cap). Verifiers report it as
    what the agent left, never as a crash."""


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
    skip = {qname("text", "note"), qname("office", "annotation"), qname("text", "tracked-changes"),
            qname("text", "bookmark-ref")}

    def walk(node: ET.Element) -> None:
        if node.text:
            out.append(node.text)
        for child in node:
            tag = child.tag
            if tag == qname("text", "s"):
                out.append(" " * _int(child.get(qname("text", "c")), 1))
            elif tag == qname("text", "tab"):
                out.append("\t")
            elif tag == qname("text", "line-break"):
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
    kind = element.get(qname("office", "value-type")) or element.get(qname("calcext", "value-type"))
    formula = element.get(qname("table", "formula"))
    texts = [_paragraph_text(p) for p in element.iter(qname("text", "p"))]
    text = "\n".join(texts)
    if kind in ("float", "percentage", "currency"):
        try:
            value: Any = float(element.get(qname("office", "value"), "nan"))
        except ValueError:
            value = None
    elif kind == "boolean":
        value = element.get(qname("office", "boolean-value"), "").lower() == "true"
    elif kind == "date":
        value = element.get(qname("office", "date-value"))
    elif kind == "time":
        value = element.get(qname("office", "time-value"))
    elif kind == "string":
        value = element.get(qname("office", "string-value"), text)
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
    body = root.find(f"{qname('office', 'body')}/{qname('office', 'spreadsheet')}")
    if body is None:
        raise FileFormatError("content.xml holds no spreadsheet")
    sheets = []
    for table in body.iter(qname("table", "table")):
        rows: list[list[Cell]] = []
        pending_rows = 0
        for row in _rows(table):
            cells: list[Cell] = []
            pending_cells = 0
            for cell in row:
                if cell.tag not in (qname("table", "table-cell"), qname("table", "covered-table-cell")):
                    continue
                repeat = _int(cell.get(qname("table", "number-columns-repeated")), 1)
                parsed = _cell(cell)
                if parsed is EMPTY:
                    pending_cells += repeat
                    continue
                if len(cells) + pending_cells + repeat > MAX_COLS:
                    raise FileFormatError(f"a row of sheet {table.get(qname('table', 'name'))!r} is over {MAX_COLS} "
                                          "columns")
                cells.extend([EMPTY] * pending_cells + [parsed] * repeat)
                pending_cells = 0
            repeat = _int(row.get(qname("table", "number-rows-repeated")), 1)
            if not cells:
                pending_rows += repeat
                continue
            if len(rows) + pending_rows + repeat > MAX_ROWS:
                raise FileFormatError(f"sheet {table.get(qname('table', 'name'))!r} is over {MAX_ROWS} rows")
            rows.extend([[] for _ in range(pending_rows)] + [list(cells) for _ in range(repeat)])
            pending_rows = 0
        sheets.append(Sheet(name=table.get(qname("table", "name"), ""), rows=rows))
    return sheets


def _rows(table: ET.Element):
    """The ``table:table-row`` elements of a table, inside header rows and row groups too, in order."""
    for child in table:
        if child.tag == qname("table", "table-row"):
            yield child
        elif child.tag in (qname("table", "table-header-rows"), qname("table", "table-row-group"),
                           qname("table", "table-rows")):
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
            for element in root.iter(qname("style", "style")):
                key = (element.get(qname("style", "family"), ""), element.get(qname("style", "name"), ""))
                self.styles[key] = element
            for element in root.iter(qname("style", "default-style")):
                self.defaults[element.get(qname("style", "family"), "")] = element

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
            name = element.get(qname("style", "parent-style-name"))
        if family in self.defaults:
            chain.append(self.defaults[family])
        out: dict[str, str] = {}
        for element in reversed(chain):
            for props in element:
                if props.tag in (qname("style", "text-properties"), qname("style", "paragraph-properties")):
                    for attr, value in props.attrib.items():
                        out[attr.split("}", 1)[-1] if attr.startswith(f"{{{NS['fo']}}}") else attr] = value
        return out

    def text_props(self, name: str | None) -> dict[str, str]:
        own = self.props("text", name)
        return {k: v for k, v in own.items() if k in ("font-weight", "font-style", "font-size", _UNDERLINE)}


_UNDERLINE = qname("style", "text-underline-style")


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
    skip = {qname("text", "note"), qname("office", "annotation"), qname("text", "tracked-changes")}

    def walk(node: ET.Element, current: dict[str, str]) -> None:
        if node.text:
            runs.append((node.text, current))
        for child in node:
            if child.tag == qname("text", "s"):
                runs.append((" " * _int(child.get(qname("text", "c")), 1), current))
            elif child.tag == qname("text", "tab"):
                runs.append(("\t", current))
            elif child.tag == qname("text", "line-break"):
                runs.append(("\n", current))
            elif child.tag not in skip:
                name = child.get(qname("text", "style-name"))
                walk(child, {**current, **styles.text_props(name)} if name and child.tag == qname("text", "span")
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
    body = content.find(f"{qname('office', 'body')}/{qname('office', 'text')}")
    if body is None:
        raise FileFormatError("content.xml holds no text document")
    out: list[Paragraph] = []
    skip = {qname("text", "tracked-changes"), qname("office", "annotation"), qname("text", "note"),
            qname("text", "sequence-decls"), qname("office", "forms")}

    def walk(node: ET.Element) -> None:
        for child in node:
            if child.tag in (qname("text", "p"), qname("text", "h")):
                out.append(_paragraph(child, styles))
            elif child.tag not in skip:
                walk(child)

    walk(body)
    return out


def _paragraph(element: ET.Element, styles: _Styles) -> Paragraph:
    name = element.get(qname("text", "style-name"))
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

    level = element.get(qname("text", "outline-level")) if element.tag == qname("text", "h") else None
    return Paragraph(
        text=text,
        bold=every(weight),
        italic=every(lambda p: p.get("font-style", "normal") in ("italic", "oblique")),
        underline=every(lambda p: p.get(_UNDERLINE, "none") not in ("none", "")),
        size=sizes.pop() if len(sizes) == 1 else None,
        align=_ALIGN_IN.get(props.get("text-align", "start"), "left"),
        style=_display_name(styles, name),
        heading=_int(level, 1) if element.tag == qname("text", "h") else None,
    )


def _display_name(styles: _Styles, name: str | None) -> str:
    """The named (user-visible) paragraph style: an automatic style's parent, ``_20_`` decoded."""
    element = styles.styles.get(("paragraph", name or ""))
    if element is not None and re.fullmatch(r"P\d+", name or ""):
        name = element.get(qname("style", "parent-style-name")) or name
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
