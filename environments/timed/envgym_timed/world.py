"""The world of one timed episode: state tables, a scheduler, scripted events and notifications.

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
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envgym.timed.scheduler import Event, Scheduler
from envgym.timed.timeline import Notification, TimedCall, TimelineEvent, format_time_of_day, parse_time_of_day
from envgym.verify.matching import args_match, value_matches

Tables = dict[str, dict[str, dict[str, Any]]]


@dataclass
class CallDraft:
    """A call as it happens; frozen into a :class:`TimedCall` when the timeline is read."""

    index: int
    step: int
    name: str
    kind: str
    arguments: dict[str, Any] | None
    issued_at: float
    issued_seq: int
    ok: bool = False
    error: str | None = None
    handle: str | None = None
    done_at: float | None = None
    done_seq: int | None = None

    @property
    def in_flight(self) -> bool:
        return self.done_seq is None

    def freeze(self) -> TimedCall:
        return TimedCall(index=self.index, step=self.step, name=self.name, kind=self.kind,  # type: ignore[arg-type]
                         arguments=self.arguments, ok=self.ok, error=self.error, handle=self.handle,
                         issued_at=self.issued_at, issued_seq=self.issued_seq, done_at=self.done_at,
                         done_seq=self.done_seq)


class World:
    """One episode's world; the env drives its clock."""

    def __init__(self, initial_state: dict[str, Any], *, seed: int, variant: str) -> None:
        self.variant = variant
        self.day_start_s = parse_time_of_day(initial_state.get("start", "09:00"))
        self.horizon_s = float(initial_state.get("horizon_s", 8 * 3600))
        self.tables: Tables = copy.deepcopy(initial_state.get("world", {}))
        self.scheduler = Scheduler()
        self.rng = random.Random(f"{seed}:{initial_state.get('seed', 0)}")
        self.notifications: list[Notification] = []
        self.events: list[TimelineEvent] = []
        self.calls: list[CallDraft] = []
        self.finished_sources: set[str] = set()
        self._row_ids = itertools.count(1)
        for spec in initial_state.get("events", []):
            self._schedule_scripted(spec)

    # -- time ----------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.scheduler.now

    def clock(self, t: float | None = None) -> str:
        return format_time_of_day(self.day_start_s + (self.now if t is None else t))

    def to_virtual(self, when: str | float) -> float:
        return parse_time_of_day(when) - self.day_start_s if isinstance(when, str) else float(when)

    def in_flight(self) -> int:
        """The agent's tool calls still waiting for their results (waits themselves do not count)."""
        return sum(1 for c in self.calls if c.in_flight and c.kind != "control")

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

    # -- notifications and effects -------------------------------------------------------------------
    def notify(self, kind: str, source: str, content: str, *, completes: bool = False) -> Notification:
        note = Notification(seq=self.scheduler.next_seq(), time=self.now, clock=self.clock(), kind=kind,  # type: ignore[arg-type]
                            source=source, content=content)
        self.notifications.append(note)
        if completes:
            self.finished_sources.add(source)
        return note

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
                self.events.append(TimelineEvent(seq=event.seq, id=event.id, time=event.time or self.now))
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


def dumps(value: Any) -> str:
    """Tool results as the agent sees them: compact, key-sorted JSON."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
