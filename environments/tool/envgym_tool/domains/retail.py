"""The retail domain: an online shop's customers, orders, products, returns and refunds.

``DOMAIN`` is the contract: the SQLite schema, fourteen tools (seven reads, seven writes) and the written
policy the agent is given. The tools enforce the policy's hard rules by raising :class:`PolicyViolation`
(identity not verified, order in the wrong state, return window over, refund above what was paid, ...) and
report business errors (unknown id, nothing left to refund) with :class:`ToolFailure`; either way the call
changes nothing. Rules only the grader can judge (do only what was asked, no change that changes nothing)
are stated in the policy and checked by each task's verifiers.

Everything is deterministic: "today" is the ``meta`` row ``today``, never the wall clock; money is computed
from the store (rounded to cents), not taken from the agent, except a partial refund's amount; new ids
derive from the order they belong to (``ret_1003_1``, ``ref_1003_cancel``, ``ref_ret_1003_1``,
``ref_itm_1003_2_1``), so independent writes give the same ids in any order.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from envgym.plugin.tools import Domain, PolicyViolation, Tool, ToolContext, ToolFailure, tool

RETURN_WINDOW_DAYS = 30

SCHEMA_SQL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE customers (
    id TEXT PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE COLLATE NOCASE, phone TEXT NOT NULL DEFAULT '',
    line1 TEXT NOT NULL, line2 TEXT NOT NULL DEFAULT '', city TEXT NOT NULL, state TEXT NOT NULL,
    zip TEXT NOT NULL
);
CREATE TABLE customer_changes (
    customer_id TEXT NOT NULL REFERENCES customers(id), field TEXT NOT NULL,
    old_value TEXT NOT NULL, new_value TEXT NOT NULL
);
CREATE TABLE payment_methods (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    kind TEXT NOT NULL CHECK (kind IN ('credit_card', 'paypal', 'gift_card')), label TEXT NOT NULL
);
CREATE TABLE products (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
    final_sale INTEGER NOT NULL DEFAULT 0 CHECK (final_sale IN (0, 1))
);
CREATE TABLE variants (
    id TEXT PRIMARY KEY, product_id TEXT NOT NULL REFERENCES products(id), options TEXT NOT NULL,
    price REAL NOT NULL CHECK (price >= 0), in_stock INTEGER NOT NULL DEFAULT 1 CHECK (in_stock IN (0, 1))
);
CREATE TABLE orders (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    status TEXT NOT NULL CHECK (status IN ('pending', 'shipped', 'delivered', 'cancelled')),
    placed_at TEXT NOT NULL, shipped_at TEXT, delivered_at TEXT, tracking_number TEXT,
    shipping_fee REAL NOT NULL DEFAULT 0,
    payment_method_id TEXT NOT NULL REFERENCES payment_methods(id),
    ship_line1 TEXT NOT NULL, ship_line2 TEXT NOT NULL DEFAULT '', ship_city TEXT NOT NULL,
    ship_state TEXT NOT NULL, ship_zip TEXT NOT NULL, cancel_reason TEXT
);
CREATE TABLE returns (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(id), reason TEXT NOT NULL,
    amount REAL NOT NULL, status TEXT NOT NULL DEFAULT 'requested'
);
CREATE TABLE order_items (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(id),
    variant_id TEXT NOT NULL REFERENCES variants(id), price REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'ordered' CHECK (status IN ('ordered', 'return_requested')),
    return_id TEXT REFERENCES returns(id)
);
CREATE TABLE refunds (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(id),
    payment_method_id TEXT NOT NULL REFERENCES payment_methods(id), amount REAL NOT NULL CHECK (amount > 0),
    reason TEXT NOT NULL, item_id TEXT REFERENCES order_items(id), return_id TEXT REFERENCES returns(id)
);
"""

