"""A deterministic discrete-event scheduler on a simulated clock.

An event fires at an absolute time (``at``), after a delay (``delay``), or when a condition becomes true
(``when``), optionally only once other events have fired (``after``: dependencies) and only if a guard
still holds at firing time (``only_if``; a guarded event whose guard fails is *skipped*, and events that
depend on it never fire). The rules, in one place:

- An event is *released* when its last dependency fires (at scheduling time when it has none).
- A released event without a condition is *armed* at release; one with a condition is armed the first time
  the condition is true at or after release. Conditions are evaluated after every firing and on ``poke()``
  (call it after the world changes outside the scheduler, e.g. after an agent's action): they are
  predicates over state, which only changes at those points.
- An armed event fires at ``max(at, armed time + delay)``; an ``at`` in the past means "now".
- Ties fire in arming order (a sequence number), so the timeline is a pure function of the inputs.
- Listeners added with ``on_fired(fn)`` are called after each firing (its action and releases done), so an
  owner can watch the world change event by event (the timed env logs watched state this way).

The clock is a :class:`~envgym.clock.SimClock` that only this scheduler (or its owner) advances::

    sched = Scheduler()
    sched.schedule("boil", delay=480, action=lambda e: world.set("water", "boiling"))
    sched.schedule("cook", after=("boil",), delay=600)
    fired = sched.run_until(1200)          # both fire, at 480 and 1080; the clock ends at 1200
"""

from __future__ import annotations

import enum
import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from envgym.clock import SimClock


class EventState(enum.Enum):
    WAITING = "waiting"      # dependencies not yet fired
    RELEASED = "released"    # waiting for its condition
    ARMED = "armed"          # on the queue with a firing time
    FIRED = "fired"
    SKIPPED = "skipped"      # its guard failed at firing time
    CANCELLED = "cancelled"


@dataclass(eq=False, slots=True)
class Event:
    """One scheduled occurrence. ``action`` runs when it fires and may schedule further events."""

    id: str
    at: float | None = None
    delay: float = 0.0
    after: tuple[str, ...] = ()
    when: Callable[[], bool] | None = None
    only_if: Callable[[], bool] | None = None
    action: Callable[[Event], Any] | None = None
    payload: Any = None
    state: EventState = EventState.WAITING
    time: float | None = None
    """Firing time once armed; the actual time once fired."""
    seq: int = -1
    """Position in the fired timeline (the causal order), set when it fires."""
    released_at: float | None = None
    _waiting_on: set[str] = field(default_factory=set, repr=False)


@dataclass(frozen=True, slots=True)
class Fired:
    """A fired event as the timeline records it."""

    seq: int
    id: str
    time: float
    payload: Any


