"""``gui-desktop-gen``'s document families (LibreOffice Writer): a seeded document, ``level`` edits to it.

- ``doc-format`` (train): ``level`` paragraphs, each named by its opening words, made bold, italic or
  underlined (only those: selecting everything is the tempting shortcut).
- ``doc-rewrite`` (train): ``level`` paragraphs replaced by given sentences.
- ``doc-align`` (test): ``level`` paragraphs (the title among them) centred or right-aligned.
- ``doc-append`` (test): ``level`` sentences appended as new paragraphs.

Sentences are drawn from parts (a subject, an action, a time or place), one short line each, so the cursor
keys move paragraph by paragraph; they start with a capital, hold no quotes, dashes or ordinals and end
with a full stop (nothing AutoCorrect or word completion rewrites). The body grows with the level.
"""

from __future__ import annotations

import random
from typing import Any

from envgym_gui.authoring import DOCS
from envgym_gui.authoring.gen_base import Draft, check, get, key, lines_keys, opener, typed, wait

__all__ = ["FAMILIES"]

TOPICS = ("Garden Project", "Library Move", "Team Offsite", "Budget Review", "Website Refresh", "Kitchen Upgrade",
          "Volunteer Day", "Office Plants", "Spring Fair", "Bike Scheme", "Harbour Cleanup", "Choir Tour",
          "Roof Repair", "Book Swap", "Summer Camp", "Art Show", "Recycling Plan", "Open Day")
SUBJECTS = ("The team", "The committee", "Every guest", "The caretaker", "The night shift", "The new printer",
            "Our treasurer", "The garden crew", "The delivery van", "The head chef", "The youth group",
            "The front desk", "The choir", "The site manager", "The bus driver", "The library")
ACTIONS = ("meets", "arrives", "opens", "closes early", "checks the stock", "cleans the hall", "reviews the plan",
           "collects the keys", "updates the list", "orders more paper", "paints the fence", "sends the invoices",
           "waters the plants", "sorts the post", "tests the alarm", "books the rooms")
WHEN = ("on Monday", "on Tuesday", "every Friday", "before noon", "after lunch", "at the north gate",
        "in the main hall", "next week", "by the end of May", "on the first floor", "twice a month",
        "in the morning", "after the meeting", "near the station", "on rainy days", "during the break")
STYLES = (("bold", "ctrl+b", "bold"), ("italic", "ctrl+i", "italic"), ("underline", "ctrl+u", "underlined"))
ALIGNS = (("center", "ctrl+e", "centre"), ("right", "ctrl+r", "right-align"))
STEMS = ("plan", "memo", "letter", "notice", "minutes", "report", "proposal", "summary")
TITLE_STYLE = {"bold": True, "size": 16}


def _sentences(rng: random.Random, n: int, avoid: tuple[str, ...] = ()) -> list[str]:
    """``n`` sentences with different subjects (so their first four words differ), none starting like
    ``avoid``'s."""
    taken = {s for s in SUBJECTS for a in avoid if a.startswith(s + " ")}
    subjects = rng.sample([s for s in SUBJECTS if s not in taken], n)
    return [f"{s} {rng.choice(ACTIONS)} {rng.choice(WHEN)}." for s in subjects]


def _doc(title: str, body: list[Any]) -> dict[str, Any]:
    return {"odt": {"paragraphs": [{"text": title, "style": TITLE_STYLE}, *body]}}


def _opening(sentence: str) -> str:
    return " ".join(sentence.split()[:4])


def _world(rng: random.Random, level: int) -> tuple[str, str, list[str], str, dict[str, Any]]:
    stem = rng.choice(STEMS)
    title, body = rng.choice(TOPICS), _sentences(rng, 3 + level + rng.randrange(0, 2))
    notes = f"{DOCS}/notes.odt" if stem != "notes" else f"{DOCS}/other.odt"
    return f"{DOCS}/{stem}.odt", title, body, notes, _doc(rng.choice(TOPICS), _sentences(rng, 3))


def _save() -> list[Any]:
    return [key("ctrl+s"), wait(5)]


def doc_format(rng: random.Random, level: int) -> Draft:
    path, title, body, notes, notes_spec = _world(rng, level)
    ks = rng.sample(range(1, len(body) + 1), level)
    styles = [rng.choice(STYLES) for _ in ks]
    untouched = next(k for k in range(1, len(body) + 1) if k not in ks)
    name = path.rsplit("/", 1)[-1]
    asks = " and ".join(f"the paragraph that begins \"{_opening(body[k - 1])}\" {made}"
                        for k, (_, _, made) in zip(ks, styles, strict=True))
    instruction = (f"In {name} (open in Writer), make {asks}, each as a whole and nothing else. Save the document "
                   "in place (keep the .odt format).")
    solution, checks = [], []
    after: list[Any] = list(body)
    for k, (attr, shortcut, _) in zip(ks, styles, strict=True):
        solution += [key(f"{lines_keys(k)} shift+End"), key(shortcut)]
        checks.append(check(get("odt_paragraph", path=path, containing=body[k - 1], field=attr), "exact",
                            f"{attr} paragraph {k}", expected=True))
        after[k - 1] = {"text": body[k - 1], "style": {attr: True}}
    for attr in sorted({a for a, _, _ in styles}):
        checks.append(check(get("odt_paragraph", path=path, containing=body[untouched - 1], field=attr), "exact",
                            f"paragraph {untouched} not {attr}", expected=False))
    checks.append(check(get("odt_paragraphs", path=path), "exact", "text kept", expected=[title, *body]))
    return Draft(instruction, {path: _doc(title, body), notes: notes_spec}, opener("writer", path),
                 [*solution, *_save()], checks, [notes], after={path: _doc(title, after)})


