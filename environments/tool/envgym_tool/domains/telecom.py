"""The ``telecom`` domain: a mobile operator's customer service, for conversations with a simulated user.

The customer (the simulated user of :mod:`envgym.user`) holds what the agent needs: the phone number and
PIN that verify the account, and the details of the request (how much data, which card, where they travel,
what went wrong). The agent must ask, act through the tools, and tell the customer the outcome (a price,
a balance, a ticket number). Tables: ``plans``, ``customers`` (plan, balance, roaming, status),
``data_packs``, ``payments``, ``tickets``. Ticket summaries are free text, left out of state comparisons.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envgym.plugin.tools import Domain, PolicyViolation, ToolContext, ToolFailure, tool

SCHEMA_SQL = """
CREATE TABLE plans (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, monthly REAL NOT NULL, data_gb INTEGER NOT NULL,
    roaming_daily REAL NOT NULL
);
CREATE TABLE customers (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, phone TEXT NOT NULL UNIQUE, pin TEXT NOT NULL,
    plan_id TEXT NOT NULL REFERENCES plans(id), balance REAL NOT NULL DEFAULT 0,
    roaming INTEGER NOT NULL DEFAULT 0, roaming_country TEXT,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended'))
);
CREATE TABLE data_packs (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), gb INTEGER NOT NULL,
    price REAL NOT NULL
);
CREATE TABLE payments (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), amount REAL NOT NULL,
    card_last4 TEXT NOT NULL
);
CREATE TABLE tickets (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    category TEXT NOT NULL, summary TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'open'
);
"""

POLICY = """\
# Mobile operator customer service policy

You are a customer service agent of a mobile operator. Amounts are in US dollars.

## Identity
Before reading or changing an account, verify the caller with verify_identity, using the phone number and
the 4-digit PIN the customer gives you. Never guess them: ask the customer. You may act only on the
account that was verified.

## Plans
A customer may change to any plan. When a customer asks for the cheapest plan that meets a need, choose
the plan with the lowest monthly price whose data allowance (GB) meets it. Tell the customer the new
monthly price.

## Data packs
Packs of 1, 5 or 10 GB cost 5, 15 and 25 dollars; the price is added to the account balance. Tell the
customer the new balance.

## Payments
A payment is made with the card the customer names (its last 4 digits) and may not exceed the balance.
Tell the customer the payment's confirmation id and the balance left.

## Roaming
Roaming is switched on for one destination country at a time and costs the plan's daily roaming rate.
Tell the customer the daily rate. A suspended line cannot have roaming switched on.

## Suspended lines
A line is suspended when its balance is unpaid. It is resumed with resume_line once the balance is 0.

