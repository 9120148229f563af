"""Result records, exporters and JSONL, for a family that reads runs or writes its own export format (part of
the plug-in surface).

Covered by Semantic Versioning like all of :mod:`envgym.plugin` (see ``CHANGELOG.md``).

- records: :class:`ResultRecord` (one graded episode), :func:`read_jsonl` (a run's lines, a torn tail
  repaired on request), :class:`JsonlWriter` (append-only, fsync'd);
- exporters (the ``envgym.exporters`` entry-point group): the :class:`Exporter` protocol and the
  :class:`ExportContext` it is opened with;
- JSONL input: :func:`split_lines`, :func:`decode_line` and its :class:`LineError`.
"""

from __future__ import annotations

from envgym._jsonl import LineError, decode_line, split_lines
from envgym.export import ExportContext, Exporter
from envgym.record import JsonlWriter, ResultRecord, read_jsonl

__all__ = [
    "ExportContext",
    "Exporter",
    "JsonlWriter",
    "LineError",
    "ResultRecord",
    "decode_line",
    "read_jsonl",
    "split_lines",
]
