"""The ``assistant`` domain: a personal assistant acting for one owner over calendar, email and contacts.

The store holds ``contacts``, ``events`` with ``event_attendees``, ``emails`` (folders ``inbox``, ``sent``,
``archive`` and a read flag) and ``meta`` (the owner's name, address and timezone, and the fixed ``now``
every time rule is judged against; the real clock is never read). Times are owner-local
``YYYY-MM-DDTHH:MM`` strings, compared as text. Tools are deterministic: new ids continue the numbering
of their table (``evt_<n>``, ``em_<n>``, ``th_<n>``, ``con_<n>``), a sent email is stamped with ``now``.

Business errors (unknown id, already archived) raise :class:`ToolFailure`; what :data:`POLICY` forbids
(double-booking, weekends, after hours, the past, too many attendees, mail to addresses outside the
contacts) raises :class:`PolicyViolation`. Reading an email never changes its read flag, so reads leave
the store exactly as they found it.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from envgym.plugin import NoArgs
from envgym.plugin.tools import Domain, PolicyViolation, ToolContext, ToolFailure, tool

MAX_ATTENDEES = 8
WORK_START = time(8, 0)
WORK_END = time(19, 0)
MIN_MINUTES, MAX_MINUTES = 15, 240
_STAMP = "%Y-%m-%dT%H:%M"

SCHEMA_SQL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE contacts (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE COLLATE NOCASE,
    phone TEXT, company TEXT, notes TEXT
);
CREATE TABLE events (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, start TEXT NOT NULL, end TEXT NOT NULL, location TEXT,
    description TEXT, status TEXT NOT NULL DEFAULT 'confirmed' CHECK (status IN ('confirmed', 'cancelled'))
);
CREATE TABLE event_attendees (
    event_id TEXT NOT NULL REFERENCES events(id), contact_id TEXT NOT NULL REFERENCES contacts(id),
    response TEXT NOT NULL DEFAULT 'pending' CHECK (response IN ('pending', 'accepted', 'declined')),
    PRIMARY KEY (event_id, contact_id)
);
CREATE TABLE emails (
    id TEXT PRIMARY KEY, thread_id TEXT NOT NULL,
    folder TEXT NOT NULL CHECK (folder IN ('inbox', 'sent', 'archive')),
    sender TEXT NOT NULL, recipients TEXT NOT NULL, cc TEXT NOT NULL DEFAULT '[]',
    subject TEXT NOT NULL, body TEXT NOT NULL, sent_at TEXT NOT NULL,
    is_read INTEGER NOT NULL DEFAULT 0 CHECK (is_read IN (0, 1)), in_reply_to TEXT
);
"""

POLICY = f"""\
You are a personal assistant acting for one person, the owner, over their calendar, email and contacts.
Call get_profile to learn the owner's name, address, timezone and the current date and time ("now");
every time is the owner's local time, written YYYY-MM-DDTHH:MM. Never guess "today" from anywhere else.

Calendar. Events are held only on weekdays (Monday to Friday), starting and ending the same day
between {WORK_START:%H:%M} and {WORK_END:%H:%M}, and last from {MIN_MINUTES} minutes to {MAX_MINUTES // 60} hours.
Never double-book: an event may not overlap any confirmed event; cancelled events do not block time.
Events that start before now are in the past and cannot be created, rescheduled, cancelled or changed,
and nothing may be moved into the past. Cancelled events cannot be changed. An event has at most
{MAX_ATTENDEES} attendees besides the owner, and every attendee must be one of the owner's contacts. When
rescheduling, keep the event's length unless the owner says otherwise.

Email. Send or reply only to addresses that belong to the owner's contacts; never use a contact you
created on your own to get around this. Reply to the sender only, unless the owner asks you to reply to
everyone. Emails are never deleted: if the owner asks to delete mail, do not delete or archive it in its
place; explain that deletion is not allowed and offer to archive it instead. Archive or change read flags
only when asked. Do not send notifications or confirmations the owner did not ask for.

Contacts. Add or change a contact only when the owner explicitly asks, with the details they give.

Do exactly what the owner asks, and nothing more. When a request breaks this policy, do not carry out
any part of it that would break the policy: make no change, and tell the owner plainly why. When the
request is already satisfied, change nothing and say so. Finish with one message to the owner.
"""


