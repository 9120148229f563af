"""The verifier kind ``desktop``: OSWorld-style checks on the desktop as the agent left it.

A ``desktop`` verifier is a list of checks, each a *getter* (what to read: a file's text, a spreadsheet
cell, a paragraph's formatting, a configuration key, the focused window's title, the clipboard, the final
answer) and a *metric* (how to compare it: exact, contains, excludes, regex, numeric with a tolerance, table
comparison, include-all / exclude-any lists); plus ``unchanged`` paths (collateral: each must hold the bytes
reset wrote, or still be absent) and ``expect`` (``"done"``: an episode the agent ended with ``fail`` scores
0; ``"fail"``: the task is infeasible and passes only when the agent ended with ``fail``)::

    {"type": "desktop", "expect": "done", "unchanged": ["/home/user/Documents/old.ods"],
     "checks": [{"get": {"kind": "ods_cell", "path": "/home/user/budget.ods", "cell": "B6", "field": "formula"},
                 "metric": {"kind": "regex", "pattern": "^=SUM\\(B2:B5\\)$"}},
                {"get": {"kind": "ods_cell", "path": "/home/user/budget.ods", "cell": "B6"},
                 "metric": {"kind": "numeric", "expected": 3450, "tolerance": 0.01}}]}

The check reads only ``ctx.state`` (a :class:`~envgym_gui.state.DesktopState`: files copied out of the
container, windows and clipboard from the root daemon) and ``ctx.final_answer``; nothing the agent wrote is
run. A file the agent left unreadable (absent, not an ODF package, over a size cap) is a failed check with
the reason in the evidence, never a verifier error. Score: 1 when every check passes, else 0; the evidence
lists each check with what it got and expected (truncated). An imported OSWorld task adds ``osworld``: its
evaluator, scored by OSWorld's own metric functions on files read out of the container
(:mod:`envgym_gui.osworld.grade`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from envgym.plugin import CriterionResult, Verdict, VerifyContext
from envgym_gui.readers import (
    FileFormatError,
    parse_address,
    read_ini,
    read_json,
    read_kv,
    read_ods,
    read_odt,
    read_text,
)
from envgym_gui.verify_spec import (
    Answer,
    Check,
    Clipboard,
    ConfigKey,
    Contains,
    DesktopSpec,
    DirListing,
    Exact,
    ExcludeAny,
    Excludes,
    FileAbsent,
    FileExists,
    FileText,
    IncludeAll,
    Numeric,
    OdsCell,
    OdsTable,
    OdtParagraph,
    OdtParagraphs,
    OdtText,
    Regex,
    TableEqual,
    WindowTitle,
    WindowTitles,
)

__all__ = ["Check", "DesktopSpec", "check_desktop", "register"]

_TRUNCATE = 300
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


# ---------------------------------------------------------------- the check


class _Reader:
    """Reads and parses each file once per grading."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.parsed: dict[tuple[str, str], Any] = {}

    async def parse(self, path: str, how: str) -> Any:
        key = (path, how)
        if key not in self.parsed:
            data = await self.state.read_file(path)
            if data is None:
                raise _Missing(f"{path} is absent")
            try:
                self.parsed[key] = _PARSERS[how](data)
            except FileFormatError as exc:
                raise _Missing(f"{path}: {exc}") from None
        return self.parsed[key]


class _Missing(Exception):  # internal: a value a check reads is absent, caught in this module (a failed check)
    """The getter found nothing to compare (absent or unreadable file, no such sheet/paragraph/key)."""


_PARSERS = {"text": read_text, "ods": read_ods, "odt": read_odt, "ini": read_ini, "json": read_json, "kv": read_kv}


def _sheet(sheets: list, which: str | int) -> Any:
    if isinstance(which, int):
        if 0 <= which < len(sheets):
            return sheets[which]
    else:
        for sheet in sheets:
            if sheet.name == which:
                return sheet
    raise _Missing(f"no sheet {which!r} (sheets: {', '.join(s.name for s in sheets)})")


