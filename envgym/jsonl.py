"""Deprecated alias of :mod:`envgym._jsonl` (made private in 0.2: not part of the public API, see
``envgym.plugin`` and docs/stability.md; this module goes in 0.3).

Importing it warns; so does every name read from it, which is then the object of :mod:`envgym._jsonl`.
"""

from envgym._deprecation import moved_module

__deprecated_alias__ = True  # the warnings point past this module, at the code that imports it
__getattr__, __dir__ = moved_module(
    __name__, "envgym._jsonl", ("LineError", "decode_line", "depth", "split_lines",),
    since="0.2", removal="0.3")
