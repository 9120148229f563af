"""The ``timed-assistant`` suite: eight goals over a changing inbox, chat and calendar, sync and async."""

from __future__ import annotations

import copy
from typing import Any

from envgym.plugin import Split, TaskSpec
from envgym_timed.authoring.common import Script, expect, pair
from envgym_timed.scenarios.assistant import SCENARIO

FAMILY = "assistant"
LATENCY = {name: {"dist": "uniform", "low": 5, "high": 40}
           for name in ("send_message", "send_email", "create_event", "move_event", "cancel_event", "add_attendee")}

CONTACTS = {
    cid: {"id": cid, "name": name, "role": role} for cid, name, role in (
        ("sam", "Sam Rivera", "partner"), ("dana", "Dana Kim", "colleague"), ("priya", "Priya Shah", "colleague"),
        ("courier", "QuickShip courier", "service"), ("landlord", "Mr. Okafor", "landlord"),
        ("plumber", "Ben the plumber", "service"), ("omar", "Omar Haddad", "colleague"),
        ("caterer", "Green Fork catering", "service"), ("jo", "Jo Lindqvist", "colleague"),
        ("mia", "Mia Rossi", "friend"), ("lee", "Lee Chen", "colleague"), ("airline", "SkyLine alerts", "service"),
        ("news", "Weekly digest", "newsletter"))
}
CALENDAR = {
    eid: {"id": eid, "title": title, "start": start, "minutes": minutes, "attendees": attendees}
    for eid, title, start, minutes, attendees in (
        ("ev_standup", "Standup", "09:30", 15, ["dana", "omar"]),
        ("ev_offsite", "Team offsite", "11:00", 120, ["dana", "omar", "priya"]),
        ("ev_design", "Design review", "14:00", 60, ["dana"]),
        ("ev_call", "Partner call", "15:00", 30, ["lee"]),
        ("ev_dinner", "Dinner with Mia", "19:00", 90, ["mia"]))
}
NOISE = [
    {"id": "newsletter", "at": "09:10", "effects": [{"email": {
        "from": "news", "subject": "This week", "body": "Five productivity tips for busy people."}}]},
    {"id": "lee_coffee", "at": "09:35", "effects": [{"message": {"from": "lee", "text": "Coffee later? No rush."}}]},
]


def _world() -> dict[str, Any]:
    return {"contacts": copy.deepcopy(CONTACTS), "calendar": copy.deepcopy(CALENDAR), "messages": {}, "inbox": {},
            "sent": {}}


def _message(event_id: str, at: str, sender: str, text: str) -> dict[str, Any]:
    return {"id": event_id, "at": at, "effects": [{"message": {"from": sender, "text": text}}]}


def _email(event_id: str, at: str, sender: str, subject: str, body: str) -> dict[str, Any]:
    return {"id": event_id, "at": at, "effects": [{"email": {"from": sender, "subject": subject, "body": body}}]}


def _verifier(expected: list[dict[str, Any]], **extra: Any) -> list[dict[str, Any]]:
    return [{"type": "timed_write", "expected": expected, **extra}]


def _task(key: str, split: Split, instruction: str, events: list[dict[str, Any]], script: Script,
          verifiers: list[dict[str, Any]]) -> list[TaskSpec]:
    return pair(family=FAMILY, key=key, instruction=instruction, world=_world(), events=[*NOISE, *events],
                latency=LATENCY, script=script, verifiers=verifiers, split=split)


def courier() -> list[TaskSpec]:
    s = Script(SCENARIO)
    s.wait_for("courier")
    s.call("read_messages", contact="courier")
    s.call("create_event", title="Parcel delivery", start="11:00", minutes=60)
    s.call("send_message", to="sam", text="The parcel arrives between 11:00 and 12:00.")
    s.say("Blocked 11:00-12:00 for the parcel and told Sam.")
    return _task("courier", "test",
                 "The courier will message you today's delivery window for our parcel. As soon as you know it, "
                 "block that window in the calendar as 'Parcel delivery' and message Sam the window. Sam needs "
                 "to know before 10:00.",
                 [_message("courier_msg", "09:25", "courier",
                           "Your parcel will be delivered between 11:00 and 12:00.")],
                 s, _verifier([
                     expect("create_event", after=("courier_msg",), title={"$contains": "parcel"}, start="11:00",
                            minutes=60),
                     expect("send_message", after=("courier_msg",), not_after="10:00", to="sam",
                            text={"$contains": "11:00"})],
                     forbidden=[{"tool": "send_message", "args": {"to": "sam"}, "before": ["courier_msg"]}]))


