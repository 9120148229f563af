"""Imported by the workers' fork server only (:data:`envgym.forkserver.PRELOAD`), never by envgym itself: every
environment plug-in's registrations, loaded once in the server, so that each ``--workers`` process starts with
them instead of loading them at its first ``make()`` (the scan of the installed distributions and the import of
every family's registration module: ~14 ms of each worker's CPU here; c=32, 2 workers, runs=20
ran 1,649 against 1,673 episodes/s, medians of 10 alternating pairs, and its first record came 12 ms sooner).

A plug-in that fails to load here is left for the worker, which loads it again and reports the failure as
:func:`envgym.make` does (:class:`~envgym.errors.PluginError`, naming the plug-in); the server starts regardless.
"""

from __future__ import annotations

import contextlib

with contextlib.suppress(Exception):
    from envgym.registry import list_envs

    list_envs()  # loads every plug-in
    import envgym.wrappers  # noqa: F401  (what make() wraps every env in)