## Tickets
Open a ticket (category network, billing or device) for a fault you cannot fix, with a short summary of
what the customer told you. Tell the customer the ticket id.
"""

Phone = Annotated[str, Field(description="The phone number, e.g. '415-555-0101'.", min_length=1)]
CustomerId = Annotated[str, Field(description="Customer id, e.g. 'c01'.", min_length=1)]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Identify(Args):
    phone: Phone
    pin: str = Field(description="The customer's 4-digit PIN.")


class CustomerRef(Args):
    customer_id: CustomerId


class ChangePlan(Args):
    customer_id: CustomerId
    plan_id: str = Field(description="Plan id, e.g. 'p20'.")


class BuyPack(Args):
    customer_id: CustomerId
    gb: Literal[1, 5, 10]


class Pay(Args):
    customer_id: CustomerId
    amount: float = Field(gt=0)
    card_last4: str = Field(pattern=r"^\d{4}$")


class Roaming(Args):
    customer_id: CustomerId
    country: str = Field(min_length=2, description="The destination country, e.g. 'Spain'.")


class Ticket(Args):
    customer_id: CustomerId
    category: Literal["network", "billing", "device"]
    summary: str = Field(min_length=3)


class NoArgs(Args):
    pass


PACK_PRICES = {1: 5.0, 5: 15.0, 10: 25.0}


def _verified(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM customers WHERE id = ?", customer_id)
    if row is None:
        raise ToolFailure(f"no customer with id {customer_id!r}")
    for call in ctx.calls:
        if call.ok and call.name == "verify_identity" and call.arguments is not None \
                and call.arguments.get("phone", "").strip() == row["phone"]:
            return row
    raise PolicyViolation(f"customer {customer_id} has not been verified: call verify_identity first")


def _next_id(ctx: ToolContext, table: str, prefix: str) -> str:
    count = ctx.one(f'SELECT COUNT(*) AS n FROM "{table}"')["n"]  # type: ignore[index]
    return f"{prefix}-{1001 + count}"


@tool("read", "Verify a caller by phone number and PIN; returns their customer id and name.")
def verify_identity(ctx: ToolContext, args: Identify) -> dict[str, Any]:
    row = ctx.one("SELECT id, name, pin FROM customers WHERE phone = ?", args.phone.strip())
    if row is None or row["pin"] != args.pin.strip():
        raise ToolFailure("the phone number and PIN do not match any account")
    return {"customer_id": row["id"], "name": row["name"]}


@tool("read", "A verified customer's account: plan, balance, roaming and line status.")
def get_account(ctx: ToolContext, args: CustomerRef) -> dict[str, Any]:
    row = _verified(ctx, args.customer_id)
    plan = ctx.one("SELECT * FROM plans WHERE id = ?", row["plan_id"])
    return {"customer_id": row["id"], "name": row["name"], "plan": plan, "balance": row["balance"],
            "roaming": bool(row["roaming"]), "roaming_country": row["roaming_country"], "status": row["status"]}


@tool("read", "Every plan: monthly price, data allowance (GB) and daily roaming rate.")
def list_plans(ctx: ToolContext, args: NoArgs) -> list[dict[str, Any]]:
    return ctx.all("SELECT * FROM plans ORDER BY monthly")


@tool("write", "Move a verified customer to another plan.")
def change_plan(ctx: ToolContext, args: ChangePlan) -> dict[str, Any]:
    row = _verified(ctx, args.customer_id)
    plan = ctx.one("SELECT * FROM plans WHERE id = ?", args.plan_id)
    if plan is None:
        raise ToolFailure(f"no plan {args.plan_id!r}")
    if plan["id"] == row["plan_id"]:
        raise ToolFailure(f"the customer is already on {plan['name']}")
    ctx.conn.execute("UPDATE customers SET plan_id = ? WHERE id = ?", (plan["id"], row["id"]))
    return {"plan": plan["name"], "monthly": plan["monthly"]}


@tool("write", "Buy a data pack (1, 5 or 10 GB) for a verified customer; its price is added to the balance.")
def buy_data_pack(ctx: ToolContext, args: BuyPack) -> dict[str, Any]:
    row = _verified(ctx, args.customer_id)
    price = PACK_PRICES[args.gb]
    pack_id = _next_id(ctx, "data_packs", "DP")
    ctx.conn.execute("INSERT INTO data_packs VALUES (?, ?, ?, ?)", (pack_id, row["id"], args.gb, price))
    ctx.conn.execute("UPDATE customers SET balance = round(balance + ?, 2) WHERE id = ?", (price, row["id"]))
    return {"pack_id": pack_id, "price": price, "balance": round(row["balance"] + price, 2)}


@tool("write", "Pay part or all of a verified customer's balance with a card (last 4 digits).")
def pay_balance(ctx: ToolContext, args: Pay) -> dict[str, Any]:
    row = _verified(ctx, args.customer_id)
    if args.amount > row["balance"] + 1e-9:
        raise PolicyViolation(f"the payment ({args.amount:.2f}) exceeds the balance ({row['balance']:.2f})")
    payment_id = _next_id(ctx, "payments", "PM")
    ctx.conn.execute("INSERT INTO payments VALUES (?, ?, ?, ?)", (payment_id, row["id"], args.amount,
                                                                  args.card_last4))
    left = round(row["balance"] - args.amount, 2)
    ctx.conn.execute("UPDATE customers SET balance = ? WHERE id = ?", (left, row["id"]))
    return {"payment_id": payment_id, "amount": args.amount, "balance": left}


@tool("write", "Switch roaming on for a verified customer, for one destination country.")
def enable_roaming(ctx: ToolContext, args: Roaming) -> dict[str, Any]:
    row = _verified(ctx, args.customer_id)
    if row["status"] != "active":
        raise PolicyViolation("roaming cannot be switched on for a suspended line")
    country = args.country.strip().title()
    ctx.conn.execute("UPDATE customers SET roaming = 1, roaming_country = ? WHERE id = ?", (country, row["id"]))
    plan = ctx.one("SELECT roaming_daily FROM plans WHERE id = ?", row["plan_id"])
    return {"roaming": True, "country": country, "daily_rate": plan["roaming_daily"]}  # type: ignore[index]


@tool("write", "Resume a verified customer's suspended line (its balance must be 0).")
def resume_line(ctx: ToolContext, args: CustomerRef) -> dict[str, Any]:
    row = _verified(ctx, args.customer_id)
    if row["status"] == "active":
        raise ToolFailure("the line is not suspended")
    if row["balance"] > 0:
        raise PolicyViolation(f"the balance ({row['balance']:.2f}) must be paid first")
    ctx.conn.execute("UPDATE customers SET status = 'active' WHERE id = ?", (row["id"],))
    return {"status": "active"}


@tool("write", "Open a support ticket for a verified customer; returns the ticket id.")
def open_ticket(ctx: ToolContext, args: Ticket) -> dict[str, Any]:
    row = _verified(ctx, args.customer_id)
    ticket_id = _next_id(ctx, "tickets", "TK")
    ctx.conn.execute("INSERT INTO tickets (id, customer_id, category, summary) VALUES (?, ?, ?, ?)",
                     (ticket_id, row["id"], args.category, args.summary))
    return {"ticket_id": ticket_id, "status": "open"}


TOOLS = (verify_identity, get_account, list_plans, change_plan, buy_data_pack, pay_balance, enable_roaming,
         resume_line, open_ticket)

DOMAIN = Domain(name="telecom", schema_sql=SCHEMA_SQL, tools=TOOLS, policy=POLICY,
                ignore_fields=("tickets.summary",))
