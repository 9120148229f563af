"""``tool-retail-gen``: retail tasks by the thousand, each a seeded shop and a customer's seeded requests.

:func:`generate` is the generator (registered in :func:`envgym_tool.register_all`); every choice comes from
the request's seeded ``rng``. A task is built in four moves:

1. **A shop**: a catalogue (products with variants, prices, stock, final-sale flags), customers (names,
   emails, addresses, payment methods) and their orders in every status, dated around a seeded ``today``.
2. **Goals**: ``level`` requests of one customer, each from a different template family of the request's
   split, each given an order of its own that fits it (a pending order to cancel, a delivered one inside
   or outside the 30-day window, ...).
3. **The reference solution**: the calls a careful agent makes (verify identity, find each order, look,
   write), *replayed against the shop* with the domain's own tools; any call the tools refuse is a bug in
   this module (:class:`RuntimeError`), and amounts the agent must state come from the replay's results.
4. **Grading**: the expected writes (write-action verifier, whose final-state criterion compares the
   store with the reference's replay), and for requests the policy refuses, the reason in the answer.

Template families and their splits (:data:`envgym_tool.RETAIL_TEMPLATES`; train and test share none: a
test task is made only from test families, so a model trained on ``train`` meets request kinds it never
saw)::

    train: cancel, order-address, return, swap-variant, refuse-shipped
    test:  account-address, email, damaged-refund, refuse-window

Levels change what the agent must do, and the reference solution grows with them:

- 1: one request, the customer gives their email and the order id; a small shop;
- 2: two requests; identity by email or by name and zip; orders named by the product in them (the agent
  lists the customer's orders), and the total refunded asked for when anything is refunded;
- 3: three requests; identity by name and zip with another customer of the same name elsewhere (who has
  an order of the same product); a larger shop.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any

from envgym.plugin import Action, Limits, TaskSpec, ToolCall, refuse_quotes
from envgym.plugin.tools import execute_calls, store
from envgym_tool.authoring.retail import SHIPPED, WINDOW, checks, looked_up, says, states, writes
from envgym_tool.domains.retail import DOMAIN

NAME = "tool-retail-gen"

FIRST = ("Ava", "Ben", "Chloe", "Daniel", "Elena", "Felix", "Grace", "Hugo", "Iris", "Jonas", "Kira", "Liam",
         "Maya", "Nikhil", "Olivia", "Pablo", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wei", "Ximena",
         "Yusuf", "Zoe", "Aaron", "Bianca", "Carlos", "Dana", "Emil", "Fatima", "Gus", "Hana", "Ivan", "Jade")
LAST = ("Chen", "Reed", "Nair", "Alvarez", "Kim", "Becker", "Rossi", "Okafor", "Larsen", "Patel", "Liu",
        "Haddad", "Novak", "Silva", "Moreau", "Tanaka", "Fischer", "Costa", "Ivanova", "Brennan", "Osei",
        "Lindqvist", "Mendes", "Kowalski", "Hughes", "Sato", "Duarte", "Weber", "Nguyen", "Ahmed")
MAIL = ("example.com", "mail.example", "inbox.example", "post.example")
STREETS = ("Oak St", "Maple Ave", "Pine St", "Cedar Rd", "Elm St", "Lake Dr", "Hill Rd", "Park Ave", "River Rd",
           "Sunset Blvd", "Main St", "Church St", "Mill Ln", "Harbor Way", "Forest Ave", "Spring St")
CITIES = (("San Francisco", "CA", "941"), ("Los Angeles", "CA", "900"), ("New York", "NY", "100"),
          ("Chicago", "IL", "606"), ("Austin", "TX", "787"), ("Seattle", "WA", "981"), ("Boston", "MA", "021"),
          ("Miami", "FL", "331"), ("Atlanta", "GA", "303"), ("Denver", "CO", "802"), ("Phoenix", "AZ", "850"),
          ("Portland", "OR", "972"), ("Detroit", "MI", "482"), ("Madison", "WI", "537"), ("Raleigh", "NC", "276"))
UNITS = ("", "", "", "Apt 2", "Apt 5B", "Unit 9", "Suite 300", "Floor 4")
CARDS = (("credit_card", "Visa"), ("credit_card", "Mastercard"), ("credit_card", "Amex"),
         ("credit_card", "Discover"), ("paypal", "PayPal"), ("gift_card", "Gift card"))
CATALOGUE = (  # name, category, option, values, low and high price in dollars
    ("Wireless Headphones", "electronics", "color", ("black", "white", "navy", "silver"), 49, 199),
    ("Running Shoes", "apparel", "size", ("7", "8", "9", "10", "11", "12"), 60, 160),
    ("Cotton T-Shirt", "apparel", "size", ("S", "M", "L", "XL"), 12, 35),
    ("Espresso Machine", "home", "color", ("steel", "black", "red"), 120, 420),
    ("Yoga Mat", "sports", "color", ("purple", "green", "blue", "grey"), 20, 70),
    ("Water Bottle", "sports", "size", ("500 ml", "750 ml", "1 l"), 10, 40),
    ("Backpack", "accessories", "color", ("grey", "black", "olive", "red"), 35, 140),
    ("Desk Lamp", "home", "finish", ("brass", "black", "white"), 25, 90),
    ("Mechanical Keyboard", "electronics", "switches", ("linear", "tactile", "clicky"), 70, 210),
    ("Smart Watch", "electronics", "size", ("40 mm", "44 mm"), 120, 420),
    ("Throw Blanket", "home", "color", ("grey", "cream", "rust", "teal"), 25, 95),
    ("Bluetooth Speaker", "electronics", "color", ("red", "blue", "black"), 30, 150),
    ("Denim Jacket", "apparel", "size", ("S", "M", "L", "XL"), 55, 140),
    ("Rain Jacket", "apparel", "size", ("S", "M", "L"), 60, 180),
    ("Chef Knife", "home", "length", ("6 in", "8 in", "10 in"), 30, 160),
    ("Trail Socks", "apparel", "size", ("S", "M", "L"), 8, 24),
    ("Travel Mug", "accessories", "color", ("black", "white", "mint"), 12, 38),
    ("Bike Helmet", "sports", "size", ("S", "M", "L"), 40, 120),
    ("Phone Case", "accessories", "color", ("clear", "black", "pink", "blue"), 10, 45),
    ("Camping Lantern", "sports", "color", ("orange", "green"), 18, 60),
    ("Sunglasses", "accessories", "lens", ("polarized", "gradient"), 20, 150),
    ("Coffee Beans", "grocery", "roast", ("light", "medium", "dark"), 12, 30),
)
FINAL_SALE_CATEGORIES = ("grocery",)
CANCEL_REASONS = {"no longer needed": "I no longer need it", "ordered by mistake": "I ordered it by mistake",
                  "found a better price": "I found a better price elsewhere",
                  "delivery too slow": "the delivery is too slow"}
RETURN_REASONS = {"no longer needed": "I no longer need them", "does not fit": "they don't fit"}
REFUND_REASONS = {"damaged item": "arrived damaged", "missing item": "was missing from the package",
                  "wrong item": "was the wrong item"}
SIZES = {1: (5, 8), 2: (9, 10), 3: (14, 13)}
"""Per level: customers and catalogue products."""


@dataclass
class Shop:
    today: datetime.date
    state: dict[str, list[dict[str, Any]]]
    products: list[dict[str, Any]] = field(default_factory=list)
    """Each product with its ``variants`` (the rows), for goals to pick from."""
    next_order: int = 0

    def rows(self, table: str) -> list[dict[str, Any]]:
        return self.state[table]


def _money(value: float) -> float:
    return round(value + 1e-9, 2)


def _price(rng: Any, low: int, high: int) -> float:
    return _money(rng.randrange(low, high) + rng.choice((0.0, 0.5, 0.99, 0.0)))


def _shop(rng: Any, level: int) -> Shop:
    today = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randrange(0, 330))
    state: dict[str, list[dict[str, Any]]] = {t: [] for t in ("meta", "customers", "payment_methods", "products",
                                                               "variants", "orders", "order_items", "refunds")}
    state["meta"].append({"key": "today", "value": today.isoformat()})
    shop = Shop(today=today, state=state, next_order=rng.randrange(1000, 9000))
    n_customers, n_products = SIZES[level]
    base = rng.randrange(10, 90) * 10
    for k, (name, category, option, values, low, high) in enumerate(rng.sample(CATALOGUE, n_products)):
        pid = f"prd_{base + k}"
        price = _price(rng, low, high)
        kept = sorted(rng.sample(range(len(values)), rng.randrange(2, len(values) + 1)))
        variants = []
        for j, index in enumerate(kept):
            variants.append({"id": f"var_{base + k}{j + 1}", "product_id": pid, "options": f"{option}: {values[index]}",
                             "price": price if j < 2 or rng.random() < 0.6 else _money(price + rng.randrange(5, 25)),
                             "in_stock": 0 if j >= 2 and rng.random() < 0.3 else 1})
        product = {"id": pid, "name": name, "category": category, "final_sale": int(category in FINAL_SALE_CATEGORIES)}
        state["products"].append(product)
        state["variants"] += variants
        shop.products.append({**product, "variants": variants})
    names = rng.sample([(f, la) for f in FIRST for la in LAST], n_customers)
    cbase = rng.randrange(100, 800)
    for k, (first, last) in enumerate(names):
        _customer(shop, rng, f"cus_{cbase + k}", first, last)
    return shop


def _address(rng: Any, city: tuple[str, str, str] | None = None) -> dict[str, str]:
    name, state_code, prefix = city or rng.choice(CITIES)
    return {"line1": f"{rng.randrange(1, 2400)} {rng.choice(STREETS)}", "line2": rng.choice(UNITS),
            "city": name, "state": state_code, "zip": f"{prefix}{rng.randrange(1, 100):02d}"}


def _customer(shop: Shop, rng: Any, cid: str, first: str, last: str, *, avoid_zip: str | None = None) -> dict[str, Any]:
    taken = {c["email"] for c in shop.rows("customers")}
    email = f"{first}.{last}@{rng.choice(MAIL)}".lower()
    while email in taken:
        email = f"{first}.{last}{rng.randrange(2, 99)}@{rng.choice(MAIL)}".lower()
    address = _address(rng)
    while address["zip"] == avoid_zip:
        address = _address(rng)
    row = {"id": cid, "first_name": first, "last_name": last, "email": email,
           "phone": f"{rng.randrange(201, 989)}-555-{rng.randrange(0, 10000):04d}", **address}
    shop.rows("customers").append(row)
    for j, (kind, brand) in enumerate(rng.sample(CARDS, rng.randrange(1, 3))):
        label = f"{brand} {email}" if kind == "paypal" else f"{brand} ending {rng.randrange(0, 10000):04d}"
        shop.rows("payment_methods").append({"id": f"pm_{cid[4:]}_{j + 1}", "customer_id": cid, "kind": kind,
                                             "label": label})
    return row


def _order(shop: Shop, rng: Any, customer: dict[str, Any], status: str, variants: list[dict[str, Any]],
           *, delivered_days_ago: int | None = None) -> dict[str, Any]:
    shop.next_order += rng.randrange(1, 7)
    oid = f"ord_{shop.next_order}"
    payments = [p["id"] for p in shop.rows("payment_methods") if p["customer_id"] == customer["id"]]
    placed = rng.randrange(1, 4)
    delivered = shipped = None
    if status in ("shipped", "delivered"):
        days = delivered_days_ago if delivered_days_ago is not None else rng.randrange(0, 60)
        placed = days + rng.randrange(4, 8)
        shipped = shop.today - datetime.timedelta(days=days + rng.randrange(2, 4))
        delivered = shop.today - datetime.timedelta(days=days) if status == "delivered" else None
        if status == "shipped":
            shipped, placed = shop.today - datetime.timedelta(days=rng.randrange(0, 3)), rng.randrange(3, 6)
    row = {"id": oid, "customer_id": customer["id"], "status": status,
           "placed_at": (shop.today - datetime.timedelta(days=placed)).isoformat(),
           "shipped_at": shipped and shipped.isoformat(), "delivered_at": delivered and delivered.isoformat(),
           "tracking_number": f"1Z{oid[4:]}{customer['id'][4:]}US" if shipped else None,
           "shipping_fee": rng.choice((0.0, 0.0, 5.0, 10.0)), "payment_method_id": rng.choice(payments),
           "cancel_reason": rng.choice(tuple(CANCEL_REASONS)) if status == "cancelled" else None,
           **{f"ship_{k}": customer[k] for k in ("line1", "line2", "city", "state", "zip")}}
    shop.rows("orders").append(row)
    shop.rows("order_items").extend({"id": f"itm_{oid[4:]}_{k}", "order_id": oid, "variant_id": v["id"],
                                     "price": v["price"]} for k, v in enumerate(variants, start=1))
    return row


def _pick_variant(rng: Any, product: dict[str, Any]) -> dict[str, Any]:
    return rng.choice(product["variants"])


# --- goals --------------------------------------------------------------------------------------------

@dataclass
class Goal:
    family: str
    ask: str
    """The customer's sentence."""
    reads: list[tuple[str, dict[str, Any]]]
    """Calls that find what the request is about (after the order itself is found)."""
    write: tuple[str, dict[str, Any]] | None
    expected: dict[str, Any] | None
    """The expected write's arguments (a subset of ``write``'s), or None."""
    refusal: tuple[str, str] | None = None
    """(criterion name, pattern) the final answer must match: the policy refuses the request."""
    order: dict[str, Any] | None = None
    done: str = ""
    """What the final message says about it."""
    refunds: bool = False


