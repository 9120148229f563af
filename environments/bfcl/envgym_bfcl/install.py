"""``envgym bfcl setup``: BFCL's package installed beside envgym, without the pins that would break it.

``bfcl-eval`` declares ``numpy==1.26.4``, ``filelock==3.20.0``, sentence-transformers (torch and CUDA),
faiss and more for categories and model backends envgym does not use; pip cannot install it with those into
an environment that holds the rest of envgym. So the install is two steps, both run by the user:

    pip install 'envgym[bfcl]'      # what BFCL's loaders, checkers and evaluation runner import
    envgym bfcl setup               # bfcl-eval itself, pinned, with --no-deps, into this interpreter

``setup`` (:mod:`envgym_bfcl.cli`) installs :data:`REQUIREMENT` with pip, then :func:`problem` imports every
``bfcl_eval`` module envgym uses (:data:`MODULES`) and says what is still missing. envgym never installs
anything by itself (it opens no connection at run time): a BFCL env, the ``bfcl`` verifier or the parity
code that finds bfcl-eval missing, broken or at another version raises :class:`~envgym.plugin.ExtraMissing`
naming the command to run (``envgym`` prints it and exits 2).
"""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed

from envgym.plugin import ExtraMissing

__all__ = ["MODULES", "REQUIREMENT", "RUNNER", "SETUP", "SIMULATORS", "VERSION", "found", "problem", "require"]

VERSION = "2026.3.23"
"""The bfcl-eval release the bundled suites were built from (``tasks/bfcl-*/README.md``)."""
REQUIREMENT = f"bfcl-eval=={VERSION}"
SETUP = "pip install 'envgym[bfcl]' && envgym bfcl setup"
"""What a user runs (the error text names it exactly)."""
MODULES = (
    "bfcl_eval.utils",  # the dataset and possible-answer loaders
    "bfcl_eval.model_handler.utils",  # OpenAI tool schemas, call strings
    "bfcl_eval.constants.executable_backend_config",  # the multi-turn API simulators' classes
    "bfcl_eval.eval_checker.ast_eval.ast_checker",
    "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker",
)
"""The ``bfcl_eval`` modules envgym's envs and verifier import; importing them (and :data:`SIMULATORS`') is the
check. Parity (and ``envgym bfcl setup``) also checks :data:`RUNNER`."""
RUNNER = "bfcl_eval.eval_checker.eval_runner"
"""BFCL's own evaluation (``bfcl evaluate``), which :mod:`envgym_bfcl.parity` compares with."""
SIMULATORS = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot", "TravelAPI",
              "VehicleControlAPI")
"""The API simulators of the included multi-turn categories (BFCL imports each on first use; the web-search
and memory ones, of categories envgym leaves out, need the heavy dependencies)."""


def found() -> str | None:
    """The installed bfcl-eval's version (None when it is not installed)."""
    try:
        return installed("bfcl-eval")
    except PackageNotFoundError:
        return None


def problem(*, runner: bool = False) -> str | None:
    """Why BFCL cannot be used from this interpreter (with the command that fixes it), or None; with
    ``runner``, BFCL's evaluation runner must import too."""
    found_version = found()
    if found_version is None:
        return f"BFCL needs bfcl-eval, which is not installed here ({sys.executable}): run {SETUP}"
    if found_version != VERSION:
        return (f"bfcl-eval {found_version} is installed, the bfcl suites are built from {VERSION}: "
                f"run envgym bfcl setup (it installs {REQUIREMENT})")
    for module in MODULES + SIMULATORS + ((RUNNER,) if runner else ()):
        try:
            if module in SIMULATORS:
                from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

                module = CLASS_FILE_PATH_MAPPING[module]
            importlib.import_module(module)
        except ImportError as exc:
            what = f"module {exc.name!r} is missing" if isinstance(exc, ModuleNotFoundError) else str(exc)
            return (f"bfcl-eval {found_version} cannot import {module} ({what}); its dependencies come with the "
                    f"extra: pip install 'envgym[bfcl]'")
    return None


def require(*, runner: bool = False) -> str:
    """The installed bfcl-eval version; :class:`ExtraMissing` (naming the command to run) when unusable."""
    reason = problem(runner=runner)
    if reason is not None:
        raise ExtraMissing(reason)
    return VERSION