POLICY = """\
# Retail customer service policy

You are a customer service agent of an online shop. You help customers with their orders, returns,
refunds and account through the tools. Dates are the store's: get_order shows `today`; never use your own
clock. Amounts are in US dollars.

## Identity
Before changing anything for a customer, verify their identity: find them with find_customer_by_email
(their email address) or find_customer_by_name_zip (first name, last name and the zip code of their
account address). You may change only the account and the orders of a customer you have verified. If the
customer cannot be found, change nothing.

## Do what was asked, and only that
Make exactly the changes the customer asked for: never touch other orders, other items or other account
data, even if it looks helpful. Never make a change that changes nothing (for example setting an address
that is already the one requested); tell the customer instead. When a request cannot be fulfilled under
this policy, change nothing, tell the customer why, and do not substitute a different action of your own
(such as a smaller refund) unless the customer asked for it.

## Pending orders
Only pending orders (not yet shipped) can be cancelled, have their shipping address changed, or have an
item changed. A shipped or delivered order can be neither cancelled nor modified. A cancellation needs
one reason from: "no longer needed", "ordered by mistake", "found a better price", "delivery too slow".
Cancelling refunds everything paid (items and shipping) to the original payment method. An item can be
changed only to another variant of the same product that is in stock and has the same price.

## Returns
Only delivered orders can be returned, within 30 days of delivery (the 30th day included). Final-sale
products cannot be returned. All the items a customer wants to return from one order go in one return.
The refund of a return is the price of the returned items, less any refund already given for them, paid
to the original payment method; shipping fees are not refunded.

## Refunds for damaged, missing or wrong items
An item of a delivered order, within 30 days of delivery, that arrived damaged, went missing or was the
wrong item can be refunded in part or in full. Refunds go to the order's original payment method only,
and all refunds for an item together never exceed the price paid for it. A returned item gets no further
refund.

## Account
A customer may change their email address (it must not belong to another account) and the default
address of their account. The account address is used for new orders only; changing it does not change
the shipping address of existing orders.
"""

OrderId = Annotated[str, Field(description="Order id, e.g. 'ord_1001'.", min_length=1)]
CustomerId = Annotated[str, Field(description="Customer id, e.g. 'cus_001'.", min_length=1)]
Zip = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^\d{5}$")]
Email = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]
Category = Literal["electronics", "apparel", "home", "sports", "accessories", "grocery"]
OrderStatus = Literal["pending", "shipped", "delivered", "cancelled"]
CancelReason = Literal["no longer needed", "ordered by mistake", "found a better price", "delivery too slow"]
ReturnReason = Literal["no longer needed", "does not fit", "damaged item", "wrong item"]
RefundReason = Literal["damaged item", "missing item", "wrong item"]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ByEmail(Args):
    email: Email = Field(description="The customer's email address.")


class ByNameZip(Args):
    first_name: str = Field(min_length=1, description="The customer's first name.")
    last_name: str = Field(min_length=1, description="The customer's last name.")
    zip: Zip = Field(description="Five-digit zip code of the customer's account address.")


class CustomerRef(Args):
    customer_id: CustomerId


class OrderRef(Args):
    order_id: OrderId


class ListOrders(Args):
    customer_id: CustomerId
    status: OrderStatus | None = Field(default=None, description="Only orders in this status (all if omitted).")


class ProductRef(Args):
    product_id: str = Field(min_length=1, description="Product id, e.g. 'prd_01'.")


class SearchProducts(Args):
    query: str = Field(default="", description="Words to look for in product names (case-insensitive).")
    category: Category | None = Field(default=None, description="Only products of this category.")
    max_price: float | None = Field(default=None, ge=0, description="Only variants costing at most this.")


class Cancel(Args):
    order_id: OrderId
    reason: CancelReason = Field(description="Why the customer cancels (one of the allowed reasons).")


class Address(Args):
    line1: str = Field(min_length=1, description="Street and number.")
    line2: str = Field(default="", description="Apartment, suite or floor; empty if none.")
    city: str = Field(min_length=1, description="City.")
    state: str = Field(pattern=r"^[A-Z]{2}$", description="Two-letter US state code, e.g. 'CA'.")
    zip: Zip = Field(description="Five-digit zip code.")


class OrderAddress(Address):
    order_id: OrderId


class CustomerAddress(Address):
    customer_id: CustomerId


