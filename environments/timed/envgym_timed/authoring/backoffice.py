"""The ``timed-backoffice`` suite: eight sets of independent errands behind slow lookups, sync and async.

Every lookup takes 4 to 10 minutes in the async variant and the deadline is 09:11, so looking things up
one at a time (at least 3 x 4 minutes) is too slow while starting every lookup at once (at most 10
minutes) is in time: the deadline rewards interleaving. The reference solutions start all lookups in one
step and then await each handle, which works whatever order the results come back in.
"""

from __future__ import annotations

from typing import Any

from envgym.plugin import Split, TaskSpec
from envgym_timed.authoring.common import Script, expect, pair
from envgym_timed.scenarios.backoffice import SCENARIO

FAMILY = "backoffice"
DEADLINE = "09:11"
LATENCY = {name: {"dist": "uniform", "low": 240, "high": 600}
           for name in ("get_quote", "check_stock", "run_credit_check", "fetch_report")}

QUOTES = {("acme", "bolts"): 0.42, ("boltco", "bolts"): 0.39, ("fastenix", "bolts"): 0.45,
          ("papyrus", "paper"): 4.10, ("officeco", "paper"): 3.85, ("acme", "cable"): 1.20,
          ("wirehaus", "cable"): 1.05, ("boltco", "cable"): 1.32, ("linkit", "cable"): 1.11,
          ("acme", "tape"): 2.30, ("officeco", "tape"): 2.10}
STOCK = {("north", "sku-7"): 120, ("south", "sku-7"): 80, ("east", "sku-7"): 150, ("north", "sku-9"): 35,
         ("west", "sku-9"): 60}
CREDIT = {"c-101": "A", "c-102": "D", "c-103": "B", "c-104": "E", "c-105": "B"}
REPORTS = {"revenue": (184_200, "EUR"), "churn": (3.4, "%"), "signups": (1_276, "accounts"), "backlog": (42, "tickets")}


def _world() -> dict[str, Any]:
    return {
        "quotes": {f"{s}:{i}": {"id": f"{s}:{i}", "supplier": s, "item": i, "unit_price": p}
                   for (s, i), p in QUOTES.items()},
        "stock": {f"{w}:{k}": {"id": f"{w}:{k}", "warehouse": w, "sku": k, "units": u} for (w, k), u in STOCK.items()},
        "credit": {c: {"id": c, "rating": r} for c, r in CREDIT.items()},
        "reports": {r: {"id": r, "value": v, "unit": u} for r, (v, u) in REPORTS.items()},
        "orders": {}, "reservations": {}, "decisions": {}, "sent": {},
    }


def _finish(s: Script, handles: list[str | None]) -> None:
    for handle in handles:
        s.wait_for(handle, timeout=900)


class _Plan:
    """Lookups (expected reads with ids) and the writes that depend on them."""

    def __init__(self) -> None:
        self.script = Script(SCENARIO)
        self.lookups: list[tuple[str, dict[str, Any]]] = []
        self.expected: list[dict[str, Any]] = []

    def lookup(self, ref: str, tool: str, **args: Any) -> str:
        self.lookups.append((tool, args))
        self.expected.append(expect(tool, id=ref, **args))
        return ref

    def start(self) -> None:
        handles = self.script.parallel(*self.lookups)
        _finish(self.script, handles)

    def write(self, tool: str, needs: tuple[str, ...], **args: Any) -> None:
        self.script.call(tool, **args)
        self.expected.append(expect(tool, after=needs, not_after=DEADLINE, **args))

    def task(self, key: str, split: Split, instruction: str, summary: str, *,
             matchers: dict[str, dict[str, Any]] | None = None) -> list[TaskSpec]:
        self.script.say(summary)
        expected = [dict(e, args={**e["args"], **(matchers or {}).get(e["tool"], {})}) for e in self.expected]
        verifiers = [{"type": "timed_write", "expected": expected}]
        return pair(family=FAMILY, key=key, instruction=f"{instruction} Everything must be done by {DEADLINE}.",
                    world=_world(), events=[], latency=LATENCY, script=self.script, verifiers=verifiers,
                    split=split)


def _quotes(p: _Plan, item: str, suppliers: tuple[str, ...], quantity: int) -> None:
    refs = tuple(p.lookup(f"q-{s}-{item}", "get_quote", supplier=s, item=item) for s in suppliers)
    p.start()
    best = min(suppliers, key=lambda s: QUOTES[(s, item)])
    p.write("place_order", refs, supplier=best, item=item, quantity=quantity)


def cheapest_bolts() -> list[TaskSpec]:
    p = _Plan()
    _quotes(p, "bolts", ("acme", "boltco", "fastenix"), 500)
    return p.task("cheapest-bolts", "test", "Get quotes for bolts from acme, boltco and fastenix, then order 500 "
                  "bolts from the cheapest.", "Ordered 500 bolts from boltco (0.39 each).")


