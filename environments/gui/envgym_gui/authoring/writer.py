"""Generator of the ``gui-writer`` suite: LibreOffice Writer on documents made per task.

Kinds: one paragraph made bold, italic or underlined (only that one: a whole-document selection is the
tempting shortcut), a paragraph centred or right-aligned, a paragraph appended, the title retyped, a
paragraph deleted, a question answered from the document, a copy saved under a new name, and infeasible
requests (a file or a paragraph that does not exist). Every paragraph is one short line, so the cursor
keys move paragraph by paragraph; typed text avoids what AutoCorrect rewrites (quotes, dashes,
lower-case sentence starts) and ends with a full stop before Return (word completion accepts on Return).
``EXPECTED`` maps each task id to what a correct episode leaves, for the generator's own tests.
"""

from __future__ import annotations

import random
import re
from typing import Any

from envgym.plugin import TaskSpec
from envgym_gui.authoring import DOCS, check, desktop, done, fail, get, key, task, typed, wait

SUITE = "gui-writer"
EXPECTED: dict[str, dict[str, Any]] = {}

TOPICS = ["Garden Project", "Library Move", "Team Offsite", "Budget Review", "Website Refresh", "Kitchen Upgrade",
          "Volunteer Day", "Office Plants", "Spring Fair", "Bike Scheme"]
SENTENCES = [
    "The work starts on Monday at the north entrance.",
    "Every volunteer signs the sheet at the front desk.",
    "Costs stay within the agreed limit of the year.",
    "We meet again after the first week to review progress.",
    "Questions go to the coordinator by email.",
    "Tools are stored in the shed behind the hall.",
    "The schedule may move if the weather turns bad.",
    "Lunch is provided for everyone who helps out.",
    "Photos of the result will be shared with the group.",
    "Parking is free on the days of the event.",
    "The final report is due at the end of the month.",
    "Children are welcome when they come with an adult.",
]
APPEND = ["Thank you all for your help.", "Please bring your own gloves.", "The next update follows in May.",
          "Contact the office with any changes.", "Minutes of this meeting are attached."]
DATES = ["14 March", "2 April", "19 May", "7 June", "23 September"]


def _doc(title: str, body: list[str], *, title_style: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"odt": {"paragraphs": [{"text": title, "style": title_style or {"bold": True, "size": 16}}, *body]}}


def _open(path: str) -> dict[str, Any]:
    return {"app": "writer", "path": path, "title": re.escape(path.rsplit("/", 1)[-1])}


def _para(path: str, containing: str, field: str) -> dict[str, Any]:
    return get("odt_paragraph", path=path, containing=containing, field=field)


def _world(rng: random.Random, n: int = 4) -> tuple[str, list[str]]:
    return rng.choice(TOPICS), rng.sample(SENTENCES, n)


def _to_paragraph(k: int) -> str:
    """Keys from anywhere to the start of paragraph ``k`` (0 = the title); every paragraph is one line."""
    return " ".join(["ctrl+Home", *["Down"] * k, "Home"])


def _distractor(rng: random.Random) -> tuple[str, dict[str, Any]]:
    title, body = _world(rng, 3)
    return f"{DOCS}/notes.odt", _doc(title, body)


def style_one(rng: random.Random, i: int, index: int) -> TaskSpec:
    attr, shortcut = [("bold", "ctrl+b"), ("italic", "ctrl+i"), ("underline", "ctrl+u")][i % 3]
    path = f"{DOCS}/plan.odt"
    title, body = _world(rng, 4)
    k = rng.randrange(1, 5)
    target = body[k - 1]
    other = body[k % 4]
    words = " ".join(target.split()[:4])
    made = {"bold": "bold", "italic": "italic", "underline": "underlined"}[attr]
    instruction = (f"In plan.odt (open in Writer), make the whole paragraph that begins \"{words}\" {made}, and "
                   f"only that paragraph. Save the document in place (keep the .odt format).")
    checks = [check(_para(path, target, attr), "exact", f"{attr} paragraph", expected=True),
              check(_para(path, other, attr), "exact", f"other paragraph not {attr}", expected=False),
              check(get("odt_paragraphs", path=path), "exact", "text kept", expected=[title, *body])]
    nd, nd_spec = _distractor(rng)
    solution = [wait(10), key(f"{_to_paragraph(k)} shift+End"), key(shortcut), key("ctrl+s"), wait(5), done()]
    tid = f"writer-{attr}-{i:02d}"
    after = [{"text": title, "style": {"bold": True, "size": 16}}]
    after += [{"text": s, "style": {attr: True}} if s == target else s for s in body]
    EXPECTED[tid] = {"files": {path: {"odt": {"paragraphs": after}}}}
    return task(SUITE, tid, index, instruction, files={path: _doc(title, body), nd: nd_spec}, open_app=_open(path),
                solution=solution, verifier=desktop(checks, [nd]), tags=("format",))


