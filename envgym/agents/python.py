"""The ``python`` agent: a user's own agent, named as ``module:factory`` or ``path/to/file.py:factory``.

    envgym eval --suite tool-retail --agent my_agents:make --out runs/mine
    envgym eval --suite tool-retail --agent agents/mine.py:MyAgent --out runs/mine

``factory`` is any callable taking no arguments (a function, or a class). It is called once when the run
starts and must return either

- an :class:`~envgym.agent.AgentFactory` (``create(task)``; ``describe()`` and ``aclose()`` are optional
  here): it builds every episode's agent, and is closed once at the end of the run; or
- an :class:`~envgym.agent.Agent`: then the callable is the agent's constructor and is called again for
  every further episode (episodes run concurrently, so they never share an instance).

A module is imported with the current directory on ``sys.path`` (as ``python -m`` would); a file is loaded
as a module of its own with its folder on ``sys.path``. A missing module or file, a missing attribute, a
callable that raises or that returns anything else is a :class:`~envgym.errors.SpecError` naming the
reference (``envgym eval`` exits 2). Records name the agent ``py:REF`` (the reference as given, a path
normalised), and the reference is part of the run's config hash.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envgym.agent import Agent
from envgym.errors import SpecError

if TYPE_CHECKING:
    from envgym.task import TaskSpec


def normalise_ref(ref: str) -> str:
    """``module:attr`` as given; a file's path normalised (``./a/b.py:f`` -> ``a/b.py:f``)."""
    where, sep, attr = ref.rpartition(":")
    if not sep or not where or not attr:
        raise SpecError(f"a Python agent is named MODULE:CALLABLE or FILE.py:CALLABLE, not {ref!r}", field="agent")
    if where.endswith(".py"):
        where = os.path.normpath(where)
    return f"{where}:{attr}"


def load_callable(ref: str) -> Callable[[], Any]:
    """Import ``ref``'s module (or file) and return its attribute; a SpecError says what was missing."""
    where, _, attr = normalise_ref(ref).rpartition(":")
    if where.endswith(".py"):
        module = _load_file(Path(where), ref)
    else:
        cwd = os.getcwd()
        if cwd not in sys.path and "" not in sys.path:
            sys.path.insert(0, cwd)
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (where == exc.name or where.startswith(exc.name + ".")):
                raise _import_failed(ref, where, exc) from exc  # the module is there; what it imports is not
            raise SpecError(f"--agent {ref}: no module named {where!r} (looked in the current directory "
                            "and the installed packages)", field="agent") from None
        except Exception as exc:
            raise _import_failed(ref, where, exc) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise SpecError(f"--agent {ref}: {where} has no attribute {attr!r}", field="agent")
        target = getattr(target, part)
    if not callable(target):
        raise SpecError(f"--agent {ref}: {attr} is a {type(target).__name__}, not a callable returning an "
                        "Agent or an AgentFactory", field="agent")
    return target


def _load_file(path: Path, ref: str) -> Any:
    if not path.is_file():
        raise SpecError(f"--agent {ref}: no file {str(path)!r}", field="agent")
    name = "envgym_user_agent_" + "".join(c if c.isalnum() else "_" for c in str(path.resolve()))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SpecError(f"--agent {ref}: cannot load {str(path)!r} as Python", field="agent")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module  # before exec: dataclasses and pickling look their module up
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise _import_failed(ref, str(path), exc) from exc
    return module


def _import_failed(ref: str, where: str, exc: Exception) -> SpecError:
    # one line for the CLI; a SyntaxError's text already names the file and line
    return SpecError(f"--agent {ref}: importing {where} raised {type(exc).__name__}: {exc}", field="agent")


class PythonAgentFactory:
    """Wraps what a user's callable returned into the :class:`~envgym.agent.AgentFactory` contract."""

    def __init__(self, ref: str) -> None:
        self.ref = normalise_ref(ref)
        self._make = load_callable(ref)
        made = self._call()
        self._first: Agent | None = None
        self._inner: Any = None
        if isinstance(made, Agent):
            self._first = made
        elif callable(getattr(made, "create", None)):
            self._inner = made
        else:
            raise SpecError(f"--agent {ref}: returned a {type(made).__name__}, not an envgym.agent.Agent or an "
                            "AgentFactory (an object with create(task))", field="agent")

    def _call(self) -> Any:
        try:
            return self._make()
        except Exception as exc:
            raise SpecError(f"--agent {self.ref}: calling it raised {type(exc).__name__}: {exc}",
                            field="agent") from exc

    def create(self, task: TaskSpec) -> Agent:
        if self._inner is not None:
            agent = self._inner.create(task)
        elif self._first is not None:
            agent, self._first = self._first, None
        else:
            agent = self._make()
        if not isinstance(agent, Agent):
            raise SpecError(f"--agent {self.ref}: made a {type(agent).__name__}, not an envgym.agent.Agent",
                            field="agent")
        return agent

    def describe(self) -> dict[str, Any]:
        described = getattr(self._inner, "describe", None)
        settings = described() if callable(described) else {}
        if not isinstance(settings, dict):
            raise SpecError(f"--agent {self.ref}: describe() returned a {type(settings).__name__}, not a dict",
                            field="agent")
        return {**settings, "agent": "python", "ref": self.ref}

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if callable(close):
            await close()
