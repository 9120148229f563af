"""``web-shop-gen``: EnvShop tasks by the thousand, each a seeded shop and a customer's seeded errands.

:func:`generate` is the generator (registered in :func:`envgym_web.register_all`); every choice comes from
the request's seeded ``rng``. A task is built in three moves:

1. **A shop** (``initial_state.db``): categories of products named from seeded word lists, with seeded ids,
   prices (distinct within a category) and stock; an order history (ids, dates, statuses, items); the shop's
   "today" and the customer's saved address.
2. **Errands**: ``level`` requests, each from a different template family of the request's split, to be
   done in order; at most one is a question, and it comes last.
3. **The reference**: browser actions addressing the element ids of the generated shop, and the app writes
   they make, applied to the shop with the app's own write functions (:class:`~.generated.Replay`); the new
   orders' ids and every answer (the stock left after a purchase, the orders per status after the errands)
   are read from the replayed database.

Grading: the expected writes in order, and the final database equal to the replay's (cart edits on the way
are tolerated, a stray order or cancellation is not); a question adds its answer and the page it is read on.

Template families and their splits (:data:`TEMPLATES`; a test task is made from test families only)::

    train: buy, cheapest, cancel, price, order-total
    test:  buy-pair, cart-fix, stock, order-count

Levels (:data:`SIZES`):

- 1: one request; products and orders named directly (order #id); 3 categories of 4 products, 3 orders;
- 2: two requests; orders named by date or by a product in them, larger quantities, the cart holds three
  items, a stock question may ask what a purchase left; 4 categories of 6, 5 orders;
- 3: three requests; 5 categories of 8, 7 orders.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envgym.plugin import (
    Action,
    ExpectedWrite,
    Limits,
    TaskSpec,
    WriteActionSpec,
    answer_pattern,
    number_pattern,
    refuse_quotes,
)
from envgym_web import SHOP_TEMPLATES
from envgym_web.apps.shop import APP, SHIPPING
from envgym_web.authoring import act
from envgym_web.authoring.generated import Replay, asked, families_for, numbered

NAME = "web-shop-gen"
ENV_ID = "web/shop-v1"
TEMPLATES = SHOP_TEMPLATES
QUESTIONS = frozenset({"price", "order-total", "stock", "order-count"})
NOUNS = {  # category slug -> product nouns (no noun in two categories: names are unique in a shop)
    "kitchen": ("Mug", "Chef Knife", "Skillet", "Cutting Board", "Tea Kettle", "Salad Spinner", "Colander",
                "Whisk", "Teapot", "Spatula"),
    "garden": ("Watering Can", "Pruning Shears", "Seed Tray", "Garden Gloves", "Bird Feeder", "Compost Bin",
               "Trowel", "Hose Reel", "Planter", "Rake"),
    "electronics": ("USB Cable", "Wireless Mouse", "Desk Lamp", "Speaker", "Power Bank", "Headphones", "Webcam",
                    "Keyboard", "Charger", "Router"),
    "office": ("Notebook", "Stapler", "Desk Organiser", "Fountain Pen", "Letter Tray", "Whiteboard",
               "Paper Shredder", "Label Maker", "Desk Chair", "Monitor Stand"),
    "sports": ("Yoga Mat", "Water Bottle", "Jump Rope", "Tennis Racket", "Football", "Dumbbell Set",
               "Bike Helmet", "Running Belt", "Swim Goggles", "Climbing Chalk"),
    "toys": ("Jigsaw Puzzle", "Kite", "Building Blocks", "Toy Train", "Plush Bear", "Board Game", "Yo-Yo",
             "Spinning Top", "Marble Run", "Card Deck"),
    "pets": ("Dog Bowl", "Cat Tree", "Leash", "Pet Bed", "Chew Toy", "Litter Scoop", "Bird Cage",
             "Aquarium Net", "Grooming Brush", "Collar"),
    "travel": ("Suitcase", "Neck Pillow", "Packing Cubes", "Travel Adapter", "Luggage Tag", "Passport Holder",
               "Toiletry Bag", "Duffel Bag", "Eye Mask", "Rain Poncho"),
}
WORDS = ("Blue", "Compact", "Classic", "Deluxe", "Bamboo", "Copper", "Midnight", "Nordic", "Sunny", "Rustic",
         "Urban", "Granite", "Ivory", "Coral", "Olive", "Velvet", "Arctic", "Saffron", "Pebble", "Harbour")
STREETS = ("Harbour Lane", "Mill Road", "Station Street", "Orchard Way", "Church Walk", "Quarry Hill",
           "Elm Grove", "Canal Side", "Market Row", "Beacon Close")
TOWNS = ("Porthaven", "Eastleigh", "Brookmere", "Kingsford", "Ashcombe", "Wrenfield", "Larkhill", "Stonebridge")
SIZES = {1: (3, 4, 3), 2: (4, 6, 5), 3: (5, 8, 7)}
"""Per level: categories, products per category, orders in the history."""
STATUSES = ("placed", "shipped", "delivered", "delivered", "cancelled")
COUNT = {1: "one", 2: "two", 3: "three"}


@dataclass
class Shop:
    rng: random.Random
    level: int
    db: dict[str, Any]
    address: str
    cheapest: dict[str, dict[str, Any]]
    """Category -> its cheapest product (only the ``cheapest`` errand buys one)."""
    used: set[int] = field(default_factory=set)
    """Products an errand has bought or cancelled: no other errand touches them, so each names one thing."""
    bought: list[dict[str, Any]] = field(default_factory=list)

    def product(self, pid: int) -> dict[str, Any]:
        return next(p for p in self.db["products"] if p["id"] == pid)

    def claim(self, n: int) -> list[dict[str, Any]]:
        """``n`` products no errand has touched, none a category's cheapest, each with stock to spare."""
        reserved = {p["id"] for p in self.cheapest.values()}
        pool = [p for p in self.db["products"] if p["id"] not in self.used | reserved and p["stock"] >= 4]
        picks = self.rng.sample(pool, n)
        self.used.update(p["id"] for p in picks)
        return picks

    def qty(self) -> int:
        return self.rng.randrange(1, 3) if self.level == 1 else self.rng.randrange(1, 4)

    def shipping(self) -> str:
        return self.rng.choice(tuple(SHIPPING))


