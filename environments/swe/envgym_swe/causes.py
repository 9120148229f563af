"""Why a test run in a SWE container told nothing: the cause, read from the run's log, and what would fix it.

A test run that ends without the grader's end marker, or finds no test to tell the fix from the bug, used to
say only that (``the test process ended before the grader's end marker (exit code 1)``). :func:`cause`
reads the log the run kept (:attr:`envgym.plugin.tests.TestRun.log_tail`, already stripped of timings and
nonces) for the line that explains it, most telling first:

* an import error (``ModuleNotFoundError: No module named 'idna'``, ``ImportError: cannot import name
  'soft_unicode' from 'markupsafe'``): the image lacks a dependency or has the wrong release of it;
* a failing collection (``ERROR collecting tests/test_x.py``) with the error line under it;
* pytest refusing its own command line (``error: unrecognized arguments``, ``ERROR: usage``): the ``test_cmd``;
* pytest's internal error, a syntax error, an interpreter that died;
* otherwise the last lines of the log.

:func:`hint` names what would fix or show more: the instance field (``requirements``, ``test_cmd``) or ``-v``.
Nothing here runs anything; the module is pure text, so the same log always gives the same words.
"""

from __future__ import annotations

import re

TAIL_LINES = 6
"""How many of the log's last lines a cause quotes when no line explains the run."""

_NO_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '?([\w.]+)'?")
_IMPORT = re.compile(r"^(?:E\s+)?((?:ModuleNotFoundError|ImportError): .*)$", re.MULTILINE)
_COLLECTING = re.compile(r"^_* ?ERROR collecting (\S+) ?_*$", re.MULTILINE)
_ERROR_LINE = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
_USAGE = re.compile(r"^(?:ERROR: usage:.*|.*error: (?:unrecognized arguments|argument).*)$", re.MULTILINE)
_INTERNAL = re.compile(r"^INTERNALERROR>.*\b(\w+Error: .*)$", re.MULTILINE)
_FATAL = re.compile(r"^((?:SyntaxError|IndentationError|Fatal Python error|Segmentation fault|Killed)\b.*)$",
                    re.MULTILINE)


def last_lines(log: str, n: int = TAIL_LINES) -> str:
    """The log's last ``n`` non-blank lines, joined by `` | `` (one line for a report)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return " | ".join(lines[-n:])


def cause(log: str) -> str | None:
    """The line of ``log`` that explains a run that told nothing (see the module docstring); None for an empty log."""
    match = _IMPORT.search(log)
    if match:
        where = _COLLECTING.search(log)
        return f"import error{f' collecting {where.group(1)}' if where else ''}: {match.group(1).strip()}"
    where = _COLLECTING.search(log)
    if where:
        error = _ERROR_LINE.search(log, where.end())
        return f"collecting {where.group(1)} failed" + (f": {error.group(1).strip()}" if error else "")
    for pattern, label in ((_USAGE, "pytest refused its command line"), (_INTERNAL, "pytest's internal error"),
                           (_FATAL, "the interpreter failed")):
        match = pattern.search(log)
        if match:
            return f"{label}: {match.group(match.lastindex or 0).strip()}"
    tail = last_lines(log)
    return f"the log ends: {tail}" if tail else None


def hint(log: str) -> str:
    """What would fix the run, or show more of it (see the module docstring)."""
    missing = _NO_MODULE.search(log)
    if missing:
        top = missing.group(1).split(".")[0]
        return (f"hint: the image lacks `{top}`: add it to the instance's `requirements` "
                "(or rerun with -v to see the image build)")
    if _IMPORT.search(log):
        return ("hint: an installed release does not fit this commit: pin it in the instance's `requirements` "
                "(rerun with -v for the whole log)")
    if _USAGE.search(log):
        return "hint: fix the instance's `test_cmd` (its pytest options)"
    return "hint: rerun with -v for each run's log"


def explain(reason: str, log: str) -> str:
    """``reason`` followed by the cause read from ``log`` and a hint, when the log says anything."""
    found = cause(log)
    return f"{reason}: {found}; {hint(log)}" if found else f"{reason}; {hint(log)}"
