"""Imports deferred to first use, so that ``import envgym`` and ``envgym --help`` stay fast.

Lazy re-exports for a package's ``__init__`` (PEP 562): each name is imported from its home module on
first use, then kept as a plain attribute; ``dir()`` lists the names before that.

    __getattr__, __dir__ = lazy_exports(__name__, {"envgym.types": ("Action", "Verdict")})

The package keeps an ``if TYPE_CHECKING:`` block of the same imports for type checkers and its ``__all__``.
:class:`LazyConsole` is the command lines' rich console, built when something is first printed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def lazy_exports(package: str, homes: Mapping[str, Sequence[str]]) -> tuple[Callable[[str], object],
                                                                              Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, which re-exports ``homes`` (module -> names)."""
    home = {name: module for module, names in homes.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> object:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(module)
        value = getattr(sys.modules[module], name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *home})

    return __getattr__, __dir__


class LazyConsole:
    """A rich ``Console(**options)`` built on first use: rich takes a tenth of a second to import, and
    ``envgym --help`` (argparse's own output) never prints through it."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)
