"""Generator of the ``web-shop`` suite: purchases, cancellations and questions over EnvShop.

Each task seeds its own catalog (prices and stock drawn per task) and order history, so answers differ
between tasks. Reference solutions navigate like a user would (search, category pages, the cart, the
checkout form); ``metadata.reference_writes`` are the app writes the solution performs, replayed to get the
expected final database.
"""

from __future__ import annotations

import random
from typing import Any

from envgym.plugin import (
    Criterion,
    ExpectedWrite,
    Limits,
    RubricSpec,
    SqlCheck,
    TaskSpec,
    WriteActionSpec,
    refuse_quotes,
    write_suite,
)
from envgym_web.authoring import act, answer_rubric, split_of

ENV_ID = "web/shop-v1"
SUITE = "web-shop"
ADDRESS = "12 Harbour Lane, Porthaven"
CATALOG = {
    "kitchen": ["Blue Enamel Mug", "Chef Knife", "Cast Iron Skillet", "Bamboo Cutting Board", "Tea Kettle",
                "Salad Spinner"],
    "books": ["The Quiet Harbour", "Gardening for Beginners", "Atlas of Rivers", "Practical Python",
              "Night Train Stories", "The Baker's Year"],
    "garden": ["Watering Can", "Pruning Shears", "Seed Starter Kit", "Garden Gloves", "Bird Feeder", "Compost Bin"],
    "electronics": ["USB-C Cable", "Wireless Mouse", "Desk Lamp", "Bluetooth Speaker", "Power Bank",
                    "Noise Cancelling Headphones"],
}
SHIPPING_LABEL = {"standard": "Standard (free, 5 days)", "express": "Express ($9.99, 1 day)"}


def _world(rng: random.Random) -> dict[str, Any]:
    products, pid = [], 0
    for category, names in CATALOG.items():
        for name in names:
            pid += 1
            products.append({"id": pid, "name": name, "category": category,
                             "price_cents": rng.randrange(5, 130) * 100 - 1,
                             "stock": rng.randrange(3, 15), "description": f"{name}, from the {category} range."})
    orders, items = [], []
    for oid in range(1, 5):
        picks = rng.sample(products, 2)
        qtys = [rng.randrange(1, 3) for _ in picks]
        shipping = rng.choice(["standard", "express"])
        total = sum(p["price_cents"] * q for p, q in zip(picks, qtys, strict=True)) + (999 if shipping == "express"
                                                                                       else 0)
        status = "placed" if oid >= 3 else rng.choice(["delivered", "cancelled"])
        orders.append({"id": oid, "status": status, "shipping": shipping, "address": ADDRESS, "total_cents": total,
                       "placed_on": f"2026-02-{10 + 4 * oid:02d}"})
        items += [{"order_id": oid, "product_id": p["id"], "qty": q, "price_cents": p["price_cents"]}
                  for p, q in zip(picks, qtys, strict=True)]
    return {"settings": [{"key": "today", "value": "2026-03-01"}, {"key": "address", "value": ADDRESS}],
            "products": products, "orders": orders, "order_items": items}


def _task(kind: str, n: int, instruction: str, db: dict[str, Any], solution: list, verifiers: list,
          writes: list[dict[str, Any]] | None, start: str = "/") -> dict[str, Any]:
    return {"id": f"shop-{kind}-{n:02d}", "instruction": instruction, "initial_state": {"db": db, "start": start},
            "solution": [*solution], "verifiers": verifiers, "writes": writes, "tags": ("web", "shop", kind)}


def _buy_steps(p: dict[str, Any], qty: int, via: str) -> list:
    if via == "search":
        steps = [act("fill", element_id="search-input", value=p["name"]), act("click", element_id="search-button")]
    else:
        steps = [act("click", element_id=f"cat-{p['category']}")]
    steps.append(act("click", element_id=f"product-{p['id']}"))
    if qty != 1:
        steps.append(act("fill", element_id="qty", value=str(qty)))
    return [*steps, act("click", element_id="add-to-cart")]


