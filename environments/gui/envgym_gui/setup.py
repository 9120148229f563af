"""Steps a task runs inside its desktop: before the first observation (``initial_state.setup``) and, for
OSWorld's grading-time ``postconfig``, after the agent's last action and before grading reads the files.

``setup`` runs, in order, after the task's files are written and before its app opens; ``postconfig`` runs
when the episode ends (the env calls :func:`run_setup` with ``initial_state.postconfig`` before it hands the
verifier its state). Every step runs inside the task's own container (network none) as the desktop's user,
never on the host; a step that fails is the env's error (:class:`~envgym.plugin.EnvError`), naming it::

    {"type": "execute", "command": ["mkdir", "-p", "/home/user/Desktop/done"]}   argv, or a string with "shell": true
    {"type": "launch", "command": ["mousepad", "/home/user/notes.txt"]}          started detached, not awaited
    {"type": "open", "app": "calc", "path": "/home/user/budget.xlsx"}          an app key of the desktop, on a file
    {"type": "activate", "title": "budget\\.xlsx"}                             focus the first window so titled
    {"type": "key", "keys": "ctrl+s"}                                          xdotool key syntax, to the focus
    {"type": "sleep", "seconds": 1}                                            at most 10 s
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Sequence
from typing import Any

from envgym.plugin import EnvError
from envgym_gui.desktop import HOME, SESSION_ENV, USER

__all__ = ["STEP_TIMEOUT_S", "run_setup"]

STEP_TIMEOUT_S = 60.0
"""How long one ``execute`` step may run."""


def _argv(step: dict[str, Any], where: str) -> list[str]:
    command = step.get("command")
    if isinstance(command, str) and command.strip():
        return ["sh", "-c", command] if step.get("shell") else shlex.split(command)
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        return ["sh", "-c", shlex.join(command)] if step.get("shell") else list(command)
    raise EnvError(f"{where}: 'command' must be a non-empty list of strings or a string")


async def _step(sandbox: Any, step: dict[str, Any], where: str) -> None:
    kind = step.get("type")
    desktop = getattr(sandbox, "desktop", None)
    if kind == "execute":
        done = await sandbox.exec(_argv(step, where), timeout=STEP_TIMEOUT_S, user=USER, env=SESSION_ENV, cwd=HOME)
        if done.exit_code != 0:
            why = "timed out" if done.timed_out else f"exited {done.exit_code}"
            raise EnvError(f"{where}: {shlex.join(_argv(step, where))[:120]} {why}: {done.stderr.strip()[-300:]}")
    elif kind == "launch":
        line = shlex.join(_argv(step, where))
        done = await sandbox.exec(["sh", "-c", f"setsid {line} >/dev/null 2>&1 </dev/null &"], timeout=10,
                                  user=USER, env=SESSION_ENV, cwd=HOME)
        if done.exit_code != 0:
            raise EnvError(f"{where}: could not start {line[:120]}: {done.stderr.strip()[-300:]}")
    elif kind == "open":
        if desktop is None or not isinstance(step.get("app"), str):
            raise EnvError(f"{where}: 'open' needs an app key and a desktop")
        await desktop.launch(step["app"], step.get("path"))
    elif kind == "activate":
        if desktop is None or not isinstance(step.get("title"), str):
            raise EnvError(f"{where}: 'activate' needs a window title and a desktop")
        windows = [w for w in await desktop.windows() if re.search(step["title"], w.title)]
        if windows and not windows[0].focused:  # the window's middle: a cell or a text position, no menu
            w = windows[0]
            await desktop.click(w.x + w.w // 2, w.y + w.h // 2)
    elif kind == "key":
        if desktop is None or not isinstance(step.get("keys"), str):
            raise EnvError(f"{where}: 'key' needs keys and a desktop")
        await desktop.key(step["keys"])
    elif kind == "sleep":
        seconds = step.get("seconds", 1)
        await asyncio.sleep(min(float(seconds), 10.0) if isinstance(seconds, int | float) else 1.0)
    else:
        raise EnvError(f"{where}: unknown step kind {kind!r}")


async def run_setup(sandbox: Any, steps: Sequence[dict[str, Any]], *, part: str = "setup") -> None:
    """Run ``steps`` in ``sandbox`` (the episode's desktop container; its ``desktop`` for the GUI steps)."""
    for number, step in enumerate(steps):
        if not isinstance(step, dict):
            raise EnvError(f"initial_state.{part}[{number}] must be an object")
        await _step(sandbox, step, f"initial_state.{part}[{number}] ({step.get('type')})")