@dataclass
class Errand:
    ask: str
    steps: list[Action]
    expected: list[ExpectedWrite] = field(default_factory=list)
    done: str = ""
    """What the final message says about it (a write), or the answer (a question)."""
    verifiers: tuple[Any, ...] = ()
    """A question's answer and page checks."""


# --- the shop -------------------------------------------------------------------------------------------

def _shop(rng: random.Random, level: int) -> Shop:
    n_categories, per_category, n_orders = SIZES[level]
    products: list[dict[str, Any]] = []
    base = rng.randrange(10, 900)
    for category in rng.sample(sorted(NOUNS), n_categories):
        for noun, price in zip(rng.sample(NOUNS[category], per_category), rng.sample(range(4, 150), per_category),
                               strict=True):
            name = f"{rng.choice(WORDS)} {noun}"
            products.append({"id": base + len(products), "name": name, "category": category,
                             "price_cents": price * 100 - rng.choice((1, 1, 5, 51)), "stock": rng.randrange(3, 16),
                             "description": f"{name}, from the {category} range."})
    cheapest: dict[str, dict[str, Any]] = {}
    for p in products:
        if p["category"] not in cheapest or p["price_cents"] < cheapest[p["category"]]["price_cents"]:
            cheapest[p["category"]] = p
    today = datetime.date(2026, 1, 1) + datetime.timedelta(days=rng.randrange(40, 330))
    address = f"{rng.randrange(1, 200)} {rng.choice(STREETS)}, {rng.choice(TOWNS)}"
    statuses = [rng.choice(STATUSES) for _ in range(n_orders)]
    if "placed" not in statuses:
        statuses[rng.randrange(n_orders)] = "placed"
    pool = [p for p in products if p not in cheapest.values()]
    rng.shuffle(pool)  # each product is in one order at most: an order can be named by a product in it
    orders, items, oid = [], [], rng.randrange(1, 400)
    for age, status in zip(sorted(rng.sample(range(2, 45), n_orders), reverse=True), statuses, strict=True):
        picks = [pool.pop() for _ in range(rng.randrange(1, 3))]
        qtys = [rng.randrange(1, 3) for _ in picks]
        shipping = rng.choice(tuple(SHIPPING))
        total = sum(p["price_cents"] * q for p, q in zip(picks, qtys, strict=True)) + SHIPPING[shipping][1]
        orders.append({"id": oid, "status": status, "shipping": shipping, "address": address, "total_cents": total,
                       "placed_on": (today - datetime.timedelta(days=age)).isoformat()})
        items += [{"order_id": oid, "product_id": p["id"], "qty": q, "price_cents": p["price_cents"]}
                  for p, q in zip(picks, qtys, strict=True)]
        oid += rng.randrange(1, 5)
    db = {"settings": [{"key": "today", "value": today.isoformat()}, {"key": "address", "value": address}],
          "products": products, "orders": orders, "order_items": items}
    return Shop(rng, level, db, address, cheapest)