def align(rng: random.Random, i: int, index: int) -> TaskSpec:
    where, shortcut = [("center", "ctrl+e"), ("right", "ctrl+r")][i % 2]
    path = f"{DOCS}/letter.odt"
    title, body = _world(rng, 4)
    k = 0 if i < 2 else rng.randrange(1, 5)
    target = title if k == 0 else body[k - 1]
    opening = " ".join(target.split()[:4])
    what = "the title (the first paragraph)" if k == 0 else f"the paragraph that begins \"{opening}\""
    how = "Center" if where == "center" else "Right-align"
    instruction = f"In letter.odt (open in Writer), {how.lower()} {what}. Save the document in place."
    checks = [check(_para(path, target, "align"), "exact", "alignment", expected=where),
              check(get("odt_paragraphs", path=path), "exact", "text kept", expected=[title, *body])]
    if k != 0:
        checks.append(check(_para(path, title, "align"), "exact", "title untouched", expected="left"))
    else:
        checks.append(check(_para(path, body[0], "align"), "exact", "body untouched", expected="left"))
    solution = [wait(10), key(_to_paragraph(k)), key(shortcut), key("ctrl+s"), wait(5), done()]
    tid = f"writer-align-{i:02d}"
    title_style: dict[str, Any] = {"bold": True, "size": 16}
    paragraphs = [{"text": title, "style": {**title_style, "align": where} if k == 0 else title_style}]
    paragraphs += [{"text": s, "style": {"align": where}} if s == target else s for s in body]
    EXPECTED[tid] = {"files": {path: {"odt": {"paragraphs": paragraphs}}}}
    nd, nd_spec = _distractor(rng)
    return task(SUITE, tid, index, instruction, files={path: _doc(title, body), nd: nd_spec}, open_app=_open(path),
                solution=solution, verifier=desktop(checks, [nd]), tags=("format",))


