"""What an evaluation run has done so far, and the two ways ``envgym eval`` shows it.

:class:`RunProgress` is plain state that :func:`envgym.eval.evaluate` updates on the event loop (planned
and already-recorded episodes per suite, one more started, one more finished) and anything may read: done
and total, episodes in flight, outcome counts per suite, the ETA, and the infra errors' causes (the latest
one, and every message counted). It never prints.

Two views read it, both driven by the caller's ticker on the same loop (no thread touches the state):

- :func:`live_view`: a ``rich`` renderable for a terminal: a bar with done/total, in flight, elapsed and
  ETA, one line per suite, and the latest infra error.
- :class:`PlainLines`: one line per report for logs (CI, ``| tee``): whenever another 10% of the planned
  episodes are done, or ``interval_s`` has passed since the last line, and once at the end. Each line
  carries the same facts as the live view.

The ETA is the remaining episodes over the rate of this invocation (episodes finished per second since
its first episode started), so concurrency is in it; before the first episode ends there is none.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from envgym.record import ResultRecord
from envgym.types import Outcome

OUTCOMES = tuple(o.value for o in Outcome)


@dataclass
class SuiteProgress:
    planned: int = 0
    skipped: int = 0
    """Episodes an earlier invocation already recorded (a resume skips them)."""
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def done(self) -> int:
        return self.skipped + sum(self.outcomes.values())


@dataclass
class RunProgress:
    """A run's progress; see the module docstring. ``clock`` is injected (tests use a fake one)."""

    clock: Callable[[], float] = time.monotonic
    suites: dict[str, SuiteProgress] = field(default_factory=dict)
    in_flight_of: Callable[[], int] | None = None
    """Where the true count of running episodes lives (the pool's); else started minus finished, which
    also counts episodes that ended and wait for their record to be written."""
    _started: int = 0
    infra_causes: Counter[str] = field(default_factory=Counter)
    latest_infra: str | None = None
    started_at: float | None = None
    """When this invocation's first episode started."""

    def plan(self, planned: dict[str, int], skipped: dict[str, int]) -> None:
        for suite, n in planned.items():
            self.suites[suite] = SuiteProgress(planned=n, skipped=skipped.get(suite, 0))

    def started(self, suite: str) -> None:
        if self.started_at is None:
            self.started_at = self.clock()
        self._started += 1

    def finished(self, record: ResultRecord) -> None:
        self.counted(record.suite, record.outcome, cause_of(record) if record.outcome is Outcome.INFRA_ERROR else None)

    def counted(self, suite: str, outcome: Outcome, cause: str | None = None) -> None:
        """An episode of ``suite`` finished with ``outcome`` (an infra error's ``cause``, :func:`cause_of`): what
        :meth:`finished` counts of a record, for a record not parsed (a worker's line, :mod:`envgym._eval_records`)."""
        self.suites.setdefault(suite, SuiteProgress()).outcomes[outcome.value] += 1
        if outcome is Outcome.INFRA_ERROR:
            cause = cause or "unknown cause"
            self.infra_causes[cause] += 1
            self.latest_infra = cause

    @property
    def in_flight(self) -> int:
        if self.in_flight_of is not None:
            return self.in_flight_of()
        return max(0, self._started - self.ran)

    @property
    def total(self) -> int:
        return sum(s.planned for s in self.suites.values())

    @property
    def done(self) -> int:
        return sum(s.done for s in self.suites.values())

    @property
    def ran(self) -> int:
        return sum(sum(s.outcomes.values()) for s in self.suites.values())

    @property
    def elapsed_s(self) -> float:
        return 0.0 if self.started_at is None else self.clock() - self.started_at

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this invocation's rate; None until an episode has finished."""
        if not self.ran or self.elapsed_s <= 0:
            return None
        return (self.total - self.done) * self.elapsed_s / self.ran

    def suite_line(self, suite: str) -> str:
        s = self.suites[suite]
        counts = ", ".join(f"{o} {s.outcomes[o]}" for o in OUTCOMES if s.outcomes[o])
        resumed = f", {s.skipped} recorded before" if s.skipped else ""
        return f"{suite} {s.done}/{s.planned}" + (f" ({counts}{resumed})" if counts or resumed else "")

    def line(self) -> str:
        """Every fact on one line (the non-TTY view)."""
        percent = f" ({self.done / self.total:.0%})" if self.total else ""
        parts = [f"{self.done}/{self.total} episodes{percent}, {self.in_flight} in flight",
                 f"elapsed {format_duration(self.elapsed_s)}, ETA {format_duration(self.eta_s)}",
                 *(self.suite_line(suite) for suite in self.suites)]
        if self.latest_infra is not None:
            parts.append(f"infra errors {sum(self.infra_causes.values())}, latest: {self.latest_infra}")
        return " | ".join(parts)


def cause_of(record: ResultRecord) -> str:
    """An infra error's message, one line and at most 200 characters (how causes are counted)."""
    text = " ".join((record.error or record.error_type or "unknown cause").split())
    return text if len(text) <= 200 else text[:199] + "…"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def live_view(progress: RunProgress, title: str) -> RenderableType:
    """The terminal view (rebuilt on every refresh)."""
    head = Table.grid(padding=(0, 1))
    for _ in range(4):
        head.add_column()
    head.add_row(Text(title, style="bold"), ProgressBar(total=progress.total or None, completed=progress.done,
                                                        width=30),
                 Text(f"{progress.done}/{progress.total}  {progress.in_flight} in flight"),
                 Text(f"elapsed {format_duration(progress.elapsed_s)}  ETA {format_duration(progress.eta_s)}"))
    lines: list[RenderableType] = [head, *(Text("  " + progress.suite_line(s)) for s in progress.suites)]
    if progress.latest_infra is not None:
        lines.append(Text(f"  infra errors {sum(progress.infra_causes.values())}, latest: {progress.latest_infra}",
                          style="yellow"))
    return Group(*lines)


class PlainLines:
    """Decides when the non-TTY view prints a line: every further 10% done, or ``interval_s`` since the last."""

    def __init__(self, progress: RunProgress, emit: Callable[[str], None], *, interval_s: float = 30.0,
                 step: float = 0.10) -> None:
        self.progress = progress
        self.emit = emit
        self.interval_s = interval_s
        self.step = step
        self._last_at = progress.clock()
        self._last_step = -1

    def tick(self) -> None:
        p = self.progress
        if not p.total:
            return
        reached = int(p.done / p.total / self.step + 1e-9)
        if reached > self._last_step or p.clock() - self._last_at >= self.interval_s:
            self._print(reached)

    def close(self) -> None:
        """The final line, unless the last one already said it all."""
        p = self.progress
        if p.total and int(p.done / p.total / self.step + 1e-9) > self._last_step:
            self._print(int(p.done / p.total / self.step + 1e-9))

    def _print(self, reached: int) -> None:
        self._last_step = max(self._last_step, reached)
        self._last_at = self.progress.clock()
        self.emit("eval: " + self.progress.line())
