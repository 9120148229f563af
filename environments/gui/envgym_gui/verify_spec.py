"""The ``desktop`` verifier's spec (:class:`DesktopSpec`): its getters, metrics and checks, as data. Grading them is
:mod:`envgym_gui.verify` (which also exports these names); the format is described there."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from envgym.plugin import FrozenModel
from envgym_gui.osworld.grade import OsworldEval
from envgym_gui.readers import parse_address

# ---------------------------------------------------------------- getters


class _Path(FrozenModel):
    path: str = Field(pattern=r"^/")
    """Absolute path inside the desktop container."""


class FileText(_Path):
    """The file's text (UTF-8); None when absent."""

    kind: Literal["file_text"] = "file_text"


class FileExists(_Path):
    """True when the path is a file (or folder), else False."""

    kind: Literal["file_exists"] = "file_exists"


class FileAbsent(_Path):
    """True when nothing is at the path."""

    kind: Literal["file_absent"] = "file_absent"


class DirListing(_Path):
    """The folder's entry names, sorted; hidden ones (``.~lock…`` files of open documents) left out unless
    ``hidden``."""

    kind: Literal["dir_listing"] = "dir_listing"
    hidden: bool = False


class _Sheet(_Path):
    sheet: str | int = 0
    """Sheet name, or its index (0 = first)."""


class OdsCell(_Sheet):
    """One cell: its ``value`` (number, text, boolean; None when empty), its ``formula`` in user notation
    (``=SUM(B2:B5)``; None without one), or the ``text`` it shows."""

    kind: Literal["ods_cell"] = "ods_cell"
    cell: str
    field: Literal["value", "formula", "text"] = "value"

    @field_validator("cell")
    @classmethod
    def _address(cls, value: str) -> str:
        parse_address(value)
        return value


class OdsTable(_Sheet):
    """A range (``A1:C5``) or, without one, the whole used area, as rows of values."""

    kind: Literal["ods_table"] = "ods_table"
    range: str | None = None

    @field_validator("range")
    @classmethod
    def _range(cls, value: str | None) -> str | None:
        if value is not None:
            start, sep, end = value.partition(":")
            if not sep:
                raise ValueError(f"a range is like 'A1:C5', got {value!r}")
            parse_address(start), parse_address(end)
        return value


class OdtText(_Path):
    """The document's paragraphs joined by newlines."""

    kind: Literal["odt_text"] = "odt_text"


class OdtParagraphs(_Path):
    """The document's paragraph texts, as a list."""

    kind: Literal["odt_paragraphs"] = "odt_paragraphs"
    skip_empty: bool = True


class OdtParagraph(_Path):
    """One paragraph, the first whose text contains ``containing`` (or the one at ``index``, empty
    paragraphs not counted): its ``text``, ``bold``, ``italic``, ``underline``, ``size`` (points), ``align``
    (left/right/center/justify), ``style`` (the named paragraph style) or ``heading`` (outline level)."""

    kind: Literal["odt_paragraph"] = "odt_paragraph"
    containing: str | None = None
    index: int | None = None
    field: Literal["text", "bold", "italic", "underline", "size", "align", "style", "heading"] = "text"

    @model_validator(mode="after")
    def _one_selector(self) -> OdtParagraph:
        if (self.containing is None) == (self.index is None):
            raise ValueError("odt_paragraph needs exactly one of 'containing' and 'index'")
        return self


class ConfigKey(_Path):
    """A configuration value: ``ini`` (``section`` + ``key``; keys before any section are in section
    ``""``), ``json`` (``key`` a dotted path, list indexes as numbers) or ``kv`` (``key=value`` lines)."""

    kind: Literal["config_key"] = "config_key"
    format: Literal["ini", "json", "kv"]
    key: str
    section: str | None = None

    @model_validator(mode="after")
    def _section(self) -> ConfigKey:
        if (self.format == "ini") != (self.section is not None):
            raise ValueError("config_key: 'section' is required for ini and only for ini")
        return self


class WindowTitle(FrozenModel):
    """The focused window's title (None when no window has the focus)."""

    kind: Literal["window_title"] = "window_title"


class WindowTitles(FrozenModel):
    """Every top-level window's title."""

    kind: Literal["window_titles"] = "window_titles"


