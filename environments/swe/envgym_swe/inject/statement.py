"""Problem statements written from the observed failure, the way a user would file the issue.

Input: for each failing FAIL_TO_PASS test, what the reporting plugin of :mod:`envgym_swe.inject.runner`
saw from the test's own frame: the failing statement, the exception type and message (pytest's assertion
text at ``-vv``), the values of the test's local names and the test's source. Output: a title and a body
that say which call misbehaves, what came back (the actual value or exception) and what was expected, with
a short reproduction cut from the test (the lines up to the failing one, plus the imports they use).

Nothing here reads the injected diff: no file names of the library, no line numbers, no operator names.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

MAX_VALUE = 240


def _short(text: str, limit: int = MAX_VALUE) -> str:
    text = " ".join(text.split()) if "\n" not in text.strip() else text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _segment(source: str, node: ast.AST) -> str:
    return ast.get_source_segment(source, node) or ast.unparse(node)


def _calls(node: ast.AST) -> list[str]:
    """Names of the functions called in ``node``, outermost first (``list(partition(...))`` -> list, partition)."""
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Name):
                names.append(func.id)
            elif isinstance(func, ast.Attribute):
                names.append(func.attr)
    return names


_BUILTINS = {"list", "tuple", "dict", "set", "sorted", "str", "repr", "len", "iter", "next", "frozenset", "type",
             "isinstance", "sum", "any", "all", "map", "filter", "zip", "range", "callable", "int", "float", "bool"}


def subject(node: ast.AST, names: Mapping[str, str]) -> str | None:
    """The library function the statement is about: the first called name the library defines.

    ``names`` maps a bare name to how the issue should call it (``partition`` -> ``toolz.partition``).
    """
    called = [n for n in _calls(node) if n not in _BUILTINS]
    for name in called:
        if name in names:
            return names[name]
    return None


def _assert_values(message: str) -> tuple[str, str] | None:
    """(left, right) from pytest's ``assert LEFT == RIGHT`` first message line, when it parses as Python."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    try:
        tree = ast.parse(first)
    except SyntaxError:
        return None
    stmt = tree.body[0] if tree.body else None
    if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
        return ast.unparse(stmt.test.left), ast.unparse(stmt.test.comparators[0])
    return None


def _value_of(expr: str, local_values: Mapping[str, str]) -> str | None:
    return local_values.get(expr.strip())


def reproduction(test_source: str, statement: str, module_imports: Sequence[str]) -> str:
    """The test's lines up to and including the failing statement, dedented, with the imports they use."""
    body = textwrap.dedent(test_source)
    lines = body.splitlines()
    start = 1 if lines and lines[0].lstrip().startswith(("def ", "async def ")) else 0
    while start < len(lines) and lines[start].lstrip().startswith(("@", "def ", "async def ")):
        start += 1
    kept = textwrap.dedent("\n".join(lines[start:])).splitlines()
    first_line = statement.strip().splitlines()[0].strip() if statement.strip() else ""
    end = next((i for i, line in enumerate(kept) if first_line and line.strip() == first_line), None)
    if end is None:
        return ""
    n_stmt_lines = len(statement.strip().splitlines())
    kept = kept[: end + n_stmt_lines]
    kept = [line for line in kept if not line.strip().startswith("#")]
    kept = kept[-14:]
    snippet = "\n".join(kept)
    used = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", snippet))
    imports = [imp for imp in module_imports if _binds(imp) & used]
    return "\n".join([*imports, *([""] if imports else []), snippet]).strip()


def _binds(import_line: str) -> set[str]:
    try:
        node = ast.parse(import_line).body[0]
    except (SyntaxError, IndexError):
        return set()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()


def module_imports(test_file_source: str) -> list[str]:
    """Top-level import statements of a test module, one line each (relative imports and pytest left out)."""
    out = []
    try:
        tree = ast.parse(test_file_source)
    except SyntaxError:
        return out
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            line = ast.unparse(node)
            if "pytest" not in line:
                out.append(line)
    return out


