"""The fork server that ``--workers`` processes start from, started as early as a caller knows it will want one.

A run's worker processes (:mod:`envgym._eval_workers`) fork from multiprocessing's fork server, a fresh
interpreter that imports what a worker runs once (:data:`PRELOAD`, ~0.4 s), so that no worker imports it
again. :func:`start` starts that server in a thread and returns at once: ``envgym eval --workers N`` calls it
before its own imports and its check of the run's plan, and :func:`envgym.eval.evaluate` as it begins (a
no-op when the server runs already), so the server's imports overlap the caller's instead of delaying the
first worker. This module imports nothing of envgym, so calling it first costs the caller nothing.

A server that fails to start here is started again (and its error raised) by the first worker's start.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterable

__all__ = ["PRELOAD", "cpus", "start"]

PRELOAD = ("envgym._eval_workers", "envgym.eval", "envgym._eval_records", "envgym.agents", "envgym.cli",
           "envgym._forkserver_preload")
"""What every worker imports, whatever its envs: the worker loop, the run's env maker and records, the agent
factories, the ``envgym`` command's module (a worker imports its parent's main script, which for
``envgym eval`` is the console script importing :mod:`envgym.cli`), and every environment plug-in's
registrations (:mod:`envgym._forkserver_preload`)."""

def cpus() -> int:
    """The CPUs this process may run on (what ``--workers auto`` means)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


_lock = threading.Lock()
_thread: threading.Thread | None = None


SUITES_VAR = "ENVGYM_FORKSERVER_SUITES"
"""The environment variable that tells the starting server the run's suites (a JSON list), for
:mod:`envgym._forkserver_preload`; set only while the server is being started."""


def start(suites: Iterable[str] = ()) -> None:
    """Start the fork server in a thread (see the module docstring); a no-op where there is no ``forkserver``
    start method, it was started already, or this is a worker process starting (importing its parent's main
    script). ``suites`` (names or paths, as ``envgym eval --suite`` takes them): the run's, whose envs the
    server warms (:mod:`envgym._forkserver_preload`)."""
    global _thread
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        return  # a worker importing its parent's main script, which calls this: the parent's server serves
    with _lock:
        if _thread is not None:
            return
        from multiprocessing import forkserver

        multiprocessing.get_context("forkserver").set_forkserver_preload(list(PRELOAD))
        suites = [str(s) for s in suites]
        if suites:
            import json

            os.environ[SUITES_VAR] = json.dumps(suites)  # the server inherits it as it is spawned

        def run() -> None:
            try:
                forkserver.ensure_running()
            finally:
                os.environ.pop(SUITES_VAR, None)  # spawned (or failed): no other process is told

        _thread = threading.Thread(target=run, name="envgym-fork-server", daemon=True)
        _thread.start()