def append(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/minutes.odt"
    title, body = _world(rng, 3)
    line = APPEND[i % len(APPEND)]
    instruction = (f"Add a new paragraph at the very end of minutes.odt (open in Writer) with exactly this text: "
                   f"{line} Save the document in place.")
    checks = [check(get("odt_paragraphs", path=path), "exact", "paragraphs", expected=[title, *body, line])]
    nd, nd_spec = _distractor(rng)
    solution = [wait(10), key("ctrl+End Return"), typed(line), key("ctrl+s"), wait(5), done()]
    tid = f"writer-append-{i:02d}"
    EXPECTED[tid] = {"files": {path: _doc(title, [*body, line])}}
    return task(SUITE, tid, index, instruction, files={path: _doc(title, body), nd: nd_spec}, open_app=_open(path),
                solution=solution, verifier=desktop(checks, [nd]), tags=("edit",))


def retitle(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/proposal.odt"
    topic, body = _world(rng, 3)
    old, new = f"Draft {topic}", f"Final {topic}"
    instruction = (f"The title of proposal.odt (open in Writer) reads \"{old}\". Change it to \"{new}\", keep it "
                   "bold, change nothing else, and save the document in place.")
    checks = [check(get("odt_paragraphs", path=path), "exact", "paragraphs", expected=[new, *body]),
              check(_para(path, new, "bold"), "exact", "title bold", expected=True)]
    nd, nd_spec = _distractor(rng)
    solution = [wait(10), key("ctrl+Home shift+End"), typed(new), key("ctrl+s"), wait(5), done()]
    tid = f"writer-retitle-{i:02d}"
    EXPECTED[tid] = {"files": {path: _doc(new, body)}}
    return task(SUITE, tid, index, instruction, files={path: _doc(old, body), nd: nd_spec}, open_app=_open(path),
                solution=solution, verifier=desktop(checks, [nd]), tags=("edit",))


def delete(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/plan.odt"
    title, body = _world(rng, 4)
    k = rng.randrange(1, 4)  # never the last paragraph
    target = body[k - 1]
    left = [s for s in body if s != target]
    instruction = (f"Delete the paragraph that begins \"{' '.join(target.split()[:4])}\" from plan.odt (open in "
                   "Writer), leaving no empty paragraph behind. Save the document in place.")
    checks = [check(get("odt_paragraphs", path=path, skip_empty=False), "exact", "paragraphs",
                    expected=[title, *left])]
    nd, nd_spec = _distractor(rng)
    solution = [wait(10), key(f"{_to_paragraph(k)} shift+Down"), key("Delete"), key("ctrl+s"), wait(5), done()]
    tid = f"writer-delete-{i:02d}"
    EXPECTED[tid] = {"files": {path: _doc(title, left)}}
    return task(SUITE, tid, index, instruction, files={path: _doc(title, body), nd: nd_spec}, open_app=_open(path),
                solution=solution, verifier=desktop(checks, [nd]), tags=("edit",))


def question(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/memo.odt"
    title, body = _world(rng, 3)
    date = DATES[i % len(DATES)]
    body.insert(rng.randrange(0, 4), f"The next meeting takes place on {date}.")
    instruction = ("On which date does the next meeting take place, according to memo.odt (open in Writer)? "
                   "Answer with the date only (day and month), and do not modify the document.")
    day, month = date.split()
    checks = [check(get("answer"), "regex", "answer", pattern=rf"(?i)^\W*{day}\W+{month}\W*$")]
    tid = f"writer-ask-{i:02d}"
    EXPECTED[tid] = {"files": {}, "answer": date}
    return task(SUITE, tid, index, instruction, files={path: _doc(title, body)}, open_app=_open(path),
                solution=[wait(10), done(date)], verifier=desktop(checks, [path]), tags=("question",))


def save_copy(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/report.odt"
    copy = f"{DOCS}/report-final.odt"
    title, body = _world(rng, 3)
    instruction = (f"Center the title of report.odt (open in Writer) and save the result as a new file {copy} "
                   "(OpenDocument text). report.odt itself must stay unchanged.")
    checks = [check(_para(copy, title, "align"), "exact", "title centred", expected="center"),
              check(get("odt_paragraphs", path=copy), "exact", "text", expected=[title, *body])]
    solution = [wait(10), key("ctrl+Home"), key("ctrl+e"), key("ctrl+shift+s"), wait(5), key("ctrl+a"),
                typed(copy), key("Return"), wait(5), done()]
    tid = f"writer-saveas-{i:02d}"
    paragraphs = [{"text": title, "style": {"bold": True, "size": 16, "align": "center"}}, *body]
    EXPECTED[tid] = {"files": {copy: {"odt": {"paragraphs": paragraphs}}}}
    return task(SUITE, tid, index, instruction, files={path: _doc(title, body)}, open_app=_open(path),
                solution=solution, verifier=desktop(checks, [path]), tags=("save-as", "distractor"))


def infeasible(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/report.odt"
    title, body = _world(rng, 3)
    if i < 2:
        missing = ["minutes-2024.odt", "old-report.odt"][i]
        instruction = (f"Copy the last paragraph of {DOCS}/{missing} to the end of report.odt (open in Writer) "
                       "and save.")
        reason = f"{missing} does not exist"
    else:
        instruction = "In report.odt (open in Writer), make the paragraph that begins \"Appendix B\" italic and save."
        reason = "report.odt has no paragraph beginning with Appendix B"
    tid = f"writer-infeasible-{i:02d}"
    EXPECTED[tid] = {"files": {}, "fail": True}
    return task(SUITE, tid, index, instruction, files={path: _doc(title, body)}, open_app=_open(path),
                solution=[wait(2), fail(reason)], verifier=desktop([], [path], expect="fail"), tags=("infeasible",))


KINDS = ((style_one, 8), (align, 4), (append, 3), (retitle, 3), (delete, 3), (question, 3), (save_copy, 2),
         (infeasible, 3))


def build() -> list[TaskSpec]:
    rng = random.Random(14_002)
    tasks: list[TaskSpec] = []
    for make, count in KINDS:
        for i in range(count):
            tasks.append(make(rng, i, len(tasks)))
    return tasks