def describe(detail: Mapping[str, Any], names: Mapping[str, str]) -> tuple[str, str, str | None]:
    """(sentence, reproduction statement, subject) for one failing test."""
    statement = str(detail.get("statement") or "")
    exc_type, exc_msg = str(detail.get("exc_type", "")), str(detail.get("exc_msg", ""))
    local_values: Mapping[str, str] = detail.get("locals") or {}
    try:
        node = ast.parse(textwrap.dedent(statement)).body[0] if statement else None
    except (SyntaxError, IndexError):
        node = None
    subj = subject(node, names) if node is not None else None
    if exc_type == "AssertionError" and isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) \
            and len(node.test.ops) == 1 and isinstance(node.test.ops[0], (ast.Eq, ast.Is)):
        src = textwrap.dedent(statement)
        left, right = _segment(src, node.test.left), _segment(src, node.test.comparators[0])
        values = _assert_values(exc_msg)
        actual = _value_of(left, local_values) or (values[0] if values else None)
        expected = _value_of(right, local_values) or (values[1] if values else right)
        if actual is not None:
            if _calls(node.test.left):
                return (f"`{_short(left)}` returns `{_short(actual)}`, but `{_short(expected)}` was expected.",
                        statement, subj)
            return (f"`{_short(left)}` ends up as `{_short(actual)}`, but `{_short(expected)}` was expected.",
                    statement, subj)
    if exc_type == "AssertionError" and isinstance(node, ast.Assert):
        text = _short(textwrap.dedent(statement).removeprefix("assert ").strip())
        how = exc_msg.strip().splitlines()[0] if exc_msg.strip() else ""
        extra = f" (pytest reports: `{_short(how)}`)" if how and how != f"assert {text}" else ""
        return f"The expectation `{text}` does not hold{extra}.", statement, subj
    if exc_type and exc_type != "AssertionError":
        what = _short(textwrap.dedent(statement)) if statement else "the call"
        msg = exc_msg.strip().splitlines()[0] if exc_msg.strip() else ""
        if exc_type == "Failed" and "DID NOT RAISE" in exc_msg:
            return f"`{what}` is expected to raise `{msg.replace('DID NOT RAISE', '').strip()}`, but it returns "\
                   "normally.", statement, subj
        return f"`{what}` raises `{exc_type}{': ' + _short(msg, 160) if msg else ''}` instead of working.", \
            statement, subj
    return f"The check `{_short(statement)}` fails.", statement, subj


def write_statement(failures: Sequence[Mapping[str, Any]], package: str, names: Mapping[str, str],
                    imports: Mapping[str, list[str]], n_failing: int) -> str:
    """The issue text for a bug whose FAIL_TO_PASS tests failed as ``failures`` (details, most useful first).

    ``names`` is the library's public names (see :func:`subject`); ``imports`` maps each detail's ``file`` to
    its test module's import lines.
    """
    sentences, repros, subjects = [], [], []
    for detail in failures[:2]:
        sentence, statement, subj = describe(detail, names)
        repro = reproduction(str(detail.get("test_source", "")), statement, imports.get(str(detail.get("file")), []))
        sentences.append(sentence)
        repros.append(repro)
        if subj:
            subjects.append(subj)
    title = f"Wrong behaviour of `{subjects[0]}`" if subjects else f"Regression in `{package}`"
    parts = [title, "", f"I ran into a problem with `{subjects[0]}`:" if subjects else
             f"Something in `{package}` no longer behaves as it should:", ""]
    for n, (sentence, repro) in enumerate(zip(sentences, repros, strict=True)):
        if n:
            parts += ["", "Another case that looks related:", ""]
        parts.append(sentence)
        if repro:
            parts += ["", "To reproduce:", "", "```python", repro, "```"]
    if n_failing > len(sentences):
        more = n_failing - len(sentences)
        parts += ["", f"({more} more check{'s' if more > 1 else ''} of the test suite fail{'' if more > 1 else 's'} "
                  "the same way.)"]
    parts += ["", "Please fix it so that the expected behaviour above holds."]
    return "\n".join(parts)
