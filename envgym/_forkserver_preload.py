"""Imported by the workers' fork server only (:data:`envgym._forkserver.PRELOAD`), never by envgym itself: what a
run's ``--workers`` processes would each load at their first episodes, loaded once in the server they fork from.

- Every environment plug-in's registrations (the scan of the installed distributions and the import of every
  family's registration module: ~14 ms of each worker's CPU here). c=32, 2 workers, runs=20 ran 1,649 against
  1,673 episodes/s, medians of 10 alternating pairs, and the first record came 12 ms sooner.
- The envs of the run's suites, when the server was started with them (:func:`envgym._forkserver.start`, as
  ``envgym eval`` and :func:`envgym.eval.evaluate` start it): each env id's module, and its class's
  :meth:`~envgym.env.Env.warm` (a tool domain's module and schemas). The ids come from the suites' task files
  (each line's ``env_id``; the parent validates the files as it plans). c=32, 2 workers, runs=20 on the tool
  suites ran 1,783 against 1,878 episodes/s, medians of 8 alternating pairs (each worker's first episodes no
  longer imported the tool env and its two domains).

Whatever fails here is left for the worker, which loads it again and reports the failure as :func:`envgym.make`
does (a plug-in's :class:`~envgym.errors.PluginError`, naming it); the server starts regardless.
"""

from __future__ import annotations

import contextlib
import json
import os

from envgym._forkserver import SUITES_VAR


def _env_ids(suites: list[str]) -> list[str]:
    """The env ids the suites' task files name, in order of first appearance."""
    from envgym._jsonl import decode_line, split_lines
    from envgym.task import suite_files

    found: dict[str, None] = {}
    for suite in suites:
        with contextlib.suppress(Exception):
            for path in suite_files(suite):
                for _, line in split_lines(path.read_bytes()):
                    with contextlib.suppress(Exception):
                        env_id = decode_line(line).get("env_id")
                        if isinstance(env_id, str):
                            found.setdefault(env_id)
    return list(found)


def _warm(suites: list[str]) -> None:
    from envgym.registry import list_envs, load_entry_point, spec

    list_envs()  # loads every plug-in
    import envgym.wrappers  # noqa: F401  (what make() wraps every env in)

    for env_id in _env_ids(suites):
        with contextlib.suppress(Exception):
            registered = spec(env_id)
            factory = load_entry_point(registered.entry_point)
            warm = getattr(factory, "warm", None)
            if callable(warm):
                warm(**registered.kwargs)


with contextlib.suppress(Exception):
    _warm(json.loads(os.environ.get(SUITES_VAR, "[]")))