def reschedule() -> list[TaskSpec]:
    s = Script(SCENARIO)
    s.wait_for("dana", timeout=7200)
    s.call("move_event", event_id="ev_design", start="16:00")
    s.call("send_email", to="dana", subject="Design review moved", body="Done: the design review is now at 16:00.")
    s.say("Moved the design review to 16:00 and confirmed to Dana.")
    return _task("reschedule", "test",
                 "Dana may ask to move today's 14:00 design review. If she does, move the calendar event to the "
                 "time she asks for and confirm to her by email before 13:00. Do not cancel the review.",
                 [_email("dana_email", "10:40", "dana", "Design review",
                         "Could we move the design review to 16:00 today?")],
                 s, _verifier([
                     expect("move_event", after=("dana_email",), event_id="ev_design", start="16:00"),
                     expect("send_email", after=("dana_email",), not_after="13:00", to="dana",
                            body={"$contains": "16:00"})],
                     forbidden=[{"tool": "cancel_event"}],
                     final_state=[{"path": "calendar.ev_design.start", "equals": "16:00"}]))


def ask_priya() -> list[TaskSpec]:
    s = Script(SCENARIO)
    s.call("send_message", to="priya", text="Can you join the 15:00 partner call today?")
    s.wait_for("priya")
    s.call("add_attendee", event_id="ev_call", contact="priya")
    s.say("Priya said yes; she is invited to the 15:00 partner call.")
    reply = {"id": "priya_reply", "when": {"called": "send_message", "args": {"to": "priya"}}, "delay": 600,
             "effects": [{"message": {"from": "priya", "text": "Yes, happy to join the 15:00 call."}}]}
    return _task("ask-priya", "test",
                 "Ask Priya by message whether she can join today's 15:00 partner call. If she says yes, add her "
                 "to that calendar event. Have it done before 12:00.",
                 [reply], s, _verifier([
                     expect("send_message", id="ask", to="priya", text={"$contains": "15:00"}),
                     expect("add_attendee", after=("priya_reply",), not_after="12:00", event_id="ev_call",
                            contact="priya")],
                     forbidden=[{"tool": "add_attendee", "before": ["priya_reply"]}]))


def plumber() -> list[TaskSpec]:
    s = Script(SCENARIO)
    s.wait_for("landlord")
    s.call("send_message", to="plumber", text="Can you come today at 15:30 for the repair?")
    s.wait_for("plumber")
    s.call("create_event", title="Plumber visit", start="15:30", minutes=60)
    s.call("send_email", to="landlord", subject="Repair confirmed", body="The plumber confirmed 15:30 today.")
    s.say("The plumber confirmed 15:30; calendar updated and the landlord told.")
    confirm = {"id": "plumber_confirm", "after": ["landlord_email"], "delay": 900,
               "when": {"called": "send_message", "args": {"to": "plumber", "text": {"$contains": "15:30"}}},
               "effects": [{"message": {"from": "plumber", "text": "Confirmed, see you at 15:30."}}]}
    return _task("plumber", "test",
                 "The landlord will email a repair slot. Forward the slot to the plumber by message; once the "
                 "plumber confirms, add 'Plumber visit' (60 minutes) to the calendar at that slot and email the "
                 "landlord that it is confirmed, before 13:00.",
                 [_email("landlord_email", "09:40", "landlord", "Repair slot",
                         "The plumber can come today at 15:30."), confirm],
                 s, _verifier([
                     expect("send_message", id="forward", after=("landlord_email",), to="plumber",
                            text={"$contains": "15:30"}),
                     expect("create_event", after=("plumber_confirm",), title={"$contains": "plumber"},
                            start="15:30", minutes=60),
                     expect("send_email", after=("plumber_confirm",), not_after="13:00", to="landlord",
                            body={"$contains": "confirm"})]))


