"""``envgym check NAME`` on a task generator: a seeded sample of its tasks, made once, off the event loop.

:func:`check_generator` admits a generator (:mod:`envgym.generate`) the way :func:`envgym.check.check` admits
an env, on a sample of its lazy suite, plus two checks of the generator's own:

- **deterministic**: the first :data:`DETERMINISM_SAMPLE` tasks of the sample are made again in two fresh
  Python processes (``PYTHONHASHSEED`` 0 and 4242, the second making them in reverse order, so that no task
  depends on what its process made before) and must have the same hashes as here;
- **held-out templates**: the sample's train and test (and dev) tasks share no template family.

The sample is made once, in a worker thread (a generator may block for minutes: ScienceWorld runs a JVM per
generation process, TextWorld searches for quests), and the same task objects are then played, compared and
hashed; a generation slower than :data:`PROGRESS_EVERY_S` says how far it got, one line at a time
(``progress``: stderr by default).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from envgym import generate
from envgym.check import CheckReport, choose_tasks, run_checks
from envgym.check_gates import PROGRESS_EVERY_S
from envgym.errors import SpecError
from envgym.registry import generator_spec
from envgym.task import TaskSpec

GENERATOR_SAMPLE = 200
"""Tasks ``envgym check NAME`` samples from a generator unless told otherwise (``--generator-sample``)."""
DETERMINISM_SAMPLE = 20
"""Of those, how many are made again in two other processes (different ``PYTHONHASHSEED``) and compared."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def check_generator(ref: str, *, sample: int | None = GENERATOR_SAMPLE, seed: int = 0, limit: int | None = None,
                          progress: Callable[[str], None] | None = _stderr, **kwargs: Any) -> CheckReport:
    """Admit a task generator: :func:`envgym.check.check`'s checks on a seeded sample of its suite (``ref``:
    ``NAME`` or ``NAME@START:STOP[:level=L][:split=S]``; every split, levels mixed, by default), its tasks made
    alike in two fresh processes, and its splits' template families apart (see the module docstring).
    ``progress`` (None: silent) gets a line every :data:`PROGRESS_EVERY_S` seconds of a slow generation and of
    the gates (an oracle and a null episode per task);
    ``kwargs`` go to the checks (``gates``, ``concurrency``, ``tamper``, ``gymnasium_check``)."""
    parsed = generate.parse_ref(ref)
    if parsed is None:
        raise SpecError(f"{ref!r} names no task generator (envgym tasks generate --list names them)")
    found = generator_spec(parsed.name)
    if found is None:  # parse_ref found it a moment ago
        raise SpecError(f"unknown generator {parsed.name!r}")
    every = generate.GeneratedTasks(parsed)
    sample = None if limit is not None else sample
    picked, selection = choose_tasks(range(len(every)), limit=limit, sample=sample, seed=seed)
    chosen = await asyncio.to_thread(_made, every, picked, str(parsed), progress)
    report = CheckReport(env_id=f"{parsed} (generator of {found.env_id})", tasks=len(every), selection=selection)
    report.expect("the chosen tasks carry reference solutions", bool(chosen) and
                  all(t.solution is not None for t in chosen), f"{len(chosen)} tasks")
    await run_checks(found.env_id, chosen, report, progress=progress, **kwargs)
    seen: dict[str, set[str]] = {}
    for task in chosen:
        seen.setdefault(task.split, set()).update(task.metadata.get("templates", ()))
    shared = set.intersection(*seen.values()) if len(seen) > 1 else set()
    report.expect(f"train and test share no template family ({len(chosen)} tasks: "
                  + "; ".join(f"{split} {', '.join(sorted(t))}" for split, t in sorted(seen.items())) + ")",
                  not shared, f"shared: {', '.join(sorted(shared))}")
    probe = chosen[:DETERMINISM_SAMPLE]
    mine = [t.hash for t in probe]
    seeds = ("0", "4242")
    # the second process makes them in reverse order: a task must not depend on what its process made before
    # (ScienceWorld's gold paths once did, through a route cache its JVM kept across loads)
    theirs = await asyncio.gather(_hashes_elsewhere([t.id for t in probe], seeds[0]),
                                  _hashes_elsewhere([t.id for t in reversed(probe)], seeds[1]))
    theirs[1].reverse()
    differ = [f"{t.id} (PYTHONHASHSEED={hs})" for hs, hashes in zip(seeds, theirs, strict=True)
              for t, h, other in zip(probe, mine, hashes, strict=False) if h != other]
    report.expect(f"deterministic: {len(probe)} tasks made alike in two other processes (PYTHONHASHSEED 0, 4242; "
                  "the second in reverse order)",
                  not differ and all(len(h) == len(probe) for h in theirs),
                  "differ: " + ", ".join(differ[:5]) if differ else "a process made fewer tasks")
    return report


def _made(every: Sequence[TaskSpec], picked: Sequence[int], name: str,
          progress: Callable[[str], None] | None) -> list[TaskSpec]:
    """The tasks at ``picked`` of ``every``, each made once (blocking: run in a worker thread)."""
    started = last = time.monotonic()
    tasks = []
    for done, index in enumerate(picked, 1):
        tasks.append(every[index])
        now = time.monotonic()
        if progress is not None and now - last >= PROGRESS_EVERY_S:
            last = now
            progress(f"{name}: made {done} of {len(picked)} tasks to check ({now - started:.0f} s)")
    if progress is not None and last > started:  # it was slow enough to report: say it finished
        progress(f"{name}: made {len(picked)} tasks to check in {time.monotonic() - started:.0f} s")
    return tasks


_HASHES = """\
import sys
from envgym.generate import generate, parse_task_id
for line in sys.stdin.read().split():
    name, split, level, seed = parse_task_id(line)
    print(generate(name, seed, level=level, split=split).hash, flush=True)
"""


async def _hashes_elsewhere(ids: list[str], hash_seed: str) -> list[str]:
    """The hashes another Python process (``PYTHONHASHSEED=hash_seed``) makes for these generated task ids."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HASHES, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONHASHSEED": hash_seed})
    out, err = await process.communicate("\n".join(ids).encode())
    if process.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        why = lines[-1] if lines else f"exit {process.returncode}"
        raise SpecError(f"making the tasks again in another process failed: {why}")
    return out.decode().split()
