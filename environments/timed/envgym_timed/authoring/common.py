"""Authoring timed task pairs: one goal, a ``sync`` and an ``async`` variant, one reference script.

A :class:`Script` is the reference solution written once: calls, waits and the final message. Its async
form is the script as written (slow calls get handles ``h1, h2, ...`` in order, which later waits can
name); its sync form drops the waits, since every tool answers at once there and every scripted event has
already happened. :func:`pair` builds both tasks: the async variant keeps the scripted events' times and
the tools' latencies; the sync variant moves every timed event to the start (conditions still apply,
without delay) and has no latencies. Both share the instruction and the verifiers, so the success gap
between them measures what time costs.

Run ``python -m envgym_timed.authoring`` to regenerate ``tasks/timed-*/``.
"""

from __future__ import annotations

import json
from typing import Any

from envgym.plugin import Action, Limits, Split, TaskSpec, ToolCall, refuse_quotes
from envgym.plugin.timed import TimedWriteSpec
from envgym_timed.toolkit import Scenario

CONTROL = ("wait", "wait_for_notification")


class Script:
    """A reference solution, one step per method call (``parallel`` issues several calls in one step)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self._steps: list[list[tuple[str, dict[str, Any]]] | str] = []
        self._handles = 0

    def _handle(self, name: str) -> str | None:
        tool = self.scenario.by_name.get(name)
        if tool is None and name not in CONTROL:
            raise ValueError(f"scenario {self.scenario.name} has no tool {name!r}")
        if tool is not None and tool.slow:
            self._handles += 1
            return f"h{self._handles}"
        return None

    def call(self, name: str, /, **args: Any) -> str | None:
        """One call in its own step; returns its handle in the async variant if the tool is slow."""
        return self.parallel((name, args))[0]

    def parallel(self, *calls: tuple[str, dict[str, Any]]) -> list[str | None]:
        self._steps.append(list(calls))
        return [self._handle(name) for name, _ in calls]

    def wait_for(self, source: str | None = None, timeout: float = 3600) -> None:
        args: dict[str, Any] = {"timeout": timeout}
        if source is not None:
            args["source"] = source
        self._steps.append([("wait_for_notification", args)])

    def wait(self, *, seconds: float | None = None, until: str | None = None) -> None:
        self._steps.append([("wait", {"seconds": seconds} if seconds is not None else {"until": until})])

    def say(self, text: str) -> None:
        self._steps.append(text)

    def actions(self, variant: str) -> tuple[Action, ...]:
        out: list[Action] = []
        for step in self._steps:
            if isinstance(step, str):
                out.append(Action(text=step))
                continue
            calls = [(n, a) for n, a in step if variant == "async" or n not in CONTROL]
            if calls:
                number = len(out)
                out.append(Action(tool_calls=tuple(
                    ToolCall(id=f"call_{number}_{i}", name=n, arguments=json.dumps(a, sort_keys=True))
                    for i, (n, a) in enumerate(calls))))
        return tuple(out)


def sync_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sync variant's events: every time and delay dropped (dependencies and conditions kept)."""
    return [{k: v for k, v in e.items() if k not in ("at", "delay")} for e in events]


def _unquoted(verifiers: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """The verifiers with their message matchers refusing the instruction forwarded as the message."""
    timed = [TimedWriteSpec.model_validate(v) if v.get("type") == "timed_write" else None for v in verifiers]
    fixed = refuse_quotes([t for t in timed if t is not None], instruction)
    it = iter(fixed)
    return [v if t is None else next(it).model_dump(mode="json") for v, t in zip(verifiers, timed, strict=True)]


def pair(*, family: str, key: str, instruction: str, world: dict[str, Any], events: list[dict[str, Any]],
         latency: dict[str, Any], script: Script, verifiers: list[dict[str, Any]], split: Split,
         start: str = "09:00", horizon_s: float = 6 * 3600, max_steps: int = 40,
         tags: tuple[str, ...] = ()) -> list[TaskSpec]:
    tasks = []
    for variant in ("sync", "async"):
        state = {"variant": variant, "start": start, "horizon_s": horizon_s, "seed": 0, "world": world,
                 "events": events if variant == "async" else sync_events(events),
                 "latency": latency if variant == "async" else {}}
        tasks.append(TaskSpec.model_validate({
            "id": f"{family}-{key}-{variant}", "env_id": f"timed/{family}-v1", "split": split,
            "instruction": instruction, "initial_state": state,
            "limits": Limits(max_steps=max_steps).model_dump(), "verifiers": _unquoted(verifiers, instruction),
            "solution": [a.model_dump() for a in script.actions(variant)],
            "tags": [family, variant, *tags], "metadata": {"pair": f"{family}-{key}", "variant": variant}}))
    return tasks


def expect(tool: str, *, id: str | None = None, after: tuple[str, ...] = (), before: tuple[str, ...] = (),
           not_before: str | None = None, not_after: str | None = None, **args: Any) -> dict[str, Any]:
    """An expected call of a ``timed_write`` verifier, as data."""
    out: dict[str, Any] = {"tool": tool, "args": args}
    for name, value in (("id", id), ("after", list(after)), ("before", list(before)),
                        ("not_before", not_before), ("not_after", not_after)):
        if value:
            out[name] = value
    return out


README = """# {suite}

{description}

Generated by `environments/timed/envgym_timed/authoring/{family}.py` (`python -m envgym_timed.authoring`);
do not edit by hand. Env id: `timed/{family}-v1`.

- {count} tasks: {pairs} goals, each as a `sync` and an `async` variant (`metadata.pair`, `metadata.variant`).
- Splits: {splits}.
- Verifier: `timed_write` (expected calls in causal order and time windows, forbidden and collateral
  writes, final-state checks); the verdict's evidence holds the timeline and the efficiency metrics.
- Reference solutions replay blind (the oracle): the async ones wait on named sources and handles, so they
  pass for every seed under the default thinking policy (fixed, 2 s a step).
"""


def readme(family: str, description: str, tasks: list[TaskSpec]) -> str:
    """The ``README.md`` of suite ``timed-<family>`` (written with its tasks by ``write_all``)."""
    splits: dict[str, int] = {}
    for task in tasks:
        splits[task.split] = splits.get(task.split, 0) + 1
    return README.format(suite=f"timed-{family}", description=description, family=family, count=len(tasks),
                         pairs=len(tasks) // 2, splits=", ".join(f"{k} {v}" for k, v in sorted(splits.items())))