def offsite() -> list[TaskSpec]:
    s = Script(SCENARIO)
    s.wait_for("dana")
    cancel = s.call("cancel_event", event_id="ev_offsite")
    s.wait_for(cancel)
    s.call("create_event", title="Focus time", start="11:00", minutes=120)
    s.say("The offsite was cancelled: removed it and booked focus time 11:00-13:00.")
    return _task("offsite", "train",
                 "Watch your inbox: the 11:00 team offsite might be cancelled. If it is, delete it from the "
                 "calendar and then book 'Focus time' from 11:00 for 120 minutes in its place, both before 10:30.",
                 [_email("offsite_cancelled", "09:45", "dana", "Offsite cancelled",
                         "The 11:00 team offsite is cancelled today.")],
                 s, _verifier([
                     expect("cancel_event", id="cancel", after=("offsite_cancelled",), not_after="10:30",
                            event_id="ev_offsite"),
                     expect("create_event", after=("offsite_cancelled", "cancel"), not_after="10:30",
                            title={"$contains": "focus"}, start="11:00", minutes=120)]))


def two_deadlines() -> list[TaskSpec]:
    s = Script(SCENARIO)
    s.wait_for("omar")
    s.call("send_message", to="omar", text="We are using room Atlas.")
    s.wait_for("caterer", timeout=7200)
    s.call("send_message", to="caterer", text="12 people, thanks.")
    s.say("Told Omar the room (Atlas) and the caterer the headcount (12).")
    return _task("two-deadlines", "test",
                 "Omar will ask which meeting room we use: answer 'Atlas' by message before 11:00. The caterer "
                 "will ask for lunch's headcount: reply 12 by message before 12:00.",
                 [_message("omar_q", "09:50", "omar", "Which meeting room are we using today?"),
                  _message("caterer_q", "10:20", "caterer", "How many people for lunch?")],
                 s, _verifier([
                     expect("send_message", after=("omar_q",), not_after="11:00", to="omar",
                            text={"$contains": "atlas"}),
                     expect("send_message", after=("caterer_q",), not_after="12:00", to="caterer",
                            text={"$contains": "12"})]))


def stale_time() -> list[TaskSpec]:
    s = Script(SCENARIO)
    s.wait_for("jo")
    s.wait_for("jo")
    s.call("create_event", title="Vendor demo", start="16:30", minutes=45)
    s.say("Booked the vendor demo at 16:30, Jo's final time.")
    return _task("stale-time", "dev",
                 "Jo will confirm the time of today's vendor demo. She may send a tentative time first: book only "
                 "the final time, as 'Vendor demo' for 45 minutes.",
                 [_message("jo_tentative", "09:20", "jo", "Tentatively 15:00 for the demo; I will confirm."),
                  _message("jo_final", "09:50", "jo", "Final: the vendor demo is at 16:30.")],
                 s, _verifier([
                     expect("create_event", after=("jo_final",), title={"$contains": "demo"}, start="16:30",
                            minutes=45)],
                     forbidden=[{"tool": "create_event", "args": {"start": "15:00"}}]))


def flight() -> list[TaskSpec]:
    s = Script(SCENARIO)
    s.wait_for("airline", timeout=7200)
    move = s.call("move_event", event_id="ev_dinner", start="20:30")
    s.wait_for(move)
    s.call("send_message", to="mia", text="My flight is late: dinner moved to 20:30.")
    s.say("Dinner moved to 20:30 and Mia told.")
    return _task("flight", "train",
                 "If a flight-delay alert comes in, push tonight's dinner with Mia back by the delay, and once the "
                 "calendar is updated, message Mia the new time.",
                 [_email("flight_alert", "10:15", "airline", "Delay", "Flight LX318 is delayed by 90 minutes.")],
                 s, _verifier([
                     expect("move_event", id="move", after=("flight_alert",), event_id="ev_dinner", start="20:30"),
                     expect("send_message", after=("move",), to="mia", text={"$contains": "20:30"})],
                     final_state=[{"path": "calendar.ev_dinner.start", "equals": "20:30"}]))


def tasks() -> list[TaskSpec]:
    return [t for make in (courier, reschedule, ask_priya, plumber, offsite, two_deadlines, stale_time, flight)
            for t in make()]
