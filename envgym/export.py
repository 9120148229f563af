"""Record exporters: files a plug-in writes beside a run's records (SWE-bench predictions, say).

An exporter is named in the entry-point group ``envgym.exporters``; the entry point is a factory
``(ctx: ExportContext) -> Exporter | None`` (a class taking the context is one), called once per
:func:`envgym.eval.evaluate` call. ``None`` means "nothing to write for this run". The run then calls:

- ``repair(records)`` once, before any episode runs, with the latest record of every episode the run
  directory already holds (``[]`` for a new run): write what a crash between a record and its export
  kept from being written. Exports are derived from records, so this is always possible; it must write
  nothing twice.
- ``export(record, trajectory)`` after each finished episode, once its trajectory and record are durable
  (a crash before or during it is what ``repair`` is for). It runs in a worker thread: blocking file I/O
  is fine; the run is serial in its calls. An exporter that reads only the record says so with a false
  ``needs_trajectory`` attribute and gets ``None`` for the trajectory: an episode run in a worker process
  (``envgym eval --workers``) reaches the writer as its trajectory's JSON line, which is then not parsed
  back for it (tens of microseconds an episode, in the one process that writes).
  Such an episode's record arrives as its JSON line too, parsed back only when something reads it whole.
  An exporter that exports only some records may say which from the line, with a method
  ``wants_record(line: bytes) -> bool``: a record from a worker process whose line it does not want is
  neither parsed nor exported for it (parsing a record was a third of the writing process's time per
  episode). It must want every line of a record it would export (a line it wants may still export nothing).
- ``close()`` once at the end, whatever happened.

An exporter writes only its own files in ``ctx.run_dir`` (``run.json``, ``records.jsonl`` and
``trajectories.jsonl`` are the run's). Exporters run in entry-point name order; one that fails to load or
to open raises :class:`~envgym.errors.PluginError` before any episode runs, never silently writes nothing.
The installed exporters are looked up again only when ``sys.path`` or one of its folders has changed (a
distribution installed or removed): :func:`envgym._entry_points.installed`, one scan of the installed
distributions' metadata for every plug-in group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Protocol

from envgym._entry_points import installed
from envgym.errors import PluginError
from envgym.record import ResultRecord
from envgym.task import TaskSpec
from envgym.trajectory import Trajectory

ENTRY_POINT_GROUP = "envgym.exporters"


@dataclass(frozen=True)
class ExportContext:
    """What an exporter may know about its run."""

    run_dir: Path
    run_id: str
    agent_id: str
    """The run's agent id (``run.json``), e.g. SWE-bench's ``model_name_or_path``."""
    config_hash: str
    tasks: Mapping[str, TaskSpec]
    """The run's planned tasks by task hash (``record.task_hash``); a record of an unplanned task has none."""


class Exporter(Protocol):
    def repair(self, records: Sequence[ResultRecord]) -> None: ...

    def export(self, record: ResultRecord, trajectory: Trajectory | None) -> None:
        """``trajectory`` is None only for an exporter whose ``needs_trajectory`` is false."""
        ...

    def close(self) -> None: ...


def needs_trajectory(exporter: Exporter) -> bool:
    """Whether ``exporter.export`` reads its trajectory (the default; see the module docstring)."""
    return bool(getattr(exporter, "needs_trajectory", True))


def wants_record(exporter: Exporter, line: bytes) -> bool:
    """Whether ``exporter`` may export the record whose JSON line is ``line`` (every record, by default)."""
    wants = getattr(exporter, "wants_record", None)
    return True if wants is None else bool(wants(line))


ExporterFactory = Callable[[ExportContext], "Exporter | None"]


def _installed() -> list[EntryPoint]:
    """The exporters' entry points by name (:func:`envgym._entry_points.installed`)."""
    return installed(ENTRY_POINT_GROUP)


def open_exporters(ctx: ExportContext) -> list[Exporter]:
    """Load every installed exporter and open it for this run (sorted by entry-point name)."""
    opened: list[Exporter] = []
    try:
        for ep in _installed():
            try:
                factory: ExporterFactory = ep.load()
                exporter = factory(ctx)
            except Exception as exc:
                raise PluginError(f"exporter plug-in {ep.name!r} ({ep.value}) failed to load: {exc!r}") from exc
            if exporter is not None:
                opened.append(exporter)
    except BaseException:
        close_exporters(opened)
        raise
    return opened


def close_exporters(exporters: Sequence[Exporter]) -> None:
    """Close every exporter, even when one's close raises (the first error is raised after)."""
    error: BaseException | None = None
    for exporter in exporters:
        try:
            exporter.close()
        except BaseException as exc:
            error = error or exc
    if error is not None:
        raise error
