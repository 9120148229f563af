"""``envgym osworld setup``: OSWorld's metric code (the ``desktop-env`` package) beside envgym, and loading it.

Imported OSWorld tasks are graded by OSWorld's own metric functions. They ship on PyPI as ``desktop-env``,
whose declared dependencies (torch, transformers, an old numpy, cloud SDKs) are for its VM runner, not for
the metrics; so the install is two steps, both run by the user::

    pip install 'envgym[osworld]'   # what the metric modules envgym loads import (openpyxl, python-docx, ...)
    envgym osworld setup            # desktop-env itself, pinned, with --no-deps, into this interpreter

``desktop_env.evaluators.metrics``' package ``__init__`` imports every metric module (browser, audio, image
ones with heavy dependencies), so :func:`metric` loads only the modules of :data:`MODULES`, each by itself.
``docs`` imports ``easyocr`` (torch) at its top for one metric, ``compare_image_text``, which the importer
refuses: that name alone is given an inert module so the other docx metrics load.

envgym installs nothing by itself: grading that finds desktop-env missing or at another version raises
:class:`~envgym.plugin.ExtraMissing` naming :data:`SETUP` (``envgym`` prints it and exits 2).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import types
import warnings
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed
from typing import Any

from envgym.plugin import ExtraMissing

__all__ = ["METRICS", "MODULES", "REQUIREMENT", "SETUP", "VERSION", "found", "metric", "problem", "require"]

VERSION = "1.0.2"
REQUIREMENT = f"desktop-env=={VERSION}"
SETUP = "pip install 'envgym[osworld]' && envgym osworld setup"
"""What a user runs (the error text names it exactly)."""
_PACKAGE = "desktop_env.evaluators.metrics"
MODULES = ("general", "table", "docs", "slides", "vscode")
"""The metric modules (of ``desktop_env.evaluators.metrics``) envgym loads; ``setup`` checks each imports."""

METRICS: dict[str, str] = {
    **dict.fromkeys(("exact_match", "check_include_exclude", "is_in_list", "match_in_list", "literal_match",
                     "check_list", "file_contains", "diff_text_file", "fuzzy_match", "check_csv", "check_json",
                     "check_line_number", "compare_python_pure_text", "check_direct_json_object"), "general"),
    **dict.fromkeys(("compare_table", "compare_csv", "compare_conference_city_in_order"), "table"),
    **dict.fromkeys(("compare_docx_files", "compare_docx_tables", "compare_line_spacing", "compare_font_names",
                     "compare_subscript_contains", "has_page_numbers_in_footers", "is_first_line_centered",
                     "check_tabstops", "compare_contains_image", "evaluate_colored_words_in_tables",
                     "check_highlighted_words", "evaluate_strike_through_last_paragraph", "compare_insert_equation",
                     "compare_highlighted_text", "contains_page_break", "compare_docx_lines",
                     "compare_docx_files_and_ignore_new_lines", "compare_docx_images", "check_italic_font_size_14",
                     "compare_init_lines", "compare_references", "compare_unique_train_records"), "docs"),
    **dict.fromkeys(("compare_pptx_files",), "slides"),
    **dict.fromkeys(("compare_text_file", "compare_config"), "vscode"),
}
"""Metric function -> its module: the metrics that run on the host on files and text read out of the container
(no network, no screen, no OCR). The importer refuses a task naming any other."""


def found() -> str | None:
    """The installed desktop-env's version (None when it is not installed)."""
    try:
        return installed("desktop-env")
    except PackageNotFoundError:
        return None


def _load(module: str) -> types.ModuleType:
    """``desktop_env.evaluators.metrics.<module>`` without running the packages' ``__init__`` files."""
    name = f"{_PACKAGE}.{module}"
    if name in sys.modules:
        return sys.modules[name]
    if "desktop_env" in sys.modules:  # the stub below, or desktop-env imported by someone else
        root = next(iter(sys.modules["desktop_env"].__path__))
    else:
        spec = importlib.util.find_spec("desktop_env")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError("No module named 'desktop_env'", name="desktop_env")
        root = next(iter(spec.submodule_search_locations))
    for package, where in (("desktop_env", ""), ("desktop_env.evaluators", "/evaluators"),
                           (_PACKAGE, "/evaluators/metrics")):
        if package not in sys.modules:  # bare namespace modules: the real __init__ files import every app's code
            stub = types.ModuleType(package)
            stub.__path__ = [root + where]
            sys.modules[package] = stub
    if module == "docs" and "easyocr" not in sys.modules:
        sys.modules["easyocr"] = types.ModuleType("easyocr")  # compare_image_text only; it is never called
    with warnings.catch_warnings():  # desktop-env's imports warn (PyPDF2 deprecated): theirs, not envgym's
        warnings.simplefilter("ignore")
        loaded = importlib.import_module(name)
    if module == "slides":  # compare_pptx_files turns a stderr handler on for its per-shape debug lines by default
        chatty = logging.getLogger("desktopenv.metric.slides.debug")
        chatty.addHandler(logging.NullHandler())
        chatty.propagate = False
    return loaded


def problem() -> str | None:
    """Why OSWorld's metrics cannot be used from this interpreter (with the command that fixes it), or None."""
    version = found()
    if version is None:
        return f"OSWorld tasks are graded by desktop-env, which is not installed here ({sys.executable}): run {SETUP}"
    if version != VERSION:
        return f"desktop-env {version} is installed, envgym grades with {VERSION}: run envgym osworld setup"
    for module in MODULES:
        try:
            _load(module)
        except ImportError as exc:
            what = f"module {exc.name!r} is missing" if isinstance(exc, ModuleNotFoundError) else str(exc)
            return (f"desktop-env {version} cannot import {_PACKAGE}.{module} ({what}); its dependencies come with "
                    "the extra: pip install 'envgym[osworld]'")
    return None


_checked: list[str] = []


def require() -> str:
    """The installed desktop-env version; :class:`ExtraMissing` (naming the command to run) when unusable."""
    if not _checked:
        reason = problem()
        if reason is not None:
            raise ExtraMissing(reason)
        _checked.append(VERSION)
    return VERSION


def metric(name: str) -> Callable[..., Any]:
    """OSWorld's metric function ``name`` (one of :data:`METRICS`)."""
    require()
    return getattr(_load(METRICS[name]), name)