def _fill_cart(s: Shop) -> None:
    """The ``cart-fix`` errand's cart, in the initial state: two items (level 1) or three."""
    picks = s.claim(2 if s.level == 1 else 3)
    s.db["cart_items"] = [{"product_id": p["id"], "qty": s.rng.randrange(1, 3)} for p in picks]


# --- browser steps --------------------------------------------------------------------------------------

def _find(p: dict[str, Any], via: str) -> list[Action]:
    if via == "search":
        return [act("click", element_id="nav-home"), act("fill", element_id="search-input", value=p["name"]),
                act("click", element_id="search-button"), act("click", element_id=f"product-{p['id']}")]
    return [act("click", element_id="nav-home"), act("click", element_id=f"cat-{p['category']}"),
            act("click", element_id=f"product-{p['id']}")]


def _add(qty: int) -> list[Action]:
    return [*([act("fill", element_id="qty", value=str(qty))] if qty != 1 else []),
            act("click", element_id="add-to-cart")]


def _checkout(shipping: str) -> list[Action]:
    return [act("click", element_id="checkout"),
            act("select_option", element_id="shipping", option=SHIPPING[shipping][0]),
            act("click", element_id="place-order")]


def _order_ref(s: Shop, order: dict[str, Any]) -> str:
    return f"order #{order['id']}" if s.level == 1 else f"the order I placed on {order['placed_on']}"


# --- errands (each applies its writes to the replay, in order) ---------------------------------------------

def _buy(s: Shop, r: Replay) -> Errand:
    (p,) = s.claim(1)
    qty, shipping = s.qty(), s.shipping()
    r.write("add_to_cart", product_id=p["id"], qty=qty)
    oid = r.write("place_order", shipping=shipping, address=s.address)
    s.bought.append(p)
    return Errand(f"Buy {qty} × “{p['name']}” with {shipping} shipping to my saved address.",
                  [*_find(p, "search"), *_add(qty), *_checkout(shipping)],
                  [ExpectedWrite(tool="add_to_cart", args={"product_id": p["id"]}),
                   ExpectedWrite(tool="place_order", args={"shipping": shipping})], f"placed order #{oid}")


def _cheapest(s: Shop, r: Replay) -> Errand:
    category = s.rng.choice(sorted(s.cheapest))
    p = s.cheapest.pop(category)
    s.used.add(p["id"])
    qty, shipping = (1 if s.level == 1 else s.rng.randrange(1, 3)), s.shipping()
    r.write("add_to_cart", product_id=p["id"], qty=qty)
    oid = r.write("place_order", shipping=shipping, address=s.address)
    s.bought.append(p)
    steps = [act("click", element_id="nav-home"), act("click", element_id=f"cat-{category}"),
             act("click", element_id="sort-price"), act("click", element_id=f"product-{p['id']}"), *_add(qty),
             *_checkout(shipping)]
    return Errand(f"Buy {COUNT[qty]} of the cheapest product in the {category.title()} category, {shipping} "
                  "shipping.", steps, [ExpectedWrite(tool="add_to_cart", args={"product_id": p["id"]}),
                                       ExpectedWrite(tool="place_order", args={"shipping": shipping})],
                  f"placed order #{oid}")


