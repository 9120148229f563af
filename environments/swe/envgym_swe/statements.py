"""Problem statements of mined candidates: what the history says about a change, never its diff.

::

    st = compose(merge_message, [commit messages], [notes], squash=False, patch=..., test_patch=...)
    st.text, st.sources, st.flags, st.masked, st.linked_issues
    readme_section(rows)   # the "Problem statements" section of a mined suite's README

The text is, in order (a paragraph an earlier part already has is left out): the pull request's title and
description (the merge commit's message, its generated ``Merge pull request #N from ...`` / ``Merge branch
...`` subject left out), the message of every commit it brings in (or of the single commit), then every
``git notes`` note on them (any notes ref: git holds no issue tracker, so a linked issue's text reaches a
statement only as a note, e.g. ``git notes --ref=issues add -F issue.txt COMMIT``). Trailers
(``Signed-off-by``, ``Co-authored-by`` ...) and lines that only reference issues (``Fixes #12``, ``Closes
org/repo#3``) are dropped; the issues such references name (``Fixes``/``Closes``/``Resolves #N``) are kept in
``linked_issues``.

Masking: a statement must not hand over the fix. An identifier the gold patch adds (on its ``+`` lines and
on none of its ``-`` lines: a new helper, a new parameter, a call the fix introduces), that the test patch
never uses, that is no Python keyword or builtin, is replaced by ``[masked]`` wherever the statement writes
it as code: an identifier with ``_`` or an inner capital (``max_retries``, ``getHeader``), or a word in
backticks, followed by ``(``, or part of a dotted name. Names already on ``-`` lines (the code being
changed: where the bug is) and names the tests use (the interface the problem is about) stay; so does
prose (``the retry count``), even when the patch has the same word.

Flags: ``one-line`` (a single non-empty line: says little beyond a title) and ``squash-merged one-line
title`` (a squash-merged pull request whose commit keeps only its title, which often names the fix).
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

MASK = "[masked]"
_TRAILER = re.compile(r"^(?:Signed-off-by|Co-authored-by|Reviewed-by|Acked-by|Change-Id|Cc|Tested-by):",
                      re.IGNORECASE)
_AUTO_MERGE = re.compile(r"^Merge (?:pull request #\d+|branch |remote-tracking branch |tag |commit |'[^']*' into )")
_REF = r"(?:[\w.-]+/[\w.-]+)?#\d+"
_REF_LINE = re.compile(rf"(?i)^\s*(?:(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|refs?|see|related(?: to)?)\s*:?\s*)?"
                       rf"{_REF}(?:\s*(?:,|and)?\s*{_REF})*\s*\.?\s*$")
_LINKS = re.compile(rf"(?i)\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)\s*:?\s+({_REF}(?:\s*(?:,|and)\s*{_REF})*)")
_SQUASH = re.compile(r"\(#\d+\)\s*$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_NAMES = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins)) | {"self", "cls"}


@dataclass(frozen=True)
class Statement:
    text: str
    sources: tuple[str, ...]
    flags: tuple[str, ...] = ()
    masked: tuple[str, ...] = ()
    linked_issues: tuple[str, ...] = ()

    def provenance(self) -> dict[str, Any]:
        """What a candidate row keeps beside ``problem_statement`` (as its ``statement`` field)."""
        return {k: list(v) for k, v in asdict(self).items() if k != "text"}


def is_squash_title(message: str) -> bool:
    """A subject ending in ``(#123)``: GitHub's squash-merge (or rebase-merge) of pull request 123."""
    return bool(_SQUASH.search(message.strip().split("\n", 1)[0]))


def _clean(message: str, *, merge: bool = False) -> str:
    lines = message.strip().splitlines()
    if merge and lines and _AUTO_MERGE.match(lines[0]):
        lines = lines[1:]
    return "\n".join(line for line in lines if not _TRAILER.match(line) and not _REF_LINE.match(line)).strip()


def solution_names(patch: str, test_patch: str) -> set[str]:
    """Identifiers the fix adds (see the module docstring), to be masked where a statement writes them."""
    added: set[str] = set()
    removed: set[str] = set()
    for line in patch.splitlines():
        if line.startswith(("+++", "---")):
            continue
        if line.startswith("+"):
            added.update(_IDENT.findall(line[1:]))
        elif line.startswith("-"):
            removed.update(_IDENT.findall(line[1:]))
    return {n for n in added - removed - set(_IDENT.findall(test_patch)) - _NOT_NAMES if len(n) > 1}


def _code_shaped(name: str) -> bool:
    return "_" in name or bool(re.search(r"[a-z][A-Z]|[A-Z]{2}[a-z]", name))


def mask(text: str, names: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    """``text`` with each of ``names`` written as code replaced by :data:`MASK`; (text, names masked)."""
    hit: set[str] = set()

    def replace(m: re.Match[str]) -> str:
        name, before, after = m.group(0), text[m.start() - 1:m.start()], text[m.end():m.end() + 2]
        dotted = before == "." or (after[:1] == "." and after[1:2].isidentifier())
        if _code_shaped(name) or before == "`" or after[:1] in ("`", "(") or dotted:
            hit.add(name)
            return MASK
        return name

    wanted = sorted(set(names), key=len, reverse=True)
    if not wanted:
        return text, ()
    pattern = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(map(re.escape, wanted)) + r")(?![A-Za-z0-9_])")
    return pattern.sub(replace, text), tuple(sorted(hit))


def compose(merge_message: str | None, messages: list[str], notes: list[str], *, squash: bool = False,
            patch: str = "", test_patch: str = "") -> Statement:
    """The statement of one unit of history: a merged pull request (``merge_message`` and the ``messages``
    of its commits, oldest first) or a single commit (``merge_message`` None, one message)."""
    pieces = ([_clean(merge_message, merge=True)] if merge_message is not None else [])
    pieces += [_clean(m, merge=True) for m in messages] + [n.strip() for n in notes]
    seen: set[str] = set()
    paragraphs = []
    for piece in pieces:  # a paragraph an earlier piece has (a commit repeating the title) is left out
        own = [(" ".join(p.split()).lower(), p.strip("\n")) for p in re.split(r"\n[ \t]*\n", piece)]
        paragraphs += [p for key, p in own if key and key not in seen]
        seen.update(key for key, _ in own)
    text, masked = mask("\n\n".join(paragraphs), solution_names(patch, test_patch))
    links = sorted({ref for m in [merge_message or "", *messages]
                    for group in _LINKS.findall(m) for ref in re.findall(_REF, group)})
    if merge_message is not None:
        sources = ["pull request (merge message)", f"{len(messages)} commit message(s)"]
    else:
        sources = ["squash-merged commit message" if squash else "commit message"]
    if any(n.strip() for n in notes):
        sources.append("git notes")
    one_line = len([line for line in text.splitlines() if line.strip()]) == 1
    flags = (["one-line"] if one_line else []) + (["squash-merged one-line title"] if squash and one_line else [])
    return Statement(text=text, sources=tuple(sources), flags=tuple(flags), masked=masked, linked_issues=tuple(links))


def readme_section(rows: Iterable[Mapping[str, Any]]) -> str:
    """The README section saying where each task's statement came from (rows: mined candidates that carry a
    ``statement`` field; others are counted as imported as they were)."""
    rows = list(rows)
    info = [(r["instance_id"], r.get("statement") or {}) for r in rows]
    count = {key: sum(1 for _, s in info if any(src.startswith(key) for src in s.get("sources", ())))
             for key in ("pull request", "commit message", "squash-merged", "git notes")}
    masked = sum(1 for _, s in info if s.get("masked"))
    lines = ["## Problem statements", "",
             f"Written by `envgym swe mine` from the history, never from the diff ({len(rows)} task(s)): "
             f"{count['pull request']} from a merged pull request (merge message and its commits' messages), "
             f"{count['commit message'] + count['squash-merged']} from a single commit's message "
             f"({count['squash-merged']} squash-merged), {count['git notes']} with `git notes`. Trailers and "
             f"issue-reference lines are dropped. Identifiers the gold patch adds (on its `+` lines, not its `-` "
             f"lines, unused by the test patch) are replaced by `{MASK}` where the statement writes them as code: "
             f"{masked} statement(s).", ""]
    flagged = [(iid, s) for iid, s in info if s.get("flags")]
    if flagged:
        lines += ["Flagged (a one-line statement says little beyond a title; a squash-merged title often names "
                  "the fix):", ""]
        lines += [f"- `{iid}`: {', '.join(s['flags'])}" for iid, s in flagged] + [""]
    return "\n".join(lines)
