"""Argument matching shared by the write-action verifier and ``called`` checks.

A literal matches an equal value (numbers compare as floats, strings case-insensitively after stripping;
a list matches a list of the same length item by item). A dict of literals matches a dict that has every
expected key with a matching value; **other keys are free**, at every depth, as for a call's top-level
arguments. A matcher dict matches by rule: ``$regex``, ``$contains``, ``$approx`` (with ``$tol``), ``$in``,
``$any``, and ``$exact`` (``{"$exact": {...}}``: the same keys and no others, each value matching by these
rules; nested dicts inside stay free unless they are ``$exact`` too).

:func:`mismatches` says why arguments did not match, one line per argument that differed (its path,
expected and got), for the write-action verifier's criterion detail. :func:`check_matchers` is the
spec-time check (unknown rules, regexes that do not compile, ``$in`` without a list, ``$exact`` without an
object): specs annotate matcher-holding fields with :data:`Matchable` / :data:`MatchArgs`, so a bad matcher
fails when the task is loaded, naming its field, not when an episode is graded.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator

_RULES = frozenset({"$any", "$regex", "$contains", "$approx", "$tol", "$in", "$exact"})


def _is_matcher(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(k, str) and k.startswith("$") for k in value)


def check_matchers(value: Any) -> Any:
    """``value`` unchanged if every matcher in it is well formed, else ValueError saying which and why."""
    stack = [value]
    while stack:
        item = stack.pop()
        if _is_matcher(item):
            unknown = sorted(set(item) - _RULES)
            if unknown:
                raise ValueError(f"unknown matcher {unknown} (known: {', '.join(sorted(_RULES))})")
            if "$regex" in item:
                pattern = item["$regex"]
                if not isinstance(pattern, str):
                    raise ValueError(f"$regex must be a string, not {type(pattern).__name__}")
                try:
                    re.compile(pattern, re.IGNORECASE)
                except re.error as exc:
                    raise ValueError(f"invalid $regex {pattern!r}: {exc}") from None
            for key in ("$approx", "$tol"):
                if key in item and (isinstance(item[key], bool) or not isinstance(item[key], int | float)):
                    raise ValueError(f"{key} must be a number, not {item[key]!r}")
            if "$in" in item:
                if not isinstance(item["$in"], list | tuple):
                    raise ValueError(f"$in must be a list, not {type(item['$in']).__name__}")
                stack.extend(item["$in"])
            if "$exact" in item:
                if len(item) > 1:
                    raise ValueError(f"$exact takes no other rule beside it, got {sorted(item)}")
                if not isinstance(item["$exact"], dict):
                    raise ValueError(f"$exact must be an object, not {type(item['$exact']).__name__}")
                stack.extend(item["$exact"].values())
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value


Matchable = Annotated[Any, AfterValidator(check_matchers)]
"""A literal or matcher, checked when the spec is built."""
MatchArgs = Annotated[dict[str, Any], AfterValidator(check_matchers)]
"""Argument literals or matchers by argument name, checked when the spec is built."""


MAX_TEXT_CHARS = 2000


def value_matches(expected: Any, actual: Any) -> bool:
    if _is_matcher(expected):
        if "$any" in expected:
            return True
        if ("$regex" in expected or "$contains" in expected) and (actual is None or len(str(actual)) > MAX_TEXT_CHARS):
            return False
        if "$regex" in expected:
            return re.search(expected["$regex"], str(actual), re.IGNORECASE) is not None
        if "$contains" in expected:
            return str(expected["$contains"]).lower() in str(actual).lower()
        if "$approx" in expected:
            try:
                tolerance = float(expected.get("$tol", 1e-6))
                return math.isclose(float(actual), float(expected["$approx"]), abs_tol=tolerance)
            except (TypeError, ValueError):
                return False
        if "$in" in expected:
            return any(value_matches(option, actual) for option in expected["$in"])
        if "$exact" in expected:
            exact = expected["$exact"]
            return isinstance(actual, dict) and set(exact) == set(actual) and args_match(exact, actual)
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
        return args_match(expected, actual)
    return bool(expected == actual)


def args_match(expected: dict[str, Any], actual: dict[str, Any] | None) -> bool:
    """Every expected key is present in ``actual`` with a matching value; other keys are free."""
    if actual is None:
        return False
    return all(key in actual and value_matches(value, actual[key]) for key, value in expected.items())


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def mismatches(expected: dict[str, Any], actual: dict[str, Any] | None, *, prefix: str = "") -> list[str]:
    """Why ``actual`` does not match ``expected`` (:func:`args_match`): one line per differing argument,
    ``path: expected X, got Y`` (``path`` dotted into dicts, ``[i]`` into lists); empty when they match."""
    if actual is None:
        return [f"{prefix or 'arguments'}: none (the call was rejected)"]
    lines = []
    for key, want in expected.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in actual:
            lines.append(f"{path}: expected {_show(want)}, missing")
            continue
        got = actual[key]
        if value_matches(want, got):
            continue
        if isinstance(want, dict) and not _is_matcher(want) and isinstance(got, dict):
            lines.extend(mismatches(want, got, prefix=path))
        elif _is_matcher(want) and "$exact" in want and isinstance(got, dict):
            extra = sorted(set(got) - set(want["$exact"]))
            lines.extend(mismatches(want["$exact"], got, prefix=path))
            if extra:
                lines.append(f"{path}: unexpected key(s) {', '.join(map(str, extra))} ($exact)")
        elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
            for i, (w, g) in enumerate(zip(want, got, strict=True)):
                if not value_matches(w, g):
                    sub = mismatches(w, g, prefix=f"{path}[{i}]") if isinstance(w, dict) and isinstance(g, dict) \
                        and not _is_matcher(w) else [f"{path}[{i}]: expected {_show(w)}, got {_show(g)}"]
                    lines.extend(sub)
        else:
            lines.append(f"{path}: expected {_show(want)}, got {_show(got)}")
    return lines
