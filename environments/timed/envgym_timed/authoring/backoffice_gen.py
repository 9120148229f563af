"""``timed-backoffice-gen``: back-office days by the thousand, each a seeded company, errands and a deadline.

:func:`generate` is the generator (registered in :func:`envgym_timed.register_all`); every choice comes from
the request's seeded ``rng``. A task is built in four moves:

1. **A company**: supplier quotes, warehouse stock, customers' credit ratings and report figures, with
   distractor rows no errand asks about, and a seeded latency range (``uniform low..high``) per slow lookup.
2. **Errands**: ``level`` errands, each from a different template family of the request's split, each on
   entities of its own (items, SKUs, customers, reports). Two families are gated on a **scheduled event**:
   an approval or go-ahead alert that arrives at a seeded time, before which the write does not count.
3. **The reference solution**: every lookup started in one step, each handle awaited, each write made as
   its lookups (and its gate) arrive. The writes' arguments are *computed from the lookups' results*,
   replayed against the generated world with the scenario's own tools (a call the tools refuse is a bug
   here: :class:`RuntimeError`).
4. **Grading**: one ``timed_write`` verifier: each write after the lookups (and the event) it depends on,
   all by the deadline, no collateral write. The deadline is the reference's worst case (every lookup at its
   latency's ceiling, 2 s of thinking a step, the gate's time) plus 60-120 s, on the minute.

Template families and their splits (:data:`envgym_timed.BACKOFFICE_TEMPLATES`; train and test share none)::

    train: cheapest-order, most-stock, credit-batch, report-digest, approval-order
    test:  budget-order, fewest-sufficient, threshold-route, gated-credit

Levels: 1 errand with 2 lookups; 2 errands with 3 lookups each; 3 errands with 3-4 lookups each, more
distractor rows and a tighter margin. Every task is the ``async`` variant (slow lookups answer later).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envgym.plugin import Limits, TaskSpec, number_pattern, refuse_quotes
from envgym.plugin.timed import TimedWriteSpec
from envgym_timed.authoring.common import Script, expect
from envgym_timed.scenarios.backoffice import SCENARIO
from envgym_timed.toolkit import ToolFailure
from envgym_timed.world import World

NAME = "timed-backoffice-gen"
ENV_ID = "timed/backoffice-v1"
THINK_S = 2.0
"""The default thinking charge per step (``fixed:2``), which the deadline allows for."""
SLOW = ("get_quote", "check_stock", "run_credit_check", "fetch_report")

SUPPLIERS = ("acme", "boltco", "fastenix", "papyrus", "officeco", "wirehaus", "linkit", "northstar", "primeparts",
             "vertex", "kestrel", "quarrymax", "bluefin", "hartley", "zenith", "orbit", "cobalt", "meridian")
ITEMS = ("bolts", "paper", "cable", "tape", "toner", "gloves", "screws", "labels", "batteries", "pallets",
         "boxes", "markers", "filters", "hinges", "washers", "fuses", "rivets", "sealant")
WAREHOUSES = ("north", "south", "east", "west", "central", "harbor", "airport", "river", "valley", "summit")
REPORTS = (("revenue", "EUR", 40_000, 400_000, 0), ("churn", "%", 1, 9, 1), ("signups", "accounts", 200, 4000, 0),
           ("backlog", "tickets", 5, 180, 0), ("refunds", "EUR", 500, 20_000, 0), ("uptime", "%", 95, 100, 2),
           ("nps", "points", -20, 80, 0), ("returns", "orders", 3, 400, 0), ("leads", "contacts", 50, 2500, 0),
           ("margin", "%", 5, 45, 1))
RECIPIENTS = ("finance", "sales", "ops", "support", "management")
RATINGS = "ABCDE"
ACCEPT = {"B": "A or B", "C": "A, B or C"}
LOOKUPS = {1: (2, 2), 2: (3, 3), 3: (3, 4)}
"""Per level: the least and most lookups of an errand."""
MARGIN = {1: (90, 120), 2: (75, 105), 3: (60, 90)}
"""Per level: the deadline's margin over the reference's worst case, seconds."""


@dataclass
class Errand:
    family: str
    ask: str
    lookups: list[tuple[str, dict[str, Any]]]
    decide: Callable[[list[dict[str, Any]]], list[tuple[str, dict[str, Any], dict[str, Any]]]]
    """From the lookups' results: the writes (tool, arguments, argument matchers for the verifier)."""
    gate: dict[str, Any] | None = None
    """A scheduled event the writes must come after (the task's ``events`` entry)."""
    done: list[str] = field(default_factory=list)


