"""The ``codes`` domain: short code-lookup tasks, small enough for a 135M model to learn on a CPU.

The store holds one table, ``codes(name, code)``: a few names (``amber``, ``birch``…) each with a random
four-character code. One read tool, ``get_code(name)``. Two task kinds (``tags`` and ``metadata.kind``):

- ``given``: the instruction lists a few ``name=code`` pairs and asks for one code; the answer is there.
- ``lookup``: the asked name is not listed; only ``get_code`` reveals its code.

Grading is a rubric with partial credit, so a policy improves by degrees: the final message contains the
code (1), is at most four words with the code among them (1), is exactly the code (1), and for
``lookup`` the agent called ``get_code`` with the name (1). The first two give nothing to a message that
also names another code of the store: listing every code (or quoting the store back) is not an answer.
The null agent scores 0; the reference solution scores 1. Prompts stay short (the policy is two
sentences), which is what the CPU training recipe (``envgym train --recipe cpu-smollm2``) needs.

``python -m envgym_tool.domains.codes`` regenerates ``tasks/tool-codes/tasks.jsonl`` from :func:`build`
(deterministic; a test checks the committed file equals it).
"""

from __future__ import annotations

import json
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envgym.plugin import answer_pattern, refuse_quote
from envgym.plugin.tools import Domain, ToolContext, ToolFailure, tool

SCHEMA_SQL = "CREATE TABLE codes (name TEXT PRIMARY KEY, code TEXT NOT NULL);"

POLICY = """\
You answer questions about codes. Reply with the code only, exactly as written, and no other words.
If a code is not given in the question, look it up with get_code first."""

NAMES = ("amber", "birch", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
         "kestrel", "lotus", "maple", "nectar", "onyx", "pepper", "quartz", "raven", "sage", "tundra")
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
ENV_ID = "tool/codes-v1"
BRIEF = r"^(?=[\s\S]*{code}){others}\W*\w+(\W+\w+){{0,3}}\W*$"
"""At most four words, the code among them (brevity alone earned credit once, and a policy learned to answer
with an empty code fence)."""


class GetCode(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    name: str = Field(min_length=1, max_length=40, description="The name whose code you need, e.g. amber.")


@tool("read", "Look up the code of a name.")
def get_code(ctx: ToolContext, args: GetCode) -> dict[str, Any]:
    row = ctx.one("SELECT name, code FROM codes WHERE name = ?", args.name.strip().lower())
    if row is None:
        raise ToolFailure(f"no code for {args.name!r}")
    return row


DOMAIN = Domain(name="codes", schema_sql=SCHEMA_SQL, tools=(get_code,), policy=POLICY)


def _task(number: int, kind: str, rng: random.Random) -> dict[str, Any]:
    names = rng.sample(NAMES, 6)
    codes = {n: "".join(rng.choice(ALPHABET) for _ in range(4)) for n in names}
    listed = names[:3]
    target = rng.choice(listed) if kind in ("echo", "given") else names[5]
    listing = ", ".join(f"{n}={codes[n]}" for n in listed)
    if kind == "echo":
        instruction = f"The code for {target} is {codes[target]}. Reply with that code."
        solution: list[dict[str, Any]] = []
    elif kind == "given":
        instruction = f"Codes: {listing}. What is the code for {target}?"
        solution = []
    else:
        instruction = f"Codes: {listing}. What is the code for {target}? It is not listed: look it up."
        solution = [{"tool_calls": [{"id": "call_1", "name": "get_code",
                                     "arguments": json.dumps({"name": target})}]}]
    answer = codes[target]
    others = [codes[n] for n in sorted(names) if codes[n] != answer]
    contains = refuse_quote(answer_pattern(answer, reject=others), instruction)
    brief = refuse_quote(BRIEF.format(code=answer, others=rf"(?![\s\S]*(?:{'|'.join(others)}))"), instruction)
    criteria = [{"name": "contains_code", "check": {"type": "answer", "kind": "regex", "expected": contains}},
                {"name": "brief", "check": {"type": "answer", "kind": "regex", "expected": brief}},
                {"name": "code_only", "check": {"type": "answer", "kind": "exact", "expected": answer}}]
    if kind == "lookup":
        criteria.append({"name": "looked_up", "check": {"type": "called", "tool": "get_code",
                                                          "args": {"name": target}}})
    return {
        "id": f"codes-{number:03d}-{kind}", "env_id": ENV_ID, "split": "test" if number % 5 == 0 else "train",
        "instruction": instruction,
        "initial_state": {"codes": [{"name": n, "code": codes[n]} for n in sorted(names)]},
        "limits": {"max_steps": 6 if kind == "lookup" else 5},
        "verifiers": [{"type": "rubric", "criteria": criteria}],
        "solution": [*solution, {"text": answer}], "tags": [kind], "metadata": {"kind": kind},
    }


def build() -> list[Any]:
    """The ``tool-codes`` suite: 60 ``echo``, 60 ``given``, 20 ``lookup`` tasks, every fifth one in ``test``."""
    from envgym.plugin import TaskSpec

    rng = random.Random(20251130)
    kinds = ["echo"] * 60 + ["given"] * 60 + ["lookup"] * 20
    drafts = [_task(n, kind, rng) for n, kind in enumerate(kinds, start=1)]
    return [TaskSpec.model_validate(d) for d in drafts]


def main() -> None:
    from envgym.plugin import write_suite

    write_suite("tool-codes", build())


if __name__ == "__main__":
    main()