class Scheduler:
    """Events on a simulated clock; see the module docstring for the firing rules."""

    def __init__(self, clock: SimClock | None = None) -> None:
        self.clock = clock or SimClock()
        self._events: dict[str, Event] = {}
        self._queue: list[tuple[float, int, Event]] = []
        self._arm_order = itertools.count()
        self._ids = itertools.count()
        self._conditional: list[Event] = []
        self._dependents: dict[str, list[Event]] = {}
        self.fired: list[Fired] = []
        self._seq = itertools.count()
        self._listeners: list[Callable[[Fired], Any]] = []

    @property
    def now(self) -> float:
        return self.clock.now()

    def next_seq(self) -> int:
        """A position in the causal order, for things outside the scheduler (an agent's call) to share."""
        return next(self._seq)

    def schedule(self, id: str | None = None, *, at: float | None = None, delay: float = 0.0,
                 after: Iterable[str] = (), when: Callable[[], bool] | None = None,
                 only_if: Callable[[], bool] | None = None, action: Callable[[Event], Any] | None = None,
                 payload: Any = None) -> Event:
        """Add an event (see the module docstring). Ids are unique; a fired dependency counts at once."""
        event_id = id if id is not None else f"_e{next(self._ids)}"
        if event_id in self._events:
            raise ValueError(f"event id {event_id!r} is already scheduled")
        if delay < 0:
            raise ValueError("an event's delay cannot be negative")
        event = Event(id=event_id, at=at, delay=delay, after=tuple(after), when=when, only_if=only_if,
                      action=action, payload=payload)
        self._events[event_id] = event
        for dep in event.after:
            dep_event = self._events.get(dep)
            if dep_event is not None and dep_event.state is EventState.FIRED:
                continue
            event._waiting_on.add(dep)
            self._dependents.setdefault(dep, []).append(event)
        if not event._waiting_on:
            self._release(event, self.now)
        return event

    def on_fired(self, listener: Callable[[Fired], Any]) -> None:
        """Call ``listener(fired)`` after every firing from now on."""
        self._listeners.append(listener)

    def get(self, event_id: str) -> Event | None:
        return self._events.get(event_id)

    def cancel(self, event_id: str) -> bool:
        """Cancel an event that has not fired; its dependents never fire. Returns whether it was pending."""
        event = self._events.get(event_id)
        if event is None or event.state in (EventState.FIRED, EventState.SKIPPED, EventState.CANCELLED):
            return False
        event.state = EventState.CANCELLED
        self._abandon_dependents(event_id)
        return True

    @property
    def pending(self) -> int:
        """Events that may still fire."""
        return sum(1 for e in self._events.values()
                   if e.state in (EventState.WAITING, EventState.RELEASED, EventState.ARMED))

    def next_time(self) -> float | None:
        """When the next armed event fires (None when nothing is armed)."""
        self._drop_stale()
        return self._queue[0][0] if self._queue else None

    def poke(self) -> None:
        """Re-evaluate conditions now (after the world changed outside the scheduler)."""
        if not self._conditional:
            return
        still: list[Event] = []
        for event in self._conditional:
            if event.state is not EventState.RELEASED:
                continue
            if event.when is not None and event.when():
                self._arm(event, self.now)
            else:
                still.append(event)
        self._conditional = still

    def step(self) -> Fired | None:
        """Fire the next armed event, advancing the clock to its time. None when nothing is armed."""
        self._drop_stale()
        if not self._queue:
            return None
        time, _, event = heapq.heappop(self._queue)
        now = self.clock.now()
        if time > now:
            self.clock.advance(time - now)
            now = time
        if event.only_if is not None and not event.only_if():
            event.state = EventState.SKIPPED
            self._abandon_dependents(event.id)
            self.poke()
            return None
        event.state, event.time, event.seq = EventState.FIRED, now, next(self._seq)
        record = Fired(event.seq, event.id, now, event.payload)
        self.fired.append(record)
        if event.action is not None:
            event.action(event)
        dependents = self._dependents.pop(event.id, None)
        if dependents:
            for dependent in dependents:
                dependent._waiting_on.discard(event.id)
                if not dependent._waiting_on and dependent.state is EventState.WAITING:
                    self._release(dependent, now)
        if self._conditional:
            self.poke()
        for listener in self._listeners:
            listener(record)
        return record

    def run_until(self, time: float) -> list[Fired]:
        """Fire every event due at or before ``time`` in order, then move the clock to ``time``."""
        fired: list[Fired] = []
        while (nxt := self.next_time()) is not None and nxt <= time:
            record = self.step()
            if record is not None:
                fired.append(record)
        if time > self.now:
            self.clock.advance(time - self.now)
        return fired

    def _release(self, event: Event, now: float) -> None:
        event.released_at = now
        if event.when is None or event.when():
            self._arm(event, now)
        else:
            event.state = EventState.RELEASED
            self._conditional.append(event)

    def _arm(self, event: Event, now: float) -> None:
        fire_at = now + event.delay
        if event.at is not None:
            fire_at = max(event.at, fire_at)
        event.state, event.time = EventState.ARMED, fire_at
        heapq.heappush(self._queue, (fire_at, next(self._arm_order), event))

    def _abandon_dependents(self, event_id: str) -> None:
        for dependent in self._dependents.pop(event_id, []):
            if dependent.state is EventState.WAITING:
                dependent.state = EventState.CANCELLED
                self._abandon_dependents(dependent.id)

    def _drop_stale(self) -> None:
        while self._queue and self._queue[0][2].state is not EventState.ARMED:
            heapq.heappop(self._queue)
