"""Argument matching shared by the write-action verifier and ``called`` checks.

A literal matches an equal value (numbers compare as floats, strings case-insensitively after stripping).
A matcher dict matches by rule: ``$regex``, ``$contains``, ``$approx`` (with ``$tol``), ``$in``, ``$any``.
"""

from __future__ import annotations

import math
import re
from typing import Any


def value_matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict) and expected and all(k.startswith("$") for k in expected):
        if "$any" in expected:
            return True
        if "$regex" in expected:
            return actual is not None and re.search(expected["$regex"], str(actual), re.IGNORECASE) is not None
        if "$contains" in expected:
            return actual is not None and str(expected["$contains"]).lower() in str(actual).lower()
        if "$approx" in expected:
            try:
                tolerance = float(expected.get("$tol", 1e-6))
                return math.isclose(float(actual), float(expected["$approx"]), abs_tol=tolerance)
            except (TypeError, ValueError):
                return False
        if "$in" in expected:
            return any(value_matches(option, actual) for option in expected["$in"])
        raise ValueError(f"unknown matcher {sorted(expected)}")
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return math.isclose(float(expected), float(actual), abs_tol=1e-9)
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip().casefold() == actual.strip().casefold()
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(value_matches(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return args_match(expected, actual) and set(expected) == set(actual)
    return bool(expected == actual)


def args_match(expected: dict[str, Any], actual: dict[str, Any] | None) -> bool:
    """Every expected key is present in ``actual`` with a matching value; other keys are free."""
    if actual is None:
        return False
    return all(key in actual and value_matches(value, actual[key]) for key, value in expected.items())
