"""The world of one timed episode of this family: state tables, scripted events and effects, as data.

A :class:`World` is a :class:`~envgym.timed.world.TimedWorld` (the kernel's clock, call log, notifications
and per-step effects) whose engine is a set of JSON tables.

State is a set of tables of rows keyed by ``id`` (JSON values only), created from the task's
``initial_state["world"]``. Scripted events come from ``initial_state["events"]``, as data::

    {"id": "courier_msg", "at": "09:25",                       # a time of day, or virtual seconds
     "delay": 0, "after": ["other_event"],                     # dependencies: fire N s after them
     "when": {"called": "send_message", "args": {"to": "priya"}},   # a condition on the agent's calls
     "only_if": {"state": "jobs.pasta.status", "equals": "done"},  # a guard checked at firing time
     "effects": [{"message": {"from": "courier", "text": "Your parcel arrives 11:00-12:00."}}]}

Conditions: ``called`` (a done, successful call with matching arguments), ``state`` (a ``table.id.field``
value matching ``equals``), ``fired`` (an event id), and ``all`` / ``any`` / ``not``. Effects: ``message``
and ``email`` (a row in ``messages`` / ``inbox`` and a notification), ``alert`` (a notification), ``set``
(``path`` = ``value``), ``insert`` (``table``, ``row``) and ``delete`` (``table``, ``id``). Tools change the
world through the same methods and may schedule their own delayed effects (``after_delay``).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

from envgym.plugin import args_match, value_matches
from envgym.plugin.timed import INSTANT, CallDraft, Event, TimedWorld, latency, parse_time_of_day

__all__ = ["CallDraft", "Tables", "World"]

Tables = dict[str, dict[str, dict[str, Any]]]


class World(TimedWorld):
    """One episode's world; the env drives its clock."""

    def __init__(self, initial_state: dict[str, Any], *, seed: int, variant: str,
                 opportunity: Callable[[World], bool | None] | None = None) -> None:
        super().__init__(seed=seed, variant=variant, horizon=float(initial_state.get("horizon_s", 8 * 3600)),
                         day_start_s=parse_time_of_day(initial_state.get("start", "09:00")),
                         rng_salt=initial_state.get("seed", 0))
        self.tables: Tables = copy.deepcopy(initial_state.get("world", {}))
        self._latency = {name: latency(value) for name, value in initial_state.get("latency", {}).items()}
        self._opportunity = opportunity
        self._row_ids = itertools.count(1)
        for spec in initial_state.get("events", []):
            self._schedule_scripted(spec)

    def latency_of(self, tool_name: str) -> Any:
        return self._latency.get(tool_name, INSTANT)

    def opportunity(self) -> bool | None:
        return None if self._opportunity is None else self._opportunity(self)

    def value(self, path: str) -> Any:
        return self.get(path)

    # -- state ---------------------------------------------------------------------------------------
    def table(self, name: str) -> dict[str, dict[str, Any]]:
        return self.tables.setdefault(name, {})

    def get(self, path: str) -> Any:
        table, _, rest = path.partition(".")
        row_id, _, column = rest.partition(".")
        row = self.tables.get(table, {}).get(row_id)
        return None if row is None else row.get(column)

    def set(self, path: str, value: Any) -> None:
        table, _, rest = path.partition(".")
        row_id, _, column = rest.partition(".")
        self.table(table).setdefault(row_id, {"id": row_id})[column] = value

    def insert(self, table: str, row: dict[str, Any], *, prefix: str | None = None) -> str:
        """Add a row; without an ``id`` it gets a fresh one (``prefix`` + a counter, never reused)."""
        rows = self.table(table)
        row_id = str(row.get("id") or "")
        while not row_id or (row_id in rows and "id" not in row):
            row_id = f"{prefix or table[:1]}{next(self._row_ids)}"
        rows[row_id] = {**row, "id": row_id}
        return row_id

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {name: sorted((dict(r) for r in rows.values()), key=lambda r: str(r["id"]))
                for name, rows in sorted(self.tables.items())}

    # -- effects -------------------------------------------------------------------------------------
    def apply(self, effect: dict[str, Any]) -> None:
        (kind, body), = effect.items()
        if kind == "message":
            self.insert("messages", {"from": body["from"], "text": body["text"], "time": self.clock()})
            self.notify("message", body["from"], body["text"])
        elif kind == "email":
            self.insert("inbox", {"from": body["from"], "subject": body["subject"], "body": body["body"],
                                  "time": self.clock(), "read": False})
            self.notify("email", body["from"], f"{body['subject']}: {body['body']}")
        elif kind == "alert":
            self.notify("alert", body["source"], body["text"], completes=bool(body.get("completes")))
        elif kind == "set":
            self.set(body["path"], body["value"])
        elif kind == "insert":
            self.insert(body["table"], dict(body["row"]))
        elif kind == "delete":
            self.table(body["table"]).pop(str(body["id"]), None)
        else:
            raise ValueError(f"unknown effect {kind!r}")

    def after_delay(self, seconds: float, effects: list[dict[str, Any]], *, id: str | None = None,
                    only_if: Callable[[], bool] | None = None) -> Event:
        """Schedule effects ``seconds`` from now (a tool's delayed consequence)."""
        return self.scheduler.schedule(id, delay=seconds, only_if=only_if, payload="world",
                                       action=self._effects_action(effects))

    # -- scripted events -----------------------------------------------------------------------------
    def condition(self, spec: dict[str, Any]) -> Callable[[], bool]:
        (kind, body), = ((k, v) for k, v in spec.items() if k not in ("args", "equals"))
        if kind == "called":
            args = spec.get("args", {})
            return lambda: any(c.ok and not c.in_flight and c.name == body and args_match(args, c.arguments)
                               for c in self.calls)
        if kind == "state":
            return lambda: value_matches(spec["equals"], self.get(body))
        if kind == "fired":
            return lambda: any(e.id == body for e in self.events)
        if kind in ("all", "any"):
            parts = [self.condition(part) for part in body]
            combine = all if kind == "all" else any
            return lambda: combine(p() for p in parts)
        if kind == "not":
            inner = self.condition(body)
            return lambda: not inner()
        raise ValueError(f"unknown condition {kind!r}")

    def _effects_action(self, effects: list[dict[str, Any]]) -> Callable[[Event], None]:
        def fire(event: Event) -> None:
            if not event.id.startswith("_"):
                self.record_event(event.id, seq=event.seq)
            for effect in effects:
                self.apply(effect)

        return fire

    def _schedule_scripted(self, spec: dict[str, Any]) -> None:
        at = spec.get("at")
        self.scheduler.schedule(
            spec["id"], at=None if at is None else self.to_virtual(at), delay=float(spec.get("delay", 0)),
            after=tuple(spec.get("after", ())), when=self.condition(spec["when"]) if "when" in spec else None,
            only_if=self.condition(spec["only_if"]) if "only_if" in spec else None,
            payload="world", action=self._effects_action(list(spec.get("effects", ()))))

