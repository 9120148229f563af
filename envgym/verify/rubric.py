"""The rubric verifier: weighted criteria, each a programmatic check or an LLM judge.

Checks: ``answer`` (the final message), ``sql`` (a query on the final store), ``called`` (a tool was called
with matching arguments), ``llm_judge`` (an OpenAI-compatible endpoint answers a grading question about
the transcript and must end with ``VERDICT: PASS``). Score = weighted mean of criterion scores; pass iff
score >= ``pass_threshold``. A judge that cannot be reached raises :class:`VerifierError` (an infra error,
never a silent zero). The transcript the judge reads is the agent's own text: any ``VERDICT:`` in it is
defanged before the judge sees it, so an answer cannot hand the judge a verdict line to echo.

Free-text answers are easy to game with a message that lists every candidate (or quotes the instruction and
the whole store back). :func:`answer_pattern` builds the regex of an answer criterion that such a message
cannot pass: the answer is at most ``max_chars`` long, matches the required pattern, matches none of the
wrong candidates in ``reject``, and (for numbers) names at most ``max_numbers`` numbers;
:func:`number_pattern` is the regex of a number as people write it (``229``, ``229.00``, ``$95.50``);
:func:`refuse_quote` (:func:`refuse_quotes` over a task's specs) fails an answer that repeats a sentence of
the question that is not itself an answer ("is it in stock?" quoted back is not "it is in stock").
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from envgym.errors import JudgeUnavailable, VerifierError
from envgym.types import CriterionResult, Verdict
from envgym.verify.answer import answer_matches
from envgym.verify.context import JudgeConfig, VerifyContext
from envgym.verify.matching import args_match, value_matches
from envgym.verify.spec import (
    AllOfSpec,
    AnswerSpec,
    AnyOfSpec,
    CalledCheck,
    LLMJudgeCheck,
    RubricSpec,
    SqlCheck,
)
from envgym.verify.state import SqlView

_VERDICT = re.compile(r"VERDICT:\s*(PASS|FAIL)", re.IGNORECASE)
_VERDICT_WORD = re.compile(r"verdict", re.IGNORECASE)
BRIEF_ANSWER_CHARS = 600
"""The default length cap of :func:`answer_pattern`: a few sentences (the kernel refuses any answer over
:data:`envgym.verify.answer.MAX_ANSWER_CHARS`; a task asking for one value can ask for less)."""


def answer_pattern(required: str, *, reject: Sequence[str] = (), max_chars: int = BRIEF_ANSWER_CHARS,
                   max_numbers: int | None = None) -> str:
    """The regex of an answer criterion that a candidate list, a quoted instruction or a dump cannot pass."""
    head = rf"^(?=[\s\S]{{0,{max_chars}}}$)"
    if max_numbers is not None:  # numbers not glued to a word (ord_1024); a date, time or decimal counts once
        head += rf"(?!(?:[\s\S]*?(?<![\w.,:/-])\d){{{max_numbers + 1}}})"
    if reject:
        head += rf"(?![\s\S]*(?:{'|'.join(reject)}))"
    return rf"{head}[\s\S]*?(?:{required})"


def refuse_quote(pattern: str, question: str, *, every_sentence: bool = False) -> str:
    """``pattern`` that also fails an answer repeating a sentence of ``question`` (three words or more) that
    is a question or does not itself match ``pattern``: the question quoted back is not its answer. With
    ``every_sentence`` (a message the instruction asks for), any sentence of it repeated fails."""
    sentences = [s.strip() for s in re.split(r"(?<=[.?!])\s+", question)]
    quoted = [r"\W+".join(re.escape(w) for w in re.findall(r"[\w'$%-]+", s)) for s in sentences
              if len(s.split()) >= 3 and (every_sentence or s.endswith("?")
                                          or not re.search(pattern, s, re.IGNORECASE))]
    if not quoted:
        return pattern
    guard = rf"^(?![\s\S]*(?:{'|'.join(quoted)}))"
    return guard + (pattern[1:] if pattern.startswith("^") else rf"[\s\S]*?(?:{pattern})")


def _unquoted_args(args: dict[str, Any], question: str) -> dict[str, Any]:
    out = {}
    for key, value in args.items():
        if isinstance(value, dict) and ("$regex" in value or "$contains" in value) and len(value) == 1:
            pattern = value.get("$regex") or re.escape(str(value["$contains"]))
            value = {"$regex": refuse_quote(pattern, question, every_sentence=True)}
        out[key] = value
    return out


def refuse_quotes(specs: Sequence[Any], question: str) -> tuple[Any, ...]:
    """Verifier specs with every regex answer criterion of their rubrics, and every ``$regex``/``$contains``
    argument matcher of their expected writes (an email body, a message), passed through :func:`refuse_quote`:
    a message that is the instruction forwarded is not the message the instruction asked for. Expected writes
    are those of any kind whose ``expected`` is a tuple of entries with ``args`` (``write_action``, the
    ``timed_write`` plug-in kind)."""
    def fix(spec: Any) -> Any:
        expected = getattr(spec, "expected", None)
        if isinstance(expected, tuple) and all(isinstance(getattr(e, "args", None), dict) for e in expected):
            return spec.model_copy(update={"expected": tuple(
                e.model_copy(update={"args": _unquoted_args(e.args, question)}) for e in spec.expected)})
        if isinstance(spec, RubricSpec):
            return spec.model_copy(update={"criteria": tuple(
                c.model_copy(update={"check": c.check.model_copy(update={
                    "expected": refuse_quote(str(c.check.expected), question)})})
                if isinstance(c.check, AnswerSpec) and c.check.kind == "regex" else c for c in spec.criteria)})
        if isinstance(spec, AllOfSpec | AnyOfSpec):
            return spec.model_copy(update={"verifiers": tuple(fix(v) for v in spec.verifiers)})
        return spec

    return tuple(fix(spec) for spec in specs)


def number_pattern(value: float) -> str:
    """``value`` as a standalone number in text: ``229`` matches 229, 229.0 and $229.00, not 1229 or 229.5."""
    whole, _, cents = f"{abs(value):.2f}".partition(".")
    sign = "-" if value < 0 else ""
    if cents == "00":
        tail = r"(?:\.0{1,2})?"
    elif cents.endswith("0"):
        tail = rf"\.{cents[0]}0?"
    else:
        tail = rf"\.{cents}"
    return rf"(?<![\w.,]){sign}{whole}{tail}(?![\d]|[.,]\d)"


def _defang(text: str) -> str:
    return _VERDICT_WORD.sub("verdict\u2024", text)  # "verdict․": a judge that echoes it gives no verdict line


def render_transcript(ctx: VerifyContext) -> str:
    lines = [f"{c.index}. {c.name}({json.dumps(c.arguments, sort_keys=True)}) -> "
             f"{'ok' if c.ok else 'error: ' + (c.error or '')}" for c in ctx.calls]
    lines.append(f"FINAL ANSWER: {ctx.final_answer or '(none)'}")
    return _defang("\n".join(lines))


async def ask_judge(check: LLMJudgeCheck, ctx: VerifyContext) -> tuple[bool, str]:
    config = ctx.judge
    if check.base_url:
        config = JudgeConfig(base_url=check.base_url, model=check.model or (config.model if config else "judge"),
                             api_key=config.api_key if config else None)
    if config is None:
        raise VerifierError("an llm_judge criterion needs a judge endpoint (eval --judge-url/--judge-model)")
    template = resources.files("envgym_verifiers").joinpath(check.template).read_text(encoding="utf-8")
    prompt = template.format(question=check.question, transcript=render_transcript(ctx))
    body = {"model": check.model or config.model, "temperature": 0,
            "messages": [{"role": "user", "content": prompt}]}
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    url = config.base_url.rstrip("/") + "/chat/completions"
    last: Exception | None = None
    # httpx (a tenth of a second) loads with the first judged criterion, off the loop, not with every env
    httpx = await asyncio.to_thread(importlib.import_module, "httpx")
    async with httpx.AsyncClient(timeout=config.timeout_s) as client:
        for attempt in range(config.retries + 1):
            try:
                response = await client.post(url, json=body, headers=headers)
                if response.status_code >= 500 or response.status_code == 429:
                    raise httpx.HTTPStatusError("retryable", request=response.request, response=response)
                response.raise_for_status()
                content = response.json()["choices"][0]["message"]["content"] or ""
                found = _VERDICT.findall(content)
                if not found:
                    return False, f"judge gave no verdict: {content[-200:]!r}"
                return found[-1].upper() == "PASS", content[-300:]
            except (httpx.HTTPError, KeyError, ValueError) as exc:
                last = exc
                await asyncio.sleep(0.2 * 2**attempt)
    raise JudgeUnavailable(f"LLM judge at {url} failed after {config.retries + 1} attempts: {last!r}")


async def _check(check: AnswerSpec | SqlCheck | CalledCheck | LLMJudgeCheck, ctx: VerifyContext) -> tuple[bool, str]:
    if isinstance(check, AnswerSpec):
        return answer_matches(check, ctx.final_answer)
    if isinstance(check, CalledCheck):
        hits = sum(1 for c in ctx.calls if c.name == check.tool and c.ok and args_match(check.args, c.arguments))
        return hits >= check.min_times, f"{check.tool} called {hits}x (need {check.min_times})"
    if isinstance(check, SqlCheck):
        if ctx.state is None:
            raise VerifierError("a sql check needs a store to query")
        if not isinstance(ctx.state, SqlView):
            raise VerifierError(f"a sql check needs a state that answers SQL; {type(ctx.state).__name__} does not "
                                "(its env's sql_state is false: such a task should not have loaded)")
        # a view that says its queries are cheap (an in-memory copy: microseconds) is queried inline; a thread
        # hop costs more than such a query, and at concurrency 1 the loop would idle for it
        query = ctx.state.query
        rows = query(check.query) if getattr(ctx.state, "inline_queries", False) else \
            await asyncio.to_thread(query, check.query)
        value = next(iter(rows[0].values())) if rows else None
        return value_matches(check.expected, value), f"query gave {value!r}, expected {check.expected!r}"
    return await ask_judge(check, ctx)


async def verify_rubric(spec: RubricSpec, ctx: VerifyContext) -> Verdict:
    if any(isinstance(c.check, LLMJudgeCheck) for c in spec.criteria):  # judges wait on the network: at once
        results = await asyncio.gather(*(_check(c.check, ctx) for c in spec.criteria))
    else:  # gather would wrap each check in a Task, a loop round-trip each: more than an answer check costs
        results = [await _check(c.check, ctx) for c in spec.criteria]
    criteria = tuple(
        CriterionResult(name=c.name, score=float(ok), weight=c.weight, passed=ok, detail=detail)
        for c, (ok, detail) in zip(spec.criteria, results, strict=True)
    )
    total = sum(c.weight for c in criteria)
    score = sum(c.score * c.weight for c in criteria) / total
    return Verdict(score=score, passed=score >= spec.pass_threshold - 1e-9, criteria=criteria)
