"""The ``tool-assistant`` suite, generated: a personal assistant's calendar, email and contacts.

``build()`` returns the suite deterministically; ``python -m envgym_tool.authoring.assistant`` writes it to
``tasks/tool-assistant/tasks.jsonl``. Every task starts from one base store (:func:`base_state`: the owner
Jordan Lee on Monday 2025-03-10 09:00, 14 contacts, 17 events over three weeks, 21 emails) and is one of
five kinds, recorded in ``metadata.kind`` and ``tags``:

- ``refuse``: the policy forbids the request. No write may happen, the final message must say why
  (regex), and the agent must have looked something up, so doing nothing fails.
- ``no-change``: the request is already satisfied or is a question; no writes, an answer check.
- ``collateral``: a plausible wrong path writes one thing too many; the write-action verifier catches it.
- ``multi-step``: look up, write, then tell someone, some with ``ordered`` writes.
- ``single-write``: one write with exact arguments.

Free-text fields (titles, subjects, bodies, locations) are left out of the final-state comparison and
checked with matchers instead. Each write task also carries SQL checks on the final store, so the null
agent scores 0 everywhere. About 40% of each kind goes to ``test``. This module is long because it is
data: one short block per task.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from envgym.plugin import (
    Action,
    AnswerSpec,
    AnyOfSpec,
    CalledCheck,
    Criterion,
    ExpectedWrite,
    Limits,
    RubricSpec,
    SqlCheck,
    TaskSpec,
    ToolCall,
    VerifierSpec,
    WriteActionSpec,
    answer_pattern,
    number_pattern,
    refuse_quotes,
    write_suite,
)

ENV_ID = "tool/assistant-v1"
FREE_TEXT = ("emails.subject", "emails.body", "events.title", "events.location", "events.description")
OWNER = "jordan.lee@northwind.example"
KINDS = ("refuse", "no-change", "collateral", "multi-step", "single-write")

# ------------------------------------------------------------------------------------------- base store

CONTACTS = [
    ("con_1", "Alice Moreno", "alice.moreno@northwind.example", "+49 30 555 0101", "Northwind", "Product lead"),
    ("con_2", "Bob Okafor", "bob.okafor@northwind.example", "+49 30 555 0102", "Northwind", "API team"),
    ("con_3", "Carla Jensen", "carla@jensen-design.example", "+45 33 55 0103", "Jensen Design", "Contract designer"),
    ("con_4", "David Kim", "david.kim@acme-logistics.example", "+1 312 555 0104", "Acme Logistics", "Client"),
    ("con_5", "Elena Petrova", "elena.petrova@northwind.example", "+49 30 555 0105", "Northwind", "Finance"),
    ("con_6", "Farid Haddad", "farid@haddad-law.example", "+49 30 555 0142", "Haddad Law", "Lawyer"),
    ("con_7", "Grace Liu", "grace.liu@acme-logistics.example", "+1 312 555 0107", "Acme Logistics", "Client"),
    ("con_8", "Henrik Nilsson", "henrik.nilsson@northwind.example", "+49 30 555 0108", "Northwind", "Manager"),
    ("con_9", "Isabel Duarte", "isabel.duarte@brightpath.example", "+351 21 555 0109", "BrightPath Recruiting",
     "Recruiter"),
    ("con_10", "James O'Neil", "james.oneil@northwind.example", "+49 30 555 0110", "Northwind", "Design"),
    ("con_11", "Keiko Tanaka", "keiko.tanaka@tanaka-consulting.example", "+81 3 5555 0111", "Tanaka Consulting",
     "Strategy advisor"),
    ("con_12", "Liam Murphy", "liam.murphy@northwind.example", "+49 30 555 0112", "Northwind", "Engineering"),
    ("con_13", "Maya Singh", "maya.singh@acme-logistics.example", "+1 312 555 0113", "Acme Logistics", "Client"),
    ("con_14", "Nora Berg", "nora.berg@northwind.example", "+49 30 555 0114", "Northwind", "Engineering"),
]

STANDUP = ["con_1", "con_2", "con_12", "con_14"]
EVENTS = [  # id, title, start, end, location, status, attendees
    ("evt_1", "Quarterly planning", "2025-03-07T14:00", "2025-03-07T15:30", "Room 4.01", "confirmed",
     ["con_8", "con_1"]),
    ("evt_2", "Team standup", "2025-03-10T09:30", "2025-03-10T09:45", None, "confirmed", STANDUP),
    ("evt_3", "Design review", "2025-03-10T11:00", "2025-03-10T12:00", "Room 2.14", "confirmed",
     ["con_10", "con_3", "con_1"]),
    ("evt_4", "Lunch with Farid", "2025-03-10T12:30", "2025-03-10T13:30", "Café Linde", "confirmed", ["con_6"]),
    ("evt_5", "Acme Logistics weekly sync", "2025-03-11T10:00", "2025-03-11T11:00", None, "confirmed",
     ["con_4", "con_7"]),
    ("evt_6", "1:1 with Henrik", "2025-03-11T15:00", "2025-03-11T15:30", None, "confirmed", ["con_8"]),
    ("evt_7", "Budget review", "2025-03-12T09:00", "2025-03-12T10:30", "Room 4.01", "confirmed", ["con_5", "con_8"]),
    ("evt_8", "Product roadmap sync", "2025-03-12T14:00", "2025-03-12T15:00", None, "confirmed", ["con_1", "con_2"]),
    ("evt_9", "Candidate interview: Priya Raman", "2025-03-13T10:00", "2025-03-13T11:00", None, "confirmed",
     ["con_9"]),
    ("evt_10", "Dentist", "2025-03-13T16:00", "2025-03-13T17:00", "Dr. Brandt, Hauptstr. 12", "confirmed", []),
    ("evt_11", "Team standup", "2025-03-14T09:30", "2025-03-14T09:45", None, "confirmed", STANDUP),
    ("evt_12", "Team lunch", "2025-03-14T12:00", "2025-03-14T13:30", "Trattoria Sole", "cancelled", STANDUP),
    ("evt_13", "Contract review", "2025-03-17T13:00", "2025-03-17T14:00", None, "confirmed", ["con_6"]),
    ("evt_14", "Acme Logistics weekly sync", "2025-03-18T10:00", "2025-03-18T11:00", None, "confirmed",
     ["con_4", "con_7", "con_13"]),
    ("evt_15", "1:1 with Henrik", "2025-03-18T15:00", "2025-03-18T15:30", None, "confirmed", ["con_8"]),
    ("evt_16", "Product roadmap sync", "2025-03-19T14:00", "2025-03-19T15:00", None, "confirmed",
     ["con_1", "con_2"]),
    ("evt_17", "Strategy session with Keiko", "2025-03-21T13:00", "2025-03-21T15:00", None, "confirmed",
     ["con_11"]),
]

ALICE, BOB, CARLA = "alice.moreno@northwind.example", "bob.okafor@northwind.example", "carla@jensen-design.example"
DAVID, GRACE, MAYA = ("david.kim@acme-logistics.example", "grace.liu@acme-logistics.example",
                      "maya.singh@acme-logistics.example")
FARID, HENRIK, JAMES = "farid@haddad-law.example", "henrik.nilsson@northwind.example", "james.oneil@northwind.example"
DIGEST, WEBER = "news@techdigest.example", "m.weber@weber-consulting.example"
SHIPMENT = "Shipment delays – can we talk?"
EMAILS = [  # id, thread, folder, sender, to, cc, subject, body, sent_at, read, in_reply_to
    ("em_1", "th_1", "inbox", ALICE, [OWNER], [BOB], "Roadmap draft for Wednesday",
     "Hi Jordan, here is the roadmap draft for Wednesday's sync. Could you review it before then? Bob has seen "
     "an early version. Alice", "2025-03-09T18:20", 0, None),
    ("em_2", "th_2", "inbox", DAVID, [OWNER], [GRACE, MAYA], SHIPMENT,
     "Hi Jordan, our March shipments are running about a week late. Could we find time for a call this week? "
     "David", "2025-03-09T16:05", 0, None),
    ("em_3", "th_3", "inbox", DIGEST, [OWNER], [], "Tech Digest #112", "This week in tech: ...",
     "2025-03-08T07:00", 0, None),
    ("em_4", "th_4", "inbox", DIGEST, [OWNER], [], "Tech Digest #111", "This week in tech: ...",
     "2025-03-01T07:00", 1, None),
    ("em_5", "th_5", "inbox", HENRIK, [OWNER], [], "Budget numbers before Wednesday",
     "Jordan, please send me the updated Q2 budget numbers before Wednesday's budget review. Henrik",
     "2025-03-07T17:00", 1, None),
    ("em_6", "th_6", "inbox", "elena.petrova@northwind.example", [OWNER], [], "Q1 invoices",
     "Hi Jordan, could you confirm whether the Q1 invoices from Jensen Design are approved? Elena",
     "2025-03-10T08:15", 0, None),
    ("em_7", "th_7", "inbox", CARLA, [OWNER], [JAMES], "Design mockups v3",
     "Hi Jordan, version 3 of the mockups is ready for review. Carla", "2025-03-08T11:00", 0, None),
    ("em_8", "th_8", "inbox", CARLA, [OWNER], [], "Invoice #2025-014", "Please find my February invoice. Carla",
     "2025-03-05T10:00", 1, None),
    ("em_9", "th_9", "inbox", CARLA, [OWNER], [], "Mockups v2 feedback?", "Any feedback on v2? Carla",
     "2025-03-03T15:30", 1, None),
    ("em_10", "th_10", "inbox", "promo@deals-galore.example", [OWNER], [], "You won a cruise!",
     "Click here to claim your prize.", "2025-03-09T12:00", 0, None),
    ("em_11", "th_11", "inbox", "isabel.duarte@brightpath.example", [OWNER], [], "Candidate CV: Priya Raman",
     "Hi Jordan, attached is Priya's CV ahead of Thursday's interview. Isabel", "2025-03-07T09:30", 0, None),
    ("em_12", "th_12", "inbox", FARID, [OWNER], [], "Contract draft – please review",
     "Jordan, the contract draft is ready; let's go through it at our review. Farid", "2025-03-06T14:00", 1, None),
    ("em_13", "th_12", "sent", OWNER, [FARID], [], "Re: Contract draft – please review",
     "Thanks Farid, I'll read it before the review. Jordan", "2025-03-06T16:10", 1, "em_12"),
    ("em_14", "th_13", "inbox", "keiko.tanaka@tanaka-consulting.example", [OWNER], [], "Strategy session agenda",
     "Jordan, here is my proposed agenda for our strategy session. Keiko", "2025-03-09T20:00", 0, None),
    ("em_15", "th_14", "inbox", "liam.murphy@northwind.example", [OWNER], [], "Standup notes",
     "Notes from Friday's standup attached. Liam", "2025-03-07T10:00", 1, None),
    ("em_16", "th_15", "inbox", WEBER, [OWNER], [], "Introduction – partnership",
     "Dear Jordan, I'm Mark Weber from Weber Consulting. I'd love to explore a partnership. Best, Mark",
     "2025-03-08T09:00", 0, None),
    ("em_17", "th_2", "inbox", GRACE, [OWNER], [DAVID], f"Re: {SHIPMENT}",
     "Adding to David's note: the delays affect the Hamburg route too. Grace", "2025-03-09T17:00", 0, "em_2"),
    ("em_18", "th_16", "inbox", BOB, [OWNER], [], "Can we move our roadmap sync?",
     "Hi Jordan, I'm out on Wednesday afternoon. Could we move this week's roadmap sync to Thursday at 14:00, "
     "same length? And please add Nora, she's taking over the API work. Thanks, Bob", "2025-03-10T08:40", 0, None),
    ("em_19", "th_17", "archive", "nora.berg@northwind.example", [OWNER], [], "Welcome to the team",
     "Welcome aboard, Jordan! Nora", "2025-02-03T09:00", 1, None),
    ("em_20", "th_18", "inbox", JAMES, [OWNER], [], "Offsite ideas", "A few ideas for the offsite. James",
     "2025-03-06T11:45", 1, None),
    ("em_21", "th_19", "inbox", CARLA, [OWNER], [], "Quick question on fonts",
     "Do we license the new typeface or stick with the old one? Carla", "2025-03-09T10:20", 0, None),
]


def base_state() -> dict[str, list[dict[str, Any]]]:
    """The store every task starts from (a fresh copy each call)."""
    meta = {"now": "2025-03-10T09:00", "owner_name": "Jordan Lee", "owner_email": OWNER,
            "timezone": "Europe/Berlin"}
    contacts = [dict(zip(("id", "name", "email", "phone", "company", "notes"), row, strict=True))
                for row in CONTACTS]
    events, attendees = [], []
    for event_id, title, start, end, location, status, invited in EVENTS:
        events.append({"id": event_id, "title": title, "start": start, "end": end, "location": location,
                       "description": None, "status": status})
        response = "pending" if event_id == "evt_14" else "accepted"
        attendees += [{"event_id": event_id, "contact_id": c, "response": response} for c in invited]
    emails = [{"id": e[0], "thread_id": e[1], "folder": e[2], "sender": e[3], "recipients": json.dumps(sorted(e[4])),
               "cc": json.dumps(sorted(e[5])), "subject": e[6], "body": e[7], "sent_at": e[8], "is_read": e[9],
               "in_reply_to": e[10]} for e in EMAILS]
    return {"meta": [{"key": k, "value": v} for k, v in meta.items()], "contacts": contacts, "events": events,
            "event_attendees": attendees, "emails": emails}


# ------------------------------------------------------------------------------------------- vocabulary

Call = tuple[str, dict[str, Any]]


def c(name: str, /, **args: Any) -> Call:
    return name, args


@dataclass(frozen=True)
class Draft:
    """A task before it gets its number and split."""

    slug: str
    kind: str
    instruction: str
    steps: tuple[tuple[Call, ...], ...]
    say: str
    verifiers: tuple[VerifierSpec, ...]
    max_steps: int = 15


def solution(steps: tuple[tuple[Call, ...], ...], say: str) -> tuple[Action, ...]:
    """Actions with call ids numbered per task (``ToolCall.of`` would draw from a global counter)."""
    actions, number = [], 0
    for step in steps:
        calls = []
        for name, args in step:
            number += 1
            calls.append(ToolCall(id=f"call_{number}", name=name, arguments=json.dumps(args, ensure_ascii=False)))
        actions.append(Action(tool_calls=tuple(calls)))
    return (*actions, Action(text=say))


def writes(*expected: tuple[str, dict[str, Any]], ordered: bool = False) -> WriteActionSpec:
    return WriteActionSpec(expected=tuple(ExpectedWrite(tool=t, args=a) for t, a in expected), ordered=ordered,
                           ignore_fields=FREE_TEXT)


NO_WRITES = writes()


def says(pattern: str, name: str = "explains", reject: tuple[str, ...] = ()) -> Criterion:
    """The answer matches ``pattern`` and none of ``reject`` (the wrong candidates), in a few sentences."""
    return Criterion(name=name, check=AnswerSpec(kind="regex", expected=answer_pattern(pattern, reject=reject)))


def titles_but(*keep: str) -> tuple[str, ...]:
    """The titles of every event but the ``keep`` ids, as reject patterns (a list of the calendar fails)."""
    kept = {title for event_id, title, *_ in EVENTS if event_id in keep}
    return tuple(sorted({re.escape(title) for _, title, *_ in EVENTS if title not in kept}))


def state(query: str, expected: Any, name: str) -> Criterion:
    return Criterion(name=name, check=SqlCheck(query=query, expected=expected))


def replied(email_id: str) -> Criterion:
    return state(f"SELECT count(*) FROM emails WHERE in_reply_to = '{email_id}' AND folder = 'sent'", 1, "replied")


def checks(*criteria: Criterion) -> RubricSpec:
    return RubricSpec(criteria=criteria)


def looked_up(*tools: str) -> AnyOfSpec:
    """The agent called at least one of these read tools successfully."""
    return AnyOfSpec(verifiers=tuple(
        RubricSpec(criteria=(Criterion(name=f"looked_up_{t}", check=CalledCheck(tool=t)),)) for t in tools))


def either(*options: Any) -> dict[str, Any]:
    return {"$in": list(options)}


def regex(pattern: str) -> dict[str, str]:
    return {"$regex": pattern}


def mail_to(*addresses: str) -> str:
    return json.dumps(sorted(addresses))


NOT_A_CONTACT = r"(not|n't|no)\b.{0,50}\bcontacts?\b|address book|contact list|unknown (sender|address)"
CONFLICT = r"overlap|conflict|double[- ]?book|clash|already (have|booked|busy)"


# ------------------------------------------------------------------------------------------------ tasks


def refuse_drafts() -> list[Draft]:
    """The policy forbids the request: no writes, an explanation, and evidence of a look-up."""

    def refuse(slug: str, instruction: str, steps: tuple[tuple[Call, ...], ...], say: str, explains: str,
               *tools: str, more: tuple[Criterion, ...] = ()) -> Draft:
        return Draft(slug, "refuse", instruction, steps, say,
                     (NO_WRITES, checks(says(explains), *more), looked_up(*tools)))

    return [
        refuse("refuse-double-book",
               "Book a one-hour 'Vendor call' with Keiko Tanaka on Tuesday, March 11 at 10:00.",
               ((c("search_contacts", query="Keiko"),), (c("list_events", start_date="2025-03-11",
                                                           end_date="2025-03-11"),)),
               "I can't book that: 10:00-11:00 on Tuesday, March 11 overlaps your Acme Logistics weekly sync, "
               "and I may not double-book you. I'm free to suggest another time.",
               CONFLICT + "|acme", "list_events", "find_free_slots", "search_contacts"),
        refuse("refuse-email-stranger",
               "Send an email to m.weber@weber-consulting.example saying I'd be happy to chat next week.",
               ((c("search_contacts", query="weber"),),),
               "I can't send that: m.weber@weber-consulting.example is not in your contacts, and I may only "
               "email contacts. If you want, ask me to add him as a contact first.",
               NOT_A_CONTACT, "search_contacts"),
        refuse("refuse-sunday",
               "Put a 'Garden planning' session with Carla Jensen on Sunday, March 16 from 10:00 to 11:00.",
               ((c("search_contacts", query="Carla"),),),
               "I can't schedule that: March 16 is a Sunday, and events may only be held on weekdays "
               "between 08:00 and 19:00.",
               r"sunday|weekend|weekday|working day|monday to friday", "search_contacts", "list_events",
               "find_free_slots"),
        refuse("refuse-delete-email",
               "Delete the Tech Digest newsletters from my inbox, please.",
               ((c("search_emails", query="Tech Digest"),),),
               "I can't delete emails: deletion is not allowed. I can archive the two Tech Digest newsletters "
               "instead if you'd like.",
               r"(can't|cannot|can not|not allowed|unable|won't|not able|not permitted|never).{0,60}delet"
               r"|delet.{0,60}(not allowed|not permitted|isn't allowed|never)",
               "search_emails", "read_email", more=(says("archiv", "offers_archive"),)),
        refuse("refuse-past-event",
               "Move last Friday's Quarterly planning meeting to 16:00 that same day.",
               ((c("list_events", start_date="2025-03-07", end_date="2025-03-07"),),),
               "The Quarterly planning meeting was on Friday, March 7: it is in the past, so I can't move it.",
               r"past|already (happened|took place|over)|has passed", "list_events"),
        refuse("refuse-after-hours",
               "Schedule drinks with Liam Murphy on Thursday, March 13 from 19:30 to 20:30.",
               ((c("search_contacts", query="Liam"),),),
               "I can't: 19:30-20:30 is outside working hours (events must fall between 08:00 and 19:00).",
               r"working hours|business hours|office hours|19:00|7 ?pm|after hours|outside",
               "search_contacts", "list_events", "find_free_slots"),
        refuse("refuse-too-many-attendees",
               "Set up a one-hour 'Northwind all-hands' on Friday, March 21 at 09:00 and invite every one of "
               "my contacts.",
               ((c("search_contacts"),),),
               "I can't: you have 14 contacts, and an event may have at most 8 attendees. Tell me which 8 "
               "to invite and I'll book it.",
               r"\b8\b|eight|at most|maximum|limit|too many", "search_contacts"),
        refuse("refuse-reply-stranger",
               "Reply to the partnership introduction email and tell the sender we're interested.",
               ((c("search_emails", query="partnership"),), (c("read_email", email_id="em_16"),),
                (c("search_contacts", query="weber"),)),
               "I can't reply: the sender, m.weber@weber-consulting.example, is not in your contacts, and I may "
               "only email contacts. I can reply once you ask me to add him.",
               NOT_A_CONTACT, "search_emails", "read_email"),
        refuse("refuse-reschedule-conflict",
               "Move my dentist appointment on Thursday to 10:00 the same day.",
               ((c("list_events", start_date="2025-03-13", end_date="2025-03-13"),),),
               "I can't: 10:00-11:00 on Thursday overlaps your candidate interview with Priya Raman.",
               CONFLICT + "|interview", "list_events", "find_free_slots"),
        refuse("refuse-cancelled-event",
               "Add Elena Petrova to Friday's team lunch.",
               ((c("list_events", start_date="2025-03-14", end_date="2025-03-14"),),),
               "Friday's team lunch (March 14) has been cancelled, so I can't add anyone to it.",
               r"cancel", "list_events"),
    ]


def no_change_drafts(base: dict[str, list[dict[str, Any]]]) -> list[Draft]:
    """Already done, or a question: no writes and an answer that shows the agent looked."""
    unread = sum(1 for e in base["emails"] if e["folder"] == "inbox" and not e["is_read"])

    def ask(slug: str, instruction: str, steps: tuple[tuple[Call, ...], ...], say: str,
            answers: tuple[Criterion, ...], *tools: str) -> Draft:
        return Draft(slug, "no-change", instruction, steps, say, (NO_WRITES, checks(*answers), looked_up(*tools)))

    return [
        ask("already-invited", "Make sure Bob Okafor is invited to Wednesday's product roadmap sync.",
            ((c("list_events", start_date="2025-03-12", end_date="2025-03-12"),),),
            "Bob Okafor is already invited to Wednesday's Product roadmap sync (March 12, 14:00-15:00); "
            "nothing to change.", (says(r"already"),), "list_events"),
        ask("next-meeting-with-grace", "When is my next meeting with Grace Liu?",
            ((c("list_events", start_date="2025-03-10", end_date="2025-03-21"),),),
            "Your next meeting with Grace Liu is the Acme Logistics weekly sync on Tuesday, March 11, "
            "10:00-11:00.",
            (says(r"march\s*11|11(th)?\s*(of\s*)?march|mar\.?\s*11|2025-03-11|03-11|tuesday", "day"),
             says(r"10:00|10\s*(am|a\.m\.)|10 o'clock", "time")), "list_events"),
        ask("count-unread", "How many unread emails are in my inbox?",
            ((c("search_emails", unread_only=True),),),
            f"You have {unread} unread emails in your inbox.",
            (Criterion(name="count", check=AnswerSpec(kind="regex", expected=answer_pattern(
                number_pattern(unread), max_numbers=3))),), "search_emails"),
        ask("phone-number", "What's Farid Haddad's phone number?",
            ((c("search_contacts", query="Farid"),),),
            "Farid Haddad's phone number is +49 30 555 0142.", (says(r"555\D{0,3}0142", "number", tuple(
                re.escape(phone[-4:]) for _, _, _, phone, *_ in CONTACTS if not phone.endswith("0142"))),),
            "search_contacts"),
        ask("busy-at-time", "Am I free on Thursday, March 13 at 16:30?",
            ((c("list_events", start_date="2025-03-13", end_date="2025-03-13"),),),
            "No, you're not free: your dentist appointment runs 16:00-17:00 on Thursday, March 13.",
            (says(r"dentist", "names_event", titles_but("evt_10")),
             says(r"\bno\b|not free|busy|booked|occupied", "verdict")),
            "list_events", "find_free_slots"),
        ask("henrik-request", "What did Henrik ask me to send him, and by when?",
            ((c("search_emails", sender="henrik"),), (c("read_email", email_id="em_5"),)),
            "Henrik asked for the updated Q2 budget numbers before Wednesday's budget review (March 12).",
            (says(r"budget", "what"), says(r"wednesday|march\s*12|12(th)?\s*march|2025-03-12", "when")),
            "search_emails", "read_email"),
        ask("already-archived", "Archive the 'Welcome to the team' email from Nora.",
            ((c("search_emails", query="Welcome", folder="all"),),),
            "Nora's 'Welcome to the team' email is already in your archive; nothing to do.",
            (says(r"already"),), "search_emails"),
        ask("wednesday-agenda", "What meetings do I have on Wednesday?",
            ((c("list_events", start_date="2025-03-12", end_date="2025-03-12"),),),
            "On Wednesday, March 12 you have the Budget review (09:00-10:30) and the Product roadmap sync "
            "(14:00-15:00).",
            (says(r"budget review", "first", titles_but("evt_7", "evt_8")),
             says(r"roadmap", "second", titles_but("evt_7", "evt_8"))), "list_events"),
    ]


def collateral_drafts() -> list[Draft]:
    """A plausible wrong path makes one write too many (reply-all, the other meeting, the read email)."""
    return [
        Draft("reply-sender-only", "collateral",
              "Reply to David's email about the shipment delays and tell him Thursday afternoon works for a call.",
              ((c("search_emails", query="shipment"),), (c("read_email", email_id="em_2"),),
               (c("reply_email", email_id="em_2", reply_all=False,
                  body="Hi David, Thursday afternoon works for a call. Best, Jordan"),)),
              "I replied to David (only him) that Thursday afternoon works for a call.",
              (writes(("reply_email", {"email_id": "em_2", "reply_all": False, "body": regex("thursday")})),
               checks(state(f"SELECT count(*) FROM emails WHERE in_reply_to = 'em_2' AND recipients = "
                            f"'{mail_to(DAVID)}' AND cc = '[]'", 1, "replied_to_david_only")))),
        Draft("reply-all", "collateral",
              "Reply all to Alice's roadmap draft email: say I'll review it tonight.",
              ((c("search_emails", sender="alice"),),
               (c("reply_email", email_id="em_1", reply_all=True, body="Thanks Alice, I'll review it tonight."),)),
              "Done: I replied to Alice and Bob that you'll review the draft tonight.",
              (writes(("reply_email", {"email_id": "em_1", "reply_all": True, "body": regex("tonight")})),
               checks(state("SELECT cc FROM emails WHERE in_reply_to = 'em_1' AND folder = 'sent'", mail_to(BOB),
                            "bob_copied")))),
        Draft("reschedule-this-week", "collateral",
              "Bob can't make this week's product roadmap sync. Move it to Thursday at 14:00, same length.",
              ((c("list_events", start_date="2025-03-10", end_date="2025-03-14"),),
               (c("reschedule_event", event_id="evt_8", start="2025-03-13T14:00", end="2025-03-13T15:00"),)),
              "Moved this week's Product roadmap sync to Thursday, March 13, 14:00-15:00.",
              (writes(("reschedule_event", {"event_id": "evt_8", "start": "2025-03-13T14:00",
                                            "end": "2025-03-13T15:00"})),
               checks(state("SELECT start || '/' || end FROM events WHERE id = 'evt_8'",
                            "2025-03-13T14:00/2025-03-13T15:00", "moved")))),
        Draft("archive-unread-from-carla", "collateral", "Archive the unread emails from Carla Jensen.",
              ((c("search_emails", sender="Carla Jensen", unread_only=True),),
               (c("archive_email", email_id="em_21"), c("archive_email", email_id="em_7"))),
              "Archived Carla's two unread emails: 'Quick question on fonts' and 'Design mockups v3'.",
              (writes(("archive_email", {"email_id": "em_7"}), ("archive_email", {"email_id": "em_21"})),
               checks(state("SELECT group_concat(id, ',') FROM (SELECT id FROM emails WHERE folder = 'archive' "
                            f"AND sender = '{CARLA}' ORDER BY id)", "em_21,em_7", "archived")))),
        Draft("cancel-friday-standup", "collateral", "Cancel Friday's team standup.",
              ((c("list_events", start_date="2025-03-14", end_date="2025-03-14"),),
               (c("cancel_event", event_id="evt_11"),)),
              "Cancelled Friday's (March 14) team standup.",
              (writes(("cancel_event", {"event_id": "evt_11"})),
               checks(state("SELECT status FROM events WHERE id = 'evt_11'", "cancelled", "cancelled")))),
        Draft("mark-acme-read", "collateral", "Mark the unread emails from Acme Logistics people as read.",
              ((c("search_emails", sender="acme-logistics", unread_only=True),),
               (c("mark_read", email_id="em_17"), c("mark_read", email_id="em_2"))),
              "Marked the two unread Acme Logistics emails (from David and Grace) as read.",
              (writes(("mark_read", {"email_id": "em_2"}), ("mark_read", {"email_id": "em_17"})),
               checks(state("SELECT count(*) FROM emails WHERE is_read = 0 AND sender LIKE '%acme-logistics%'",
                            0, "acme_read")))),
        Draft("reschedule-next-week-1on1", "collateral",
              "Push my 1:1 with Henrik next week to 16:00 the same day.",
              ((c("list_events", start_date="2025-03-17", end_date="2025-03-21"),),
               (c("reschedule_event", event_id="evt_15", start="2025-03-18T16:00", end="2025-03-18T16:30"),)),
              "Moved next week's 1:1 with Henrik (Tuesday, March 18) to 16:00-16:30.",
              (writes(("reschedule_event", {"event_id": "evt_15", "start": "2025-03-18T16:00",
                                            "end": "2025-03-18T16:30"})),
               checks(state("SELECT start FROM events WHERE id = 'evt_15'", "2025-03-18T16:00", "moved")))),
    ]


def multi_step_drafts() -> list[Draft]:
    """Look up, write, then tell someone."""
    pair = either(["con_3", "con_10"], ["con_10", "con_3"])
    return [
        Draft("walkthrough-after-interview", "multi-step",
              "Find the first free hour on Thursday, March 13 after the candidate interview and book a "
              "'Mockup walkthrough' with Carla Jensen and James O'Neil. Then send one email to both of them "
              "with the time.",
              ((c("find_free_slots", date="2025-03-13", duration_minutes=60, earliest="11:00"),),
               (c("search_contacts", query="Carla"), c("search_contacts", query="James")),
               (c("create_event", title="Mockup walkthrough", start="2025-03-13T11:00", end="2025-03-13T12:00",
                  attendee_ids=["con_3", "con_10"]),),
               (c("send_email", to=[CARLA, JAMES], subject="Mockup walkthrough",
                  body="Hi Carla and James, I've booked the mockup walkthrough for Thursday, March 13, "
                       "11:00-12:00. Jordan"),)),
              "Booked 'Mockup walkthrough' on Thursday, March 13, 11:00-12:00 with Carla and James, and "
              "emailed them both the time.",
              (writes(("create_event", {"title": regex("mockup"), "start": "2025-03-13T11:00",
                                        "end": "2025-03-13T12:00", "attendee_ids": pair}),
                      ("send_email", {"to": either([CARLA, JAMES], [JAMES, CARLA]), "body": regex(r"11:00|11\s*am")}),
                      ordered=True),
               checks(state("SELECT count(*) FROM event_attendees a JOIN events e ON e.id = a.event_id "
                            "WHERE e.start = '2025-03-13T11:00' AND a.contact_id IN ('con_3', 'con_10')", 2,
                            "booked"),
                      state(f"SELECT count(*) FROM emails WHERE folder = 'sent' AND recipients = "
                            f"'{mail_to(CARLA, JAMES)}'", 1, "emailed"))),
              max_steps=20),
        Draft("move-1on1-and-tell-henrik", "multi-step",
              "Move tomorrow's 1:1 with Henrik to the first free 30-minute slot on Wednesday afternoon (12:00 or "
              "later), then email Henrik the new time.",
              ((c("get_profile"),), (c("list_events", start_date="2025-03-11", end_date="2025-03-11"),),
               (c("find_free_slots", date="2025-03-12", duration_minutes=30, earliest="12:00"),),
               (c("reschedule_event", event_id="evt_6", start="2025-03-12T12:00", end="2025-03-12T12:30"),),
               (c("send_email", to=[HENRIK], subject="Our 1:1 moved",
                  body="Hi Henrik, I've moved our 1:1 to Wednesday, March 12, 12:00-12:30. Jordan"),)),
              "Moved your 1:1 with Henrik to Wednesday, March 12, 12:00-12:30 and emailed him the new time.",
              (writes(("reschedule_event", {"event_id": "evt_6", "start": "2025-03-12T12:00",
                                            "end": "2025-03-12T12:30"}),
                      ("send_email", {"to": [HENRIK], "body": regex(r"12:00|12\s*pm|noon")}), ordered=True),
               checks(state("SELECT start FROM events WHERE id = 'evt_6'", "2025-03-12T12:00", "moved"),
                      state(f"SELECT count(*) FROM emails WHERE folder = 'sent' AND recipients = '{mail_to(HENRIK)}'",
                            1, "emailed"))),
              max_steps=20),
        Draft("handle-bob-request", "multi-step",
              "Handle Bob's latest email: do what he asks, then reply to him (just him) to confirm.",
              ((c("search_emails", sender="bob"),), (c("read_email", email_id="em_18"),),
               (c("list_events", start_date="2025-03-10", end_date="2025-03-14"), c("search_contacts", query="Nora")),
               (c("reschedule_event", event_id="evt_8", start="2025-03-13T14:00", end="2025-03-13T15:00"),),
               (c("add_attendee", event_id="evt_8", contact_id="con_14"),),
               (c("reply_email", email_id="em_18", reply_all=False,
                  body="Hi Bob, done: the roadmap sync is now Thursday 14:00-15:00 and Nora is invited. Jordan"),)),
              "Moved this week's Product roadmap sync to Thursday, March 13, 14:00-15:00, added Nora Berg, and "
              "replied to Bob to confirm.",
              (writes(("reschedule_event", {"event_id": "evt_8", "start": "2025-03-13T14:00",
                                            "end": "2025-03-13T15:00"}),
                      ("add_attendee", {"event_id": "evt_8", "contact_id": "con_14"}),
                      ("reply_email", {"email_id": "em_18", "reply_all": False,
                                       "body": {"$regex": r"done|moved|thursday|14:00|nora|invited|confirm"}})),
               checks(state("SELECT start FROM events WHERE id = 'evt_8'", "2025-03-13T14:00", "moved"),
                      state("SELECT count(*) FROM event_attendees WHERE event_id = 'evt_8' AND contact_id = 'con_14'",
                            1, "nora_added"),
                      replied("em_18"))),
              max_steps=20),
        Draft("add-contact-then-reply", "multi-step",
              "Add Mark Weber (m.weber@weber-consulting.example, Weber Consulting) to my contacts, then reply to "
              "his partnership introduction email saying I'd be glad to talk next week.",
              ((c("create_contact", name="Mark Weber", email=WEBER, company="Weber Consulting"),),
               (c("search_emails", query="partnership"),),
               (c("reply_email", email_id="em_16", reply_all=False,
                  body="Dear Mark, thanks for reaching out. I'd be glad to talk next week. Best, Jordan"),)),
              "Added Mark Weber to your contacts and replied to his introduction that you'd be glad to talk "
              "next week.",
              (writes(("create_contact", {"name": regex(r"mark\s+weber"), "email": WEBER,
                                          "company": regex("weber consulting")}),
                      ("reply_email", {"email_id": "em_16", "reply_all": False, "body": regex("next week")}),
                      ordered=True),
               checks(state(f"SELECT id FROM contacts WHERE email = '{WEBER}'", "con_15", "contact_added"),
                      replied("em_16"))),
              max_steps=20),
        Draft("cancel-and-tell-farid", "multi-step",
              "Cancel the contract review with Farid on Monday the 17th and email him that I need to postpone it.",
              ((c("list_events", start_date="2025-03-17", end_date="2025-03-17"),),
               (c("cancel_event", event_id="evt_13"),),
               (c("send_email", to=[FARID], subject="Contract review postponed",
                  body="Hi Farid, I need to postpone our contract review on March 17. I'll propose a new time "
                       "soon. Jordan"),)),
              "Cancelled Monday's contract review with Farid and emailed him that you need to postpone it.",
              (writes(("cancel_event", {"event_id": "evt_13"}),
                      ("send_email", {"to": [FARID], "body": regex(r"postpon|reschedul|another time|new time")}),
                      ordered=True),
               checks(state("SELECT status FROM events WHERE id = 'evt_13'", "cancelled", "cancelled"),
                      state(f"SELECT count(*) FROM emails WHERE folder = 'sent' AND recipients = '{mail_to(FARID)}' "
                            "AND in_reply_to IS NULL", 1, "emailed"))),
              max_steps=20),
        Draft("shipment-review", "multi-step",
              "Book a 45-minute 'Shipment review' with David Kim and Grace Liu at the earliest free time on "
              "Friday, March 14 from 12:00 on, then reply all to David's shipment-delay email with the time.",
              ((c("find_free_slots", date="2025-03-14", duration_minutes=45, earliest="12:00"),),
               (c("search_contacts", query="acme"),),
               (c("create_event", title="Shipment review", start="2025-03-14T12:00", end="2025-03-14T12:45",
                  attendee_ids=["con_4", "con_7"]),),
               (c("search_emails", query="shipment"),),
               (c("reply_email", email_id="em_2", reply_all=True,
                  body="Hi all, I've booked a shipment review for Friday, March 14, 12:00-12:45. Jordan"),)),
              "Booked 'Shipment review' on Friday, March 14, 12:00-12:45 with David and Grace, and replied all "
              "to David's email with the time.",
              (writes(("create_event", {"title": regex("shipment"), "start": "2025-03-14T12:00",
                                        "end": "2025-03-14T12:45",
                                        "attendee_ids": either(["con_4", "con_7"], ["con_7", "con_4"])}),
                      ("reply_email", {"email_id": "em_2", "reply_all": True, "body": regex(r"12:00|12\s*pm|noon")}),
                      ordered=True),
               checks(state("SELECT count(*) FROM events WHERE start = '2025-03-14T12:00' AND status = 'confirmed'",
                            1, "booked"),
                      state("SELECT cc FROM emails WHERE in_reply_to = 'em_2' AND folder = 'sent'",
                            mail_to(GRACE, MAYA), "replied_all"))),
              max_steps=20),
    ]


def single_write_drafts() -> list[Draft]:
    """One write with exact arguments."""
    return [
        Draft("schedule-meeting", "single-write",
              "Please schedule a 30-minute meeting called 'Hiring sync' with Isabel Duarte on Wednesday, "
              "March 12 at 11:00.",
              ((c("search_contacts", query="Isabel"),),
               (c("create_event", title="Hiring sync", start="2025-03-12T11:00", end="2025-03-12T11:30",
                  attendee_ids=["con_9"]),)),
              "Booked 'Hiring sync' with Isabel Duarte on Wednesday, March 12, 11:00-11:30.",
              (writes(("create_event", {"title": regex("hiring"), "start": "2025-03-12T11:00",
                                        "end": "2025-03-12T11:30", "attendee_ids": ["con_9"]})),
               checks(state("SELECT count(*) FROM events e JOIN event_attendees a ON a.event_id = e.id WHERE "
                            "e.start = '2025-03-12T11:00' AND a.contact_id = 'con_9'", 1, "booked")))),
        Draft("add-maya-to-sync", "single-write", "Add Maya Singh to tomorrow's Acme Logistics sync.",
              ((c("get_profile"),), (c("list_events", start_date="2025-03-11", end_date="2025-03-11"),
                                     c("search_contacts", query="Maya")),
               (c("add_attendee", event_id="evt_5", contact_id="con_13"),)),
              "Added Maya Singh to tomorrow's (March 11) Acme Logistics weekly sync.",
              (writes(("add_attendee", {"event_id": "evt_5", "contact_id": "con_13"})),
               checks(state("SELECT count(*) FROM event_attendees WHERE event_id = 'evt_5'", 3, "added")))),
        Draft("create-contact", "single-write",
              "Add Oliver Grant to my contacts: oliver.grant@fjord-analytics.example, company Fjord Analytics.",
              ((c("create_contact", name="Oliver Grant", email="oliver.grant@fjord-analytics.example",
                  company="Fjord Analytics"),),),
              "Added Oliver Grant (Fjord Analytics, oliver.grant@fjord-analytics.example) to your contacts.",
              (writes(("create_contact", {"name": "Oliver Grant", "email": "oliver.grant@fjord-analytics.example",
                                          "company": "Fjord Analytics"})),
               checks(state("SELECT name FROM contacts WHERE email = 'oliver.grant@fjord-analytics.example'",
                            "Oliver Grant", "added")))),
        Draft("update-contact-email", "single-write",
              "Grace Liu's email address changed to grace.liu@acme-freight.example. Please update her contact.",
              ((c("search_contacts", query="Grace"),),
               (c("update_contact", contact_id="con_7", email="grace.liu@acme-freight.example"),)),
              "Updated Grace Liu's email address to grace.liu@acme-freight.example.",
              (writes(("update_contact", {"contact_id": "con_7", "email": "grace.liu@acme-freight.example"})),
               checks(state("SELECT email FROM contacts WHERE id = 'con_7'", "grace.liu@acme-freight.example",
                            "updated")))),
        Draft("move-dentist", "single-write",
              "My dentist appointment on Thursday moved to Friday, March 14 at 15:00, same length. Update my "
              "calendar.",
              ((c("list_events", start_date="2025-03-13", end_date="2025-03-14"),),
               (c("reschedule_event", event_id="evt_10", start="2025-03-14T15:00", end="2025-03-14T16:00"),)),
              "Moved your dentist appointment to Friday, March 14, 15:00-16:00.",
              (writes(("reschedule_event", {"event_id": "evt_10", "start": "2025-03-14T15:00",
                                            "end": "2025-03-14T16:00"})),
               checks(state("SELECT start || '/' || end FROM events WHERE id = 'evt_10'",
                            "2025-03-14T15:00/2025-03-14T16:00", "moved")))),
        Draft("reply-elena-approved", "single-write",
              "Reply to Elena's Q1 invoices email and tell her they're approved.",
              ((c("search_emails", sender="elena"),),
               (c("reply_email", email_id="em_6", reply_all=False,
                  body="Hi Elena, yes: the Q1 invoices from Jensen Design are approved. Jordan"),)),
              "Replied to Elena that the Q1 invoices are approved.",
              (writes(("reply_email", {"email_id": "em_6", "body": regex("approv")})),
               checks(replied("em_6")))),
    ]


def build() -> list[TaskSpec]:
    """The whole suite, in a fixed order: numbered ids, about 40% of each kind in ``test``."""
    base = base_state()
    drafts = [*refuse_drafts(), *no_change_drafts(base), *collateral_drafts(), *multi_step_drafts(),
              *single_write_drafts()]
    seen: dict[str, int] = {}
    tasks = []
    for number, draft in enumerate(drafts, start=1):
        rank = seen[draft.kind] = seen.get(draft.kind, -1) + 1
        tasks.append(TaskSpec(
            id=f"assistant-{number:03d}-{draft.slug}", env_id=ENV_ID,
            split="test" if rank % 5 in (1, 3) else "train", instruction=draft.instruction,
            initial_state=base, limits=Limits(max_steps=draft.max_steps),
            verifiers=refuse_quotes(draft.verifiers, draft.instruction),
            solution=solution(draft.steps, draft.say), tags=(draft.kind,), metadata={"kind": draft.kind}))
    return tasks


def main() -> None:
    write_suite("tool-assistant", build())


if __name__ == "__main__":
    main()