class ChangeEmail(Args):
    customer_id: CustomerId
    new_email: Email = Field(description="The new email address.")


class ModifyItem(Args):
    order_id: OrderId
    item_id: str = Field(min_length=1, description="Id of the order item to change, e.g. 'itm_1001_1'.")
    new_variant_id: str = Field(min_length=1, description="Id of the variant to switch to, e.g. 'var_0102'.")


class CreateReturn(Args):
    order_id: OrderId
    item_ids: list[str] = Field(min_length=1, description="Ids of every order item to return.")
    reason: ReturnReason = Field(description="Why the items are returned.")
    payment_method_id: str = Field(description="Where the refund goes: the order's original payment method.")


class IssueRefund(Args):
    order_id: OrderId
    item_id: str = Field(min_length=1, description="The order item the refund is for.")
    amount: float = Field(gt=0, description="Dollars to refund for this item.")
    reason: RefundReason = Field(description="What was wrong with the item.")
    payment_method_id: str = Field(description="Where the refund goes: the order's original payment method.")


# --- helpers ---------------------------------------------------------------------------------------


def _today(ctx: ToolContext) -> str:
    row = ctx.one("SELECT value FROM meta WHERE key = 'today'")
    if row is None:
        raise ToolFailure("the store has no date (meta 'today' is missing)")
    return row["value"]


def _matching_customers(ctx: ToolContext, call_name: str, args: dict[str, Any], *, history: bool) -> set[str]:
    """Ids a lookup call's arguments identify; with ``history``, old emails and zips count too."""
    if call_name == "find_customer_by_email":
        email = str(args.get("email", "")).strip()
        rows = ctx.all("SELECT id FROM customers WHERE email = ? COLLATE NOCASE", email)
        if history:
            rows += ctx.all("SELECT customer_id AS id FROM customer_changes WHERE field = 'email' "
                            "AND old_value = ? COLLATE NOCASE", email)
    elif call_name == "find_customer_by_name_zip":
        zip_code = str(args.get("zip", "")).strip()
        old_zip = "OR id IN (SELECT customer_id FROM customer_changes WHERE field = 'zip' AND old_value = ?)"
        rows = ctx.all("SELECT id FROM customers WHERE first_name = ? COLLATE NOCASE AND last_name = ? "
                       f"COLLATE NOCASE AND (zip = ? {old_zip if history else ''})",
                       str(args.get("first_name", "")).strip(), str(args.get("last_name", "")).strip(),
                       zip_code, *([zip_code] if history else []))
    else:
        return set()
    return {r["id"] for r in rows}


def _verified(ctx: ToolContext) -> set[str]:
    """Customers some successful lookup of this episode identified."""
    found: set[str] = set()
    for call in ctx.calls:
        if call.ok and call.arguments is not None:
            found |= _matching_customers(ctx, call.name, call.arguments, history=True)
    return found


def _customer(ctx: ToolContext, customer_id: str, *, verify: bool) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM customers WHERE id = ?", customer_id)
    if row is None:
        raise ToolFailure(f"no customer with id {customer_id!r}")
    if verify and customer_id not in _verified(ctx):
        raise PolicyViolation(f"the identity of customer {customer_id} has not been verified; find them with "
                              "find_customer_by_email or find_customer_by_name_zip first")
    return row


def _order(ctx: ToolContext, order_id: str, *, verify: bool, status: str | None = None) -> dict[str, Any]:
    """The order row; with ``verify`` its customer must be verified, with ``status`` it must be in it."""
    row = ctx.one("SELECT * FROM orders WHERE id = ?", order_id)
    if row is None:
        raise ToolFailure(f"no order with id {order_id!r}")
    if verify and row["customer_id"] not in _verified(ctx):
        raise PolicyViolation(f"order {order_id} does not belong to a verified customer; verify the identity "
                              "of the customer who placed it first")
    if status is not None and row["status"] == "cancelled":
        raise ToolFailure(f"order {order_id} is cancelled")
    if status is not None and row["status"] != status:
        raise PolicyViolation(f"order {order_id} is {row['status']}; only {status} orders allow this")
    return row


