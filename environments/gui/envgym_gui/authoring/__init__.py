"""Task generators of the GUI family's first-party suites (``gui-calc``, ``gui-writer``, ``gui-files``).

Each module's ``build()`` returns its suite's tasks, drawn from a fixed seed, so the output is the same on
every run; ``python -m envgym_gui.authoring`` rewrites ``tasks/gui-*/tasks.jsonl`` and a test checks the
committed files equal the generators' output. Reference solutions drive the apps by keyboard only (cursor
keys, shortcuts, typed text, a full path typed into a file dialog) with ``wait`` where an app needs time,
so the oracle does not depend on pixel positions. Every task grades with a ``desktop`` verifier whose
``unchanged`` list names the files the task must not touch.
"""

from __future__ import annotations

from typing import Any

from envgym.plugin import Action, Limits, TaskSpec
from envgym_gui.verify import DesktopSpec, register

__all__ = [
    "DOCS",
    "ENV_ID",
    "HOME",
    "LIMITS",
    "MAX_SOLUTION",
    "Action",
    "DesktopSpec",
    "Limits",
    "TaskSpec",
    "act",
    "check",
    "desktop",
    "done",
    "fail",
    "get",
    "key",
    "register",
    "split_of",
    "task",
    "typed",
    "wait",
]

register()  # the tasks built here name the kind; idempotent when the plug-in hook has run

ENV_ID = "gui/desktop-v1"
HOME = "/home/user"
DOCS = f"{HOME}/Documents"
LIMITS = Limits(max_steps=20, episode_timeout_s=300.0, step_timeout_s=120.0)
"""Short episodes: every reference solution takes at most :data:`MAX_SOLUTION` steps. The step deadline covers
reset, which starts LibreOffice: on a loaded 2-core host that alone can take a minute."""
MAX_SOLUTION = 15


def act(name: str, /, **arguments: Any) -> Action:
    return Action.call(name, **arguments)


def key(keys: str) -> Action:
    return act("key", keys=keys)


def typed(text: str) -> Action:
    return act("type", text=text)


def wait(seconds: float) -> Action:
    return act("wait", seconds=seconds)


def done(answer: str = "") -> Action:
    return act("done", answer=answer) if answer else act("done")


def fail(reason: str) -> Action:
    return act("fail", reason=reason)


def split_of(index: int) -> str:
    """Seven in ten tasks train, the rest test, interleaved so both splits cover every task kind."""
    return "test" if index % 10 in (3, 7, 9) else "train"


def get(kind: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, **fields}


def check(getter: dict[str, Any], metric: str, name: str = "", **fields: Any) -> dict[str, Any]:
    return {"name": name, "get": getter, "metric": {"kind": metric, **fields}}


def desktop(checks: list[dict[str, Any]], unchanged: list[str], *, expect: str = "done") -> DesktopSpec:
    return DesktopSpec.model_validate({"type": "desktop", "checks": checks, "unchanged": sorted(unchanged),
                                       "expect": expect})


def task(suite: str, task_id: str, index: int, instruction: str, *, files: dict[str, Any], open_app: dict[str, Any],
         solution: list[Action], verifier: DesktopSpec, tags: tuple[str, ...], **metadata: Any) -> TaskSpec:
    if len(solution) > MAX_SOLUTION:
        raise ValueError(f"{task_id}: the reference solution takes {len(solution)} steps; at most {MAX_SOLUTION}")
    return TaskSpec(id=task_id, env_id=ENV_ID, split=split_of(index), instruction=instruction,  # type: ignore[arg-type]
                    initial_state={"files": files, "open": open_app}, limits=LIMITS, verifiers=(verifier,),
                    solution=tuple(solution), tags=(suite.removeprefix("gui-"), *tags), metadata=metadata)
