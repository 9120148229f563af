"""Deprecation aliases: a public name that moved keeps working, with a warning, for at least one minor version.

Three shapes, each warning ``DeprecationWarning`` with the old name, the new one, the version it moved in and
the version the alias goes in (CHANGELOG.md lists every alias under ``Deprecated``):

- :func:`moved_module`: a stub module (``envgym/tooling.py``) whose import warns once and whose every attribute
  is looked up in the new module, warning each time: ``envgym.tooling.X moved to envgym.tools.args.X``.
- :func:`moved_attribute`: one name of a module that moved to another (``envgym.registry.make``).
- :class:`MovedAttribute`: a class attribute that warns and returns the new one (``Env._choose_task``).
- :func:`call_verify`: the kernel's one way to call an env's ``verify`` with the run's judge. An override
  written before ``verify`` took ``judge`` (``def verify(self)``) is called without it, and its class is
  warned about once. The signature is inspected once per class and cached, so the per-episode cost is one
  dict lookup.

This module imports nothing from envgym: it sits at the bottom of the kernel's stack.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any


def _stacklevel() -> int:
    """The level of the first frame outside this module and the alias modules: the code that used the old
    name (Python 3.11 has no ``skip_file_prefixes``; ``warnings`` itself steps over the import machinery's
    frames, so they are not counted)."""
    frame, level = sys._getframe(1), 1  # _warn's
    while True:
        frame = frame.f_back
        while frame is not None and "importlib" in (name := frame.f_code.co_filename) and "_bootstrap" in name:
            frame = frame.f_back
        level += 1
        if frame is None or not (frame.f_code.co_filename == __file__ or frame.f_globals.get("__deprecated_alias__")):
            return level


def _warn(message: str) -> None:
    warnings.warn(message, DeprecationWarning, stacklevel=_stacklevel())


def moved_module(old: str, new: str, names: tuple[str, ...], *, since: str,
                 removal: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Warn that module ``old`` moved to ``new``, and return the ``__getattr__`` and ``__dir__`` of the stub
    module ``old`` (PEP 562): the ``names`` it had, each read warning and giving ``new``'s object. The stub
    module sets ``__deprecated_alias__ = True`` so the warnings point at the code that imports it."""
    when = f"(since {since}; the alias goes in {removal})"
    _warn(f"{old} moved to {new} {when}")

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {old!r} has no attribute {name!r} ({old} moved to {new})")
        _warn(f"{old}.{name} moved to {new}.{name} {when}")
        return getattr(importlib.import_module(new), name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__


def moved_attribute(old: str, new: str, name: str, *, since: str, removal: str) -> Any:
    """For a module ``__getattr__`` (PEP 562): ``new.name``, warning that ``old.name`` moved there. The new
    module is imported by name: an alias never makes the old module import the new one (no import circle)."""
    _warn(f"{old}.{name} moved to {new}.{name} (since {since}; the alias goes in {removal})")
    return getattr(importlib.import_module(new), name)


class MovedAttribute:
    """A class attribute renamed to ``new``: reading the old name warns and returns the new attribute
    (bound to the instance when read from one)::

        class Env:
            _choose_task = MovedAttribute("choose_task", since="0.2", removal="0.3")
    """

    def __init__(self, new: str, *, since: str, removal: str) -> None:
        self.new, self.since, self.removal = new, since, removal
        self.old = self.owner = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old, self.owner = name, f"{owner.__module__}.{owner.__qualname__}"

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        _warn(f"{self.owner}.{self.old} moved to {self.owner}.{self.new} "
              f"(since {self.since}; the alias goes in {self.removal})")
        return getattr(obj if obj is not None else objtype, self.new)


_VERIFY_TAKES_JUDGE: dict[type, bool] = {}


def _takes_judge(cls: type) -> bool:
    try:
        params = inspect.signature(cls.verify).parameters.values()  # type: ignore[attr-defined]
    except (TypeError, ValueError):  # no signature to read (a builtin, a C callable): assume the contract
        return True
    return any(p.kind is p.VAR_KEYWORD or (p.name == "judge" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
               for p in params)


def call_verify(env: Any, judge: Any) -> Awaitable[Any]:
    """``env.verify(judge=judge)``, or ``env.verify()`` for a class whose ``verify`` takes no ``judge`` (the
    0.1 contract; warned about once per class, and the judge is not passed: such an env grades itself)."""
    cls = type(env)
    takes = _VERIFY_TAKES_JUDGE.get(cls)
    if takes is None:
        takes = _VERIFY_TAKES_JUDGE[cls] = _takes_judge(cls)
        if not takes:
            _warn(f"{cls.__module__}.{cls.__qualname__}.verify() takes no judge keyword: envgym calls it without "
                  "one, so the run's judge never reaches it; accept `*, judge=None` or implement verify_context() "
                  "instead (since 0.2; this compatibility goes in 0.3)")
    return env.verify(judge=judge) if takes else env.verify()
