"""No import circle among the modules of the sandbox package, the tools package and eval (issue 35, item 4).

Built on the scan of ``tests/test_layers.py`` (its ``SOURCES`` and ``imported``: every import statement,
those inside functions and ``TYPE_CHECKING`` blocks included), loaded from its path. Each imported name counts
as the module that holds it. ``from pkg import sub`` is also an import of ``pkg`` itself (its ``__init__``), so
a submodule that reaches its siblings through its package while the package re-exports that submodule is a
circle; one that imports ``pkg.sub`` directly is not (the package's ``__init__`` has begun before any of its
submodules, whatever it imports).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_layers_scan", Path(__file__).with_name("test_layers.py"))
assert _spec is not None and _spec.loader is not None
layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layers)

GROUPS = {
    "sandbox": ("envgym.sandbox",),
    "tools": ("envgym.tools",),
    "eval": ("envgym.eval", "envgym._eval_config", "envgym._eval_records", "envgym._eval_workers"),
}


def _home(name: str) -> str | None:
    """The scanned module an imported dotted name lives in (``pkg.mod.Name`` -> ``pkg.mod``)."""
    while name and name not in layers.SOURCES:
        name = name.rpartition(".")[0]
    return name or None


def _cycle(modules: list[str]) -> list[str] | None:
    """An import cycle among ``modules`` (``TYPE_CHECKING`` imports counted too), or None."""
    return layers.cycle_among(set(modules), lambda m: {_home(n) for n in layers.imported(m)})


def test_no_import_circle_in_sandbox_tools_eval():
    groups = {name: layers.modules_under(*prefixes) for name, prefixes in GROUPS.items()}
    assert {"envgym.sandbox.docker", "envgym.sandbox.reaper"} <= set(groups["sandbox"])
    assert {"envgym.tools.env", "envgym._eval_workers"} <= {*groups["tools"], *groups["eval"]}
    assert {name: _cycle(modules) for name, modules in groups.items()} == dict.fromkeys(GROUPS)
