"""Grading an imported OSWorld task with OSWorld's own metric functions, on the host, after the episode.

An imported task's ``desktop`` verifier holds an :class:`OsworldEval`: OSWorld's evaluator with every getter
already resolved by the importer into one envgym can answer without a network and without running anything
the agent could have written:

* ``vm_file``: the file read out of the container (``DesktopState.read_file``, the engine's archive API)
  into a fresh host temp folder under OSWorld's ``dest`` name; absent or a folder -> ``None``, as OSWorld's
  getter gives when the VM cannot send the file.
* ``expected_file`` (OSWorld's ``cloud_file``/``cache_file``): bytes taken from the user's cache at import
  and stored in the task itself (sha256-checked), written to the temp folder; the agent never sees them.
* ``command_output`` (OSWorld's ``vm_command_line``): only ``cat P`` and ``[ -d/-f/-e P ]`` tests map, and
  their output is computed here from the files read out (``cat`` of nothing prints nothing); no command runs
  in the container, so the agent cannot plant one.
* ``rule``: the options as written.

The metric function (:func:`envgym_gui.osworld.install.metric`, desktop-env's code) is then called as
OSWorld's ``DesktopEnv.evaluate`` calls it: ``metric(result, expected, **options)`` (``expected`` left out when
the task has none), ``and``: 0 as soon as one metric is 0, else their mean; ``or``: 1 as soon as one is 1, else
their max; an episode the agent ended with ``fail`` scores 0. A metric that raises on what the agent left
(a corrupt workbook) scores 0 with the error in the evidence. The verdict passes at score 1.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import hashlib
import io
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from envgym.plugin import FrozenModel

__all__ = ["CommandOutput", "ExpectedFile", "OsworldEval", "Rule", "VmFile", "evaluate"]


class VmFile(FrozenModel):
    """Files read out of the container; ``gives`` picks those handed to the metric (one: a path, else a list)."""

    type: Literal["vm_file"] = "vm_file"
    paths: tuple[str, ...] = Field(min_length=1)
    dests: tuple[str, ...] = Field(min_length=1)
    gives: tuple[int, ...] = (0,)

    @model_validator(mode="after")
    def _same_length(self) -> VmFile:
        if len(self.paths) != len(self.dests) or any(not p.startswith("/") for p in self.paths):
            raise ValueError("vm_file: as many absolute paths as dests")
        return self


class StoredFile(FrozenModel):
    name: str = Field(pattern=r"^[^/]+$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    b64: str


class ExpectedFile(FrozenModel):
    """Files of OSWorld's cache (``cloud_file``/``cache_file``), stored in the task at import."""

    type: Literal["expected_file"] = "expected_file"
    files: tuple[StoredFile, ...] = Field(min_length=1)
    gives: tuple[int, ...] = (0,)


class CommandOutput(FrozenModel):
    """What OSWorld's ``vm_command_line`` would print: ``cat`` of ``path``, or ``yes``/``no`` of a file test."""

    type: Literal["command_output"] = "command_output"
    command: str
    """The command as OSWorld wrote it (evidence only: it never runs)."""
    how: Literal["cat", "test"]
    path: str = Field(pattern=r"^/")
    test: Literal["d", "f", "e"] = "e"
    yes: str = ""
    no: str = ""


class Rule(FrozenModel):
    type: Literal["rule"] = "rule"
    rules: Any = None


Getter = Annotated[VmFile | ExpectedFile | CommandOutput | Rule, Field(discriminator="type")]


class OsworldEval(FrozenModel):
    """OSWorld's evaluator with resolved getters (see the module docstring); lists are per metric."""

    func: tuple[str, ...] = Field(min_length=1)
    conj: Literal["and", "or"] = "and"
    result: tuple[Getter, ...]
    expected: tuple[Getter | None, ...]
    options: tuple[dict[str, Any], ...]

    @model_validator(mode="after")
    def _per_metric(self) -> OsworldEval:
        if not len(self.func) == len(self.result) == len(self.expected) == len(self.options):
            raise ValueError("osworld: func, result, expected and options differ in length")
        from envgym_gui.osworld.install import METRICS

        unknown = [f for f in self.func if f not in METRICS]
        if unknown:
            raise ValueError(f"osworld: metric(s) {unknown} do not run offline on files (not in install.METRICS)")
        return self