@dataclass
class Ctx:
    shop: Shop
    rng: Any
    customer: dict[str, Any]
    level: int
    used: set[str] = field(default_factory=set)
    """Products a goal's order holds (a goal names its order by product: each product names one order)."""

    def product(self, *, final_sale: bool | None = None, same_price_pair: bool = False) -> dict[str, Any]:
        pool = [p for p in self.shop.products if p["id"] not in self.used
                and (final_sale is None or bool(p["final_sale"]) == final_sale)
                and (not same_price_pair or _swaps(p))]
        product = self.rng.choice(pool)
        self.used.add(product["id"])
        return product

    def ref(self, order: dict[str, Any], product: dict[str, Any]) -> str:
        return f"order {order['id']}" if self.level == 1 else f"my {product['name'].lower()} order"

    def filler(self) -> list[dict[str, Any]]:
        """0-1 more variants of a product no goal uses (then taken: no later goal names it), for a goal's order."""
        pool = [p for p in self.shop.products if p["id"] not in self.used and not p["final_sale"]]
        if len(pool) < 4 or self.rng.random() < 0.5:
            return []
        product = self.rng.choice(pool)
        self.used.add(product["id"])
        return [_pick_variant(self.rng, product)]


def _swaps(product: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(from, to) variant pairs of ``product`` an item may change between: same price, ``to`` in stock."""
    vs = product["variants"]
    return [(a, b) for a in vs for b in vs if a is not b and a["price"] == b["price"] and b["in_stock"]]


def _cancel(c: Ctx) -> Goal:
    product = c.product(final_sale=None)
    order = _order(c.shop, c.rng, c.customer, "pending", [_pick_variant(c.rng, product), *c.filler()])
    reason = c.rng.choice(tuple(CANCEL_REASONS))
    args = {"order_id": order["id"], "reason": reason}
    return Goal("cancel", f"Please cancel {c.ref(order, product)}, {CANCEL_REASONS[reason]}.", [],
                ("cancel_order", args), dict(args), order=order, done=f"cancelled {order['id']}", refunds=True)


def _order_address(c: Ctx) -> Goal:
    product = c.product()
    order = _order(c.shop, c.rng, c.customer, "pending", [_pick_variant(c.rng, product), *c.filler()])
    new = _address(c.rng)
    args = {"order_id": order["id"], **new}
    where = ", ".join(x for x in (new["line1"], new["line2"], new["city"]) if x) + f", {new['state']} {new['zip']}"
    expected = {k: args[k] for k in ("order_id", "line1", "city", "state", "zip")}
    return Goal("order-address", f"Please ship {c.ref(order, product)} to {where} instead.", [],
                ("update_order_address", args), expected, order=order,
                done=f"updated the shipping address of {order['id']}")


def _return(c: Ctx) -> Goal:
    products = [c.product(final_sale=False) for _ in range(2)]
    variants = [_pick_variant(c.rng, p) for p in products]
    order = _order(c.shop, c.rng, c.customer, "delivered", variants, delivered_days_ago=c.rng.randrange(0, 29))
    back = sorted(c.rng.sample(range(2), c.rng.randrange(1, 3)))
    reason = c.rng.choice(tuple(RETURN_REASONS))
    items = [f"itm_{order['id'][4:]}_{k + 1}" for k in back]
    names = " and the ".join(products[k]["name"].lower() for k in back)
    ref = f"order {order['id']}" if c.level == 1 else f"my order with the {products[0]['name'].lower()}"
    args = {"order_id": order["id"], "item_ids": items, "reason": reason,
            "payment_method_id": order["payment_method_id"]}
    expected = dict(args) if len(items) == 1 else {k: v for k, v in args.items() if k != "item_ids"}
    return Goal("return", f"I'd like to return the {names} from {ref}, {RETURN_REASONS[reason]}; refund the "
                          "payment method I paid with.", [], ("create_return", args), expected, order=order,
                done=f"created the return for {order['id']}", refunds=True)


def _swap(c: Ctx) -> Goal:
    product = c.product(same_price_pair=True)
    old, new = c.rng.choice(_swaps(product))
    order = _order(c.shop, c.rng, c.customer, "pending", [*c.filler(), old])
    item = f"itm_{order['id'][4:]}_{len([i for i in c.shop.rows('order_items') if i['order_id'] == order['id']])}"
    option, _, value = new["options"].partition(": ")
    args = {"order_id": order["id"], "item_id": item, "new_variant_id": new["id"]}
    return Goal("swap-variant", f"In {c.ref(order, product)}, please switch the {product['name'].lower()} to "
                                f"{option} {value}.", [("get_product", {"product_id": product["id"]})],
                ("modify_order_item", args), dict(args), order=order, done=f"switched the item in {order['id']}")


def _refuse_shipped(c: Ctx) -> Goal:
    product = c.product()
    order = _order(c.shop, c.rng, c.customer, "shipped", [_pick_variant(c.rng, product)])
    return Goal("refuse-shipped", f"Please cancel {c.ref(order, product)} too; if it can't be cancelled, tell me why.",
                [], None, None, refusal=("explains_shipped", SHIPPED), order=order,
                done=f"could not cancel {order['id']}: it has already shipped")


def _account_address(c: Ctx) -> Goal:
    new = _address(c.rng)
    while new["zip"] == c.customer["zip"]:
        new = _address(c.rng)
    where = ", ".join(x for x in (new["line1"], new["line2"], new["city"]) if x) + f", {new['state']} {new['zip']}"
    args = {"customer_id": c.customer["id"], **new}
    expected = {k: args[k] for k in ("customer_id", "line1", "city", "state", "zip")}
    return Goal("account-address", f"I've moved: please set the address on my account to {where}.", [],
                ("update_customer_address", args), expected, done="updated your account address")


def _email(c: Ctx) -> Goal:
    taken = {row["email"] for row in c.shop.rows("customers")}
    new = f"{c.customer['first_name'][0]}{c.customer['last_name']}.{c.rng.randrange(10, 999)}@{c.rng.choice(MAIL)}"
    while new.lower() in taken:
        new = f"{c.customer['first_name'][0]}{c.customer['last_name']}.{c.rng.randrange(10, 999)}@post.example"
    args = {"customer_id": c.customer["id"], "new_email": new.lower()}
    return Goal("email", f"Please change the email on my account to {new.lower()}.", [],
                ("update_customer_email", args), dict(args), done="changed your email")


def _damaged(c: Ctx) -> Goal:
    product = c.product(final_sale=None)
    variant = _pick_variant(c.rng, product)
    order = _order(c.shop, c.rng, c.customer, "delivered", [*c.filler(), variant],
                   delivered_days_ago=c.rng.randrange(0, 29))
    item = f"itm_{order['id'][4:]}_{len([i for i in c.shop.rows('order_items') if i['order_id'] == order['id']])}"
    reason = c.rng.choice(tuple(REFUND_REASONS))
    full = c.rng.random() < 0.4
    amount = variant["price"] if full else _money(c.rng.randrange(1, max(2, int(variant["price"] * 0.6))))
    how = "its full price" if full else f"${amount:.2f}"
    ref = f"in order {order['id']}" if c.level == 1 else "I ordered"
    args = {"order_id": order["id"], "item_id": item, "amount": amount, "reason": reason,
            "payment_method_id": order["payment_method_id"]}
    return Goal("damaged-refund", f"The {product['name'].lower()} {ref} {REFUND_REASONS[reason]}: please "
                                  f"refund {how} to the payment method I used.", [], ("issue_refund", args),
                dict(args), order=order, done=f"refunded the item in {order['id']}", refunds=True)


def _refuse_window(c: Ctx) -> Goal:
    product = c.product(final_sale=False)
    order = _order(c.shop, c.rng, c.customer, "delivered", [_pick_variant(c.rng, product)],
                   delivered_days_ago=c.rng.randrange(31, 90))
    return Goal("refuse-window", f"I want to return the {product['name'].lower()} from "
                                 f"{c.ref(order, product)}; if that's not possible, tell me why.", [], None, None,
                refusal=("explains_window", WINDOW), order=order,
                done=f"could not return {order['id']}: it was delivered more than 30 days ago, past the return window")


GOALS = {"cancel": _cancel, "order-address": _order_address, "return": _return, "swap-variant": _swap,
         "refuse-shipped": _refuse_shipped, "account-address": _account_address, "email": _email,
         "damaged-refund": _damaged, "refuse-window": _refuse_window}


# --- the task -----------------------------------------------------------------------------------------

def generate(request: Any) -> TaskSpec:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`)."""
    rng, level = request.rng(), request.level
    shop = _shop(rng, level)
    customers = shop.rows("customers")
    customer = rng.choice(customers)
    families = rng.sample(list(request.templates), level)
    if "swap-variant" in families and not any(_swaps(p) for p in shop.products):
        families[families.index("swap-variant")] = next(f for f in request.templates if f not in families)
    ctx = Ctx(shop, rng, customer, level)
    goals = [GOALS[f](ctx) for f in families]
    for other in customers:  # the rest of the shop: orders in every status, none of a goal's products for her
        for _ in range(rng.randrange(1, 4)):
            pool = [p for p in shop.products if other is not customer or p["id"] not in ctx.used]
            status = rng.choice(("pending", "shipped", "delivered", "delivered", "cancelled"))
            _order(shop, rng, other, status, [_pick_variant(rng, rng.choice(pool))])
    by_zip = level == 3 or (level == 2 and rng.random() < 0.5)
    if level == 3:  # a namesake elsewhere, with an order of a goal's product
        twin = _customer(shop, rng, f"cus_{int(customers[-1]['id'][4:]) + 1}", customer["first_name"],
                         customer["last_name"], avoid_zip=customer["zip"])
        used = [p for p in shop.products if p["id"] in ctx.used] or shop.products
        _order(shop, rng, twin, "pending", [_pick_variant(rng, rng.choice(used))])
    who = (f"I'm {customer['first_name']} {customer['last_name']}, zip {customer['zip']}." if by_zip
           else f"This is {customer['first_name']} {customer['last_name']} ({customer['email']}).")
    asks_total = level >= 2 and any(g.refunds for g in goals)
    instruction = " ".join([rng.choice(("Hi!", "Hello.", "Hi there.")), who, *(g.ask for g in goals),
                            *(["Tell me how much is refunded in total."] if asks_total else [])])
    steps, results = _solve(shop, customer, goals, by_zip=by_zip, listing=level >= 2)
    refunded = _money(sum(json.loads(r).get("refund_amount", json.loads(r).get("amount", 0.0)) for r in results))
    message = "Done: " + "; ".join(g.done for g in goals) + "."
    if asks_total:
        message += f" In total ${refunded:.2f} is refunded."
    steps.append(message)
    verifiers = _verifiers(goals, asks_total=asks_total, refunded=refunded)
    return TaskSpec(id=request.task_id, env_id=request.env_id, split=request.split, instruction=instruction,
                    initial_state=_initial(shop), limits=Limits(max_steps=10 + 6 * level),
                    verifiers=refuse_quotes(verifiers, instruction), solution=_actions(steps),
                    tags=("retail", "generated", f"level-{level}", *families),
                    metadata={"templates": families, "level": level, "seed": request.seed, "generator": NAME})


def _initial(shop: Shop) -> dict[str, Any]:
    state = dict(shop.state)
    return {k: v for k, v in state.items() if v}


def _solve(shop: Shop, customer: dict[str, Any], goals: list[Goal], *, by_zip: bool,
           listing: bool) -> tuple[list[Any], list[str]]:
    """The reference calls, replayed on the shop: every call must succeed. Returns the steps (lists of calls)
    and the writes' results."""
    lookup = (("find_customer_by_name_zip", {"first_name": customer["first_name"], "last_name": customer["last_name"],
                                             "zip": customer["zip"]}) if by_zip
              else ("find_customer_by_email", {"email": customer["email"]}))
    steps: list[Any] = [[lookup]]
    if listing and any(g.order is not None for g in goals):
        steps.append([("list_orders", {"customer_id": customer["id"]})])
    for goal in goals:
        if goal.order is not None:
            steps.append([("get_order", {"order_id": goal.order["id"]})])
        steps += [[read] for read in goal.reads]
        if goal.write is not None:
            steps.append([goal.write])
    conn = store.create(":memory:", DOMAIN.schema_sql, _initial(shop))
    calls: list[Any] = []
    results: list[str] = []
    try:
        for action in _actions(steps):
            for result in execute_calls(DOMAIN, conn, calls, action.tool_calls or ()):
                if result.error:
                    raise RuntimeError(f"{NAME}: the reference call {result.name} was refused: {result.error}")
                if DOMAIN.by_name[result.name].kind == "write":
                    results.append(result.content)
    finally:
        conn.close()
    return steps, results


def _verifiers(goals: list[Goal], *, asks_total: bool, refunded: float) -> tuple[Any, ...]:
    expected = [(g.write[0], g.expected) for g in goals if g.write is not None and g.expected is not None]
    refusals = [says(f"{name}_{g.order['id']}", pattern) for g in goals if g.refusal and g.order
                for name, pattern in [g.refusal]]
    answers = [*refusals, *([states("total_refund", refunded)] if asks_total else [])]
    if not expected:  # nothing to write: the agent must have looked the order up, and say why
        lookups = [looked_up("get_order", order_id=g.order["id"]) for g in goals if g.order is not None]
        return writes(), checks(*lookups, *answers)
    return (writes(*expected), *([checks(*answers)] if answers else []))


def _actions(steps: list[Any]) -> tuple[Action, ...]:
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