def _checkout(shipping: str) -> list:
    return [act("click", element_id="checkout"), act("select_option", element_id="shipping",
                                                     option=SHIPPING_LABEL[shipping]),
            act("click", element_id="place-order")]


def _order_verifier(expected: list[ExpectedWrite]) -> WriteActionSpec:
    # Cart edits on the way are tolerated; the final database must equal the reference one.
    return WriteActionSpec(expected=tuple(expected), ordered=True, allow_collateral=True, compare_final_state=True)


def _specs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    rng = random.Random(7)
    for n in range(10):  # buy one product
        db = _world(rng)
        p = rng.choice(db["products"])
        qty, shipping = rng.choice([1, 1, 2, 3]), rng.choice(["standard", "express"])
        via = "search" if n % 2 == 0 else "category"
        leave = n % 3 == 0
        instruction = (f"Buy {qty} × “{p['name']}” and have it shipped by {shipping} shipping to my saved address."
                       + (" Leave the order's page open when you are done." if leave else ""))
        writes = [{"tool": "add_to_cart", "args": {"product_id": p["id"], "qty": qty}},
                  {"tool": "place_order", "args": {"shipping": shipping, "address": ADDRESS}}]
        verifiers: list = [_order_verifier([ExpectedWrite(tool="add_to_cart", args={"product_id": p["id"]}),
                                            ExpectedWrite(tool="place_order", args={"shipping": shipping})])]
        if leave:
            verifiers.append(RubricSpec(criteria=(Criterion(name="order page open", check=SqlCheck(
                query="SELECT COUNT(*) FROM page WHERE path = '/orders/5'", expected=1)),)))
        out.append(_task("buy", n, instruction, db, [*_buy_steps(p, qty, via), *_checkout(shipping),
                                                     act("send_msg_to_user", text="Your order is placed.")],
                         verifiers, writes))
    for n in range(5):  # buy two products
        db = _world(rng)
        p1, p2 = rng.sample(db["products"], 2)
        q1, q2 = rng.choice([1, 2]), rng.choice([1, 2])
        shipping = rng.choice(["standard", "express"])
        instruction = (f"Order {q1} × “{p1['name']}” and {q2} × “{p2['name']}” together in one order, "
                       f"{shipping} shipping, to my saved address.")
        writes = [{"tool": "add_to_cart", "args": {"product_id": p1["id"], "qty": q1}},
                  {"tool": "add_to_cart", "args": {"product_id": p2["id"], "qty": q2}},
                  {"tool": "place_order", "args": {"shipping": shipping, "address": ADDRESS}}]
        expected = [ExpectedWrite(tool="add_to_cart", args={"product_id": p1["id"]}),
                    ExpectedWrite(tool="add_to_cart", args={"product_id": p2["id"]}),
                    ExpectedWrite(tool="place_order", args={"shipping": shipping})]
        solution = [*_buy_steps(p1, q1, "search"), act("click", element_id="nav-home"), *_buy_steps(p2, q2, "category"),
                    *_checkout(shipping), act("send_msg_to_user", text="Both items are ordered.")]
        out.append(_task("buy-two", n, instruction, db, solution,
                         [WriteActionSpec(expected=tuple(expected), allow_collateral=True)], writes))
    for n in range(5):  # cancel an order
        db = _world(rng)
        order = rng.choice([o for o in db["orders"] if o["status"] == "placed"])
        instruction = f"Cancel my order #{order['id']} from {order['placed_on']}; leave my other orders alone."
        writes = [{"tool": "cancel_order", "args": {"order_id": order["id"]}}]
        solution = [act("click", element_id="nav-orders"), act("click", element_id=f"order-{order['id']}"),
                    act("click", element_id="cancel-order"), act("send_msg_to_user", text="Cancelled.")]
        out.append(_task("cancel", n, instruction, db, solution,
                         [WriteActionSpec(expected=(ExpectedWrite(tool="cancel_order",
                                                                  args={"order_id": order["id"]}),))], writes))
    for n in range(4):  # the cheapest of a category
        db = _world(rng)
        category = list(CATALOG)[n % len(CATALOG)]
        cheapest = min((p for p in db["products"] if p["category"] == category),
                       key=lambda p: (p["price_cents"], p["name"]))
        instruction = f"Buy one unit of the cheapest product in the {category.title()} category, standard shipping."
        writes = [{"tool": "add_to_cart", "args": {"product_id": cheapest["id"], "qty": 1}},
                  {"tool": "place_order", "args": {"shipping": "standard", "address": ADDRESS}}]
        solution = [act("click", element_id=f"cat-{category}"), act("click", element_id="sort-price"),
                    act("click", element_id=f"product-{cheapest['id']}"), act("click", element_id="add-to-cart"),
                    *_checkout("standard"), act("send_msg_to_user", text=f"Bought {cheapest['name']}.")]
        out.append(_task("cheapest", n, instruction, db, solution, [_order_verifier([
            ExpectedWrite(tool="add_to_cart", args={"product_id": cheapest["id"], "qty": 1}),
            ExpectedWrite(tool="place_order", args={"shipping": "standard"})])], writes))
    unchanged = WriteActionSpec(compare_final_state=True)
    for n in range(4):  # price of a product
        db = _world(rng)
        p = rng.choice(db["products"])
        price = p["price_cents"] / 100
        instruction = f"Open the product page of “{p['name']}” and tell me its price in dollars."
        solution = [act("fill", element_id="search-input", value=p["name"]), act("click", element_id="search-button"),
                    act("click", element_id=f"product-{p['id']}"), act("send_msg_to_user", text=f"${price:.2f}")]
        out.append(_task("price", n, instruction, db, solution, [unchanged, answer_rubric(
            price, "numeric", f"SELECT COUNT(*) FROM page WHERE path = '/product/{p['id']}'", "product page open")],
            []))
    for n in range(3):  # stock of a product
        db = _world(rng)
        p = rng.choice(db["products"])
        instruction = f"How many units of “{p['name']}” are in stock? Check its product page."
        solution = [act("click", element_id=f"cat-{p['category']}"), act("click", element_id=f"product-{p['id']}"),
                    act("send_msg_to_user", text=f"{p['stock']} units")]
        out.append(_task("stock", n, instruction, db, solution, [unchanged, answer_rubric(
            p["stock"], "numeric", f"SELECT COUNT(*) FROM page WHERE path = '/product/{p['id']}'",
            "product page open")], []))
    for n in range(3):  # total of an order
        db = _world(rng)
        order = rng.choice(db["orders"])
        total = order["total_cents"] / 100
        instruction = f"What was the total of my order #{order['id']}? Open that order to check."
        solution = [act("click", element_id="nav-orders"), act("click", element_id=f"order-{order['id']}"),
                    act("send_msg_to_user", text=f"${total:.2f}")]
        out.append(_task("order-total", n, instruction, db, solution, [unchanged, answer_rubric(
            total, "numeric", f"SELECT COUNT(*) FROM page WHERE path = '/orders/{order['id']}'", "order page open")],
            []))
    for n in range(2):  # count orders by status
        db = _world(rng)
        status = ["placed", "delivered"][n]
        count = sum(o["status"] == status for o in db["orders"])
        instruction = f"How many of my orders have the status “{status}”? Answer from the order history page."
        solution = [act("click", element_id="nav-orders"), act("send_msg_to_user", text=f"{count} orders")]
        out.append(_task("order-count", n, instruction, db, solution, [unchanged, answer_rubric(
            count, "numeric", "SELECT COUNT(*) FROM page WHERE path = '/orders'", "order history open")], []))
    return out


def build() -> list[TaskSpec]:
    tasks = []
    for index, raw in enumerate(_specs()):
        tasks.append(TaskSpec(id=raw["id"], env_id=ENV_ID, split=split_of(index), instruction=raw["instruction"],
                              initial_state=raw["initial_state"], limits=Limits(max_steps=25),
                              verifiers=refuse_quotes(raw["verifiers"], raw["instruction"]),
                              solution=tuple(raw["solution"]), tags=raw["tags"],
                              metadata={"reference_writes": raw["writes"]}))
    return tasks


def main() -> None:
    write_suite(SUITE, build())


if __name__ == "__main__":
    main()
