"""Setup steps a task runs inside its desktop before the first observation (``initial_state.setup``).

A task's ``initial_state`` may hold ``setup``: a list of steps run, in order, after the task's files are
written and before its app opens (OSWorld's ``execute``/``launch``/``open`` steps map here). Each step runs
inside the task's own container (network none), never on the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envgym.plugin import EnvError


async def run_setup(sandbox: Any, steps: Sequence[dict[str, Any]]) -> None:
    """Run ``steps`` in ``sandbox`` (the episode's desktop container). No step kinds are known yet."""
    for number, step in enumerate(steps):
        raise EnvError(f"initial_state.setup[{number}]: unknown step kind {step.get('type')!r}")