def _cancel(s: Shop, r: Replay) -> Errand:
    order = s.rng.choice([o for o in s.db["orders"] if o["status"] == "placed"])
    mine = [i["product_id"] for i in s.db["order_items"] if i["order_id"] == order["id"]]
    free = [pid for pid in mine if pid not in s.used]
    ref = _order_ref(s, order)
    if s.level > 1 and free and s.rng.random() < 0.5:
        ref = f"my order with the {s.product(s.rng.choice(free))['name']}"
    s.used.update(mine)
    r.write("cancel_order", order_id=order["id"])
    return Errand(f"Cancel {ref}.", [act("click", element_id="nav-orders"),
                                     act("click", element_id=f"order-{order['id']}"),
                                     act("click", element_id="cancel-order")],
                  [ExpectedWrite(tool="cancel_order", args={"order_id": order["id"]})],
                  f"cancelled order #{order['id']}")


def _buy_pair(s: Shop, r: Replay) -> Errand:
    a, b = s.claim(2)
    qa, qb, shipping = s.qty(), s.qty(), s.shipping()
    r.write("add_to_cart", product_id=a["id"], qty=qa)
    r.write("add_to_cart", product_id=b["id"], qty=qb)
    oid = r.write("place_order", shipping=shipping, address=s.address)
    s.bought += [a, b]
    return Errand(f"Order {qa} × “{a['name']}” and {qb} × “{b['name']}” together in one order, {shipping} "
                  "shipping.", [*_find(a, "search"), *_add(qa), *_find(b, "category"), *_add(qb), *_checkout(shipping)],
                  [ExpectedWrite(tool="add_to_cart", args={"product_id": a["id"]}),
                   ExpectedWrite(tool="add_to_cart", args={"product_id": b["id"]}),
                   ExpectedWrite(tool="place_order", args={"shipping": shipping})], f"placed order #{oid}")


def _cart_fix(s: Shop, r: Replay) -> Errand:
    cart = list(s.db["cart_items"])
    drop = s.rng.choice(cart)
    keep = [c for c in cart if c is not drop]
    steps = [act("click", element_id="nav-cart"), act("click", element_id=f"remove-{drop['product_id']}")]
    r.write("remove_from_cart", product_id=drop["product_id"])
    asks = [f"remove the “{s.product(drop['product_id'])['name']}”"]
    if s.level > 1:
        change = s.rng.choice(keep)
        qty = s.rng.choice([q for q in (1, 2, 3) if q != change["qty"]])
        r.write("set_cart_qty", product_id=change["product_id"], qty=qty)
        steps += [act("fill", element_id=f"qty-{change['product_id']}", value=str(qty)),
                  act("click", element_id=f"update-{change['product_id']}")]
        asks.append(f"set the quantity of “{s.product(change['product_id'])['name']}” to {qty}")
    shipping = s.shipping()
    oid = r.write("place_order", shipping=shipping, address=s.address)
    s.bought += [s.product(c["product_id"]) for c in keep]
    return Errand(f"In my cart, {', '.join(asks)}, then check out the rest with {shipping} shipping.",
                  [*steps, *_checkout(shipping)], [ExpectedWrite(tool="place_order", args={"shipping": shipping})],
                  f"placed order #{oid}")


def _number(value: float, path: str, what: str) -> tuple[Any, ...]:
    return asked(answer_pattern(number_pattern(value), max_numbers=3), path, what)


