"""The answer verifier: the agent's final message against an expected answer.

Kinds: ``exact`` (whole message, whitespace-trimmed), ``contains`` (substring), ``regex`` (search),
``numeric`` (some number in the message within ``tolerance`` of the expected one). Case-insensitive unless
``case_sensitive``.

Hedged answers fail whatever they contain: a message over :data:`MAX_ANSWER_CHARS` characters (one that
quotes the instruction, the observations and the state back), or, for ``numeric``, one listing more than
:data:`MAX_NUMBERS` different numbers (every candidate at once). The bundled oracles' answers are under 200
characters with at most 7 numbers.
"""

from __future__ import annotations

import math
import re

from envgym.types import CriterionResult, Verdict
from envgym.verify.spec import AnswerSpec

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
MAX_ANSWER_CHARS = 2000
MAX_NUMBERS = 12


def answer_matches(spec: AnswerSpec, answer: str | None) -> tuple[bool, str]:
    if not answer:
        return False, "no final answer"
    expected = str(spec.expected)
    text = answer.strip()
    if len(text) > MAX_ANSWER_CHARS:
        return False, f"{spec.kind} {expected!r}: {len(text)} characters, over {MAX_ANSWER_CHARS} (hedged)"
    fold = (lambda s: s) if spec.case_sensitive else str.casefold
    if spec.kind == "exact":
        ok = fold(text) == fold(expected.strip())
    elif spec.kind == "contains":
        ok = fold(expected) in fold(text)
    elif spec.kind == "regex":
        flags = 0 if spec.case_sensitive else re.IGNORECASE
        ok = re.search(expected, text, flags) is not None
    else:
        target = float(spec.expected)
        numbers = [float(n.replace(",", "")) for n in _NUMBER.findall(text)]
        if len(set(numbers)) > MAX_NUMBERS:
            return False, f"numeric {expected!r}: the answer lists {len(set(numbers))} different numbers (hedged)"
        ok = any(math.isclose(n, target, abs_tol=spec.tolerance) for n in numbers)
    return ok, f"{spec.kind} {expected!r}: {'found' if ok else 'not found'}"


async def verify_answer(spec: AnswerSpec, answer: str | None) -> Verdict:
    ok, detail = answer_matches(spec, answer)
    return Verdict(score=float(ok), passed=ok,
                   criteria=(CriterionResult(name=f"answer_{spec.kind}", score=float(ok), passed=ok, detail=detail),),
                   evidence={"final_answer": answer})
