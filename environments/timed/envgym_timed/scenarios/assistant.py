"""A personal assistant whose inbox, messages and calendar change during the day.

Tables: ``contacts``, ``messages`` (chat, received), ``inbox`` (email, received), ``calendar`` (events:
title, start ``HH:MM``, minutes, attendees) and ``sent`` (what the agent sent). Reading is instant (a local
cache); sending and calendar changes go through a slow server: in the async variant they return a handle
and take effect when done. Messages and emails arrive as the task's scripted events, some at set times,
some in reply to what the agent does.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from envgym.plugin import NoArgs
from envgym.plugin.timed import parse_time_of_day
from envgym_timed.toolkit import Scenario, ToolFailure, tool
from envgym_timed.world import World


def _contact(world: World, contact: str) -> str:
    key = contact.strip().lower()
    if key not in world.table("contacts"):
        raise ToolFailure(f"unknown contact {contact!r}; see list_contacts")
    return key


def _start(text: str) -> str:
    try:
        seconds = parse_time_of_day(text)
    except ValueError as exc:
        raise ToolFailure(str(exc)) from None
    return f"{int(seconds) // 3600:02d}:{int(seconds) % 3600 // 60:02d}"


def _event(world: World, event_id: str) -> dict[str, Any]:
    row = world.table("calendar").get(event_id)
    if row is None:
        raise ToolFailure(f"no calendar event {event_id!r}; see list_calendar")
    return row


class ReadMessages(BaseModel):
    contact: str | None = Field(default=None, description="Only messages from this contact id.")


class ReadInbox(BaseModel):
    sender: str | None = Field(default=None, description="Only emails from this contact id.")


class SendMessage(BaseModel):
    to: str = Field(description="A contact id.")
    text: str


class SendEmail(BaseModel):
    to: str = Field(description="A contact id.")
    subject: str
    body: str


class CreateEvent(BaseModel):
    title: str
    start: str = Field(description="Time of day, HH:MM.")
    minutes: int = Field(gt=0, le=24 * 60)
    attendees: list[str] = Field(default_factory=list, description="Contact ids.")


class MoveEvent(BaseModel):
    event_id: str
    start: str = Field(description="New time of day, HH:MM.")


class EventId(BaseModel):
    event_id: str


class AddAttendee(BaseModel):
    event_id: str
    contact: str


@tool("read", "List your contacts (id, name, role).")
def list_contacts(world: World, args: NoArgs) -> list[dict[str, Any]]:
    return sorted(world.table("contacts").values(), key=lambda r: r["id"])


@tool("read", "Read the chat messages you have received so far.")
def read_messages(world: World, args: ReadMessages) -> list[dict[str, Any]]:
    rows = sorted(world.table("messages").values(), key=lambda r: (r["time"], r["id"]))
    return [r for r in rows if args.contact is None or r["from"] == args.contact.strip().lower()]


@tool("read", "Read the emails you have received so far.")
def read_inbox(world: World, args: ReadInbox) -> list[dict[str, Any]]:
    rows = sorted(world.table("inbox").values(), key=lambda r: (r["time"], r["id"]))
    return [r for r in rows if args.sender is None or r["from"] == args.sender.strip().lower()]


@tool("read", "List today's calendar events.")
def list_calendar(world: World, args: NoArgs) -> list[dict[str, Any]]:
    return sorted(world.table("calendar").values(), key=lambda r: (r["start"], r["id"]))


@tool("write", "Send a chat message to a contact.", slow=True)
def send_message(world: World, args: SendMessage) -> dict[str, Any]:
    to = _contact(world, args.to)
    row_id = world.insert("sent", {"channel": "message", "to": to, "text": args.text, "time": world.clock()})
    return {"sent": row_id, "to": to, "at": world.clock()}


@tool("write", "Send an email to a contact.", slow=True)
def send_email(world: World, args: SendEmail) -> dict[str, Any]:
    to = _contact(world, args.to)
    row_id = world.insert("sent", {"channel": "email", "to": to, "subject": args.subject, "text": args.body,
                                   "time": world.clock()})
    return {"sent": row_id, "to": to, "at": world.clock()}


@tool("write", "Create a calendar event.", slow=True)
def create_event(world: World, args: CreateEvent) -> dict[str, Any]:
    start = _start(args.start)
    attendees = [_contact(world, a) for a in args.attendees]
    row_id = world.insert("calendar", {"title": args.title, "start": start, "minutes": args.minutes,
                                       "attendees": attendees}, prefix="ev")
    return {"event_id": row_id, "start": start}


@tool("write", "Move a calendar event to a new start time (same length).", slow=True)
def move_event(world: World, args: MoveEvent) -> dict[str, Any]:
    row = _event(world, args.event_id)
    row["start"] = _start(args.start)
    return {"event_id": args.event_id, "start": row["start"]}


@tool("write", "Cancel (delete) a calendar event.", slow=True)
def cancel_event(world: World, args: EventId) -> dict[str, Any]:
    _event(world, args.event_id)
    del world.table("calendar")[args.event_id]
    return {"cancelled": args.event_id}


@tool("write", "Invite a contact to a calendar event.", slow=True)
def add_attendee(world: World, args: AddAttendee) -> dict[str, Any]:
    row = _event(world, args.event_id)
    contact = _contact(world, args.contact)
    if contact in row["attendees"]:
        raise ToolFailure(f"{contact} is already invited to {args.event_id}")
    row["attendees"] = [*row["attendees"], contact]
    return {"event_id": args.event_id, "attendees": row["attendees"]}


SCENARIO = Scenario(
    name="assistant",
    description="A personal assistant's inbox, chat and calendar, changing during the day.",
    tools=(list_contacts, read_messages, read_inbox, list_calendar, send_message, send_email, create_event,
           move_event, cancel_event, add_attendee),
    policy=("You are the user's personal assistant. Messages and emails keep arriving during the day; act on "
            "information only once it has arrived, and meet the deadlines the user gives. Contacts are "
            "addressed by their id. Do only what the user asked: no extra messages, emails or calendar "
            "changes. When everything is done, reply with a short summary."),
)