def cheapest_cable() -> list[TaskSpec]:
    p = _Plan()
    _quotes(p, "cable", ("acme", "wirehaus", "boltco", "linkit"), 200)
    return p.task("cheapest-cable", "test", "Get quotes for cable from acme, wirehaus, boltco and linkit, then order "
                  "200 from the cheapest.", "Ordered 200 cable from wirehaus (1.05 each).")


def restock() -> list[TaskSpec]:
    p = _Plan()
    refs = tuple(p.lookup(f"s-{w}", "check_stock", warehouse=w, sku="sku-7") for w in ("north", "south", "east"))
    p.start()
    p.write("reserve_stock", refs, warehouse="east", sku="sku-7", quantity=40)
    return p.task("restock", "test", "Check the stock of sku-7 at the north, south and east warehouses, and reserve "
                  "40 units at the one with the most units.", "Reserved 40 units of sku-7 at east (150 units).")


def credit_batch() -> list[TaskSpec]:
    p = _Plan()
    refs = [p.lookup(f"c-{c}", "run_credit_check", customer=c) for c in ("c-101", "c-102", "c-103")]
    p.start()
    for ref, customer in zip(refs, ("c-101", "c-102", "c-103"), strict=True):
        decision = "approve" if CREDIT[customer] in "AB" else "reject"
        p.write("decide_credit", (ref,), customer=customer, decision=decision)
    return p.task("credit-batch", "test", "Run credit checks for customers c-101, c-102 and c-103; approve those "
                  "rated A or B and reject the others.", "Approved c-101 and c-103, rejected c-102.")


def digest() -> list[TaskSpec]:
    p = _Plan()
    refs = tuple(p.lookup(f"r-{r}", "fetch_report", report=r) for r in ("revenue", "churn", "signups"))
    p.start()
    p.write("send_email", refs, to="finance", subject="Daily digest",
            body="Revenue 184200 EUR, churn 3.4 %, signups 1276 accounts.")
    return p.task("digest", "train", "Fetch the revenue, churn and signups reports and email 'finance' a digest "
                  "with the three figures.", "Sent finance the digest.",
                  matchers={"send_email": {"subject": {"$any": True},
                                           "body": {"$regex": r"184[ ,.]?200.*3\.4.*1[ ,.]?276"}}})


def paper_and_credit() -> list[TaskSpec]:
    p = _Plan()
    refs = tuple(p.lookup(f"q-{s}-paper", "get_quote", supplier=s, item="paper") for s in ("papyrus", "officeco"))
    credit = p.lookup("c-c-104", "run_credit_check", customer="c-104")
    p.start()
    p.write("place_order", refs, supplier="officeco", item="paper", quantity=30)
    p.write("decide_credit", (credit,), customer="c-104", decision="reject")
    return p.task("paper-and-credit", "test", "Two errands: order 30 paper from the cheaper of papyrus and officeco "
                  "(get both quotes), and run a credit check on c-104, approving if rated A or B, otherwise "
                  "rejecting.", "Ordered 30 paper from officeco; rejected c-104 (rated E).")


def three_errands() -> list[TaskSpec]:
    p = _Plan()
    stock = tuple(p.lookup(f"s-{w}", "check_stock", warehouse=w, sku="sku-9") for w in ("north", "west"))
    credit = p.lookup("c-c-105", "run_credit_check", customer="c-105")
    report = p.lookup("r-backlog", "fetch_report", report="backlog")
    p.start()
    p.write("reserve_stock", stock, warehouse="west", sku="sku-9", quantity=10)
    p.write("decide_credit", (credit,), customer="c-105", decision="approve")
    p.write("send_email", (report,), to="sales", subject="Backlog", body="The backlog is 42 tickets.")
    return p.task("three-errands", "dev", "Three errands: reserve 10 units of sku-9 at whichever of north and west "
                  "has more; run a credit check on c-105 and approve it if rated A or B, else reject; and email "
                  "'sales' the backlog report's figure.", "Reserved at west, approved c-105, emailed sales.",
                  matchers={"send_email": {"subject": {"$any": True}, "body": {"$contains": "42"}}})


def two_orders() -> list[TaskSpec]:
    p = _Plan()
    tape = tuple(p.lookup(f"q-{s}-tape", "get_quote", supplier=s, item="tape") for s in ("acme", "officeco"))
    paper = tuple(p.lookup(f"q-{s}-paper", "get_quote", supplier=s, item="paper") for s in ("papyrus", "officeco"))
    p.start()
    p.write("place_order", tape, supplier="officeco", item="tape", quantity=12)
    p.write("place_order", paper, supplier="officeco", item="paper", quantity=20)
    return p.task("two-orders", "train", "Order 12 tape from the cheaper of acme and officeco, and 20 paper from the "
                  "cheaper of papyrus and officeco (get all four quotes).", "Ordered tape and paper from officeco.")


def tasks() -> list[TaskSpec]:
    return [t for make in (cheapest_bolts, cheapest_cable, restock, credit_batch, digest, paper_and_credit,
                           three_errands, two_orders) for t in make()]