def _valid_datetime(value: str) -> str:
    try:
        datetime.strptime(value, _STAMP)
    except ValueError as exc:
        raise ValueError("not a real date and time (YYYY-MM-DDTHH:MM)") from exc
    return value


def _valid_date(value: str) -> str:
    try:
        date.fromisoformat(value)
    except ValueError as exc:
        raise ValueError("not a real date (YYYY-MM-DD)") from exc
    return value


LocalDateTime = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$"), AfterValidator(_valid_datetime)]
LocalDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$"), AfterValidator(_valid_date)]
Address = Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=200)]
EventId = Annotated[str, Field(pattern=r"^evt_\d+$")]
EmailId = Annotated[str, Field(pattern=r"^em_\d+$")]
ContactId = Annotated[str, Field(pattern=r"^con_\d+$")]


class Args(BaseModel):
    """Base of the argument models: strict types (no ``"30"`` for 30), no unknown fields."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


# ----------------------------------------------------------------------------------------------- helpers


def _now(ctx: ToolContext) -> str:
    row = ctx.one("SELECT value FROM meta WHERE key = 'now'")
    if row is None:
        raise ToolFailure("the store has no 'now' in its meta table")
    return row["value"]


def _owner_email(ctx: ToolContext) -> str:
    row = ctx.one("SELECT value FROM meta WHERE key = 'owner_email'")
    return row["value"] if row else ""


def _next_id(ctx: ToolContext, table: str, column: str, prefix: str) -> str:
    numbers = [int(r["v"].rpartition("_")[2]) for r in ctx.all(f"SELECT {column} AS v FROM {table}")
               if r["v"].startswith(prefix) and r["v"].rpartition("_")[2].isdigit()]
    return f"{prefix}{max(numbers, default=0) + 1}"


def _event(ctx: ToolContext, event_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM events WHERE id = ?", event_id)
    if row is None:
        raise ToolFailure(f"no event {event_id}")
    row["attendees"] = ctx.all(
        "SELECT c.id AS contact_id, c.name, c.email, a.response FROM event_attendees a "
        "JOIN contacts c ON c.id = a.contact_id WHERE a.event_id = ? ORDER BY c.id", event_id)
    return row


def _changeable_event(ctx: ToolContext, event_id: str) -> dict[str, Any]:
    event = _event(ctx, event_id)
    if event["status"] == "cancelled":
        raise ToolFailure(f"event {event_id} ({event['title']}) is cancelled and cannot be changed")
    if event["start"] < _now(ctx):
        raise PolicyViolation(f"event {event_id} ({event['title']}) started at {event['start']}, in the past")
    return event


def _check_slot(ctx: ToolContext, start: str, end: str, *, exclude: str = "") -> None:
    """Raise unless [start, end) is a valid future slot in working hours that overlaps no confirmed event."""
    begin, finish = datetime.strptime(start, _STAMP), datetime.strptime(end, _STAMP)
    if finish <= begin:
        raise ToolFailure("end must be after start")
    if start < _now(ctx):
        raise PolicyViolation(f"{start} is in the past (now is {_now(ctx)})")
    if begin.weekday() >= 5:
        raise PolicyViolation(f"{begin:%A} {begin:%Y-%m-%d} is a weekend day; events are held Monday to Friday")
    if finish.date() != begin.date() or begin.time() < WORK_START or finish.time() > WORK_END:
        raise PolicyViolation(f"events must fall within working hours {WORK_START:%H:%M}-{WORK_END:%H:%M}")
    minutes = (finish - begin) // timedelta(minutes=1)
    if not MIN_MINUTES <= minutes <= MAX_MINUTES:
        raise PolicyViolation(f"events last {MIN_MINUTES} to {MAX_MINUTES} minutes, not {minutes}")
    clashes = ctx.all("SELECT id, title, start, end FROM events WHERE status = 'confirmed' "
                      "AND start < ? AND end > ? AND id != ? ORDER BY start", end, start, exclude)
    if clashes:
        listed = "; ".join(f"{c['id']} {c['title']} {c['start']}-{c['end'][11:]}" for c in clashes)
        raise PolicyViolation(f"double-booking: the slot overlaps {listed}")


def _contact_ids_exist(ctx: ToolContext, ids: list[str]) -> None:
    for contact_id in ids:
        if ctx.one("SELECT id FROM contacts WHERE id = ?", contact_id) is None:
            raise ToolFailure(f"no contact {contact_id}")


def _require_contacts(ctx: ToolContext, addresses: list[str]) -> None:
    for address in addresses:
        if ctx.one("SELECT id FROM contacts WHERE email = ?", address) is None:
            raise PolicyViolation(f"{address} is not in the owner's contacts; mail goes only to contacts")


def _email_row(ctx: ToolContext, email_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM emails WHERE id = ?", email_id)
    if row is None:
        raise ToolFailure(f"no email {email_id}")
    row["recipients"], row["cc"] = json.loads(row["recipients"]), json.loads(row["cc"])
    row["is_read"] = bool(row["is_read"])
    return row


def _store_email(ctx: ToolContext, *, thread_id: str, to: list[str], cc: list[str], subject: str, body: str,
                 in_reply_to: str | None) -> dict[str, Any]:
    email_id = _next_id(ctx, "emails", "id", "em_")
    sent_at = _now(ctx)
    ctx.conn.execute(
        "INSERT INTO emails (id, thread_id, folder, sender, recipients, cc, subject, body, sent_at, is_read, "
        "in_reply_to) VALUES (?, ?, 'sent', ?, ?, ?, ?, ?, ?, 1, ?)",
        (email_id, thread_id, _owner_email(ctx), json.dumps(sorted(a.lower() for a in to)),
         json.dumps(sorted(a.lower() for a in cc)), subject, body, sent_at, in_reply_to))
    return {"id": email_id, "thread_id": thread_id, "to": sorted(to), "cc": sorted(cc), "sent_at": sent_at}


# ------------------------------------------------------------------------------------------------- reads


@tool("read", "The owner's name, email address and timezone, and the current date and time ('now').")
def get_profile(ctx: ToolContext, args: NoArgs) -> dict[str, Any]:
    meta = {r["key"]: r["value"] for r in ctx.all("SELECT key, value FROM meta")}
    now = datetime.strptime(meta["now"], _STAMP)
    return {"name": meta.get("owner_name"), "email": meta.get("owner_email"), "timezone": meta.get("timezone"),
            "now": meta["now"], "weekday": f"{now:%A}"}


class SearchContacts(Args):
    query: str = Field(default="", max_length=100,
                       description="Text in the contact's name, email address or company; empty lists all.")


@tool("read", "Contacts whose name, email address or company contains the query (case-insensitive).")
def search_contacts(ctx: ToolContext, args: SearchContacts) -> list[dict[str, Any]]:
    like = f"%{args.query.strip()}%"
    return ctx.all("SELECT * FROM contacts WHERE name LIKE ? OR email LIKE ? OR company LIKE ? ORDER BY id",
                   like, like, like)


class ListEvents(Args):
    start_date: LocalDate = Field(description="First day, YYYY-MM-DD.")
    end_date: LocalDate = Field(description="Last day (inclusive), YYYY-MM-DD.")


@tool("read", "Events (confirmed and cancelled, with attendees) starting between two dates, inclusive.")
def list_events(ctx: ToolContext, args: ListEvents) -> list[dict[str, Any]]:
    first, last = date.fromisoformat(args.start_date), date.fromisoformat(args.end_date)
    if last < first:
        raise ToolFailure("end_date is before start_date")
    if (last - first).days > 62:
        raise ToolFailure("list at most 62 days at a time")
    # two statements, not two per event (as _event would): each costs more than the rows it reads
    events = ctx.all("SELECT * FROM events WHERE substr(start, 1, 10) BETWEEN ? AND ? ORDER BY start, id",
                     args.start_date, args.end_date)
    attendees: dict[str, list[dict[str, Any]]] = {}
    for row in ctx.all("SELECT a.event_id, c.id AS contact_id, c.name, c.email, a.response FROM event_attendees a "
                       "JOIN contacts c ON c.id = a.contact_id JOIN events e ON e.id = a.event_id "
                       "WHERE substr(e.start, 1, 10) BETWEEN ? AND ? ORDER BY c.id", args.start_date, args.end_date):
        attendees.setdefault(row.pop("event_id"), []).append(row)
    for event in events:
        event["attendees"] = attendees.get(event["id"], [])
    return events


class FindFreeSlots(Args):
    date: LocalDate = Field(description="The day to search, YYYY-MM-DD.")
    duration_minutes: int = Field(ge=MIN_MINUTES, le=MAX_MINUTES, description="Length of the slot needed.")
    earliest: str = Field(default=f"{WORK_START:%H:%M}", pattern=r"^([01]\d|2[0-3]):[0-5]\d$",
                          description="Earliest start time considered, HH:MM.")


@tool("read", "Free intervals on a day, within working hours and after now, at least as long as the duration.")
def find_free_slots(ctx: ToolContext, args: FindFreeSlots) -> dict[str, Any]:
    day = date.fromisoformat(args.date)
    if day.weekday() >= 5:
        return {"date": args.date, "free": [], "note": f"{day:%A} is not a working day"}
    floor = max(f"{args.date}T{WORK_START:%H:%M}", f"{args.date}T{args.earliest}", _now(ctx))
    ceiling = f"{args.date}T{WORK_END:%H:%M}"
    busy = ctx.all("SELECT start, end FROM events WHERE status = 'confirmed' AND start < ? AND end > ? "
                   "ORDER BY start", ceiling, floor)
    free, cursor = [], floor
    for event in [*busy, {"start": ceiling, "end": ceiling}]:
        if event["start"] > cursor:
            gap = datetime.strptime(event["start"], _STAMP) - datetime.strptime(cursor, _STAMP)
            if gap >= timedelta(minutes=args.duration_minutes):
                free.append({"start": cursor, "end": event["start"]})
        cursor = max(cursor, event["end"])
    return {"date": args.date, "free": free}


class SearchEmails(Args):
    query: str = Field(default="", max_length=100, description="Text in the subject or body; empty for all.")
    folder: Literal["inbox", "sent", "archive", "all"] = Field(default="inbox", description="Folder to search.")
    sender: str | None = Field(default=None, max_length=200,
                               description="Only mail whose sender's address or contact name contains this text.")
    unread_only: bool = Field(default=False, description="Only unread mail.")


@tool("read", "Summaries of matching emails, newest first. Does not change read flags.")
def search_emails(ctx: ToolContext, args: SearchEmails) -> list[dict[str, Any]]:
    like = f"%{args.query.strip()}%"
    who = f"%{(args.sender or '').strip()}%"
    rows = ctx.all(
        "SELECT e.id, e.thread_id, e.folder, e.sender, c.name AS sender_name, e.subject, e.sent_at, e.is_read "
        "FROM emails e LEFT JOIN contacts c ON c.email = e.sender "
        "WHERE (e.subject LIKE ? OR e.body LIKE ?) AND (? = 'all' OR e.folder = ?) "
        "AND (e.sender LIKE ? OR c.name LIKE ?) AND (? = 0 OR e.is_read = 0) ORDER BY e.sent_at DESC, e.id DESC",
        like, like, args.folder, args.folder, who, who, int(args.unread_only))
    for row in rows:
        row["is_read"] = bool(row["is_read"])
    return rows


class EmailRef(Args):
    email_id: EmailId = Field(description="The email's id, e.g. em_3.")


@tool("read", "The full email: sender, recipients, cc, subject and body. Does not mark it read.")
def read_email(ctx: ToolContext, args: EmailRef) -> dict[str, Any]:
    return _email_row(ctx, args.email_id)


# ------------------------------------------------------------------------------------------ calendar writes


class CreateEvent(Args):
    title: str = Field(min_length=1, max_length=120, description="The event's title.")
    start: LocalDateTime = Field(description="Start, owner-local YYYY-MM-DDTHH:MM.")
    end: LocalDateTime = Field(description="End, owner-local YYYY-MM-DDTHH:MM.")
    attendee_ids: list[ContactId] = Field(default_factory=list,
                                          description="Contact ids of the attendees (not the owner).")
    location: str | None = Field(default=None, max_length=120, description="Where it takes place.")
    description: str | None = Field(default=None, max_length=2000, description="Notes for the attendees.")


@tool("write", "Create a confirmed event on the owner's calendar, inviting contacts (responses start 'pending').")
def create_event(ctx: ToolContext, args: CreateEvent) -> dict[str, Any]:
    if len(set(args.attendee_ids)) != len(args.attendee_ids):
        raise ToolFailure("attendee_ids lists a contact twice")
    if len(args.attendee_ids) > MAX_ATTENDEES:
        raise PolicyViolation(f"an event has at most {MAX_ATTENDEES} attendees, not {len(args.attendee_ids)}")
    _contact_ids_exist(ctx, args.attendee_ids)
    _check_slot(ctx, args.start, args.end)
    event_id = _next_id(ctx, "events", "id", "evt_")
    ctx.conn.execute("INSERT INTO events (id, title, start, end, location, description) VALUES (?, ?, ?, ?, ?, ?)",
                     (event_id, args.title, args.start, args.end, args.location, args.description))
    ctx.conn.executemany("INSERT INTO event_attendees (event_id, contact_id) VALUES (?, ?)",
                         [(event_id, c) for c in args.attendee_ids])
    return _event(ctx, event_id)


class RescheduleEvent(Args):
    event_id: EventId = Field(description="The event to move, e.g. evt_4.")
    start: LocalDateTime = Field(description="New start, YYYY-MM-DDTHH:MM.")
    end: LocalDateTime = Field(description="New end, YYYY-MM-DDTHH:MM.")


@tool("write", "Move a future, confirmed event to a new start and end.")
def reschedule_event(ctx: ToolContext, args: RescheduleEvent) -> dict[str, Any]:
    _changeable_event(ctx, args.event_id)
    _check_slot(ctx, args.start, args.end, exclude=args.event_id)
    ctx.conn.execute("UPDATE events SET start = ?, end = ? WHERE id = ?", (args.start, args.end, args.event_id))
    return _event(ctx, args.event_id)


class EventRef(Args):
    event_id: EventId = Field(description="The event, e.g. evt_4.")


@tool("write", "Cancel a future, confirmed event (it stays on the calendar with status 'cancelled').")
def cancel_event(ctx: ToolContext, args: EventRef) -> dict[str, Any]:
    _changeable_event(ctx, args.event_id)
    ctx.conn.execute("UPDATE events SET status = 'cancelled' WHERE id = ?", (args.event_id,))
    return _event(ctx, args.event_id)


class AddAttendee(Args):
    event_id: EventId = Field(description="The event, e.g. evt_4.")
    contact_id: ContactId = Field(description="The contact to invite, e.g. con_2.")


@tool("write", "Invite one more contact to a future, confirmed event.")
def add_attendee(ctx: ToolContext, args: AddAttendee) -> dict[str, Any]:
    event = _changeable_event(ctx, args.event_id)
    _contact_ids_exist(ctx, [args.contact_id])
    if any(a["contact_id"] == args.contact_id for a in event["attendees"]):
        raise ToolFailure(f"{args.contact_id} is already invited to {args.event_id}")
    if len(event["attendees"]) >= MAX_ATTENDEES:
        raise PolicyViolation(f"{args.event_id} already has the maximum of {MAX_ATTENDEES} attendees")
    ctx.conn.execute("INSERT INTO event_attendees (event_id, contact_id) VALUES (?, ?)",
                     (args.event_id, args.contact_id))
    return _event(ctx, args.event_id)


# --------------------------------------------------------------------------------------------- mail writes


class SendEmail(Args):
    to: list[Address] = Field(min_length=1, max_length=10, description="Recipient addresses.")
    cc: list[Address] = Field(default_factory=list, max_length=10, description="Cc addresses.")
    subject: str = Field(min_length=1, max_length=200, description="Subject line.")
    body: str = Field(min_length=1, max_length=10000, description="Plain-text body.")


@tool("write", "Send a new email from the owner (a new thread). Every address must belong to a contact.")
def send_email(ctx: ToolContext, args: SendEmail) -> dict[str, Any]:
    _require_contacts(ctx, [*args.to, *args.cc])
    thread_id = _next_id(ctx, "emails", "thread_id", "th_")
    return _store_email(ctx, thread_id=thread_id, to=args.to, cc=args.cc, subject=args.subject, body=args.body,
                        in_reply_to=None)


class ReplyEmail(Args):
    email_id: EmailId = Field(description="The received email to answer.")
    body: str = Field(min_length=1, max_length=10000, description="Plain-text body of the reply.")
    reply_all: bool = Field(description="false: to the sender only; true: also to every other recipient and cc.")


@tool("write", "Reply to a received email in its thread. Every address must belong to a contact.")
def reply_email(ctx: ToolContext, args: ReplyEmail) -> dict[str, Any]:
    original, owner = _email_row(ctx, args.email_id), _owner_email(ctx).lower()
    if original["folder"] == "sent":
        raise ToolFailure(f"{args.email_id} was sent by the owner; use send_email to write again")
    sender = original["sender"].lower()
    others = {a.lower() for a in [*original["recipients"], *original["cc"]]} - {owner, sender}
    cc = sorted(others) if args.reply_all else []
    _require_contacts(ctx, [sender, *cc])
    subject = original["subject"] if original["subject"].lower().startswith("re:") else f"Re: {original['subject']}"
    return _store_email(ctx, thread_id=original["thread_id"], to=[sender], cc=cc, subject=subject, body=args.body,
                        in_reply_to=args.email_id)


@tool("write", "Move a received email from the inbox to the archive. (Emails can never be deleted.)")
def archive_email(ctx: ToolContext, args: EmailRef) -> dict[str, Any]:
    email = _email_row(ctx, args.email_id)
    if email["folder"] != "inbox":
        raise ToolFailure(f"{args.email_id} is in '{email['folder']}', not in the inbox; nothing to archive")
    ctx.conn.execute("UPDATE emails SET folder = 'archive' WHERE id = ?", (args.email_id,))
    return {"id": args.email_id, "folder": "archive"}


class MarkRead(Args):
    email_id: EmailId = Field(description="The email, e.g. em_3.")
    read: bool = Field(default=True, description="true marks it read, false unread.")


@tool("write", "Set an email's read flag.")
def mark_read(ctx: ToolContext, args: MarkRead) -> dict[str, Any]:
    email = _email_row(ctx, args.email_id)
    if email["is_read"] == args.read:
        raise ToolFailure(f"{args.email_id} is already marked {'read' if args.read else 'unread'}")
    ctx.conn.execute("UPDATE emails SET is_read = ? WHERE id = ?", (int(args.read), args.email_id))
    return {"id": args.email_id, "is_read": args.read}


# ------------------------------------------------------------------------------------------ contact writes


class CreateContact(Args):
    name: str = Field(min_length=1, max_length=100, description="Full name.")
    email: Address = Field(description="Email address (unique among contacts).")
    company: str | None = Field(default=None, max_length=100, description="Company, if given.")
    phone: str | None = Field(default=None, max_length=40, description="Phone number, if given.")


@tool("write", "Add a contact to the owner's address book.")
def create_contact(ctx: ToolContext, args: CreateContact) -> dict[str, Any]:
    if ctx.one("SELECT id FROM contacts WHERE email = ?", args.email) is not None:
        raise ToolFailure(f"a contact with address {args.email} already exists")
    contact_id = _next_id(ctx, "contacts", "id", "con_")
    ctx.conn.execute("INSERT INTO contacts (id, name, email, company, phone) VALUES (?, ?, ?, ?, ?)",
                     (contact_id, args.name, args.email.lower(), args.company, args.phone))
    return ctx.one("SELECT * FROM contacts WHERE id = ?", contact_id) or {}


class UpdateContact(Args):
    contact_id: ContactId = Field(description="The contact, e.g. con_2.")
    name: str | None = Field(default=None, min_length=1, max_length=100, description="New full name.")
    email: Address | None = Field(default=None, description="New email address.")
    company: str | None = Field(default=None, max_length=100, description="New company.")
    phone: str | None = Field(default=None, max_length=40, description="New phone number.")


@tool("write", "Change some fields of a contact; fields left out keep their value.")
def update_contact(ctx: ToolContext, args: UpdateContact) -> dict[str, Any]:
    if ctx.one("SELECT id FROM contacts WHERE id = ?", args.contact_id) is None:
        raise ToolFailure(f"no contact {args.contact_id}")
    changes = args.model_dump(exclude={"contact_id"}, exclude_none=True)
    if not changes:
        raise ToolFailure("give at least one field to change")
    if "email" in changes:
        changes["email"] = changes["email"].lower()
        clash = ctx.one("SELECT id FROM contacts WHERE email = ? AND id != ?", changes["email"], args.contact_id)
        if clash is not None:
            raise ToolFailure(f"{changes['email']} already belongs to {clash['id']}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    ctx.conn.execute(f"UPDATE contacts SET {assignments} WHERE id = ?", (*changes.values(), args.contact_id))
    return ctx.one("SELECT * FROM contacts WHERE id = ?", args.contact_id) or {}


DOMAIN = Domain(
    name="assistant",
    schema_sql=SCHEMA_SQL,
    tools=(get_profile, search_contacts, list_events, find_free_slots, search_emails, read_email,
           create_event, reschedule_event, cancel_event, add_attendee,
           send_email, reply_email, archive_email, mark_read, create_contact, update_contact),
    policy=POLICY,
    ignore_fields=("emails.subject", "emails.body", "events.title", "events.location", "events.description"),
)