def _within_window(ctx: ToolContext, order: dict[str, Any]) -> None:
    days = ctx.one("SELECT CAST(julianday(?) - julianday(?) AS INTEGER) AS d", _today(ctx), order["delivered_at"])
    if days is None or days["d"] is None or days["d"] > RETURN_WINDOW_DAYS:
        raise PolicyViolation(f"order {order['id']} was delivered on {order['delivered_at']}, more than "
                              f"{RETURN_WINDOW_DAYS} days ago")


def _original_payment(order: dict[str, Any], payment_method_id: str) -> None:
    if payment_method_id != order["payment_method_id"]:
        raise PolicyViolation(f"refunds for order {order['id']} go only to its original payment method "
                              f"{order['payment_method_id']}")


def _item(ctx: ToolContext, order_id: str, item_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT i.*, v.product_id, v.options, p.name AS product_name, p.final_sale FROM order_items i "
                  "JOIN variants v ON v.id = i.variant_id JOIN products p ON p.id = v.product_id "
                  "WHERE i.id = ? AND i.order_id = ?", item_id, order_id)
    if row is None:
        raise ToolFailure(f"order {order_id} has no item {item_id!r}")
    return row


def _refunded(ctx: ToolContext, item_id: str) -> float:
    row = ctx.one("SELECT COALESCE(SUM(amount), 0) AS s FROM refunds WHERE item_id = ?", item_id)
    return round(row["s"] if row else 0.0, 2)


def _seq(ctx: ToolContext, table: str, prefix: str) -> str:
    """``prefix_<k>`` with the first ``k`` not yet used in ``table``."""
    k = 1
    while ctx.one(f"SELECT 1 FROM {table} WHERE id = ?", f"{prefix}_{k}") is not None:
        k += 1
    return f"{prefix}_{k}"


