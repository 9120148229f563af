"""The ledger env, 0.1 style: tools typed with ``envgym.tooling``, the task drawn with ``_choose_task``, and
the episode graded by the env itself (``verify(self)``), its verdict returned when the agent answers."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from envgym import Action, Env, Observation, StepResult, TaskSpec, ToolResult, Verdict
from envgym.tooling import ArgumentsError, NoArgs, args_model_of, decode_arguments, function_schema
from envgym.verify import CallRecord, VerifyContext, verify


class TransferArgs(BaseModel):
    source: str
    target: str
    amount: int


class BalanceArgs(BaseModel):
    account: str


def transfer(books: dict[str, int], args: TransferArgs) -> str:
    """Move `amount` from account `source` to account `target`."""
    if args.source not in books or args.target not in books:
        raise ValueError(f"no such account: {args.source if args.source not in books else args.target}")
    if args.amount <= 0 or books[args.source] < args.amount:
        raise ValueError(f"cannot move {args.amount} out of {args.source} (balance {books[args.source]})")
    books[args.source] -= args.amount
    books[args.target] += args.amount
    return f"moved {args.amount}"


def balance(books: dict[str, int], args: BalanceArgs) -> str:
    """The balance of `account`."""
    if args.account not in books:
        raise ValueError(f"no such account: {args.account}")
    return str(books[args.account])


def accounts(books: dict[str, int], args: NoArgs) -> str:
    """Every account's name."""
    return ", ".join(sorted(books))


TOOLS = {"transfer": (transfer, "write"), "balance": (balance, "read"), "accounts": (accounts, "read")}
SCHEMAS = [function_schema(name, fn.__doc__ or "", args_model_of(fn)) for name, (fn, _) in TOOLS.items()]


class LedgerEnv(Env):
    has_write_actions: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        self.books: dict[str, int] = {}
        self.calls: list[CallRecord] = []
        self.answer: str | None = None

    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self._choose_task(task, seed)
        self.books = dict(self.task.initial_state["balances"])
        self.calls, self.answer = [], None
        return Observation(text=self.task.instruction), {"tools": SCHEMAS}

    async def step(self, action: Action) -> StepResult:
        if not action.tool_calls and action.text is None:
            return StepResult(Observation(last_action_error="call a tool or answer"), 0.0, False, False, {})
        if not action.tool_calls:  # the final answer ends the episode; the env grades it
            self.answer = action.text
            verdict = await self.verify()
            return StepResult(Observation(text="Done."), verdict.score, True, False, {"verdict": verdict})
        results = [self._call(call.id, call.name, call.arguments) for call in action.tool_calls]
        errors = "; ".join(f"{r.name}: {r.error}" for r in results if r.error) or None
        return StepResult(Observation(tool_results=tuple(results), last_action_error=errors), 0.0, False, False, {})

    def _call(self, call_id: str, name: str, arguments: str | None) -> ToolResult:
        fn, kind = TOOLS.get(name, (None, "unknown"))
        args: dict[str, Any] | None = None
        try:
            if fn is None:
                raise ValueError(f"unknown tool {name!r}; tools: {', '.join(TOOLS)}")
            args = decode_arguments(name, arguments)
            content = fn(self.books, args_model_of(fn).model_validate(args))
        except (ArgumentsError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            error = str(exc).splitlines()[0]
            self.calls.append(CallRecord(index=len(self.calls), name=name, kind=kind, arguments=args, ok=False,
                                         error=error))
            return ToolResult(call_id=call_id, name=name, content=error, error=error)
        self.calls.append(CallRecord(index=len(self.calls), name=name, kind=kind, arguments=args, ok=True))
        return ToolResult(call_id=call_id, name=name, content=content)

    async def verify(self) -> Verdict:
        return await verify(self.task.verifiers, VerifyContext(calls=list(self.calls), final_answer=self.answer))