def _price(s: Shop, r: Replay) -> Errand:
    p = s.rng.choice(s.db["products"])
    price = r.value("SELECT price_cents FROM products WHERE id = ?", p["id"]) / 100
    return Errand(f"What does “{p['name']}” cost? Tell me the price from its product page.", _find(p, "search"),
                  done=f"${price:.2f}", verifiers=_number(price, f"/product/{p['id']}", "product page open"))


def _order_total(s: Shop, r: Replay) -> Errand:
    order = s.rng.choice(s.db["orders"])
    total = r.value("SELECT total_cents FROM orders WHERE id = ?", order["id"]) / 100
    return Errand(f"What was the total of {_order_ref(s, order)}? Open that order to check.",
                  [act("click", element_id="nav-orders"), act("click", element_id=f"order-{order['id']}")],
                  done=f"${total:.2f}", verifiers=_number(total, f"/orders/{order['id']}", "order page open"))


def _stock(s: Shop, r: Replay) -> Errand:
    if s.level > 1 and s.bought and s.rng.random() < 0.5:
        p, ask = s.rng.choice(s.bought), "How many units of “{}” are left in stock now? Check its product page."
    else:
        p, ask = s.rng.choice(s.db["products"]), "How many units of “{}” are in stock? Check its product page."
    stock = r.value("SELECT stock FROM products WHERE id = ?", p["id"])
    return Errand(ask.format(p["name"]), _find(p, "category"), done=f"{stock} {'unit' if stock == 1 else 'units'}",
                  verifiers=_number(stock, f"/product/{p['id']}", "product page open"))


def _order_count(s: Shop, r: Replay) -> Errand:
    status = s.rng.choice(("placed", "shipped", "delivered", "cancelled"))
    count = r.value("SELECT COUNT(*) FROM orders WHERE status = ?", status)
    return Errand(f"How many of my orders have the status “{status}”{' now' if r.writes else ''}? Answer from the "
                  "order history page.", [act("click", element_id="nav-orders")],
                  done=f"{count} {'order' if count == 1 else 'orders'}",
                  verifiers=_number(count, "/orders", "order history open"))


ERRANDS: dict[str, Callable[[Shop, Replay], Errand]] = {
    "buy": _buy, "cheapest": _cheapest, "cancel": _cancel, "price": _price, "order-total": _order_total,
    "buy-pair": _buy_pair, "cart-fix": _cart_fix, "stock": _stock, "order-count": _order_count}


# --- the task -------------------------------------------------------------------------------------------

def generate(request: Any) -> TaskSpec:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`)."""
    rng, level = request.rng(), request.level
    s = _shop(rng, level)
    families = families_for(rng, request.templates, QUESTIONS, level)
    if "cart-fix" in families:  # the cart is the initial state's: its errand comes first
        families.remove("cart-fix")
        families.insert(0, "cart-fix")
        _fill_cart(s)
    replay = Replay(NAME, APP, s.db)
    try:
        errands = [ERRANDS[f](s, replay) for f in families]
    finally:
        replay.close()
    steps = [step for e in errands for step in e.steps]
    question = errands[-1] if errands[-1].verifiers else None
    message = question.done if question else "Done: " + "; ".join(e.done for e in errands) + "."
    steps.append(act("send_msg_to_user", text=message))
    expected = [w for e in errands for w in e.expected]
    verifiers: list[Any] = [WriteActionSpec(expected=tuple(expected), ordered=True, allow_collateral=True,
                                            compare_final_state=True)]
    if question:
        verifiers += question.verifiers
    instruction = numbered([e.ask for e in errands])
    return TaskSpec(id=request.task_id, env_id=request.env_id, split=request.split, instruction=instruction,
                    initial_state={"db": s.db, "start": "/"}, limits=Limits(max_steps=len(steps) + 10),
                    verifiers=refuse_quotes(verifiers, instruction), solution=tuple(steps),
                    tags=("web", "shop", "generated", f"level-{level}", *families),
                    metadata={"templates": families, "level": level, "seed": request.seed, "generator": NAME,
                              "reference_writes": replay.writes})
