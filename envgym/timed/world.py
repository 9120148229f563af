"""The world of one timed episode, as the kernel sees it: a clock, a call log, notifications, and an engine.

:class:`TimedWorld` is what a plug-in subclasses to put any engine behind
:class:`~envgym.timed.env.TimedWorldEnv`: a JSON table world, a planning benchmark's own simulator, a game.
The kernel owns time and bookkeeping; the subclass owns state. What the kernel keeps:

- ``scheduler`` (:class:`~envgym.timed.scheduler.Scheduler` on a simulated clock): the engine schedules its
  delayed effects on it; the env advances it (thinking, waits, durations);
- ``unit`` (``"s"`` or ``"step"``) and ``tick`` (the length of one step in that unit): on a step clock time
  is counted in steps; on a seconds clock ``tick`` is the step of per-step effects;
- ``calls`` (:class:`CallDraft`), ``notifications``, ``events`` (world events the timeline shows, which
  verifiers may reference), ``finished_sources`` (handles and jobs that have finished), ``rng`` (seeded);
- per-step effects (:meth:`start_process`): effects that advance one step per tick while their condition
  holds and *pause* while it does not (cooking advances only while the pot is on the stove);
- an engine's own per-step work: while :meth:`ticking` says so, the kernel calls :meth:`on_tick` once per
  tick (a turn-based simulator's ``step()`` with its own delayed effects sits here). The env calls
  :meth:`wake` after every call, so an engine that starts ticking because of an action is ticked; a
  scheduled event that sets the engine going calls it itself. A tool declared ``at_tick=True`` is performed
  *as* the next tick's turn, in place of :meth:`on_tick` for that tick (:mod:`envgym.timed.tools`).

What a subclass provides: :meth:`snapshot` (the state as tables of rows with an ``id``, what
``final_state`` checks and state views read), optionally :meth:`value` (a faster ``table.id.field``
lookup), :meth:`describe` (text added to the first observation), :meth:`finished` (the engine says the
episode is over: goal reached, game lost), :meth:`pending` (the engine's own delayed effects under way, for
the idle measure), :meth:`opportunity` (whether some useful action is available now, for
``opportunity_idle_s``; None when it cannot say), :meth:`latency_of` (a slow tool's latency), ``variant``
(``"async"``: slow tools answer later; ``"sync"``: at once), ``day_start_s`` and ``horizon`` (when the world
ends).

**Finished sources.** ``notify(..., completes=True)`` marks the notification's ``source`` finished: a
``wait_for_notification(source=...)`` issued later returns at once instead of waiting (so waiting for a
handle whose result already arrived costs nothing). The mark stays until the world calls
:meth:`reopen` (e.g. when the same pot goes back on the stove); the kernel sets it for every slow call's
handle, which finishes once.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from envgym.timed.latency import INSTANT
from envgym.timed.scheduler import Event, Scheduler
from envgym.timed.timeline import Notification, TimedCall, TimelineEvent, format_clock, to_virtual

Snapshot = dict[str, list[dict[str, Any]]]


@dataclass
class CallDraft:
    """A call as it happens; frozen into a :class:`~envgym.timed.timeline.TimedCall` when the timeline is read."""

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


@dataclass
class Process:
    """A per-step effect: ``steps`` ticks of progress, made only on ticks where ``active()`` holds."""

    id: str
    steps: int
    on_done: Callable[[Process], Any] | None = None
    active: Callable[[], bool] | None = None
    progress: int = 0
    state: Literal["running", "paused", "done", "cancelled"] = "running"

    @property
    def remaining(self) -> int:
        return self.steps - self.progress


class TimedWorld:
    """One episode's world; the env drives its clock (see the module docstring)."""

    unit: Literal["s", "step"] = "s"
    tick: float = 1.0

    def __init__(self, *, seed: int = 0, variant: str = "async", horizon: float = 8 * 3600,
                 day_start_s: float = 0.0, rng_salt: Any = 0) -> None:
        if horizon <= 0:
            raise ValueError("a world's horizon must be positive")
        if self.tick <= 0:
            raise ValueError("a world's tick must be positive")
        self.variant = variant
        self.horizon = float(horizon)
        self.day_start_s = float(day_start_s) if self.unit == "s" else 0.0
        self.scheduler = Scheduler()
        self.rng = random.Random(f"{seed}:{rng_salt}")
        self.notifications: list[Notification] = []
        self.events: list[TimelineEvent] = []
        self.calls: list[CallDraft] = []
        self.finished_sources: set[str] = set()
        self.processes: dict[str, Process] = {}
        self._ticker: Event | None = None
        self._turn: Callable[[], Any] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "in_flight" in cls.__dict__:
            warnings.warn(f"{cls.__qualname__} overrides TimedWorld.in_flight(): count the engine's own delayed "
                          "effects in pending() instead (waiting while one is pending is not idle, and a final "
                          "message does not wait for them); an in_flight() override still delays a final message "
                          "until it is 0, until envgym 0.3", DeprecationWarning, stacklevel=2)

    # -- what a subclass provides --------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The state as ``{table: [row, ...]}`` (rows with an ``id``), sorted; what verifiers read."""
        return {}

    def value(self, path: str) -> Any:
        """``table.row_id.field`` of the current state (None when absent)."""
        table, _, rest = path.partition(".")
        row_id, _, column = rest.partition(".")
        row = next((r for r in self.snapshot().get(table, []) if str(r.get("id")) == row_id), None)
        return None if row is None else row.get(column)

    def describe(self) -> str:
        """Text added to the first observation, after the instruction (the engine's own opening view)."""
        return ""

    def finished(self) -> bool | str | None:
        """Whether the engine says the episode is over (goal reached, game lost): a reason, or True; None or
        False while it goes on.

        The kernel asks after every call and every event (a tick is one), thinking, waits and durations
        included; the first time it holds, the episode terminates there (not truncated): calls left in the
        action are not run, a call taking time is cut, and the episode is graded as usual. The timeline
        records ``ended_by="world"`` and the reason. Asked from the first action on, not at reset.
        """
        return None

    def pending(self) -> int:
        """The engine's own delayed effects under way (a dish cooking, a job running): waiting while one is
        pending does not count as idle. A final message does not wait for them (only for the agent's calls
        in flight: :meth:`in_flight`). The kernel's processes and events are not counted unless included."""
        return 0

    def opportunity(self) -> bool | None:
        """Whether a useful action is available to the agent now; None when the world cannot say."""
        return None

    def latency_of(self, tool_name: str) -> Any:
        """The latency distribution of a slow tool (:mod:`envgym.timed.latency`); instant by default."""
        return INSTANT

    def ticking(self) -> bool:
        """Whether the engine has per-step work pending (then :meth:`on_tick` runs at the next tick)."""
        return False

    def on_tick(self) -> None:
        """The engine's work for one tick (before the kernel's processes advance)."""

    # -- time ----------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.scheduler.now

    @property
    def horizon_s(self) -> float:  # the name the seconds-clock plug-ins know
        return self.horizon

    def clock(self, t: float | None = None) -> str:
        return format_clock(self.now if t is None else t, self.unit, self.day_start_s)

    def to_virtual(self, when: str | float) -> float:
        return to_virtual(when, self.unit, self.day_start_s)

    def in_flight(self) -> int:
        """The agent's tool calls still waiting for their results (waits themselves do not count): a final
        message waits until none is left. Not for the engine's own effects: those are :meth:`pending`."""
        return sum(1 for c in self.calls if c.in_flight and c.kind != "control")

    # -- notifications and events --------------------------------------------------------------------
    def notify(self, kind: str, source: str, content: str, *, completes: bool = False) -> Notification:
        """Tell the agent something (delivered with the next observation); ``completes`` marks ``source`` done."""
        note = Notification(seq=self.scheduler.next_seq(), time=self.now, clock=self.clock(), kind=kind,  # type: ignore[arg-type]
                            source=source, content=content)
        self.notifications.append(note)
        if completes:
            self.finished_sources.add(source)
        return note

    def reopen(self, source: str) -> None:
        """``source`` is busy again (a pot back on the stove): ``wait_for_notification(source=...)`` waits for
        its next notification instead of returning at once (see the module docstring)."""
        self.finished_sources.discard(source)

    def record_event(self, event_id: str, *, seq: int | None = None, kind: str = "event") -> TimelineEvent:
        """Put a world event on the timeline (verifiers may say ``after: [event_id]``)."""
        event = TimelineEvent(seq=self.scheduler.next_seq() if seq is None else seq, id=event_id, time=self.now,
                              kind=kind)
        self.events.append(event)
        return event

    # -- per-step effects ----------------------------------------------------------------------------
    def start_process(self, id: str, steps: int, *, on_done: Callable[[Process], Any] | None = None,
                      active: Callable[[], bool] | None = None) -> Process:
        """Start a per-step effect: done after ``steps`` ticks on which ``active()`` held (always, if None).

        Ticks fall on multiples of ``tick`` from the start; the first one is the next after now. When done,
        the process is a timeline event of kind ``process`` named ``id``, then ``on_done`` runs.
        """
        if steps < 0:
            raise ValueError("a process needs a non-negative number of steps")
        if id in self.processes and self.processes[id].state in ("running", "paused"):
            raise ValueError(f"process {id!r} is already running")
        process = Process(id=id, steps=int(steps), on_done=on_done, active=active)
        self.processes[id] = process
        if process.steps == 0:
            self._finish(process)
        else:
            self.wake()
        return process

    def cancel_process(self, id: str) -> bool:
        process = self.processes.get(id)
        if process is None or process.state not in ("running", "paused"):
            return False
        process.state = "cancelled"
        return True

    def _live(self) -> list[Process]:
        return [p for p in self.processes.values() if p.state in ("running", "paused")]

    def wake(self) -> None:
        """Arm the next tick if a turn is queued, a process is live or the engine is ticking (the env calls it
        after each call)."""
        if self._ticker is not None or not (self._turn is not None or self._live() or self.ticking()):
            return
        next_tick = (math.floor(self.now / self.tick + 1e-9) + 1) * self.tick
        self._ticker = self.scheduler.schedule(at=round(next_tick, 9), action=self._on_tick)

    def _queue_turn(self, turn: Callable[[], Any]) -> None:
        """Run ``turn`` at the next tick in place of :meth:`on_tick` (the env does this for ``at_tick`` tools)."""
        if self._turn is not None:
            raise RuntimeError("a turn is already queued for the next tick")
        self._turn = turn
        self.wake()

    def _drop_turn(self) -> None:
        """Forget a queued turn that will not be performed (the episode ended before its tick)."""
        self._turn = None

    def _on_tick(self, _event: Event) -> None:
        self._ticker = None
        turn, self._turn = self._turn, None
        if turn is not None:
            turn()
        elif self.ticking():
            self.on_tick()
        for process in self._live():  # in start order: dicts keep insertion order
            if process.active is None or process.active():
                process.state = "running"
                process.progress += 1
                if process.progress >= process.steps:
                    self._finish(process)
            else:
                process.state = "paused"
        self.wake()

    def _finish(self, process: Process) -> None:
        process.state = "done"
        self.record_event(process.id, kind="process")
        if process.on_done is not None:
            process.on_done(process)


class WorldState:
    """A world's state at one moment, as a verifier's :class:`~envgym.verify.StateView`."""

    def __init__(self, tables: Snapshot) -> None:
        self.tables = tables

    def snapshot(self) -> Snapshot:
        return self.tables
