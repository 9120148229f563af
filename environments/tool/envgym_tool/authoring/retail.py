"""The ``tool-retail`` suite, generated: an online shop's customer service under a written policy.

``build()`` returns the suite deterministically; ``python -m envgym_tool.authoring.retail`` writes it to
``tasks/tool-retail/tasks.jsonl``. Every task starts from one base store (:func:`base_state`: the shop on
2024-06-15 with 14 customers, 15 products in 34 variants, 25 orders) and is one of five kinds, recorded in
``metadata.kind`` and ``tags``:

- ``refuse``: the policy forbids the request. No write may happen, the final message must say why
  (regex), and the agent must have looked the order or customer up, so doing nothing fails.
- ``no-change``: the request is already satisfied or is a question; no writes, an answer check.
- ``collateral``: a plausible wrong path writes one thing too many (another order, another item, the
  account as well as the order); the write-action verifier catches it.
- ``multi-step``: two or three writes, some ``ordered``.
- ``single-write``: one write with exact arguments.

The instructions are the customer's whole side of the conversation (there is no simulated user), so each
states what to do when the request cannot be met. Tool-call ids in solutions are numbered per task, so
the file is byte-identical on every build. About 40% of each kind goes to ``test``. This module is long
because it is data: one short block per task.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from envgym.plugin import (
    Action,
    AllOfSpec,
    AnswerSpec,
    CalledCheck,
    Criterion,
    ExpectedWrite,
    Limits,
    RubricSpec,
    TaskSpec,
    ToolCall,
    VerifierSpec,
    WriteActionSpec,
    answer_pattern,
    number_pattern,
    refuse_quotes,
    write_suite,
)

ENV_ID = "tool/retail-v1"
TODAY = "2024-06-15"
KINDS = ("refuse", "no-change", "collateral", "multi-step", "single-write")

# ------------------------------------------------------------------------------------------- base store

CUSTOMERS = [  # id, first, last, email, phone, line1, line2, city, state, zip
    ("cus_001", "Ava", "Chen", "ava.chen@example.com", "415-555-0101", "1200 Folsom St", "Apt 5",
     "San Francisco", "CA", "94107"),
    ("cus_002", "Marcus", "Reed", "marcus.reed@example.com", "212-555-0102", "350 W 31st St", "", "New York",
     "NY", "10001"),
    ("cus_003", "Priya", "Nair", "priya.nair@example.com", "312-555-0103", "2100 N Clark St", "", "Chicago",
     "IL", "60614"),
    ("cus_004", "Diego", "Alvarez", "diego.alvarez@example.com", "512-555-0104", "801 Congress Ave", "",
     "Austin", "TX", "73301"),
    ("cus_005", "Hannah", "Kim", "hannah.kim@example.com", "206-555-0105", "400 Pine St", "Unit 9", "Seattle",
     "WA", "98101"),
    ("cus_006", "Tom", "Becker", "tom.becker@example.com", "617-555-0106", "77 Massachusetts Ave", "",
     "Cambridge", "MA", "02139"),
    ("cus_007", "Lucia", "Rossi", "lucia.rossi@example.com", "305-555-0107", "1500 Brickell Ave", "Apt 1802",
     "Miami", "FL", "33101"),
    ("cus_008", "Samuel", "Okafor", "sam.okafor@example.com", "404-555-0108", "55 Peachtree St", "",
     "Atlanta", "GA", "30303"),
    ("cus_009", "Emma", "Larsen", "emma.larsen@example.com", "303-555-0109", "1600 Wynkoop St", "", "Denver",
     "CO", "80202"),
    ("cus_010", "Noah", "Patel", "noah.patel@example.com", "602-555-0110", "200 W Washington St", "",
     "Phoenix", "AZ", "85004"),
    ("cus_011", "Grace", "Liu", "grace.liu@example.com", "503-555-0111", "900 SW 5th Ave", "", "Portland",
     "OR", "97205"),
    ("cus_012", "Omar", "Haddad", "omar.haddad@example.com", "313-555-0112", "1 Woodward Ave", "", "Detroit",
     "MI", "48226"),
    ("cus_013", "Ava", "Chen", "ava.chen.nyc@example.com", "646-555-0113", "88 Greenwich St", "Apt 12C",
     "New York", "NY", "10006"),
    ("cus_014", "Leila", "Haddad", "haddad.family@example.com", "313-555-0114", "1 Woodward Ave", "",
     "Detroit", "MI", "48226"),
]

PAYMENTS = [  # id, customer, kind, label
    ("pm_001_visa", "cus_001", "credit_card", "Visa ending 4242"),
    ("pm_001_gift", "cus_001", "gift_card", "Gift card ending 0001"),
    ("pm_002_mc", "cus_002", "credit_card", "Mastercard ending 5555"),
    ("pm_003_visa", "cus_003", "credit_card", "Visa ending 1111"),
    ("pm_003_paypal", "cus_003", "paypal", "PayPal priya.nair@example.com"),
    ("pm_004_amex", "cus_004", "credit_card", "Amex ending 3782"),
    ("pm_005_paypal", "cus_005", "paypal", "PayPal hannah.kim@example.com"),
    ("pm_005_visa", "cus_005", "credit_card", "Visa ending 9012"),
    ("pm_006_visa", "cus_006", "credit_card", "Visa ending 3333"),
    ("pm_007_mc", "cus_007", "credit_card", "Mastercard ending 7777"),
    ("pm_008_gift", "cus_008", "gift_card", "Gift card ending 0808"),
    ("pm_008_visa", "cus_008", "credit_card", "Visa ending 8888"),
    ("pm_009_visa", "cus_009", "credit_card", "Visa ending 2020"),
    ("pm_010_disc", "cus_010", "credit_card", "Discover ending 6011"),
    ("pm_011_paypal", "cus_011", "paypal", "PayPal grace.liu@example.com"),
    ("pm_012_visa", "cus_012", "credit_card", "Visa ending 1212"),
    ("pm_013_mc", "cus_013", "credit_card", "Mastercard ending 1313"),
    ("pm_014_visa", "cus_014", "credit_card", "Visa ending 1414"),
]

PRODUCTS = [  # id, name, category, final sale, [(variant id, options, price, in stock)]
    ("prd_01", "Wireless Headphones", "electronics", False,
     [("var_0101", "color: black", 89.99, True), ("var_0102", "color: white", 89.99, True),
      ("var_0103", "color: navy", 99.99, True)]),
    ("prd_02", "Running Shoes", "apparel", False,
     [("var_0201", "size: 8", 120.0, True), ("var_0202", "size: 9", 120.0, True),
      ("var_0203", "size: 10", 120.0, True), ("var_0204", "size: 11", 120.0, False)]),
    ("prd_03", "Cotton T-Shirt", "apparel", False,
     [("var_0301", "size: S", 19.5, True), ("var_0302", "size: M", 19.5, True),
      ("var_0303", "size: L", 19.5, True), ("var_0304", "size: XL", 21.5, True)]),
    ("prd_04", "Espresso Machine", "home", False, [("var_0401", "color: steel", 249.0, True)]),
    ("prd_05", "Yoga Mat", "sports", False,
     [("var_0501", "color: purple", 35.0, True), ("var_0502", "color: green", 35.0, True)]),
    ("prd_06", "Water Bottle", "sports", False,
     [("var_0601", "size: 750 ml", 18.0, True), ("var_0602", "size: 1 l", 22.0, True)]),
    ("prd_07", "Backpack", "accessories", False,
     [("var_0701", "color: grey", 64.0, True), ("var_0702", "color: black", 64.0, True)]),
    ("prd_08", "Desk Lamp", "home", False, [("var_0801", "color: brass", 42.5, True)]),
    ("prd_09", "Mechanical Keyboard", "electronics", False,
     [("var_0901", "switches: linear", 129.0, True), ("var_0902", "switches: tactile", 129.0, True),
      ("var_0903", "switches: clicky", 129.0, True)]),
    ("prd_10", "Smart Watch", "electronics", False,
     [("var_1001", "size: 40 mm", 199.0, True), ("var_1002", "size: 44 mm", 229.0, True)]),
    ("prd_11", "Aviator Sunglasses", "accessories", True, [("var_1101", "lens: polarized", 25.0, True)]),
    ("prd_12", "Throw Blanket", "home", False,
     [("var_1201", "color: grey", 48.0, True), ("var_1202", "color: cream", 48.0, True)]),
    ("prd_13", "Bluetooth Speaker", "electronics", False,
     [("var_1301", "color: red", 59.99, True), ("var_1302", "color: blue", 59.99, True)]),
    ("prd_14", "Denim Jacket", "apparel", False,
     [("var_1401", "size: S", 85.0, True), ("var_1402", "size: M", 85.0, True), ("var_1403", "size: L", 85.0, True)]),
    ("prd_15", "Coffee Beans", "grocery", True, [("var_1501", "roast: medium, 1 kg", 24.0, True)]),
]

PRICE = {v[0]: v[2] for p in PRODUCTS for v in p[4]}


@dataclass(frozen=True)
class Order:
    id: str
    customer: str
    status: str
    variants: tuple[str, ...]
    placed: str
    payment: str
    shipped: str | None = None
    delivered: str | None = None
    fee: float = 0.0
    cancel_reason: str | None = None


ORDERS = [
    Order("ord_1001", "cus_001", "pending", ("var_0101", "var_0302"), "2024-06-13", "pm_001_visa", fee=5.0),
    Order("ord_1002", "cus_001", "pending", ("var_0501",), "2024-06-14", "pm_001_visa", fee=5.0),
    Order("ord_1003", "cus_001", "delivered", ("var_0202", "var_0601", "var_0701"), "2024-05-30", "pm_001_visa",
          "2024-06-01", "2024-06-05"),
    Order("ord_1004", "cus_002", "shipped", ("var_0401",), "2024-06-10", "pm_002_mc", "2024-06-12", fee=10.0),
    Order("ord_1005", "cus_002", "delivered", ("var_0801", "var_1201"), "2024-04-12", "pm_002_mc", "2024-04-15",
          "2024-04-20", fee=5.0),
    Order("ord_1006", "cus_003", "delivered", ("var_0901", "var_1301"), "2024-05-26", "pm_003_visa", "2024-05-28",
          "2024-06-01"),
    Order("ord_1007", "cus_003", "pending", ("var_1001",), "2024-06-14", "pm_003_paypal"),
    Order("ord_1008", "cus_004", "delivered", ("var_1101", "var_0303"), "2024-06-04", "pm_004_amex", "2024-06-06",
          "2024-06-10", fee=5.0),
    Order("ord_1009", "cus_004", "pending", ("var_0203",), "2024-06-12", "pm_004_amex"),
    Order("ord_1010", "cus_005", "delivered", ("var_0102",), "2024-05-22", "pm_005_paypal", "2024-05-24",
          "2024-05-28"),
    Order("ord_1011", "cus_005", "cancelled", ("var_1302",), "2024-06-02", "pm_005_paypal", fee=5.0,
          cancel_reason="found a better price"),
    Order("ord_1012", "cus_006", "pending", ("var_0902", "var_0602"), "2024-06-11", "pm_006_visa", fee=5.0),
    Order("ord_1013", "cus_006", "pending", ("var_1202",), "2024-06-13", "pm_006_visa", fee=5.0),
    Order("ord_1014", "cus_007", "delivered", ("var_0301", "var_0302", "var_1402"), "2024-05-14", "pm_007_mc",
          "2024-05-16", "2024-05-20"),
    Order("ord_1015", "cus_007", "shipped", ("var_1302",), "2024-06-11", "pm_007_mc", "2024-06-13", fee=5.0),
    Order("ord_1016", "cus_008", "delivered", ("var_1002",), "2024-06-09", "pm_008_gift", "2024-06-11",
          "2024-06-14"),
    Order("ord_1017", "cus_008", "pending", ("var_1501", "var_0502"), "2024-06-14", "pm_008_visa", fee=5.0),
    Order("ord_1018", "cus_009", "delivered", ("var_0702",), "2024-05-08", "pm_009_visa", "2024-05-10",
          "2024-05-15"),
    Order("ord_1019", "cus_009", "delivered", ("var_0801",), "2024-05-09", "pm_009_visa", "2024-05-11",
          "2024-05-16"),
    Order("ord_1020", "cus_010", "pending", ("var_0101",), "2024-06-14", "pm_010_disc"),
    Order("ord_1021", "cus_011", "delivered", ("var_1201", "var_0501"), "2024-06-01", "pm_011_paypal",
          "2024-06-04", "2024-06-08", fee=5.0),
    Order("ord_1022", "cus_012", "shipped", ("var_0903",), "2024-06-12", "pm_012_visa", "2024-06-14"),
    Order("ord_1023", "cus_012", "delivered", ("var_0601",), "2024-05-29", "pm_012_visa", "2024-05-31",
          "2024-06-03", fee=5.0),
    Order("ord_1024", "cus_013", "pending", ("var_1401",), "2024-06-14", "pm_013_mc"),
    Order("ord_1025", "cus_010", "delivered", ("var_1301", "var_0901"), "2024-05-27", "pm_010_disc",
          "2024-05-29", "2024-06-02"),
]

REFUNDS = [  # id, order, payment method, amount, reason, item
    ("ref_1011_cancel", "ord_1011", "pm_005_paypal", 64.99, "cancellation", None),
    ("ref_itm_1021_1_1", "ord_1021", "pm_011_paypal", 15.0, "damaged item", "itm_1021_1"),
]

ADDRESS_COLUMNS = ("line1", "line2", "city", "state", "zip")


def _tracking(order: Order) -> str | None:
    return f"1Z{order.id[4:]}{order.customer[4:]}US" if order.shipped else None


def base_state() -> dict[str, list[dict[str, Any]]]:
    """The shop as every task starts it (fresh objects on each call)."""
    customers = {c[0]: c for c in CUSTOMERS}
    orders, items = [], []
    for o in ORDERS:
        address = dict(zip(ADDRESS_COLUMNS, customers[o.customer][5:], strict=True))
        orders.append({
            "id": o.id, "customer_id": o.customer, "status": o.status, "placed_at": o.placed,
            "shipped_at": o.shipped, "delivered_at": o.delivered, "tracking_number": _tracking(o),
            "shipping_fee": o.fee, "payment_method_id": o.payment, "cancel_reason": o.cancel_reason,
            **{f"ship_{k}": v for k, v in address.items()},
        })
        items += [{"id": f"itm_{o.id[4:]}_{k}", "order_id": o.id, "variant_id": v, "price": PRICE[v]}
                  for k, v in enumerate(o.variants, start=1)]
    return {
        "meta": [{"key": "today", "value": TODAY}],
        "customers": [dict(zip(("id", "first_name", "last_name", "email", "phone", *ADDRESS_COLUMNS), c,
                               strict=True)) for c in CUSTOMERS],
        "payment_methods": [dict(zip(("id", "customer_id", "kind", "label"), p, strict=True)) for p in PAYMENTS],
        "products": [{"id": p[0], "name": p[1], "category": p[2], "final_sale": int(p[3])} for p in PRODUCTS],
        "variants": [{"id": v[0], "product_id": p[0], "options": v[1], "price": v[2], "in_stock": int(v[3])}
                     for p in PRODUCTS for v in p[4]],
        "orders": orders,
        "order_items": items,
        "refunds": [dict(zip(("id", "order_id", "payment_method_id", "amount", "reason", "item_id"), r,
                             strict=True)) for r in REFUNDS],
    }


# ------------------------------------------------------------------------------------ building blocks

Call = tuple[str, dict[str, Any]]
Step = list[Call] | str


def call(name: str, **args: Any) -> Call:
    return name, args


def by_email(email: str) -> Call:
    return call("find_customer_by_email", email=email)


def by_name_zip(first: str, last: str, zip_code: str) -> Call:
    return call("find_customer_by_name_zip", first_name=first, last_name=last, zip=zip_code)


def order(order_id: str) -> Call:
    return call("get_order", order_id=order_id)


def address(line1: str, line2: str, city: str, state: str, zip_code: str) -> dict[str, str]:
    return {"line1": line1, "line2": line2, "city": city, "state": state, "zip": zip_code}


def writes(*expected: Call, ordered: bool = False) -> WriteActionSpec:
    return WriteActionSpec(expected=tuple(ExpectedWrite(tool=n, args=a) for n, a in expected), ordered=ordered)


def checks(*criteria: Criterion) -> RubricSpec | AllOfSpec:
    """The criteria as a rubric; look-ups are graded apart from the answer and multiplied with it.

    A look-up earns nothing on its own: looking the order up and then answering wrong, or claiming a change
    that was never made, scores 0 (partial credit stays between the answer's own criteria).
    """
    lookups = tuple(c for c in criteria if isinstance(c.check, CalledCheck))
    answers = tuple(c for c in criteria if not isinstance(c.check, CalledCheck))
    if lookups and answers:
        return AllOfSpec(verifiers=(RubricSpec(criteria=answers), RubricSpec(criteria=lookups)))
    return RubricSpec(criteria=criteria)


def says(name: str, pattern: str, reject: tuple[str, ...] = ()) -> Criterion:
    """The answer matches ``pattern`` and none of ``reject`` (the wrong candidates), in a few sentences."""
    return Criterion(name=name, check=AnswerSpec(kind="regex", expected=answer_pattern(pattern, reject=reject)))


def states(name: str, value: float) -> Criterion:
    """The answer names ``value`` among at most five numbers: a list of every amount in the store fails."""
    pattern = answer_pattern(number_pattern(value), max_numbers=5)
    return Criterion(name=name, check=AnswerSpec(kind="regex", expected=pattern))


def other_orders(*keep: str) -> tuple[str, ...]:
    """Every order number of the store but ``keep``, as reject patterns (``1012`` also matches ``ord_1012``)."""
    return tuple(rf"(?<!\d){o.id[4:]}(?!\d)" for o in ORDERS if o.id not in keep)


def looked_up(name: str, **args: Any) -> Criterion:
    return Criterion(name=f"looked_up_{name}", check=CalledCheck(tool=name, args=args))


def refusal(lookup: Criterion, reason: str, pattern: str) -> tuple[VerifierSpec, ...]:
    """No write at all, the agent looked the case up, and the final message gives the reason."""
    return writes(), checks(lookup, says(reason, pattern))


@dataclass(frozen=True)
class Draft:
    slug: str
    kind: str
    instruction: str
    steps: tuple[Step, ...]
    verifiers: tuple[VerifierSpec, ...]
    max_steps: int = 20


def _actions(steps: tuple[Step, ...]) -> tuple[Action, ...]:
    actions, n = [], 0
    for step in steps:
        if isinstance(step, str):
            actions.append(Action(text=step))
            continue
        calls = []
        for name, args in step:
            n += 1
            calls.append(ToolCall(id=f"call_{n}", name=name, arguments=json.dumps(args, ensure_ascii=False)))
        actions.append(Action(tool_calls=tuple(calls)))
    return tuple(actions)


SHIPPED = r"shipped|already (been )?(sent|dispatched|on (its|the) way)|in transit"
WINDOW = r"30[- ]day|30 days|return window|too late|expired"

# ------------------------------------------------------------------------------------------------ tasks


def _drafts() -> list[Draft]:
    ava, ava_sf = by_email("ava.chen@example.com"), by_name_zip("Ava", "Chen", "94107")
    marcus, priya = by_email("marcus.reed@example.com"), by_email("priya.nair@example.com")
    diego, hannah = by_email("diego.alvarez@example.com"), by_email("hannah.kim@example.com")
    tom, lucia = by_email("tom.becker@example.com"), by_email("lucia.rossi@example.com")
    sam, emma = by_email("sam.okafor@example.com"), by_name_zip("Emma", "Larsen", "80202")
    noah, grace = by_name_zip("Noah", "Patel", "85004"), by_email("grace.liu@example.com")
    omar = by_email("omar.haddad@example.com")
    sam_new = address("12 Auburn Ave", "Unit 4", "Atlanta", "GA", "30312")
    tom_office = address("1 Kendall Sq", "Building 200", "Cambridge", "MA", "02139")
    return [
        Draft("cancel-pending", "single-write",
              "Hi, this is Ava Chen (ava.chen@example.com). Please cancel my yoga mat order ord_1002, I no "
              "longer need it. How much will I get back?",
              ([ava], [order("ord_1002")], [call("cancel_order", order_id="ord_1002", reason="no longer needed")],
               "Order ord_1002 is cancelled and $40.00 (the mat plus shipping) goes back to your Visa ending 4242."),
              (writes(call("cancel_order", order_id="ord_1002", reason="no longer needed")),
               checks(states("refund_amount", 40.0)))),
        Draft("cancel-by-name-zip", "single-write",
              "I'm Noah Patel, zip code 85004. I ordered the headphones in order ord_1020 by mistake, please "
              "cancel that order.",
              ([noah], [order("ord_1020")], [call("cancel_order", order_id="ord_1020", reason="ordered by mistake")],
               "Done: ord_1020 is cancelled and $89.99 is refunded to your Discover card."),
              (writes(call("cancel_order", order_id="ord_1020", reason="ordered by mistake")),)),
        Draft("cancel-shipped", "refuse",
              "Hello, Marcus Reed here (marcus.reed@example.com). I no longer need the espresso machine, please "
              "cancel order ord_1004. If it can't be cancelled, just tell me why.",
              ([marcus], [order("ord_1004")],
               "I'm sorry, order ord_1004 has already shipped (2024-06-12), so it can no longer be cancelled. "
               "Once it is delivered you can return it within 30 days."),
              refusal(looked_up("get_order", order_id="ord_1004"), "explains_shipped", SHIPPED)),
        Draft("cancel-one-of-two", "collateral",
              "Hi, Tom Becker, tom.becker@example.com. I found the throw blanket cheaper elsewhere, so please "
              "cancel the order that has the blanket in it.",
              ([tom], [call("list_orders", customer_id="cus_006", status="pending")], [order("ord_1013")],
               [call("cancel_order", order_id="ord_1013", reason="found a better price")],
               "Your blanket order ord_1013 is cancelled; $53.00 is refunded to your Visa. Order ord_1012 is "
               "unchanged."),
              (writes(call("cancel_order", order_id="ord_1013", reason="found a better price")),)),
        Draft("update-order-address", "single-write",
              "Priya Nair, priya.nair@example.com. Please ship my smart watch order ord_1007 to my office "
              "instead: 455 N Wells St, Suite 300, Chicago, IL 60654.",
              ([priya], [order("ord_1007")],
               [call("update_order_address", order_id="ord_1007",
                     **address("455 N Wells St", "Suite 300", "Chicago", "IL", "60654"))],
               "Order ord_1007 will now ship to 455 N Wells St, Suite 300, Chicago, IL 60654."),
              (writes(call("update_order_address", order_id="ord_1007", line1="455 N Wells St", city="Chicago",
                           state="IL", zip="60654")),)),
        Draft("address-already-set", "no-change",
              "This is Diego Alvarez (diego.alvarez@example.com). Make sure my running shoes order ord_1009 "
              "goes to 801 Congress Ave, Austin, TX 73301, and change it if it doesn't.",
              ([diego], [order("ord_1009")],
               "Order ord_1009 already ships to 801 Congress Ave, Austin, TX 73301, so no change is needed."),
              (writes(), checks(looked_up("get_order", order_id="ord_1009"),
                                says("says_already_set", r"already|no change|no need|unchanged")))),
        Draft("address-shipped", "refuse",
              "Hi, Lucia Rossi here, lucia.rossi@example.com. Please change the delivery address of order "
              "ord_1015 to 2000 Collins Ave, Miami Beach, FL 33139. If that isn't possible, tell me why.",
              ([lucia], [order("ord_1015")],
               "Sorry, order ord_1015 has already shipped, so its address can't be changed anymore."),
              refusal(looked_up("get_order", order_id="ord_1015"), "explains_shipped", SHIPPED)),
        Draft("order-address-not-account", "collateral",
              "Hi, I'm Ava Chen, zip 94107. Please send my yoga mat order ord_1002 to my office: 500 Howard St, "
              "Floor 3, San Francisco, CA 94105.",
              ([ava_sf], [order("ord_1002")],
               [call("update_order_address", order_id="ord_1002",
                     **address("500 Howard St", "Floor 3", "San Francisco", "CA", "94105"))],
               "Order ord_1002 will be delivered to 500 Howard St, Floor 3, San Francisco, CA 94105."),
              (writes(call("update_order_address", order_id="ord_1002", line1="500 Howard St",
                           city="San Francisco", state="CA", zip="94105")),)),
        Draft("update-account-address", "collateral",
              "Samuel Okafor, sam.okafor@example.com. I've moved: please update the address on my account to "
              "12 Auburn Ave, Unit 4, Atlanta, GA 30312.",
              ([sam], [call("get_customer", customer_id="cus_008")],
               [call("update_customer_address", customer_id="cus_008", **sam_new)],
               "Your account address is now 12 Auburn Ave, Unit 4, Atlanta, GA 30312. Existing orders keep "
               "their shipping address."),
              (writes(call("update_customer_address", customer_id="cus_008", line1="12 Auburn Ave", city="Atlanta",
                           state="GA", zip="30312")),)),
        Draft("update-email", "single-write",
              "I'm Emma Larsen from Denver, zip 80202. Please change the email on my account to "
              "emma.l@fastmail.example.",
              ([emma], [call("update_customer_email", customer_id="cus_009", new_email="emma.l@fastmail.example")],
               "Your email address is now emma.l@fastmail.example."),
              (writes(call("update_customer_email", customer_id="cus_009", new_email="emma.l@fastmail.example")),)),
        Draft("email-taken", "refuse",
              "Omar Haddad, omar.haddad@example.com. Please change my account email to "
              "haddad.family@example.com. If you can't, tell me why.",
              ([omar], [call("get_customer", customer_id="cus_012")],
               [call("update_customer_email", customer_id="cus_012", new_email="haddad.family@example.com")],
               "I couldn't change it: haddad.family@example.com already belongs to another account, so your "
               "email stays omar.haddad@example.com."),
              refusal(looked_up("find_customer_by_email", email="omar.haddad@example.com"), "explains_taken",
                      r"another (account|customer)|belongs|already (in use|used|taken|registered)")),
        Draft("return-one-of-three", "collateral",
              "Hi, Ava Chen (ava.chen@example.com). I'd like to return the backpack from order ord_1003, I no "
              "longer need it. Refund it to the card I paid with.",
              ([ava], [order("ord_1003")],
               [call("create_return", order_id="ord_1003", item_ids=["itm_1003_3"], reason="no longer needed",
                     payment_method_id="pm_001_visa")],
               "Return ret_1003_1 is created for the backpack; $64.00 will be refunded to your Visa ending 4242."),
              (writes(call("create_return", order_id="ord_1003", item_ids=["itm_1003_3"],
                           reason="no longer needed", payment_method_id="pm_001_visa")),)),
        Draft("return-after-window", "refuse",
              "Marcus Reed, marcus.reed@example.com. I want to return the desk lamp from order ord_1005. If "
              "it can't be returned, tell me why.",
              ([marcus], [order("ord_1005")],
               "I'm sorry, order ord_1005 was delivered on 2024-04-20, more than 30 days ago, so it is past the "
               "return window."),
              refusal(looked_up("get_order", order_id="ord_1005"), "explains_window", WINDOW)),
        Draft("return-day-31", "refuse",
              "I'm Emma Larsen, zip 80202. I'd like to return the backpack from order ord_1018, I no longer "
              "need it. If that's not possible, just tell me why.",
              ([emma], [order("ord_1018")],
               "Sorry, ord_1018 was delivered on 2024-05-15, 31 days ago; returns are only accepted within 30 "
               "days of delivery."),
              refusal(looked_up("get_order", order_id="ord_1018"), "explains_window", WINDOW)),
        Draft("return-day-30", "single-write",
              "I'm Emma Larsen, zip 80202. I no longer need the desk lamp from order ord_1019, please return "
              "it and refund the card I paid with.",
              ([emma], [order("ord_1019")],
               [call("create_return", order_id="ord_1019", item_ids=["itm_1019_1"], reason="no longer needed",
                     payment_method_id="pm_009_visa")],
               "Today is the 30th day after delivery, so the return is accepted: $42.50 goes back to your Visa."),
              (writes(call("create_return", order_id="ord_1019", item_ids=["itm_1019_1"],
                           reason="no longer needed", payment_method_id="pm_009_visa")),)),
        Draft("return-final-sale", "refuse",
              "Diego Alvarez, diego.alvarez@example.com. The sunglasses from order ord_1008 don't suit me, I "
              "want to return them. If you can't, tell me why.",
              ([diego], [order("ord_1008")],
               "I'm sorry, the Aviator Sunglasses are a final-sale product and cannot be returned."),
              refusal(looked_up("get_order", order_id="ord_1008"), "explains_final_sale", r"final[- ]sale")),
        Draft("return-two-of-three", "collateral",
              "Hi, Lucia Rossi (lucia.rossi@example.com). The two t-shirts from order ord_1014 don't fit, I'd "
              "like to return them; I'm keeping the jacket. Refund the card I paid with.",
              ([lucia], [order("ord_1014")],
               [call("create_return", order_id="ord_1014", item_ids=["itm_1014_1", "itm_1014_2"],
                     reason="does not fit", payment_method_id="pm_007_mc")],
               "Return ret_1014_1 covers both t-shirts; $39.00 will be refunded to your Mastercard."),
              (writes(call("create_return", order_id="ord_1014", item_ids={"$any": True}, reason="does not fit",
                           payment_method_id="pm_007_mc")),)),
        Draft("return-pending", "refuse",
              "Tom Becker, tom.becker@example.com. I want to return the keyboard from order ord_1012. If "
              "that's not possible, tell me why.",
              ([tom], [order("ord_1012")],
               "Order ord_1012 is still pending and has not been delivered yet, so it can't be returned. If you "
               "don't want it, I can cancel the order instead."),
              refusal(looked_up("get_order", order_id="ord_1012"), "explains_not_delivered",
                      r"not (yet )?(been )?(delivered|shipped)|pending|hasn't (yet )?(been )?(delivered|shipped)")),
        Draft("refund-damaged", "single-write",
              "Hi, Priya Nair (priya.nair@example.com). The Bluetooth speaker from order ord_1006 arrived with "
              "a cracked grille. I'll keep it if you refund me $20 for the damage.",
              ([priya], [order("ord_1006")],
               [call("issue_refund", order_id="ord_1006", item_id="itm_1006_2", amount=20.0, reason="damaged item",
                     payment_method_id="pm_003_visa")],
               "I've refunded $20.00 for the damaged speaker to your Visa ending 1111."),
              (writes(call("issue_refund", order_id="ord_1006", item_id="itm_1006_2", amount=20.0,
                           reason="damaged item", payment_method_id="pm_003_visa")),)),
        Draft("refund-over-price", "refuse",
              "I'm Noah Patel, zip 85004. The speaker from order ord_1025 stopped working, I want $80 back for "
              "it. If you can't refund the full $80, don't refund anything, just tell me why.",
              ([noah], [order("ord_1025")],
               "I can't refund $80: the speaker cost $59.99, and refunds for an item never exceed its price. "
               "Nothing has been refunded."),
              refusal(looked_up("get_order", order_id="ord_1025"), "explains_limit",
                      r"59\.99|exceed|more than|price")),
        Draft("refund-other-method", "refuse",
              "Hannah Kim, hannah.kim@example.com. The headphones from order ord_1010 arrived damaged; refund "
              "their full price to my Visa ending 9012. Only do it if the money can go to that Visa; otherwise "
              "leave it and tell me why.",
              ([hannah], [order("ord_1010")],
               "I can't send it to your Visa: refunds only go to the order's original payment method, which for "
               "ord_1010 is your PayPal account. Nothing has been refunded."),
              refusal(looked_up("get_order", order_id="ord_1010"), "explains_original_method",
                      r"original|paypal")),
        Draft("refund-missing-item", "single-write",
              "Grace Liu, grace.liu@example.com. The yoga mat was missing from my order ord_1021. Please refund "
              "its full price and tell me how much you refunded.",
              ([grace], [order("ord_1021")],
               [call("issue_refund", order_id="ord_1021", item_id="itm_1021_2", amount=35.0, reason="missing item",
                     payment_method_id="pm_011_paypal")],
               "I've refunded $35.00 for the missing yoga mat to your PayPal account."),
              (writes(call("issue_refund", order_id="ord_1021", item_id="itm_1021_2", amount=35.0,
                           reason="missing item", payment_method_id="pm_011_paypal")),
               checks(states("refund_amount", 35.0)))),
        Draft("refunded-so-far", "no-change",
              "Grace Liu, grace.liu@example.com. How much have you refunded me so far on order ord_1021?",
              ([grace], [order("ord_1021")], "So far $15.00 has been refunded on ord_1021 (for the blanket)."),
              (writes(), checks(looked_up("get_order", order_id="ord_1021"), states("refunded", 15.0)))),
        Draft("order-total", "no-change",
              "Marcus Reed, marcus.reed@example.com. How much did I pay in total for order ord_1005, shipping "
              "included?",
              ([marcus], [order("ord_1005")], "You paid $95.50 for ord_1005: $90.50 of items plus $5.00 shipping."),
              (writes(), checks(looked_up("get_order", order_id="ord_1005"), states("total", 95.5)))),
        Draft("tracking-number", "no-change",
              "Hi, Lucia Rossi (lucia.rossi@example.com). Where is my order ord_1015? Please give me the "
              "tracking number.",
              ([lucia], [order("ord_1015")],
               "Order ord_1015 shipped on 2024-06-13; its tracking number is 1Z1015007US."),
              (writes(), checks(says("tracking_number", r"1Z1015007US", tuple(
                  t for o in ORDERS if o.id != "ord_1015" and (t := _tracking(o))))))),
        Draft("product-price", "no-change",
              "Hi, how much does the 44 mm Smart Watch cost, and is it in stock?",
              ([call("search_products", query="smart watch")],
               "The 44 mm Smart Watch costs $229.00 and it is in stock."),
              (writes(), checks(states("price", 229.0), says("in_stock", r"in stock|available")))),
        Draft("modify-item-variant", "single-write",
              "Ava Chen, ava.chen@example.com. In order ord_1001 I'd like the headphones in white instead of "
              "black.",
              ([ava], [order("ord_1001")], [call("get_product", product_id="prd_01")],
               [call("modify_order_item", order_id="ord_1001", item_id="itm_1001_1", new_variant_id="var_0102")],
               "Done: the headphones in ord_1001 are now white, at the same price."),
              (writes(call("modify_order_item", order_id="ord_1001", item_id="itm_1001_1",
                           new_variant_id="var_0102")),)),
        Draft("modify-item-price", "refuse",
              "Ava Chen, ava.chen@example.com. In order ord_1001, please switch the headphones to the navy "
              "color. If you can't, tell me why.",
              ([ava], [order("ord_1001")], [call("get_product", product_id="prd_01")],
               "I can't switch them: the navy headphones cost $99.99 while yours cost $89.99, and items can only "
               "be changed to a variant at the same price."),
              refusal(looked_up("get_order", order_id="ord_1001"), "explains_price",
                      r"price|cost|99\.99")),
        Draft("modify-out-of-stock", "refuse",
              "Diego Alvarez, diego.alvarez@example.com. Please change the running shoes in order ord_1009 to "
              "size 11. If you can't, tell me why.",
              ([diego], [order("ord_1009")], [call("get_product", product_id="prd_02")],
               "Sorry, the running shoes in size 11 are out of stock, so I can't change your order."),
              refusal(looked_up("get_order", order_id="ord_1009"), "explains_stock",
                      r"out of stock|not in stock|unavailable|not available|sold out")),
        Draft("cancel-and-readdress", "multi-step",
              "Tom Becker, tom.becker@example.com. Two things: cancel order ord_1013, I found a better price; "
              "and ship order ord_1012 to my office at 1 Kendall Sq, Building 200, Cambridge, MA 02139.",
              ([tom], [order("ord_1013"), order("ord_1012")],
               [call("cancel_order", order_id="ord_1013", reason="found a better price"),
                call("update_order_address", order_id="ord_1012", **tom_office)],
               "Order ord_1013 is cancelled ($53.00 refunded to your Visa) and ord_1012 now ships to 1 Kendall "
               "Sq, Building 200, Cambridge, MA 02139."),
              (writes(call("cancel_order", order_id="ord_1013", reason="found a better price"),
                      call("update_order_address", order_id="ord_1012", line1="1 Kendall Sq", city="Cambridge",
                           state="MA", zip="02139")),)),
        Draft("email-then-address", "multi-step",
              "Samuel Okafor, sam.okafor@example.com. First change my account email to "
              "samuel.okafor@mail.example, then update my account address to 12 Auburn Ave, Unit 4, "
              "Atlanta, GA 30312.",
              ([sam], [call("update_customer_email", customer_id="cus_008", new_email="samuel.okafor@mail.example")],
               [call("update_customer_address", customer_id="cus_008", **sam_new)],
               "Your email is now samuel.okafor@mail.example and your account address is 12 Auburn Ave, Unit 4, "
               "Atlanta, GA 30312."),
              (writes(call("update_customer_email", customer_id="cus_008", new_email="samuel.okafor@mail.example"),
                      call("update_customer_address", customer_id="cus_008", line1="12 Auburn Ave",
                           city="Atlanta", state="GA", zip="30312"), ordered=True),)),
        Draft("return-and-refund", "multi-step",
              "Priya Nair, priya.nair@example.com. About order ord_1006: I'd like to return the keyboard, I no "
              "longer need it, and the speaker arrived with a cracked grille, so please refund $20 for it. "
              "Refunds to the card I paid with.",
              ([priya], [order("ord_1006")],
               [call("create_return", order_id="ord_1006", item_ids=["itm_1006_1"], reason="no longer needed",
                     payment_method_id="pm_003_visa")],
               [call("issue_refund", order_id="ord_1006", item_id="itm_1006_2", amount=20.0, reason="damaged item",
                     payment_method_id="pm_003_visa")],
               "The keyboard return ret_1006_1 refunds $129.00, and $20.00 is refunded for the speaker, both to "
               "your Visa ending 1111."),
              (writes(call("create_return", order_id="ord_1006", item_ids=["itm_1006_1"],
                           reason="no longer needed", payment_method_id="pm_003_visa"),
                      call("issue_refund", order_id="ord_1006", item_id="itm_1006_2", amount=20.0,
                           reason="damaged item", payment_method_id="pm_003_visa")),)),
        Draft("cancel-by-same-name", "single-write",
              "Hi, I'm Ava Chen from New York, zip 10006. Please cancel my pending order, I no longer need it.",
              ([by_name_zip("Ava", "Chen", "10006")], [call("list_orders", customer_id="cus_013", status="pending")],
               [call("cancel_order", order_id="ord_1024", reason="no longer needed")],
               "Your pending order ord_1024 (Denim Jacket) is cancelled and $85.00 is refunded to your "
               "Mastercard."),
              (writes(call("cancel_order", order_id="ord_1024", reason="no longer needed")),)),
        Draft("cancel-both-pending", "multi-step",
              "Ava Chen, ava.chen@example.com. I ordered by mistake: cancel both of my pending orders and tell "
              "me the total amount refunded.",
              ([ava], [call("list_orders", customer_id="cus_001", status="pending")],
               [call("cancel_order", order_id="ord_1001", reason="ordered by mistake"),
                call("cancel_order", order_id="ord_1002", reason="ordered by mistake")],
               "Orders ord_1001 ($114.49) and ord_1002 ($40.00) are cancelled: $154.49 in total goes back to "
               "your Visa."),
              (writes(call("cancel_order", order_id="ord_1001", reason="ordered by mistake"),
                      call("cancel_order", order_id="ord_1002", reason="ordered by mistake")),
               checks(states("total_refund", 154.49)))),
        Draft("someone-elses-order", "refuse",
              "I'm Noah Patel, zip 85004. Please cancel order ord_1007, I no longer need it. If you can't, tell "
              "me why.",
              ([noah], [call("list_orders", customer_id="cus_010")],
               "I can't cancel ord_1007: it does not belong to your account, so I can't make changes to it."),
              refusal(looked_up("find_customer_by_name_zip", first_name="Noah", last_name="Patel", zip="85004"),
                      "explains_not_theirs",
                      r"belong|not (one of )?your|isn't your|another (customer|account)|different (customer|account)"
                      r"|not (on|in|associated with|linked to) your")),
        Draft("return-what-is-allowed", "multi-step",
              "Diego Alvarez, diego.alvarez@example.com. From order ord_1008, return everything that can be "
              "returned, it doesn't fit, refund to my card. Also ship my pending order ord_1009 to my new "
              "place: 1100 S Lamar Blvd, Apt 210, Austin, TX 78704. Tell me if anything couldn't be done.",
              ([diego], [order("ord_1008"), order("ord_1009")],
               [call("create_return", order_id="ord_1008", item_ids=["itm_1008_2"], reason="does not fit",
                     payment_method_id="pm_004_amex")],
               [call("update_order_address", order_id="ord_1009",
                     **address("1100 S Lamar Blvd", "Apt 210", "Austin", "TX", "78704"))],
               "I returned the t-shirt ($19.50 back to your Amex); the sunglasses are final sale and can't be "
               "returned. Order ord_1009 now ships to 1100 S Lamar Blvd, Apt 210, Austin, TX 78704."),
              (writes(call("create_return", order_id="ord_1008", item_ids=["itm_1008_2"], reason="does not fit",
                           payment_method_id="pm_004_amex"),
                      call("update_order_address", order_id="ord_1009", line1="1100 S Lamar Blvd", city="Austin",
                           state="TX", zip="78704")),
               checks(says("explains_final_sale", r"final[- ]sale"))), max_steps=25),
        Draft("three-changes", "multi-step",
              "Tom Becker, tom.becker@example.com. Please (1) switch the keyboard in order ord_1012 to clicky "
              "switches, (2) change my account email to tom.becker@mail.example, and (3) set my account "
              "address to 1 Kendall Sq, Building 200, Cambridge, MA 02139.",
              ([tom], [order("ord_1012")], [call("get_product", product_id="prd_09")],
               [call("modify_order_item", order_id="ord_1012", item_id="itm_1012_1", new_variant_id="var_0903"),
                call("update_customer_email", customer_id="cus_006", new_email="tom.becker@mail.example"),
                call("update_customer_address", customer_id="cus_006", **tom_office)],
               "All done: the keyboard in ord_1012 now has clicky switches, your email is "
               "tom.becker@mail.example and your account address is 1 Kendall Sq, Building 200, Cambridge, MA "
               "02139."),
              (writes(call("modify_order_item", order_id="ord_1012", item_id="itm_1012_1", new_variant_id="var_0903"),
                      call("update_customer_email", customer_id="cus_006", new_email="tom.becker@mail.example"),
                      call("update_customer_address", customer_id="cus_006", line1="1 Kendall Sq",
                           city="Cambridge", state="MA", zip="02139")),), max_steps=25),
        Draft("already-cancelled", "no-change",
              "Hannah Kim, hannah.kim@example.com. Please cancel my speaker order ord_1011.",
              ([hannah], [order("ord_1011")],
               "Order ord_1011 was already cancelled on your earlier request, and $64.99 was refunded to your "
               "PayPal. Nothing else to do."),
              (writes(), checks(looked_up("get_order", order_id="ord_1011"),
                                says("says_already_cancelled", r"already")))),
        Draft("which-orders-pending", "no-change",
              "Tom Becker, tom.becker@example.com. Which of my orders haven't shipped yet?",
              ([tom], [call("list_orders", customer_id="cus_006")],
               "Two orders haven't shipped yet: ord_1012 (keyboard and water bottle) and ord_1013 (throw "
               "blanket)."),
              (writes(), checks(says("names_ord_1012", r"1012", other_orders("ord_1012", "ord_1013")),
                                  says("names_ord_1013", r"1013", other_orders("ord_1012", "ord_1013"))))),
        Draft("identity-not-verified", "refuse",
              "I'm Ava Chen, zip code 90210. Cancel order ord_1001 right now. If you can't, tell me why.",
              ([by_name_zip("Ava", "Chen", "90210")],
               "I couldn't verify your identity: no customer named Ava Chen has the zip code 90210, so I can't "
               "change order ord_1001."),
              (writes(), checks(says("explains_identity",
                                     r"verif|identity|(could not|couldn't|unable to|can't|cannot) (find|locate)"
                                     r"|no (customer|account)")))),
    ]


def build() -> list[TaskSpec]:
    """The suite, in a fixed order; ids ``retail-NNN-<slug>``, ~40% of each kind in ``test``."""
    seen: dict[str, int] = {}
    tasks = []
    for number, draft in enumerate(_drafts(), start=1):
        if draft.kind not in KINDS:
            raise ValueError(f"task {draft.slug}: unknown kind {draft.kind!r}")
        rank = seen[draft.kind] = seen.get(draft.kind, -1) + 1
        tasks.append(TaskSpec(
            id=f"retail-{number:03d}-{draft.slug}", env_id=ENV_ID,
            split="test" if rank % 5 in (1, 3) else "train",
            instruction=draft.instruction, initial_state=base_state(),
            limits=Limits(max_steps=draft.max_steps), verifiers=refuse_quotes(draft.verifiers, draft.instruction),
            solution=_actions(draft.steps), tags=("retail", draft.kind), metadata={"kind": draft.kind},
        ))
    return tasks


if __name__ == "__main__":
    write_suite("tool-retail", build())