class Clipboard(FrozenModel):
    """The clipboard's text."""

    kind: Literal["clipboard"] = "clipboard"


class Answer(FrozenModel):
    """The text the agent ended with (``done(answer=...)``)."""

    kind: Literal["answer"] = "answer"


Getter = Annotated[
    FileText | FileExists | FileAbsent | DirListing | OdsCell | OdsTable | OdtText | OdtParagraphs | OdtParagraph
    | ConfigKey | WindowTitle | WindowTitles | Clipboard | Answer,
    Field(discriminator="kind"),
]


# ---------------------------------------------------------------- metrics


class Exact(FrozenModel):
    """Equal to ``expected`` (strings whitespace-trimmed, and case-folded with ``ignore_case``; a number
    equals the same number written as a string)."""

    kind: Literal["exact"] = "exact"
    expected: Any
    ignore_case: bool = False


class Contains(FrozenModel):
    """``expected`` is a substring of the text (or an item of the list) got."""

    kind: Literal["contains"] = "contains"
    expected: str
    ignore_case: bool = False


class Excludes(FrozenModel):
    """``expected`` is not in the text or list got (an absent file passes: it holds nothing)."""

    kind: Literal["excludes"] = "excludes"
    expected: str
    ignore_case: bool = False


class Regex(FrozenModel):
    """``pattern`` matches somewhere in the text got (``re.search``; anchor it to match the whole)."""

    kind: Literal["regex"] = "regex"
    pattern: str
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regex {value!r}: {exc}") from None
        return value


class Numeric(FrozenModel):
    """A number within ``tolerance`` of ``expected``: the value got, or a number in the text got (a text
    holding more than 3 different numbers fails: hedging)."""

    kind: Literal["numeric"] = "numeric"
    expected: float
    tolerance: float = Field(default=1e-6, ge=0)


class TableEqual(FrozenModel):
    """Rows equal cell by cell (trailing empty rows and cells ignored; numbers within ``tolerance``; a
    number equals its string form)."""

    kind: Literal["table_equal"] = "table_equal"
    expected: list[list[Any]]
    ignore_case: bool = False
    ignore_whitespace: bool = False
    tolerance: float = Field(default=1e-6, ge=0)


class IncludeAll(FrozenModel):
    """Every item of ``expected`` is in the text (substring) or list (item) got."""

    kind: Literal["include_all"] = "include_all"
    expected: list[str] = Field(min_length=1)
    ignore_case: bool = False


class ExcludeAny(FrozenModel):
    """No item of ``expected`` is in the text or list got."""

    kind: Literal["exclude_any"] = "exclude_any"
    expected: list[str] = Field(min_length=1)
    ignore_case: bool = False


Metric = Annotated[Exact | Contains | Excludes | Regex | Numeric | TableEqual | IncludeAll | ExcludeAny,
                   Field(discriminator="kind")]


class Check(FrozenModel):
    """One getter and the metric its result must satisfy; ``name`` labels it in the evidence."""

    name: str = ""
    get: Getter
    metric: Metric


class DesktopSpec(FrozenModel):
    """A ``desktop`` verifier (see the module docstring)."""

    type: Literal["desktop"] = "desktop"
    checks: tuple[Check, ...] = ()
    unchanged: tuple[str, ...] = ()
    """Paths that must end as reset left them: the same bytes, or still absent."""
    expect: Literal["done", "fail"] = "done"
    """``fail``: the task is infeasible; only an episode the agent ended with ``fail`` passes."""
    osworld: OsworldEval | None = None
    """An imported OSWorld task's evaluator, scored by OSWorld's own metric functions
    (:mod:`envgym_gui.osworld.grade`); the verdict's score is OSWorld's when every other check passes. Left out
    of the serialised form while None, so the desktop tasks written before it keep their content hash."""

    @model_serializer(mode="wrap")
    def _omit_unset_osworld(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("osworld") is None:
            data.pop("osworld", None)
        return data

    @model_validator(mode="after")
    def _something_to_check(self) -> DesktopSpec:
        if self.expect == "done" and not self.checks and self.osworld is None:
            raise ValueError("a desktop verifier expecting 'done' needs at least one check")
        for path in self.unchanged:
            if not path.startswith("/"):
                raise ValueError(f"unchanged paths are absolute, got {path!r}")
        return self