@dataclass
class Company:
    rng: Any
    level: int
    world: dict[str, dict[str, dict[str, Any]]]
    taken: set[str] = field(default_factory=set)
    """Entities an errand uses (no two errands share an item, SKU, customer or report)."""

    def pick(self, pool: tuple[Any, ...], n: int, key: Callable[[Any], str] = str) -> list[Any]:
        chosen = self.rng.sample([x for x in pool if key(x) not in self.taken], n)
        self.taken.update(key(x) for x in chosen)
        return chosen

    def quotes(self, item: str, n: int) -> list[str]:
        suppliers = self.rng.sample(SUPPLIERS, n)
        cents = self.rng.sample(range(20, 2000), n)  # distinct prices: one cheapest
        for s, c in zip(suppliers, cents, strict=True):
            self.world["quotes"][f"{s}:{item}"] = {"id": f"{s}:{item}", "supplier": s, "item": item,
                                                   "unit_price": c / 100}
        return suppliers

    def stock(self, sku: str, n: int, low: int = 20, high: int = 400) -> list[str]:
        warehouses = self.rng.sample(WAREHOUSES, n)
        units = self.rng.sample(range(low, high), n)
        for w, u in zip(warehouses, units, strict=True):
            self.world["stock"][f"{w}:{sku}"] = {"id": f"{w}:{sku}", "warehouse": w, "sku": sku, "units": u}
        return warehouses

    def customers(self, n: int) -> list[str]:
        found = []
        while len(found) < n:
            cid = f"c-{self.rng.randrange(100, 1000)}"
            if cid not in self.taken and cid not in self.world["credit"]:
                self.taken.add(cid)
                self.world["credit"][cid] = {"id": cid, "rating": self.rng.choice(RATINGS)}
                found.append(cid)
        return found

    def reports(self, n: int) -> list[str]:
        chosen = self.pick(REPORTS, n, key=lambda r: r[0])
        for name, unit, low, high, digits in chosen:
            value: float = round(self.rng.uniform(low, high), digits) if digits else self.rng.randrange(low, high)
            self.world["reports"][name] = {"id": name, "value": value, "unit": unit}
        return [r[0] for r in chosen]

    def lookups(self) -> int:
        low, high = LOOKUPS[self.level]
        return self.rng.randint(low, high)

    def clock(self, seconds: float) -> str:
        minutes = 9 * 60 + int(seconds // 60)
        return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _listing(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _figure(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- template families ---------------------------------------------------------------------------------

def _cheapest_order(c: Company) -> Errand:
    item, = c.pick(ITEMS, 1)
    suppliers = c.quotes(item, c.lookups())
    quantity = c.rng.randrange(2, 60) * 10

    def decide(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        best = min(results, key=lambda r: r["unit_price"])
        return [("place_order", {"supplier": best["supplier"], "item": item, "quantity": quantity}, {})]

    return Errand("cheapest-order", f"get quotes for {item} from {_listing(suppliers)} and order {quantity} {item} "
                                    "from the cheapest", [("get_quote", {"supplier": s, "item": item})
                                                          for s in suppliers], decide)


def _budget_order(c: Company) -> Errand:
    item, = c.pick(ITEMS, 1)
    suppliers = c.quotes(item, c.lookups())
    budget = c.rng.randrange(20, 400) * 10

    def decide(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        best = min(results, key=lambda r: r["unit_price"])
        quantity = max(1, math.floor(budget / best["unit_price"] + 1e-9))
        return [("place_order", {"supplier": best["supplier"], "item": item, "quantity": quantity}, {})]

    return Errand("budget-order", f"get quotes for {item} from {_listing(suppliers)} and, from the cheapest, order "
                                  f"as many {item} as a budget of {budget} buys (whole units)",
                  [("get_quote", {"supplier": s, "item": item}) for s in suppliers], decide)


def _most_stock(c: Company) -> Errand:
    sku = f"sku-{c.rng.randrange(10, 100)}"
    while sku in c.taken:
        sku = f"sku-{c.rng.randrange(10, 100)}"
    c.taken.add(sku)
    warehouses = c.stock(sku, c.lookups())
    quantity = c.rng.randrange(1, 20) * 5
    most = max(c.world["stock"][f"{w}:{sku}"]["units"] for w in warehouses)
    if most < quantity:  # the most units must cover the reservation; it stays the most
        c.world["stock"][next(f"{w}:{sku}" for w in warehouses
                              if c.world["stock"][f"{w}:{sku}"]["units"] == most)]["units"] = quantity + most

    def decide(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        best = max(results, key=lambda r: r["units"])
        return [("reserve_stock", {"warehouse": best["warehouse"], "sku": sku, "quantity": quantity}, {})]

    return Errand("most-stock", f"check the stock of {sku} at the {_listing(warehouses)} warehouses and reserve "
                                f"{quantity} units at the one with the most units",
                  [("check_stock", {"warehouse": w, "sku": sku}) for w in warehouses], decide)


def _fewest_sufficient(c: Company) -> Errand:
    sku = f"sku-{c.rng.randrange(10, 100)}"
    while sku in c.taken:
        sku = f"sku-{c.rng.randrange(10, 100)}"
    c.taken.add(sku)
    quantity = c.rng.randrange(6, 30) * 5
    warehouses = c.stock(sku, c.lookups(), low=1, high=4 * quantity)
    short = c.rng.choice(warehouses)  # one too short for the order, so the fewest units overall is never it
    c.world["stock"][f"{short}:{sku}"]["units"] = c.rng.randrange(1, quantity)
    rich = next(w for w in warehouses if w != short)  # and one with enough
    if c.world["stock"][f"{rich}:{sku}"]["units"] < quantity:
        c.world["stock"][f"{rich}:{sku}"]["units"] = quantity + c.rng.randrange(0, 3 * quantity)

    def decide(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        enough = [r for r in results if r["units"] >= quantity]
        best = min(enough, key=lambda r: (r["units"], r["warehouse"]))
        return [("reserve_stock", {"warehouse": best["warehouse"], "sku": sku, "quantity": quantity}, {})]

    return Errand("fewest-sufficient", f"check the stock of {sku} at the {_listing(warehouses)} warehouses and "
                                       f"reserve {quantity} units at the warehouse with the fewest units that still "
                                       f"has at least {quantity} (ties: the first alphabetically)",
                  [("check_stock", {"warehouse": w, "sku": sku}) for w in warehouses], decide)


def _credit(c: Company, family: str, gate: dict[str, Any] | None) -> Errand:
    customers = c.customers(c.lookups())
    worst = c.rng.choice(tuple(ACCEPT))

    def decide(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        return [("decide_credit", {"customer": r["customer"],
                                   "decision": "approve" if r["rating"] <= worst else "reject"}, {})
                for r in results]

    ask = (f"run credit checks on {_listing(customers)} and approve those rated {ACCEPT[worst]}, rejecting the "
           "others")
    if gate is not None:
        ask += (" (record no decision before compliance's go-ahead, which comes as an alert from 'compliance' "
                "during the morning)")
    return Errand(family, ask, [("run_credit_check", {"customer": x}) for x in customers], decide, gate=gate)


def _credit_batch(c: Company) -> Errand:
    return _credit(c, "credit-batch", None)


def _gated_credit(c: Company) -> Errand:
    at = c.rng.randrange(4 * 60, 14 * 60)
    gate = {"id": "compliance_go", "at": at, "effects": [{"alert": {
        "source": "compliance", "text": "Go-ahead: credit decisions may be recorded now.", "completes": True}}]}
    return _credit(c, "gated-credit", gate)


def _report_digest(c: Company) -> Errand:
    n = c.lookups()
    reports = c.reports(n)
    to = c.rng.choice(RECIPIENTS)

    def decide(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        body = ", ".join(f"{r['report']} {_figure(r['value'])} {r['unit']}" for r in results) + "."
        pattern = r"[\s\S]*".join(number_pattern(r["value"]) for r in results)
        return [("send_email", {"to": to, "subject": "Digest", "body": body},
                 {"subject": {"$any": True}, "body": {"$regex": pattern}})]

    return Errand("report-digest", f"fetch the {_listing(reports)} reports and email '{to}' a digest with the "
                                   f"{n} figures, in that order",
                  [("fetch_report", {"report": r}) for r in reports], decide)


def _threshold_route(c: Company) -> Errand:
    report, = c.reports(1)
    row = c.world["reports"][report]
    digits = next(r[4] for r in REPORTS if r[0] == report)
    threshold = row["value"]
    while threshold == row["value"]:
        threshold = round(row["value"] * c.rng.uniform(0.6, 1.4), digits) if digits else \
            int(row["value"] * c.rng.uniform(0.6, 1.4)) + c.rng.randrange(-2, 3)
    high, low = c.rng.sample(RECIPIENTS, 2)

    def decide(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        value = results[0]["value"]
        to = high if value > threshold else low
        return [("send_email", {"to": to, "subject": f"{report} figure",
                                "body": f"The {report} figure is {_figure(value)} {results[0]['unit']}."},
                 {"subject": {"$any": True}, "body": {"$regex": number_pattern(value)}})]

    return Errand("threshold-route", f"fetch the {report} report and email its figure to '{high}' if it is above "
                                     f"{_figure(threshold)}, otherwise to '{low}'",
                  [("fetch_report", {"report": report})], decide)


def _approval_order(c: Company) -> Errand:
    item, = c.pick(ITEMS, 1)
    supplier = c.rng.choice(SUPPLIERS)
    c.world["quotes"][f"{supplier}:{item}"] = {"id": f"{supplier}:{item}", "supplier": supplier, "item": item,
                                               "unit_price": c.rng.randrange(20, 2000) / 100}
    quantity = c.rng.randrange(1, 50) * 10
    at = c.rng.randrange(3 * 60, 13 * 60)
    gate = {"id": "manager_approval", "at": at, "effects": [{"alert": {
        "source": "manager", "text": f"Approved: the {item} order may be placed.", "completes": True}}]}

    def decide(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        return [("place_order", {"supplier": supplier, "item": item, "quantity": quantity}, {})]

    return Errand("approval-order", f"order {quantity} {item} from {supplier} once the manager approves it (the "
                                    "approval comes as an alert from 'manager'; not before)", [], decide, gate=gate)


FAMILIES: dict[str, Callable[[Company], Errand]] = {
    "cheapest-order": _cheapest_order, "most-stock": _most_stock, "credit-batch": _credit_batch,
    "report-digest": _report_digest, "approval-order": _approval_order,
    "budget-order": _budget_order, "fewest-sufficient": _fewest_sufficient, "threshold-route": _threshold_route,
    "gated-credit": _gated_credit}


# --- the task -----------------------------------------------------------------------------------------

def _company(rng: Any, level: int) -> Company:
    world: dict[str, dict[str, dict[str, Any]]] = {t: {} for t in ("quotes", "stock", "credit", "reports", "orders",
                                                                   "reservations", "decisions", "sent")}
    return Company(rng, level, world)


def _distractors(c: Company) -> None:
    """Rows no errand asks about: other items' quotes, other SKUs, customers and reports."""
    extra = 2 + 2 * c.level
    for _ in range(extra):
        item = c.rng.choice([i for i in ITEMS if i not in c.taken])
        c.quotes(item, c.rng.randint(1, 3))
    for _ in range(c.level):
        sku = f"sku-{c.rng.randrange(100, 1000)}"
        c.stock(sku, c.rng.randint(1, 3))
    c.customers(c.level)
    free = [r for r in REPORTS if r[0] not in c.taken]
    if free:
        c.reports(min(len(free), c.level))


def _call(world: World, name: str, args: dict[str, Any]) -> Any:
    tool = SCENARIO.by_name[name]
    try:
        return tool.fn(world, tool.args_model.model_validate(args))
    except ToolFailure as exc:
        raise RuntimeError(f"{NAME}: the reference call {name}({args}) was refused: {exc}") from None


def generate(request: Any) -> TaskSpec:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`)."""
    rng, level = request.rng(), request.level
    company = _company(rng, level)
    families = rng.sample(list(request.templates), level)
    errands = [FAMILIES[f](company) for f in families]
    _distractors(company)
    latency = {}
    for name in SLOW:
        low = rng.randrange(120, 301, 15)
        latency[name] = {"dist": "uniform", "low": low, "high": low + rng.randrange(60, 301, 15)}
    events = [e.gate for e in errands if e.gate is not None]
    state = {"variant": "async", "start": "09:00", "horizon_s": 6 * 3600.0, "seed": 0, "world": company.world,
             "events": events, "latency": latency}

    # The reference, replayed on the world (sync: each lookup answers at once) for the writes' arguments.
    replay = World({**state, "variant": "sync", "events": [], "latency": {}}, seed=0, variant="sync")
    script = Script(SCENARIO)
    handles = script.parallel(*(call for e in errands for call in e.lookups))
    expected, summary = [], []
    slow_high = max([latency[name]["high"] for e in errands for name, _ in e.lookups], default=0)
    k = 0
    plan: list[tuple[Errand, list[str | None], list[Any]]] = []
    for errand in errands:
        mine = handles[k:k + len(errand.lookups)]
        k += len(errand.lookups)
        results = [_call(replay, name, args) for name, args in errand.lookups]
        writes = errand.decide(results)
        plan.append((errand, mine, writes))
    for e, (errand, mine, writes) in enumerate(plan):
        refs = [f"e{e}-l{i}" for i in range(len(mine))]
        for ref, (name, args) in zip(refs, errand.lookups, strict=True):
            expected.append(expect(name, id=ref, **args))
        for handle in mine:
            script.wait_for(handle, timeout=900)
        if errand.gate is not None:
            script.wait_for(errand.gate["effects"][0]["alert"]["source"], timeout=1800)
        for name, args, matchers in writes:
            _call(replay, name, args)
            script.call(name, **args)
            needs = (*refs, *([errand.gate["id"]] if errand.gate else []))
            expected.append({"tool": name, "args": {**args, **matchers}, "after": list(needs)})
            summary.append(f"{name.replace('_', ' ')} {_brief(args)}")
    steps = len(script.actions("async")) + 1
    gate_at = max([e.gate["at"] for e in errands if e.gate], default=0)
    worst = max(THINK_S + slow_high, gate_at) + THINK_S * steps
    deadline = company.clock(worst + rng.randint(*MARGIN[level]) + 59)
    for entry in expected:
        if entry["tool"] not in SLOW:
            entry["not_after"] = deadline
    script.say("Done: " + "; ".join(summary) + ".")
    instruction = (" ".join(_sentence(i, len(errands), e.ask) for i, e in enumerate(errands))
                   + f" Everything must be done by {deadline}.")
    verifier = TimedWriteSpec.model_validate({"type": "timed_write", "expected": expected})
    return TaskSpec(id=request.task_id, env_id=request.env_id, split=request.split, instruction=instruction,
                    initial_state=state, limits=Limits(max_steps=12 + 10 * level),
                    verifiers=refuse_quotes([verifier], instruction),
                    solution=script.actions("async"),
                    tags=("backoffice", "generated", "async", f"level-{level}", *families),
                    metadata={"templates": families, "level": level, "seed": request.seed, "generator": NAME,
                              "deadline": deadline})


def _sentence(i: int, n: int, ask: str) -> str:
    lead = "" if n == 1 else f"{('First', 'Second', 'Third')[i]} errand: "
    text = lead + ask
    return text[0].upper() + text[1:] + "."


def _brief(args: dict[str, Any]) -> str:
    keys = ("quantity", "item", "sku", "supplier", "warehouse", "customer", "decision", "to")
    return " ".join(str(args[k]) for k in keys if k in args)