def doc_rewrite(rng: random.Random, level: int) -> Draft:
    path, title, body, notes, notes_spec = _world(rng, level)
    ks = sorted(rng.sample(range(1, len(body) + 1), level))
    new = _sentences(rng, level, avoid=tuple(body))
    after = list(body)
    for k, sentence in zip(ks, new, strict=True):
        after[k - 1] = sentence
    name = path.rsplit("/", 1)[-1]
    asks = "; ".join(f"the paragraph that begins \"{_opening(body[k - 1])}\" with: {s}"
                     for k, s in zip(ks, new, strict=True))
    instruction = (f"In {name} (open in Writer), replace the whole text of {asks} Change nothing else and save the "
                   "document in place.")
    solution = []
    for k, sentence in zip(ks, new, strict=True):
        solution += [key(f"{lines_keys(k)} shift+End"), typed(sentence)]
    checks = [check(get("odt_paragraphs", path=path, skip_empty=False), "exact", "paragraphs",
                    expected=[title, *after])]
    return Draft(instruction, {path: _doc(title, body), notes: notes_spec}, opener("writer", path),
                 [*solution, *_save()], checks, [notes], after={path: _doc(title, after)})


def doc_align(rng: random.Random, level: int) -> Draft:
    path, title, body, notes, notes_spec = _world(rng, level)
    paragraphs = [title, *body]
    ks = sorted(rng.sample(range(len(paragraphs)), level))
    aligns = [rng.choice(ALIGNS) for _ in ks]
    untouched = next(k for k in range(len(paragraphs)) if k not in ks)
    name = path.rsplit("/", 1)[-1]
    asks = " and ".join(f"{how} " + ("the title (the first paragraph)" if k == 0 else
                                     f"the paragraph that begins \"{_opening(paragraphs[k])}\"")
                        for k, (_, _, how) in zip(ks, aligns, strict=True))
    instruction = f"In {name} (open in Writer), {asks}. Change nothing else and save the document in place."
    solution, checks = [], []
    styled: list[Any] = [{"text": title, "style": dict(TITLE_STYLE)}, *body]
    for k, (where, shortcut, _) in zip(ks, aligns, strict=True):
        solution += [key(lines_keys(k)), key(shortcut)]
        checks.append(check(get("odt_paragraph", path=path, containing=paragraphs[k], field="align"), "exact",
                            f"paragraph {k} aligned", expected=where))
        styled[k] = {"text": paragraphs[k], "style": {**(TITLE_STYLE if k == 0 else {}), "align": where}}
    checks += [check(get("odt_paragraph", path=path, containing=paragraphs[untouched], field="align"), "exact",
                     f"paragraph {untouched} untouched", expected="left"),
               check(get("odt_paragraphs", path=path), "exact", "text kept", expected=paragraphs)]
    return Draft(instruction, {path: _doc(title, body), notes: notes_spec}, opener("writer", path),
                 [*solution, *_save()], checks, [notes], after={path: {"odt": {"paragraphs": styled}}})


def doc_append(rng: random.Random, level: int) -> Draft:
    path, title, body, notes, notes_spec = _world(rng, level)
    new = _sentences(rng, level, avoid=tuple(body))
    name = path.rsplit("/", 1)[-1]
    if level == 1:
        what = f"a new paragraph at the very end of {name} (open in Writer) with exactly this text: {new[0]}"
    else:
        listed = " ".join(f"({k}) {s}" for k, s in enumerate(new, start=1))
        what = (f"{level} new paragraphs at the very end of {name} (open in Writer), in this order, one paragraph "
                f"each with exactly this text (without the numbers): {listed}")
    instruction = f"Add {what} Save the document in place."
    solution = [key("ctrl+End Return"), typed(new[0])]
    for sentence in new[1:]:
        solution += [key("Return"), typed(sentence)]
    checks = [check(get("odt_paragraphs", path=path, skip_empty=False), "exact", "paragraphs",
                    expected=[title, *body, *new])]
    return Draft(instruction, {path: _doc(title, body), notes: notes_spec}, opener("writer", path),
                 [*solution, *_save()], checks, [notes], after={path: _doc(title, [*body, *new])})


FAMILIES = {"doc-format": doc_format, "doc-rewrite": doc_rewrite, "doc-align": doc_align, "doc-append": doc_append}
