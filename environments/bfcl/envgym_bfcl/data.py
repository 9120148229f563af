"""BFCL's own data, read from the installed ``bfcl-eval`` wheel by BFCL's own loaders (nothing is copied here).

:func:`entries` gives a category's test entries as BFCL's ``load_dataset_entry`` prepares them (the
language hint added to function docs, multi-turn entries given their API classes' docs) and
:func:`answers` the possible answers (``load_ground_truth_entry``), both keyed by entry id and read once per
process. :func:`tools_of` turns an entry's function docs into the OpenAI tool schemas BFCL's OpenAI
function-calling handler sends (``convert_to_tool``: dots in names become underscores, which BFCL's checker
maps back for an ``underscore_to_dot`` model such as :data:`MODEL_NAME`).
"""

from __future__ import annotations

import functools
from typing import Any

from envgym.plugin import SpecError
from envgym_bfcl import CATEGORIES, MULTI_TURN, SINGLE_TURN, install

__all__ = ["CATEGORIES", "MODEL_NAME", "MULTI_TURN", "SINGLE_TURN", "answers", "entries", "entry", "tools_of",
           "version"]

MODEL_NAME = "gpt-4o-2024-11-20-FC"
"""The BFCL model config whose conventions envgym's agents follow: OpenAI function calling, ``.`` -> ``_``."""


@functools.cache
def version() -> str:
    """The installed bfcl-eval's version, once it imports; :class:`ExtraMissing` names the command to run."""
    return install.require()


def _utils() -> Any:
    version()  # a clear error, naming the command to run, when bfcl-eval is missing or broken
    from bfcl_eval import utils

    return utils


@functools.cache
def entries(category: str) -> dict[str, dict[str, Any]]:
    if category not in CATEGORIES:
        raise SpecError(f"BFCL category {category!r} is not included (included: {', '.join(CATEGORIES)})")
    return {e["id"]: e for e in _utils().load_dataset_entry(category)}


@functools.cache
def answers(category: str) -> dict[str, dict[str, Any]]:
    if "relevance" in category:
        return {}
    return {e["id"]: e for e in _utils().load_ground_truth_entry(category)}


def entry(category: str, entry_id: str) -> dict[str, Any]:
    found = entries(category).get(entry_id)
    if found is None:
        raise SpecError(f"no BFCL entry {entry_id!r} in {category} (bfcl-eval {version()})")
    return found


def tools_of(item: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenAI tool schemas of an entry's functions, exactly as BFCL's OpenAI function-calling handler builds them."""
    import copy

    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler.utils import convert_to_tool

    return convert_to_tool(copy.deepcopy(item["function"]), GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
