"""JSON Lines, read one way everywhere: task files, result records, SWE instances and predictions.

A file is split on ``b"\\n"`` only. ``str.splitlines`` would also split inside valid JSON strings holding
U+2028, U+2029, U+0085 or U+000B/C/1C-1E, which every envgym writer emits raw (``ensure_ascii=False``,
pydantic's JSON), so a file one writer wrote would not be readable by another reader. Each line is
decoded as UTF-8 and parsed as JSON; whatever is wrong with it (bytes that are not UTF-8, bad JSON,
nesting too deep for the parser) is a :class:`LineError` whose message names the problem and the
column, never a ``UnicodeDecodeError`` or ``RecursionError``; callers add the file and the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from envgym.errors import EnvgymError

_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


class LineError(EnvgymError, ValueError):
    """One line of a JSONL file is not UTF-8 JSON; the message says why (the caller names file and line)."""


def split_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` for every line of ``data``, split on ``\\n`` only (a trailing one ends a line)."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    yield from enumerate(lines, start=1)


def decode_line(raw: bytes) -> Any:
    """The JSON value of one raw line; :class:`LineError` when it is not UTF-8 JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise LineError("invalid JSON: nested too deeply to decode") from None
    if _SURROGATE.search(raw):  # valid JSON, but a lone surrogate is no Unicode text: no writer could write it back
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise LineError("a string holds a lone surrogate escape (\\ud800-\\udfff), which is not text") from None
    return value


def depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (a scalar is 0), without recursing: one level at a time
    (a comprehension and C-level ``extend`` per level, 2.3x a stack of (item, level) pairs on the task files)."""
    level, layer = 0, [value]
    while True:
        layer = [item for item in layer if isinstance(item, dict | list)]
        if not layer:
            return level
        level += 1
        below: list[Any] = []
        for item in layer:
            below.extend(item.values() if isinstance(item, dict) else item)
        layer = below
