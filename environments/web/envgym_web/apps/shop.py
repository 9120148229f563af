"""EnvShop: search and categories, product pages, a cart, checkout with shipping options, order history.

Writes (recorded for the verifiers): ``add_to_cart(product_id, qty)``, ``set_cart_qty(product_id, qty)``,
``remove_from_cart(product_id)``, ``place_order(shipping, address)``, ``cancel_order(order_id)``. The shop's
"today" and the customer's saved address come from the ``settings`` table, so orders are deterministic.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from envgym_web.apps.base import App, AppFailure, AppSession, esc, money
from envgym_web.server import Request, Response

SCHEMA = """
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
                       price_cents INTEGER NOT NULL, stock INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '');
CREATE TABLE cart_items (product_id INTEGER PRIMARY KEY REFERENCES products(id), qty INTEGER NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL, shipping TEXT NOT NULL, address TEXT NOT NULL,
                     total_cents INTEGER NOT NULL, placed_on TEXT NOT NULL);
CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(id), product_id INTEGER NOT NULL
                          REFERENCES products(id), qty INTEGER NOT NULL, price_cents INTEGER NOT NULL,
                          PRIMARY KEY (order_id, product_id));
"""
SHIPPING = {"standard": ("Standard (free, 5 days)", 0), "express": ("Express ($9.99, 1 day)", 999)}

APP = App(name="shop", title="EnvShop", schema_sql=SCHEMA)


def _setting(conn: sqlite3.Connection, key: str) -> str:
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return row[0] if row else ""


@APP.write("add_to_cart")
def add_to_cart(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    product = conn.execute("SELECT * FROM products WHERE id = ?", (a["product_id"],)).fetchone()
    if product is None:
        raise AppFailure("no such product")
    if a["qty"] < 1:
        raise AppFailure("quantity must be at least 1")
    row = conn.execute("SELECT qty FROM cart_items WHERE product_id = ?", (a["product_id"],)).fetchone()
    total = a["qty"] + (row[0] if row else 0)
    if total > product["stock"]:
        raise AppFailure(f"only {product['stock']} in stock")
    conn.execute("INSERT INTO cart_items VALUES (?, ?) ON CONFLICT(product_id) DO UPDATE SET qty = excluded.qty",
                 (a["product_id"], total))


@APP.write("set_cart_qty")
def set_cart_qty(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    product = conn.execute("SELECT stock FROM products WHERE id = ?", (a["product_id"],)).fetchone()
    if product is None or conn.execute("SELECT 1 FROM cart_items WHERE product_id = ?",
                                       (a["product_id"],)).fetchone() is None:
        raise AppFailure("that product is not in the cart")
    if a["qty"] > product[0]:
        raise AppFailure(f"only {product[0]} in stock")
    if a["qty"] <= 0:
        conn.execute("DELETE FROM cart_items WHERE product_id = ?", (a["product_id"],))
    else:
        conn.execute("UPDATE cart_items SET qty = ? WHERE product_id = ?", (a["qty"], a["product_id"]))


@APP.write("remove_from_cart")
def remove_from_cart(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    if conn.execute("DELETE FROM cart_items WHERE product_id = ?", (a["product_id"],)).rowcount == 0:
        raise AppFailure("that product is not in the cart")


@APP.write("place_order")
def place_order(conn: sqlite3.Connection, a: dict[str, Any]) -> int:
    items = conn.execute("SELECT c.product_id, c.qty, p.price_cents, p.stock FROM cart_items c "
                         "JOIN products p ON p.id = c.product_id ORDER BY c.product_id").fetchall()
    if not items:
        raise AppFailure("your cart is empty")
    if a["shipping"] not in SHIPPING:
        raise AppFailure("choose a shipping option")
    if not a["address"].strip():
        raise AppFailure("enter a shipping address")
    for item in items:
        if item["qty"] > item["stock"]:
            raise AppFailure("an item in your cart is no longer in stock")
    total = sum(i["qty"] * i["price_cents"] for i in items) + SHIPPING[a["shipping"]][1]
    order_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM orders").fetchone()[0]
    conn.execute("INSERT INTO orders VALUES (?, 'placed', ?, ?, ?, ?)",
                 (order_id, a["shipping"], a["address"].strip(), total, _setting(conn, "today")))
    for item in items:
        conn.execute("INSERT INTO order_items VALUES (?, ?, ?, ?)",
                     (order_id, item["product_id"], item["qty"], item["price_cents"]))
        conn.execute("UPDATE products SET stock = stock - ? WHERE id = ?", (item["qty"], item["product_id"]))
    conn.execute("DELETE FROM cart_items")
    return order_id


@APP.write("cancel_order")
def cancel_order(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    order = conn.execute("SELECT status FROM orders WHERE id = ?", (a["order_id"],)).fetchone()
    if order is None:
        raise AppFailure("no such order")
    if order[0] != "placed":
        raise AppFailure(f"an order that is {order[0]} cannot be cancelled")
    conn.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (a["order_id"],))
    for item in conn.execute("SELECT product_id, qty FROM order_items WHERE order_id = ?", (a["order_id"],)):
        conn.execute("UPDATE products SET stock = stock + ? WHERE id = ?", (item[1], item[0]))


# --- pages ---------------------------------------------------------------------------------------------------
def _page(s: AppSession, title: str, body: str) -> str:
    count = s.row("SELECT COALESCE(SUM(qty), 0) FROM cart_items")[0]
    nav = ("<a id=nav-home href='/'>Home</a><a id=nav-cart href='/cart'>Cart (" + str(count) + ")</a>"
           "<a id=nav-orders href='/orders'>Orders</a>")
    return APP.page(title, body, nav=nav)


def _int(value: str | None) -> int | None:
    try:
        return int(value or "")
    except ValueError:
        return None


def _listing(rows: list[sqlite3.Row]) -> str:
    if not rows:
        return "<p>No products found.</p>"
    items = "".join(f"<li><a id=product-{r['id']} href='/product/{r['id']}'>{esc(r['name'])}</a> "
                    f"<span>{money(r['price_cents'])}</span></li>" for r in rows)
    return f"<ul class=products>{items}</ul>"


@APP.route("GET", "/")
def home(s: AppSession, r: Request) -> str:
    cats = s.rows("SELECT DISTINCT category FROM products ORDER BY category")
    links = "".join(f"<li><a id=cat-{esc(c[0])} href='/category/{esc(c[0])}'>{esc(c[0].title())}</a></li>"
                    for c in cats)
    return _page(s, "Home", "<h1>EnvShop</h1><form action='/search' method=get>"
                 "<input id=search-input name=q placeholder='Search products'>"
                 f"<button id=search-button>Search</button></form><h2>Categories</h2><ul>{links}</ul>")


@APP.route("GET", "/search")
def search(s: AppSession, r: Request) -> str:
    q = r.query.get("q", "").strip()
    rows = s.rows("SELECT * FROM products WHERE name LIKE ? OR description LIKE ? ORDER BY name",
                  f"%{q}%", f"%{q}%") if q else []
    return _page(s, f"Search: {q}", f"<h1>Results for “{esc(q)}”</h1>{_listing(rows)}")


@APP.route("GET", "/category/([a-z-]+)")
def category(s: AppSession, r: Request, cat: str) -> str:
    sort = r.query.get("sort", "name")
    order = {"price": "price_cents, name", "name": "name"}.get(sort, "name")
    rows = s.rows(f"SELECT * FROM products WHERE category = ? ORDER BY {order}", cat)
    sorter = (f"<a id=sort-name href='/category/{cat}?sort=name'>Sort by name</a> · "
              f"<a id=sort-price href='/category/{cat}?sort=price'>Sort by price</a>")
    return _page(s, cat.title(), f"<h1>{esc(cat.title())}</h1><p>{sorter}</p>{_listing(rows)}")


def _product_page(s: AppSession, pid: int, error: str = "") -> Response | str:
    p = s.row("SELECT * FROM products WHERE id = ?", pid)
    if p is None:
        return Response(_page(s, "Not found", "<h1>No such product</h1>"), status=404)
    err = f"<p id=error class=error>{esc(error)}</p>" if error else ""
    stock = f"In stock: {p['stock']}" if p["stock"] else "Out of stock"
    return _page(s, p["name"], f"<h1>{esc(p['name'])}</h1><p>Price: {money(p['price_cents'])}</p>"
                 f"<p>{stock}</p><p>{esc(p['description'])}</p>{err}"
                 f"<form action='/cart/add' method=post><input type=hidden name=product_id value={pid}>"
                 "<label for=qty>Quantity</label> <input id=qty name=qty type=number min=1 value=1>"
                 "<button id=add-to-cart>Add to cart</button></form>")


@APP.route("GET", r"/product/(\d+)")
def product(s: AppSession, r: Request, pid: str) -> Response | str:
    return _product_page(s, int(pid))


@APP.route("POST", "/cart/add")
def cart_add(s: AppSession, r: Request) -> Response | str:
    pid, qty = _int(r.form.get("product_id")), _int(r.form.get("qty"))
    if pid is None:
        return Response.redirect("/")
    if qty is None:
        return _product_page(s, pid, "enter a whole number as the quantity")
    try:
        s.write("add_to_cart", product_id=pid, qty=qty)
    except AppFailure as exc:
        return _product_page(s, pid, f"Could not add to cart: {exc}")
    return Response.redirect("/cart")


def _cart_page(s: AppSession, error: str = "") -> str:
    items = s.rows("SELECT c.product_id, c.qty, p.name, p.price_cents FROM cart_items c "
                   "JOIN products p ON p.id = c.product_id ORDER BY p.name")
    err = f"<p id=error class=error>{esc(error)}</p>" if error else ""
    if not items:
        return _page(s, "Cart", f"<h1>Your cart</h1>{err}<p>Your cart is empty.</p>")
    rows = "".join(
        f"<tr><td>{esc(i['name'])}</td><td>{money(i['price_cents'])}</td><td>"
        f"<form action='/cart/update' method=post><input type=hidden name=product_id value={i['product_id']}>"
        f"<input id=qty-{i['product_id']} name=qty type=number value={i['qty']}>"
        f"<button id=update-{i['product_id']}>Update</button></form></td><td>"
        f"<form action='/cart/remove' method=post><input type=hidden name=product_id value={i['product_id']}>"
        f"<button id=remove-{i['product_id']}>Remove</button></form></td></tr>" for i in items)
    subtotal = sum(i["qty"] * i["price_cents"] for i in items)
    return _page(s, "Cart", f"<h1>Your cart</h1>{err}<table><tr><th>Item</th><th>Price</th><th>Quantity</th>"
                 f"<th></th></tr>{rows}</table><p>Subtotal: {money(subtotal)}</p>"
                 "<a id=checkout href='/checkout'>Proceed to checkout</a>")


@APP.route("GET", "/cart")
def cart(s: AppSession, r: Request) -> str:
    return _cart_page(s)


@APP.route("POST", "/cart/update")
def cart_update(s: AppSession, r: Request) -> Response | str:
    pid, qty = _int(r.form.get("product_id")), _int(r.form.get("qty"))
    if pid is None or qty is None:
        return _cart_page(s, "enter a whole number as the quantity")
    try:
        s.write("set_cart_qty", product_id=pid, qty=qty)
    except AppFailure as exc:
        return _cart_page(s, str(exc))
    return Response.redirect("/cart")


@APP.route("POST", "/cart/remove")
def cart_remove(s: AppSession, r: Request) -> Response | str:
    try:
        s.write("remove_from_cart", product_id=_int(r.form.get("product_id")))
    except AppFailure as exc:
        return _cart_page(s, str(exc))
    return Response.redirect("/cart")


def _checkout_page(s: AppSession, error: str = "") -> str:
    address = _setting(s.conn, "address")
    options = "".join(f"<option value={k}>{esc(label)}</option>" for k, (label, _) in SHIPPING.items())
    err = f"<p id=error class=error>{esc(error)}</p>" if error else ""
    return _page(s, "Checkout", f"<h1>Checkout</h1>{err}<form action='/checkout' method=post>"
                 f"<p><label for=address>Shipping address</label><br><input id=address name=address size=60 "
                 f"value='{esc(address)}'></p><p><label for=shipping>Shipping</label> "
                 f"<select id=shipping name=shipping>{options}</select></p>"
                 "<button id=place-order>Place order</button></form>")


@APP.route("GET", "/checkout")
def checkout(s: AppSession, r: Request) -> str:
    return _checkout_page(s)


@APP.route("POST", "/checkout")
def checkout_post(s: AppSession, r: Request) -> Response | str:
    try:
        order_id = s.write("place_order", shipping=r.form.get("shipping", ""), address=r.form.get("address", ""))
    except AppFailure as exc:
        return _checkout_page(s, f"Could not place the order: {exc}")
    return Response.redirect(f"/orders/{order_id}")


@APP.route("GET", "/orders")
def orders(s: AppSession, r: Request) -> str:
    rows = s.rows("SELECT * FROM orders ORDER BY id DESC")
    if not rows:
        return _page(s, "Orders", "<h1>Your orders</h1><p>No orders yet.</p>")
    body = "".join(f"<tr><td><a id=order-{o['id']} href='/orders/{o['id']}'>Order #{o['id']}</a></td>"
                   f"<td>{esc(o['placed_on'])}</td><td>{esc(o['status'])}</td><td>{money(o['total_cents'])}</td></tr>"
                   for o in rows)
    return _page(s, "Orders", "<h1>Your orders</h1><table><tr><th>Order</th><th>Placed</th><th>Status</th>"
                 f"<th>Total</th></tr>{body}</table>")


def _order_page(s: AppSession, oid: int, error: str = "") -> Response | str:
    o = s.row("SELECT * FROM orders WHERE id = ?", oid)
    if o is None:
        return Response(_page(s, "Not found", "<h1>No such order</h1>"), status=404)
    items = "".join(f"<li>{i['qty']} × {esc(i['name'])} at {money(i['price_cents'])}</li>" for i in s.rows(
        "SELECT oi.qty, oi.price_cents, p.name FROM order_items oi JOIN products p ON p.id = oi.product_id "
        "WHERE oi.order_id = ? ORDER BY p.name", oid))
    cancel = (f"<form action='/orders/{oid}/cancel' method=post><button id=cancel-order>Cancel order</button></form>"
              if o["status"] == "placed" else "")
    err = f"<p id=error class=error>{esc(error)}</p>" if error else ""
    return _page(s, f"Order #{oid}", f"<h1>Order #{oid}</h1>{err}<p>Status: {esc(o['status'])}</p>"
                 f"<p>Placed on: {esc(o['placed_on'])}</p><p>Shipping: {esc(o['shipping'])} to {esc(o['address'])}</p>"
                 f"<ul>{items}</ul><p>Total: {money(o['total_cents'])}</p>{cancel}")


@APP.route("GET", r"/orders/(\d+)")
def order(s: AppSession, r: Request, oid: str) -> Response | str:
    return _order_page(s, int(oid))


@APP.route("POST", r"/orders/(\d+)/cancel")
def order_cancel(s: AppSession, r: Request, oid: str) -> Response | str:
    try:
        s.write("cancel_order", order_id=int(oid))
    except AppFailure as exc:
        return _order_page(s, int(oid), str(exc))
    return Response.redirect(f"/orders/{oid}")
