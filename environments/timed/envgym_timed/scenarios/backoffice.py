"""A back office with several independent errands, each served by slow external services.

Tables: ``quotes`` (supplier prices per item), ``stock`` (units per warehouse and SKU), ``credit``
(customers' ratings), ``reports`` (figures per report) and what the agent did: ``orders``,
``reservations``, ``decisions``, ``sent``. Every lookup is slow (minutes, in the async variant), the
writes are quick. Finishing early needs interleaving: start every lookup, do other errands while they
run, act on each result as it arrives.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from envgym_timed.toolkit import Scenario, ToolFailure, tool
from envgym_timed.world import World


def _row(world: World, table: str, key: str, what: str) -> dict[str, Any]:
    row = world.table(table).get(key)
    if row is None:
        raise ToolFailure(f"no {what} {key!r}")
    return row


class QuoteArgs(BaseModel):
    supplier: str
    item: str


class StockArgs(BaseModel):
    warehouse: str
    sku: str


class CustomerArgs(BaseModel):
    customer: str


class ReportArgs(BaseModel):
    report: str


class OrderArgs(BaseModel):
    supplier: str
    item: str
    quantity: int = Field(gt=0)


class ReserveArgs(BaseModel):
    warehouse: str
    sku: str
    quantity: int = Field(gt=0)


class DecideArgs(BaseModel):
    customer: str
    decision: Literal["approve", "reject"]


class EmailArgs(BaseModel):
    to: str
    subject: str
    body: str


@tool("read", "Ask a supplier for its unit price of an item (slow: an external service).", slow=True)
def get_quote(world: World, args: QuoteArgs) -> dict[str, Any]:
    row = _row(world, "quotes", f"{args.supplier}:{args.item}", "quote for")
    return {"supplier": args.supplier, "item": args.item, "unit_price": row["unit_price"]}


@tool("read", "Count the units of a SKU at a warehouse (slow: the warehouse system).", slow=True)
def check_stock(world: World, args: StockArgs) -> dict[str, Any]:
    row = _row(world, "stock", f"{args.warehouse}:{args.sku}", "stock record for")
    return {"warehouse": args.warehouse, "sku": args.sku, "units": row["units"]}


@tool("read", "Run a credit check on a customer (slow: the credit bureau). Ratings A-E.", slow=True)
def run_credit_check(world: World, args: CustomerArgs) -> dict[str, Any]:
    row = _row(world, "credit", args.customer, "customer")
    return {"customer": args.customer, "rating": row["rating"]}


@tool("read", "Fetch a report's headline figure (slow: the analytics service).", slow=True)
def fetch_report(world: World, args: ReportArgs) -> dict[str, Any]:
    row = _row(world, "reports", args.report, "report")
    return {"report": args.report, "value": row["value"], "unit": row["unit"]}


@tool("write", "Place a purchase order with a supplier.")
def place_order(world: World, args: OrderArgs) -> dict[str, Any]:
    _row(world, "quotes", f"{args.supplier}:{args.item}", "supplier offering")
    order = world.insert("orders", {"supplier": args.supplier, "item": args.item, "quantity": args.quantity,
                                    "time": world.clock()})
    return {"order_id": order}


@tool("write", "Reserve units of a SKU at a warehouse.")
def reserve_stock(world: World, args: ReserveArgs) -> dict[str, Any]:
    row = _row(world, "stock", f"{args.warehouse}:{args.sku}", "stock record for")
    if row["units"] < args.quantity:
        raise ToolFailure(f"only {row['units']} units of {args.sku} at {args.warehouse}")
    row["units"] -= args.quantity
    reservation = world.insert("reservations", {"warehouse": args.warehouse, "sku": args.sku,
                                                "quantity": args.quantity, "time": world.clock()})
    return {"reservation_id": reservation, "units_left": row["units"]}


@tool("write", "Record a credit decision for a customer.")
def decide_credit(world: World, args: DecideArgs) -> dict[str, Any]:
    _row(world, "credit", args.customer, "customer")
    world.set(f"decisions.{args.customer}.decision", args.decision)
    return {"customer": args.customer, "decision": args.decision}


@tool("write", "Send an email (internal addresses such as 'finance' or 'sales').")
def send_email(world: World, args: EmailArgs) -> dict[str, Any]:
    sent = world.insert("sent", {"to": args.to, "subject": args.subject, "text": args.body, "time": world.clock()})
    return {"sent": sent}


SCENARIO = Scenario(
    name="backoffice",
    description="Independent errands served by slow external services; finishing early needs interleaving.",
    tools=(get_quote, check_stock, run_credit_check, fetch_report, place_order, reserve_stock, decide_credit,
           send_email),
    policy=("You run a small company's back office. Lookups go to slow external services; the writes are "
            "quick. Base every decision on the looked-up figures, meet the deadline, and do only what was "
            "asked. When everything is done, reply with a short summary."),
)
