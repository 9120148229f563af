"""The ``bfcl`` verifier kind: BFCL's own checker on what :class:`~envgym_bfcl.env.BfclEnv` recorded.

A task's ``{"type": "bfcl", "category": ..., "entry_id": ...}`` verifier looks the possible answer up in the
installed ``bfcl-eval`` and runs, as BFCL's ``eval_runner`` does for a function-calling model:

- AST categories: the answer's calls decoded as BFCL's function-calling handlers decode them (``json.loads``
  of each call's arguments), ``is_function_calling_format_output``, then ``ast_checker`` (names mapped back
  from ``_`` to ``.`` for :data:`~envgym_bfcl.data.MODEL_NAME`);
- relevance and irrelevance: whether the answer holds a function call (``is_empty_output``);
- multi-turn: the turn count must match the ground truth's, then ``multi_turn_checker`` re-executes the
  recorded calls and the ground truth on fresh BFCL simulator instances and compares state and responses.

Score 1 iff BFCL says valid; the evidence carries BFCL's error and error type. The checker runs in a
worker thread (it is CPU work, and multi-turn grading executes simulators).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any, Literal

from envgym.plugin import CriterionResult, FrozenModel, Verdict, VerifierError, VerifyContext
from envgym_bfcl import data

__all__ = ["BfclSpec", "bfcl_check", "check_result"]


class BfclSpec(FrozenModel):
    type: Literal["bfcl"] = "bfcl"
    category: str
    entry_id: str


def check_result(category: str, entry_id: str, result: Any) -> dict[str, Any]:
    """BFCL's verdict (``{"valid": bool, ...}``) on ``result``: a single-turn answer (a list of ``{name:
    arguments JSON}`` or a text) or, for multi-turn, the decoded calls per turn per step."""
    item = data.entry(category, entry_id)
    if category in data.MULTI_TURN:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

        from envgym_bfcl.env import drop_instances

        truth = data.answers(category)[entry_id]["ground_truth"]
        if len(result) != len(truth):
            return {"valid": False, "error_type": "multi_turn:force_terminated",
                    "error_message": f"{len(result)} turns answered, {len(truth)} asked"}
        namespace = f"envgym_grade_{secrets.token_hex(6)}"
        try:
            return multi_turn_checker(result, truth, item, category, namespace)
        finally:
            drop_instances(namespace)
            drop_instances(namespace + "_ground_truth")
    from bfcl_eval.utils import is_empty_output, is_function_calling_format_output

    decoded: Any = None
    if isinstance(result, list):
        try:
            decoded = [{name: json.loads(arguments)} for call in result for name, arguments in call.items()]
        except (ValueError, AttributeError, RecursionError) as exc:  # too deep to decode: not decodable either
            decoded, error = None, f"Invalid syntax. Failed to decode AST. {exc}"
    if "relevance" in category:
        has_call = decoded is not None and not is_empty_output(decoded)
        valid = not has_call if "irrelevance" in category else has_call
        return {"valid": valid} if valid else {"valid": False, "error_type": (
            "irrelevance_error:decoder_success" if "irrelevance" in category else "relevance_error:decoder_failed")}
    if decoded is None:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed",
                "error": [error if isinstance(result, list) else "no function call"]}
    if not is_function_calling_format_output(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format"}
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    answer = data.answers(category)[entry_id]["ground_truth"]
    return ast_checker(item["function"], decoded, answer, Language.PYTHON, category, data.MODEL_NAME)


async def bfcl_check(spec: BfclSpec, ctx: VerifyContext) -> Verdict:
    records = [entry["bfcl"] for entry in ctx.transcript if isinstance(entry, dict) and "bfcl" in entry]
    if not records:
        raise VerifierError("the bfcl verifier needs the record a bfcl env writes into the transcript")
    record = records[-1]
    if (record["category"], record["id"]) != (spec.category, spec.entry_id):
        raise VerifierError(f"the episode answered {record['id']}, the task grades {spec.entry_id}")
    outcome = await asyncio.to_thread(check_result, spec.category, spec.entry_id, record["result"])
    valid = bool(outcome.get("valid"))
    detail = "" if valid else str(outcome.get("error_type") or outcome.get("error") or "")[:300]
    evidence = {} if valid else {"bfcl": json.loads(json.dumps(
        {k: v for k, v in outcome.items() if k in ("error", "error_type", "error_message")}, default=str))}
    return Verdict(score=1.0 if valid else 0.0, passed=valid,
                   criteria=(CriterionResult(name="bfcl_checker", score=1.0 if valid else 0.0, passed=valid,
                                             detail=detail),), evidence=evidence)