_QUIET = threading.Lock()
"""OSWorld's metrics print what they compare; their stdout is captured (a process-wide switch, so one at a time)."""


def _one_or_list(items: list[Any]) -> Any:
    return items[0] if len(items) == 1 else items


async def _resolve(getter: Getter | None, state: Any, folder: Path, used: set[str]) -> Any:
    match getter:
        case None:
            return None
        case Rule():
            return getter.rules
        case VmFile():
            out: list[Any] = []
            for index, (path, dest) in enumerate(zip(getter.paths, getter.dests, strict=True)):
                data = await state.read_file(path)
                if index not in getter.gives:
                    continue
                if data is None:
                    out.append(None)
                    continue
                out.append(await asyncio.to_thread(_write, folder, dest, data, used))
            return _one_or_list(out)
        case ExpectedFile():
            out = []
            for index, stored in enumerate(getter.files):
                if index in getter.gives:
                    data = base64.b64decode(stored.b64)
                    if hashlib.sha256(data).hexdigest() != stored.sha256:
                        raise ValueError(f"expected file {stored.name}: its bytes do not match their sha256")
                    out.append(await asyncio.to_thread(_write, folder, stored.name, data, used))
            return _one_or_list(out)
        case CommandOutput():
            data = await state.read_file(getter.path)
            if getter.how == "cat":
                return "" if data is None else data.decode("utf-8", errors="replace")
            folder_there = data is None and await state.list_dir(getter.path) is not None
            present = {"f": data is not None, "d": folder_there, "e": data is not None or folder_there}[getter.test]
            return getter.yes if present else getter.no
    raise TypeError(f"unknown getter {type(getter).__name__}")  # unreachable: the union is closed


def _write(folder: Path, name: str, data: bytes, used: set[str]) -> str:
    """Write ``data`` as ``name`` (a second file of the same name goes into a sub-folder of its own)."""
    where = Path(tempfile.mkdtemp(dir=folder)) if name in used else folder
    used.add(name)
    path = where / name
    path.write_bytes(data)
    return str(path)


def _call(name: str, result: Any, expected: Any, has_expected: bool, options: dict[str, Any]) -> float:
    from envgym_gui.osworld.install import metric

    function = metric(name)
    # OSWorld runs its metrics with Python's default warning filters: a warning (openpyxl, pandas) is no error
    with _QUIET, contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = function(result, expected, **options) if has_expected else function(result, **options)
        finally:
            gc.collect()  # files the metric left open (openpyxl's) are closed here, their ResourceWarning ignored
    return float(value)


async def evaluate(spec: OsworldEval, state: Any) -> tuple[float, list[dict[str, Any]]]:
    """OSWorld's score for the episode ``state`` holds, and evidence per metric (see the module docstring)."""
    from envgym_gui.osworld.install import require

    await asyncio.to_thread(require)
    evidence: list[dict[str, Any]] = []
    scores: list[float] = []
    with tempfile.TemporaryDirectory(prefix="envgym-osworld-") as tmp:
        used: set[str] = set()
        for name, result, expected, options in zip(spec.func, spec.result, spec.expected, spec.options,
                                                   strict=True):
            got = await _resolve(result, state, Path(tmp), used)
            want = await _resolve(expected, state, Path(tmp), used)
            try:
                score = await asyncio.to_thread(_call, name, got, want, expected is not None, dict(options))
                note = ""
            except Exception as exc:  # OSWorld's metric failed on what the agent left: scores 0
                score, note = 0.0, f"{type(exc).__name__}: {exc}"[:300]
            entry: dict[str, Any] = {"metric": name, "score": score, "result": _shown(got, tmp)}
            if note:
                entry["error"] = note
            evidence.append(entry)
            scores.append(score)
            if spec.conj == "and" and score == 0.0:
                return 0.0, evidence
            if spec.conj == "or" and score == 1.0:
                return 1.0, evidence
    return (sum(scores) / len(scores) if spec.conj == "and" else max(scores)), evidence


def _shown(value: Any, tmp: str) -> Any:
    """Evidence without the temp folder's name (a path is shown as the file name it had)."""
    if isinstance(value, list):
        return [_shown(v, tmp) for v in value]
    if isinstance(value, str) and value.startswith(tmp):
        return Path(value).name
    if isinstance(value, str) and len(value) > 300:
        return value[:300] + f"… ({len(value)} chars)"
    return value