def _value(value: Any) -> Any:
    """Whole floats as ints, for readable evidence and exact comparisons with integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


async def _get(get: Any, reader: _Reader, ctx: VerifyContext) -> Any:
    state = ctx.state
    match get:
        case FileText():
            return await reader.parse(get.path, "text")
        case FileExists() | FileAbsent():
            present = await state.read_file(get.path) is not None or await state.list_dir(get.path) is not None
            return present if isinstance(get, FileExists) else not present
        case DirListing():
            names = await state.list_dir(get.path)
            if names is None:
                raise _Missing(f"no folder {get.path}")
            return sorted(n for n in names if get.hidden or not n.startswith("."))
        case OdsCell():
            cell = _sheet(await reader.parse(get.path, "ods"), get.sheet).cell(get.cell)
            return _value(getattr(cell, get.field))
        case OdsTable():
            sheet = _sheet(await reader.parse(get.path, "ods"), get.sheet)
            rows = sheet.values()
            if get.range:
                (c0, r0), (c1, r1) = (parse_address(a) for a in get.range.split(":"))
                rows = [[row[c] if c < len(row) else None for c in range(c0, c1 + 1)]
                        for row in (rows[r] if r < len(rows) else [] for r in range(r0, r1 + 1))]
            return [[_value(v) for v in row] for row in rows]
        case OdtText():
            return "\n".join(p.text for p in await reader.parse(get.path, "odt"))
        case OdtParagraphs():
            return [p.text for p in await reader.parse(get.path, "odt") if p.text.strip() or not get.skip_empty]
        case OdtParagraph():
            paragraphs = await reader.parse(get.path, "odt")
            if get.containing is not None:
                found = next((p for p in paragraphs if get.containing in p.text), None)
                if found is None:
                    raise _Missing(f"no paragraph contains {get.containing!r}")
            else:
                visible = [p for p in paragraphs if p.text.strip()]
                if not -len(visible) <= get.index < len(visible):
                    raise _Missing(f"no paragraph {get.index} ({len(visible)} non-empty paragraphs)")
                found = visible[get.index]
            return getattr(found, get.field)
        case ConfigKey():
            data = await reader.parse(get.path, get.format)
            return _config(data, get)
        case WindowTitle():
            focused = [w for w in await state.windows() if w.get("focused")]
            return focused[0].get("title") if focused else None
        case WindowTitles():
            return [w.get("title", "") for w in await state.windows()]
        case Clipboard():
            return await state.clipboard()
        case Answer():
            return ctx.final_answer if ctx.final_answer is not None else getattr(state, "answer", None)
    raise TypeError(f"unknown getter {type(get).__name__}")  # unreachable: the union is closed


def _config(data: Any, get: ConfigKey) -> Any:
    if get.format == "ini":
        section = data.get(get.section)
        if section is None or get.key not in section:
            raise _Missing(f"no key {get.key!r} in section [{get.section}]")
        return section[get.key]
    if get.format == "kv":
        if get.key not in data:
            raise _Missing(f"no key {get.key!r}")
        return data[get.key]
    node = data
    for part in get.key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        else:
            raise _Missing(f"no key {get.key!r} (stopped at {part!r})")
    return node


def _fold(value: Any, ignore_case: bool) -> Any:
    return value.casefold() if ignore_case and isinstance(value, str) else value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _same(got: Any, expected: Any, *, ignore_case: bool, ignore_whitespace: bool = False,
          tolerance: float = 0.0) -> bool:
    if isinstance(expected, bool) or isinstance(got, bool):
        return got is expected or (isinstance(got, str) and got.strip().upper() == str(expected).upper())
    if isinstance(expected, int | float) or isinstance(got, int | float):
        a, b = _number(got), _number(expected)
        return a is not None and b is not None and math.isclose(a, b, abs_tol=tolerance, rel_tol=0)
    if expected is None or got is None:
        return (got in (None, "")) and (expected in (None, ""))
    a, b = str(got).strip(), str(expected).strip()
    if ignore_whitespace:
        a, b = re.sub(r"\s+", "", a), re.sub(r"\s+", "", b)
    return _fold(a, ignore_case) == _fold(b, ignore_case)


def _trim(rows: list[list[Any]]) -> list[list[Any]]:
    rows = [list(r) for r in rows]
    for row in rows:
        while row and row[-1] in (None, ""):
            row.pop()
    while rows and not rows[-1]:
        rows.pop()
    return rows


def _contains(got: Any, item: str, ignore_case: bool) -> bool:
    if isinstance(got, list | tuple):
        return any(_same(g, item, ignore_case=ignore_case) for g in got)
    return _fold(item, ignore_case) in _fold("" if got is None else str(got), ignore_case)


def _measure(metric: Any, got: Any) -> bool:
    match metric:
        case Exact():
            if isinstance(metric.expected, list) or isinstance(got, list):
                return (isinstance(got, list) and isinstance(metric.expected, list) and len(got) == len(metric.expected)
                        and all(_same(g, e, ignore_case=metric.ignore_case)
                                for g, e in zip(got, metric.expected, strict=True)))
            return _same(got, metric.expected, ignore_case=metric.ignore_case)
        case Contains():
            return _contains(got, metric.expected, metric.ignore_case)
        case Excludes():
            return not _contains(got, metric.expected, metric.ignore_case)
        case Regex():
            return (isinstance(got, str | int | float) and not isinstance(got, bool)
                    and re.search(metric.pattern, str(got), re.IGNORECASE if metric.ignore_case else 0) is not None)
        case Numeric():
            number = _number(got)
            if number is None and isinstance(got, str):  # a sentence: one of at most 3 numbers in it
                found = {float(n.replace(",", "")) for n in _NUMBER.findall(got)}
                return 0 < len(found) <= 3 and any(math.isclose(n, metric.expected, abs_tol=metric.tolerance,
                                                                rel_tol=0) for n in found)
            return number is not None and math.isclose(number, metric.expected, abs_tol=metric.tolerance, rel_tol=0)
        case TableEqual():
            if not isinstance(got, list):
                return False
            a, b = _trim(got), _trim(metric.expected)
            return len(a) == len(b) and all(
                len(ra) == len(rb) and all(_same(x, y, ignore_case=metric.ignore_case,
                                                 ignore_whitespace=metric.ignore_whitespace,
                                                 tolerance=metric.tolerance) for x, y in zip(ra, rb, strict=True))
                for ra, rb in zip(a, b, strict=True))
        case IncludeAll():
            return all(_contains(got, item, metric.ignore_case) for item in metric.expected)
        case ExcludeAny():
            return not any(_contains(got, item, metric.ignore_case) for item in metric.expected)
    raise TypeError(f"unknown metric {type(metric).__name__}")  # unreachable: the union is closed


def _short(value: Any) -> Any:
    text = value if isinstance(value, str) else repr(value)
    if len(text) > _TRUNCATE:
        return text[:_TRUNCATE] + f"… ({len(text)} chars)"
    return value if not isinstance(value, str) else text


def _expected(metric: Any) -> Any:
    return metric.pattern if isinstance(metric, Regex) else metric.expected


def _label(check: Check, index: int) -> str:
    if check.name:
        return check.name
    get = check.get
    where = getattr(get, "path", "")
    detail = getattr(get, "cell", None) or getattr(get, "key", None) or getattr(get, "containing", None) or ""
    return f"{index}:{get.kind}({where}{' ' + str(detail) if detail else ''}) {check.metric.kind}"


async def check_desktop(spec: DesktopSpec, ctx: VerifyContext) -> Verdict:
    """Grade one episode on the desktop it left (see the module docstring)."""
    state = ctx.state
    if state is None or not hasattr(state, "read_file"):
        from envgym.plugin import VerifierError

        raise VerifierError("the desktop verifier needs the GUI env's DesktopState in ctx.state")
    final = getattr(state, "final", None)
    results: list[CriterionResult] = []
    evidence: list[dict[str, Any]] = []

    ended_ok = final == "fail" if spec.expect == "fail" else final != "fail"
    detail = f"the agent ended with {final or 'no done/fail'}; expected {spec.expect}"
    results.append(CriterionResult(name="ended", score=float(ended_ok), passed=ended_ok, detail=detail))
    evidence.append({"check": "ended", "got": final, "expected": spec.expect, "passed": ended_ok})

    reader = _Reader(state)
    for index, check in enumerate(spec.checks):
        name = _label(check, index)
        try:
            got = await _get(check.get, reader, ctx)
            passed, note = _measure(check.metric, got), ""
        except _Missing as exc:
            got, note = None, str(exc)
            passed = isinstance(check.metric, Excludes | ExcludeAny) and isinstance(check.get, FileText)
        entry = {"check": name, "got": _short(got), "expected": _short(_expected(check.metric)), "passed": passed}
        if note:
            entry["note"] = note
        evidence.append(entry)
        results.append(CriterionResult(name=name, score=float(passed), passed=passed,
                                       detail=note or f"got {_short(got)!r}"))

    for path in spec.unchanged:
        now = await state.read_file(path)
        before = state.initial_files.get(path)
        same = now == before
        what = ("unchanged" if same else "absent now" if now is None else
                "created" if before is None else f"changed ({len(before)} -> {len(now)} bytes)")
        evidence.append({"check": f"unchanged {path}", "got": what, "expected": "unchanged", "passed": same})
        results.append(CriterionResult(name=f"unchanged {path}", score=float(same), passed=same, detail=what))

    score = 1.0 if all(r.passed for r in results) else 0.0
    if spec.osworld is not None and spec.expect == "done":
        from envgym_gui.osworld.grade import evaluate

        value, metrics = await evaluate(spec.osworld, state)
        if final == "fail":  # OSWorld scores an episode that ends with FAIL 0 before any metric
            value = 0.0
        ok = value >= 1.0
        evidence.append({"check": "osworld", "got": value, "expected": 1.0, "passed": ok, "metrics": metrics})
        results.append(CriterionResult(name="osworld", score=value, passed=ok,
                                       detail=f"OSWorld's {' '.join(spec.osworld.func)}: {value:g}"))
        score = value if score else 0.0
    passed = score >= 1.0
    return Verdict(score=score, passed=passed, criteria=tuple(results), evidence={"desktop": evidence})


def register() -> None:
    """Register the kind ``desktop`` (:func:`envgym_gui.register_verifier`; the family's hook does it too)."""
    from envgym_gui import register_verifier

    register_verifier()