def _order_view(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    order = ctx.one("SELECT * FROM orders WHERE id = ?", order_id) or {}
    items = ctx.all("SELECT i.id AS item_id, v.product_id, p.name AS product_name, i.variant_id, v.options, "
                    "i.price, p.final_sale, i.status, i.return_id FROM order_items i "
                    "JOIN variants v ON v.id = i.variant_id JOIN products p ON p.id = v.product_id "
                    "WHERE i.order_id = ? ORDER BY i.id", order_id)
    for item in items:
        item["final_sale"] = bool(item["final_sale"])
    payment = ctx.one("SELECT id, kind, label FROM payment_methods WHERE id = ?", order["payment_method_id"])
    refunds = ctx.all("SELECT id, amount, reason, item_id, return_id, payment_method_id FROM refunds "
                      "WHERE order_id = ? ORDER BY id", order_id)
    subtotal = round(sum(i["price"] for i in items), 2)
    return {
        "order_id": order_id, "customer_id": order["customer_id"], "status": order["status"],
        "placed_at": order["placed_at"], "shipped_at": order["shipped_at"], "delivered_at": order["delivered_at"],
        "tracking_number": order["tracking_number"], "cancel_reason": order["cancel_reason"],
        "shipping_address": {"line1": order["ship_line1"], "line2": order["ship_line2"],
                             "city": order["ship_city"], "state": order["ship_state"], "zip": order["ship_zip"]},
        "payment_method": payment, "items": items, "subtotal": subtotal, "shipping_fee": order["shipping_fee"],
        "total": round(subtotal + order["shipping_fee"], 2),
        "refunded": round(sum(r["amount"] for r in refunds), 2), "refunds": refunds,
        "returns": ctx.all("SELECT id, reason, amount, status FROM returns WHERE order_id = ? ORDER BY id",
                           order_id),
        "today": _today(ctx),
    }


def _customer_view(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    c = _customer(ctx, customer_id, verify=False)
    return {
        "customer_id": c["id"], "first_name": c["first_name"], "last_name": c["last_name"], "email": c["email"],
        "phone": c["phone"],
        "address": {k: c[k] for k in ("line1", "line2", "city", "state", "zip")},
        "payment_methods": ctx.all("SELECT id, kind, label FROM payment_methods WHERE customer_id = ? ORDER BY id",
                                   customer_id),
        "order_ids": [r["id"] for r in ctx.all("SELECT id FROM orders WHERE customer_id = ? ORDER BY id",
                                               customer_id)],
    }


def _product_view(ctx: ToolContext, product: dict[str, Any], max_price: float | None = None) -> dict[str, Any]:
    variants = ctx.all("SELECT id AS variant_id, options, price, in_stock FROM variants WHERE product_id = ? "
                       "AND price <= ? ORDER BY id", product["id"], 1e12 if max_price is None else max_price)
    for v in variants:
        v["in_stock"] = bool(v["in_stock"])
    return {"product_id": product["id"], "name": product["name"], "category": product["category"],
            "final_sale": bool(product["final_sale"]), "variants": variants}


def _found(ctx: ToolContext, call_name: str, args: BaseModel) -> dict[str, Any]:
    ids = sorted(_matching_customers(ctx, call_name, args.model_dump(), history=False))
    if len(ids) != 1:
        raise ToolFailure("no customer matches these details" if not ids else "several customers match")
    c = _customer(ctx, ids[0], verify=False)
    return {"customer_id": c["id"], "first_name": c["first_name"], "last_name": c["last_name"]}


# --- reads -----------------------------------------------------------------------------------------


@tool("read", "Find a customer by email address; a match verifies the customer's identity.")
def find_customer_by_email(ctx: ToolContext, args: ByEmail) -> dict[str, Any]:
    return _found(ctx, "find_customer_by_email", args)


@tool("read", "Find a customer by first name, last name and account zip code; a match verifies identity.")
def find_customer_by_name_zip(ctx: ToolContext, args: ByNameZip) -> dict[str, Any]:
    return _found(ctx, "find_customer_by_name_zip", args)


@tool("read", "A customer's profile: contact details, account address, payment methods and order ids.")
def get_customer(ctx: ToolContext, args: CustomerRef) -> dict[str, Any]:
    return _customer_view(ctx, args.customer_id)


@tool("read", "A customer's orders, newest first, with status, total and product names.")
def list_orders(ctx: ToolContext, args: ListOrders) -> list[dict[str, Any]]:
    _customer(ctx, args.customer_id, verify=False)
    rows = ctx.all("SELECT id FROM orders WHERE customer_id = ? AND (? IS NULL OR status = ?) "
                   "ORDER BY placed_at DESC, id DESC", args.customer_id, args.status, args.status)
    out = []
    for row in rows:
        view = _order_view(ctx, row["id"])
        out.append({"order_id": row["id"], "status": view["status"], "placed_at": view["placed_at"],
                    "total": view["total"], "products": [i["product_name"] for i in view["items"]]})
    return out


@tool("read", "Full details of an order: status, dates, items, address, payment, amounts, returns, refunds.")
def get_order(ctx: ToolContext, args: OrderRef) -> dict[str, Any]:
    _order(ctx, args.order_id, verify=False)
    return _order_view(ctx, args.order_id)


@tool("read", "A product and all its variants (options, price, stock).")
def get_product(ctx: ToolContext, args: ProductRef) -> dict[str, Any]:
    product = ctx.one("SELECT * FROM products WHERE id = ?", args.product_id)
    if product is None:
        raise ToolFailure(f"no product with id {args.product_id!r}")
    return _product_view(ctx, product)


@tool("read", "Search the catalogue by name words, category and maximum price.")
def search_products(ctx: ToolContext, args: SearchProducts) -> list[dict[str, Any]]:
    words = args.query.lower().split()
    products = ctx.all("SELECT * FROM products WHERE (? IS NULL OR category = ?) ORDER BY id",
                       args.category, args.category)
    views = [_product_view(ctx, p, args.max_price) for p in products
             if all(w in p["name"].lower() for w in words)]
    return [v for v in views if v["variants"]]


# --- writes ----------------------------------------------------------------------------------------


@tool("write", "Cancel a pending order; everything paid is refunded to the original payment method.")
def cancel_order(ctx: ToolContext, args: Cancel) -> dict[str, Any]:
    order = _order(ctx, args.order_id, verify=True, status="pending")
    view = _order_view(ctx, args.order_id)
    amount = round(view["total"] - view["refunded"], 2)
    ctx.conn.execute("UPDATE orders SET status = 'cancelled', cancel_reason = ? WHERE id = ?",
                     (args.reason, args.order_id))
    refund_id = f"ref_{args.order_id.removeprefix('ord_')}_cancel"
    if amount > 0:
        ctx.conn.execute("INSERT INTO refunds (id, order_id, payment_method_id, amount, reason) "
                         "VALUES (?, ?, ?, ?, 'cancellation')",
                         (refund_id, args.order_id, order["payment_method_id"], amount))
    return {"order_id": args.order_id, "status": "cancelled", "refund_id": refund_id if amount > 0 else None,
            "refund_amount": amount, "refunded_to": order["payment_method_id"]}


@tool("write", "Change the shipping address of a pending order.")
def update_order_address(ctx: ToolContext, args: OrderAddress) -> dict[str, Any]:
    _order(ctx, args.order_id, verify=True, status="pending")
    ctx.conn.execute("UPDATE orders SET ship_line1 = ?, ship_line2 = ?, ship_city = ?, ship_state = ?, "
                     "ship_zip = ? WHERE id = ?",
                     (args.line1, args.line2, args.city, args.state, args.zip, args.order_id))
    return _order_view(ctx, args.order_id)["shipping_address"]


@tool("write", "Change the default address of a customer's account (existing orders are not changed).")
def update_customer_address(ctx: ToolContext, args: CustomerAddress) -> dict[str, Any]:
    old = _customer(ctx, args.customer_id, verify=True)
    if old["zip"] != args.zip:  # kept so that a lookup by the old zip still verifies the customer
        ctx.conn.execute("INSERT INTO customer_changes VALUES (?, 'zip', ?, ?)",
                         (args.customer_id, old["zip"], args.zip))
    ctx.conn.execute("UPDATE customers SET line1 = ?, line2 = ?, city = ?, state = ?, zip = ? WHERE id = ?",
                     (args.line1, args.line2, args.city, args.state, args.zip, args.customer_id))
    return _customer_view(ctx, args.customer_id)["address"]


@tool("write", "Change the email address of a customer's account.")
def update_customer_email(ctx: ToolContext, args: ChangeEmail) -> dict[str, Any]:
    old = _customer(ctx, args.customer_id, verify=True)
    other = ctx.one("SELECT id FROM customers WHERE email = ? COLLATE NOCASE AND id != ?",
                    args.new_email, args.customer_id)
    if other is not None:
        raise ToolFailure(f"the email {args.new_email} belongs to another account")
    ctx.conn.execute("INSERT INTO customer_changes VALUES (?, 'email', ?, ?)",
                     (args.customer_id, old["email"], args.new_email))
    ctx.conn.execute("UPDATE customers SET email = ? WHERE id = ?", (args.new_email, args.customer_id))
    return {"customer_id": args.customer_id, "email": args.new_email}


@tool("write", "Switch an item of a pending order to another variant of the same product at the same price.")
def modify_order_item(ctx: ToolContext, args: ModifyItem) -> dict[str, Any]:
    _order(ctx, args.order_id, verify=True, status="pending")
    item = _item(ctx, args.order_id, args.item_id)
    variant = ctx.one("SELECT * FROM variants WHERE id = ?", args.new_variant_id)
    if variant is None:
        raise ToolFailure(f"no variant with id {args.new_variant_id!r}")
    if variant["id"] == item["variant_id"]:
        raise ToolFailure(f"item {args.item_id} already is variant {variant['id']}")
    if variant["product_id"] != item["product_id"]:
        raise PolicyViolation(f"variant {variant['id']} is not a variant of {item['product_name']}")
    if not variant["in_stock"]:
        raise PolicyViolation(f"variant {variant['id']} ({variant['options']}) is out of stock")
    if round(variant["price"], 2) != round(item["price"], 2):
        raise PolicyViolation(f"variant {variant['id']} costs {variant['price']:.2f}, not {item['price']:.2f}; "
                              "items can only change to a variant at the same price")
    ctx.conn.execute("UPDATE order_items SET variant_id = ? WHERE id = ?", (variant["id"], args.item_id))
    return _order_view(ctx, args.order_id)


@tool("write", "Return items of a delivered order; their price is refunded to the original payment method.")
def create_return(ctx: ToolContext, args: CreateReturn) -> dict[str, Any]:
    order = _order(ctx, args.order_id, verify=True, status="delivered")
    _within_window(ctx, order)
    _original_payment(order, args.payment_method_id)
    if len(set(args.item_ids)) != len(args.item_ids):
        raise ToolFailure("an item is listed twice")
    amount = 0.0
    for item_id in args.item_ids:
        item = _item(ctx, args.order_id, item_id)
        if item["status"] != "ordered":
            raise ToolFailure(f"item {item_id} is already being returned ({item['return_id']})")
        if item["final_sale"]:
            raise PolicyViolation(f"{item['product_name']} ({item_id}) is a final-sale product and cannot be returned")
        amount += item["price"] - _refunded(ctx, item_id)
    amount = round(amount, 2)
    if amount <= 0:
        raise ToolFailure("these items have already been refunded in full")
    return_id = _seq(ctx, "returns", f"ret_{args.order_id.removeprefix('ord_')}")
    ctx.conn.execute("INSERT INTO returns (id, order_id, reason, amount) VALUES (?, ?, ?, ?)",
                     (return_id, args.order_id, args.reason, amount))
    ctx.conn.executemany("UPDATE order_items SET status = 'return_requested', return_id = ? WHERE id = ?",
                         [(return_id, item_id) for item_id in args.item_ids])
    ctx.conn.execute("INSERT INTO refunds (id, order_id, payment_method_id, amount, reason, return_id) "
                     "VALUES (?, ?, ?, ?, 'return', ?)",
                     (f"ref_{return_id}", args.order_id, order["payment_method_id"], amount, return_id))
    return {"return_id": return_id, "order_id": args.order_id, "item_ids": args.item_ids,
            "refund_amount": amount, "refunded_to": order["payment_method_id"]}


@tool("write", "Refund part or all of a damaged, missing or wrong item of a delivered order.")
def issue_refund(ctx: ToolContext, args: IssueRefund) -> dict[str, Any]:
    order = _order(ctx, args.order_id, verify=True, status="delivered")
    _within_window(ctx, order)
    _original_payment(order, args.payment_method_id)
    item = _item(ctx, args.order_id, args.item_id)
    if item["status"] != "ordered":
        raise PolicyViolation(f"item {args.item_id} has been returned; its refund comes with the return")
    amount = round(args.amount, 2)
    left = round(item["price"] - _refunded(ctx, args.item_id), 2)
    if amount > left:
        raise PolicyViolation(f"at most {left:.2f} can still be refunded for {item['product_name']} "
                              f"(price {item['price']:.2f}); {amount:.2f} was asked")
    refund_id = _seq(ctx, "refunds", f"ref_{args.item_id}")
    ctx.conn.execute("INSERT INTO refunds (id, order_id, payment_method_id, amount, reason, item_id) "
                     "VALUES (?, ?, ?, ?, ?, ?)",
                     (refund_id, args.order_id, order["payment_method_id"], amount, args.reason, args.item_id))
    return {"refund_id": refund_id, "order_id": args.order_id, "item_id": args.item_id, "amount": amount,
            "refunded_to": order["payment_method_id"]}


TOOLS: tuple[Tool, ...] = (
    find_customer_by_email, find_customer_by_name_zip, get_customer, list_orders, get_order, get_product,
    search_products, cancel_order, update_order_address, update_customer_address, update_customer_email,
    modify_order_item, create_return, issue_refund,
)

DOMAIN = Domain(name="retail", schema_sql=SCHEMA_SQL, tools=TOOLS, policy=POLICY)
