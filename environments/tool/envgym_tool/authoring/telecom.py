"""The ``tool-telecom`` suite, generated: a mobile operator's support line, with a simulated user.

``build()`` returns the suite deterministically; ``python -m envgym_tool.authoring.telecom`` writes it to
``tasks/tool-telecom/tasks.jsonl``. Every task starts from one base store (:func:`base_state`: 6 plans,
12 customers, 3 of them suspended for an unpaid balance). The instruction is only the customer's
opening line; the phone number, PIN and the details of the request are facts of the task's simulated user
(``metadata.user``, see :mod:`envgym.user`), so an agent that does not ask cannot succeed. Six kinds
(``metadata.kind``): ``plan`` (cheapest plan meeting a data need), ``pack`` (buy a data pack), ``pay``
(pay part or all of the balance), ``roam`` (switch roaming on for a country), ``ticket`` (open a fault
ticket) and ``resume`` (pay a suspended line's balance, then resume it: two ordered writes).

Each task is graded on the final state (the write-action verifier: the expected write with its arguments,
nothing else written, the store equal to the reference's) and on what the agent had to tell the customer
(an ``answer`` regex over the agent's messages: the new price, balance, daily rate, payment or ticket id).
The reference solutions are written against the scripted user's rules (:class:`envgym.user.ScriptedUser`):
questions name what they ask for, the last message is a statement.
"""

from __future__ import annotations

from typing import Any

from envgym.plugin import (
    Action,
    AnswerSpec,
    ExpectedWrite,
    Limits,
    TaskSpec,
    ToolCall,
    VerifierSpec,
    WriteActionSpec,
    number_pattern,
    write_suite,
)

ENV_ID = "tool/telecom-v1"

PLANS = [  # id, name, monthly, data GB, roaming per day
    ("p01", "Lite", 15.0, 2, 12.0),
    ("p02", "Starter", 20.0, 5, 10.0),
    ("p03", "Plus", 30.0, 15, 8.0),
    ("p04", "Pro", 40.0, 30, 6.0),
    ("p05", "Max", 55.0, 60, 5.0),
    ("p06", "Infinite", 70.0, 200, 3.0),
]

CUSTOMERS = [  # id, name, phone, pin, plan, balance, status, city
    ("c01", "Ava Chen", "415-555-0101", "4821", "p02", 12.5, "active", "San Francisco"),
    ("c02", "Marcus Reed", "212-555-0102", "1937", "p03", 30.0, "active", "New York"),
    ("c03", "Priya Nair", "312-555-0103", "7302", "p01", 7.25, "active", "Chicago"),
    ("c04", "Diego Alvarez", "512-555-0104", "5518", "p04", 64.0, "suspended", "Austin"),
    ("c05", "Hannah Kim", "206-555-0105", "2290", "p05", 18.0, "active", "Seattle"),
    ("c06", "Tom Becker", "617-555-0106", "8046", "p02", 41.75, "active", "Cambridge"),
    ("c07", "Sofia Rossi", "305-555-0107", "3361", "p03", 9.5, "active", "Miami"),
    ("c08", "Kwame Mensah", "404-555-0108", "6674", "p02", 38.5, "suspended", "Atlanta"),
    ("c09", "Lena Novak", "303-555-0109", "1148", "p06", 22.0, "active", "Denver"),
    ("c10", "Omar Haddad", "602-555-0110", "9025", "p01", 16.0, "active", "Phoenix"),
    ("c11", "Yuki Tanaka", "503-555-0111", "4473", "p04", 55.0, "active", "Portland"),
    ("c12", "Grace Okafor", "612-555-0112", "2608", "p03", 47.2, "suspended", "Minneapolis"),
]

EARLIER_PAYMENTS = [("PM-1001", "c02", 20.0, "1111"), ("PM-1002", "c05", 35.0, "2222")]
EARLIER_TICKETS = [("TK-1001", "c07", "device", "Screen flickers.", "closed")]

KIND_CYCLE = ("plan", "pack", "pay", "roam", "ticket")
COUNTRIES = ("Spain", "Japan", "Mexico", "Italy", "Canada", "Kenya", "Brazil", "Portugal", "Greece")
FAULTS = (  # category, opening, details
    ("network", "My calls keep dropping.", "Since Monday, at home in {city}: calls drop after a minute."),
    ("device", "My phone stopped receiving texts.", "Since the update on Friday, no texts arrive at all."),
    ("billing", "I think I was billed for something I never ordered.",
     "Last month's bill shows a 10 dollar charge called Extras that I never asked for."),
)
OPEN_ASK = "Could you give me your phone number and PIN so I can verify your account?"


