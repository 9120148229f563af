"""The bundled verifier kinds, each a plug-in package, and the grading assets (judge prompt templates).

Each kind is a subpackage: its spec model (what a task file's ``{"type": ...}`` entry validates against) and
its check (``async (spec, ctx) -> Verdict``), with the assets it needs beside it:

- ``tests`` (:mod:`envgym_verifiers.tests`): a repository's hidden tests run on the agent's patch in a fresh
  sandbox (SWE-bench's FAIL_TO_PASS / PASS_TO_PASS), with the in-sandbox runner ``tests/_runner.py``;
- ``timed_write`` (:mod:`envgym_verifiers.timed_write`): a timed episode's writes in causal order and time
  windows, graded on the :class:`~envgym.plugin.timed.Timeline` a timed env reports.

:func:`register_all` is this package's ``envgym.environments`` entry point (``verifiers``): it registers every
kind by reference, exactly as a third-party package would, so nothing here is imported until a task names
the kind. The kernel keeps only the generic kinds (``write_action``, ``answer``, ``rubric``, ``all_of``,
``any_of``; :mod:`envgym.verify`). The ``desktop``, ``bfcl`` and ``game_score`` kinds are still registered
by their families (``envgym_gui.verify``, ``envgym_bfcl.verify``, ``envgym_textgames.game``), whose code
they share (the desktop's file readers and the OSWorld importer, BFCL's data and simulator instances, the
game table). ``judge/`` holds the LLM judge's prompt templates (data, read by the ``rubric`` kind's
``llm_judge`` check).
"""

from __future__ import annotations

__all__ = ["KINDS", "register_all"]

KINDS = {
    "tests": ("envgym_verifiers.tests:TestsSpec", "envgym_verifiers.tests:verify_tests"),
    "timed_write": ("envgym_verifiers.timed_write:TimedWriteSpec", "envgym_verifiers.timed_write:verify_timed"),
}
"""Each kind's ``type`` -> its spec model and check, as ``module:ATTR`` references."""


def register_all() -> None:
    """Register every kind of :data:`KINDS` (by reference: imported when a task names it)."""
    from envgym.plugin import register_verifier  # inside: the hook may run while ``import envgym`` is in progress

    for type_name, (model, check) in KINDS.items():
        register_verifier(type_name, model, check)
