"""Deprecated alias of :mod:`envgym_verifiers.timed_write`, the ``timed_write`` verifier kind (moved in 0.2; this
module goes in 0.3).

Importing it warns; so does every name read from it, which is then the object of
:mod:`envgym_verifiers.timed_write` (a family reads :class:`TimedWriteSpec` and :class:`TimedVerifyContext`
from :mod:`envgym.plugin.timed`).
"""

from envgym._deprecation import moved_module

__deprecated_alias__ = True  # the warnings point past this module, at the code that imports it
__getattr__, __dir__ = moved_module(
    __name__, "envgym_verifiers.timed_write",
    ("ForbiddenCall", "StateCheck", "TimeRef", "TimedCallSpec", "TimedVerifyContext", "TimedWriteSpec", "verify_timed"),
    since="0.2", removal="0.3")