def base_state() -> dict[str, list[dict[str, Any]]]:
    return {
        "plans": [dict(zip(("id", "name", "monthly", "data_gb", "roaming_daily"), p, strict=True)) for p in PLANS],
        "customers": [{"id": c[0], "name": c[1], "phone": c[2], "pin": c[3], "plan_id": c[4], "balance": c[5],
                       "status": c[6]} for c in CUSTOMERS],
        "payments": [dict(zip(("id", "customer_id", "amount", "card_last4"), p, strict=True))
                     for p in EARLIER_PAYMENTS],
        "tickets": [dict(zip(("id", "customer_id", "category", "summary", "status"), t, strict=True))
                    for t in EARLIER_TICKETS],
        "data_packs": [],
    }


def _fact(name: str, says: str, *keys: str) -> dict[str, Any]:
    return {"name": name, "says": says, "keys": list(keys)}


def _identity(customer: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [_fact("phone number", f"My number is {customer[2]}.", "phone", "number"),
            _fact("PIN", f"My PIN is {customer[3]}.", "pin")]


class _Calls:
    """Numbered tool-call ids, so the file is byte-identical on every build."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, name: str, **arguments: Any) -> Action:
        import json

        self.n += 1
        return Action(tool_calls=(ToolCall(id=f"call_{self.n}", name=name, arguments=json.dumps(arguments)),))


def _plan_for(need: int) -> tuple[Any, ...]:
    return min((p for p in PLANS if p[3] >= need), key=lambda p: p[2])


def _task(index: int, kind: str, customer: tuple[Any, ...]) -> TaskSpec:
    cid, name, phone, pin, plan_id, balance = customer[:6]
    first = name.split()[0]
    call = _Calls()
    verify = call("verify_identity", phone=phone, pin=pin)
    facts = _identity(customer)
    expected: list[ExpectedWrite] = []
    ordered = False
    if kind == "plan":
        needs = [n for n in (4, 12, 25, 50, 100, 1) if _plan_for(n)[0] != plan_id]
        need = needs[index % len(needs)]
        plan = _plan_for(need)
        opening = "Hi, I'd like to switch to a cheaper or better mobile plan."
        goal = f"Move to the cheapest plan that gives you at least {need} GB of data a month, and learn its price."
        facts.append(_fact("monthly data need", f"I need at least {need} GB of data a month.",
                           "data", "gb", "how much"))
        steps = [Action.say(OPEN_ASK), verify, Action.say("How much data do you need each month?"),
                 call("list_plans"), call("change_plan", customer_id=cid, plan_id=plan[0]),
                 Action.say(f"All set: you are now on the {plan[1]} plan at ${plan[2]:.2f} per month.")]
        expected.append(ExpectedWrite(tool="change_plan", args={"customer_id": cid, "plan_id": plan[0]}))
        conveyed = number_pattern(plan[2])
    elif kind == "pack":
        gb = (1, 5, 10)[index % 3]
        price = {1: 5.0, 5: 15.0, 10: 25.0}[gb]
        opening = "I'm almost out of data this month."
        goal = f"Buy the {gb} GB data pack and learn your new balance."
        facts.append(_fact("pack size", f"The {gb} GB pack, please.", "gb", "size", "which pack", "how much"))
        steps = [Action.say(OPEN_ASK), verify, Action.say("Which pack size would you like: 1, 5 or 10 GB?"),
                 call("buy_data_pack", customer_id=cid, gb=gb),
                 Action.say(f"Done: the pack is active, and your balance is now ${balance + price:.2f}.")]
        expected.append(ExpectedWrite(tool="buy_data_pack", args={"customer_id": cid, "gb": gb}))
        conveyed = number_pattern(round(balance + price, 2))
    elif kind == "pay":
        card = f"{(int(pin) * 7) % 10000:04d}"
        amount = balance if index % 2 == 0 else round(balance / 2, 2)
        opening = "I'd like to pay my bill."
        goal = (f"Pay {'your whole balance' if amount == balance else f'{amount:.2f} dollars'} with your card "
                f"ending {card}, and get the confirmation id and the balance left.")
        facts.append(_fact("card", f"Use my card ending in {card}.", "card"))
        facts.append(_fact("amount", "The whole balance, please." if amount == balance
                           else f"Just {amount:.2f} dollars today.", "amount", "how much"))
        payment_id = f"PM-{1001 + len(EARLIER_PAYMENTS)}"
        steps = [Action.say(OPEN_ASK), verify, call("get_account", customer_id=cid),
                 Action.say("Which card should I charge, and what amount would you like to pay?"),
                 call("pay_balance", customer_id=cid, amount=amount, card_last4=card),
                 Action.say(f"Payment {payment_id} went through; your balance left is ${balance - amount:.2f}.")]
        expected.append(ExpectedWrite(tool="pay_balance", args={"customer_id": cid, "card_last4": card,
                                                                "amount": {"$approx": amount, "$tol": 0.005}}))
        conveyed = rf"(?i)\b{payment_id}\b[\s\S]*{number_pattern(round(balance - amount, 2))}"
    elif kind == "roam":
        country = COUNTRIES[index % len(COUNTRIES)]
        rate = next(p[4] for p in PLANS if p[0] == plan_id)
        opening = "I'm travelling abroad next week and I need my phone to work there."
        goal = f"Get roaming switched on for {country} and learn the daily rate."
        facts.append(_fact("destination", f"I'm going to {country}.", "country", "where", "destination"))
        steps = [Action.say(OPEN_ASK), verify, Action.say("Which country are you going to?"),
                 call("enable_roaming", customer_id=cid, country=country),
                 Action.say(f"Roaming is on for {country}, at ${rate:.2f} per day.")]
        expected.append(ExpectedWrite(tool="enable_roaming", args={"customer_id": cid,
                                                                   "country": {"$regex": f"(?i)^\\s*{country}\\s*$"}}))
        conveyed = number_pattern(rate)
    elif kind == "ticket":
        category, opening, details = FAULTS[index % len(FAULTS)]
        ticket_id = f"TK-{1001 + len(EARLIER_TICKETS)}"
        goal = f"Report the problem ({category}) and get a ticket number."
        facts.append(_fact("details", details.format(city=customer[7]), "when", "since", "details", "what happens"))
        steps = [Action.say(OPEN_ASK), verify, Action.say("When did it start, and what are the details?"),
                 call("open_ticket", customer_id=cid, category=category, summary=details.format(city=customer[7])),
                 Action.say(f"I opened ticket {ticket_id} for our {category} team.")]
        expected.append(ExpectedWrite(tool="open_ticket", args={"customer_id": cid, "category": category}))
        conveyed = rf"(?i)\b{ticket_id}\b"
    elif kind == "resume":
        card = f"{(int(pin) * 3) % 10000:04d}"
        opening = "My line has been cut off and I need it back."
        goal = "Pay what you owe with your card and get your line working again."
        facts.append(_fact("card", f"Use my card ending in {card}.", "card"))
        payment_id = f"PM-{1001 + len(EARLIER_PAYMENTS)}"
        steps = [Action.say(OPEN_ASK), verify, call("get_account", customer_id=cid),
                 Action.say(f"Your line is suspended for an unpaid balance of ${balance:.2f}. "
                            "Which card should I use to pay it?"),
                 call("pay_balance", customer_id=cid, amount=balance, card_last4=card),
                 call("resume_line", customer_id=cid),
                 Action.say(f"Paid with confirmation {payment_id}, and your line is active again.")]
        expected += [ExpectedWrite(tool="pay_balance", args={"customer_id": cid, "card_last4": card,
                                                             "amount": {"$approx": balance, "$tol": 0.005}}),
                     ExpectedWrite(tool="resume_line", args={"customer_id": cid})]
        ordered = True
        conveyed = rf"(?i)\b{payment_id}\b"
    else:  # pragma: no cover - the kinds are this module's own
        raise ValueError(kind)
    verifiers: tuple[VerifierSpec, ...] = (
        WriteActionSpec(expected=tuple(expected), ordered=ordered),
        AnswerSpec(kind="regex", expected=conveyed),
    )
    user = {"goal": goal, "persona": f"{name}, a customer of the operator, from {customer[7]}.",
            "facts": facts, "closing": f"Great, thank you. Bye! ({first})"}
    return TaskSpec(id=f"telecom-{index:03d}-{kind}", env_id=ENV_ID, split="test" if index % 5 in (0, 3) else "train",
                    instruction=opening, initial_state=base_state(), limits=Limits(max_steps=20),
                    verifiers=verifiers, solution=tuple(steps), tags=(kind, "simulated-user"),
                    metadata={"kind": kind, "customer_id": cid, "user": user})


def build() -> list[TaskSpec]:
    tasks: list[TaskSpec] = []
    for position, customer in enumerate(CUSTOMERS):
        if customer[6] == "suspended":
            kinds: tuple[str, ...] = ("resume", "plan", "ticket")
        else:
            kinds = tuple(KIND_CYCLE[(position + k) % len(KIND_CYCLE)] for k in range(3))
        for kind in kinds:
            tasks.append(_task(len(tasks), kind, customer))
    return tasks


if __name__ == "__main__":
    write_suite("tool-telecom", build())
