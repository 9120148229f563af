"""The ``mcp-kanban`` suite, generated: a team's kanban board served by an MCP server in a sandbox.

``build()`` returns the suite deterministically; ``python -m envgym_mcp.authoring`` writes it to
``tasks/mcp-kanban/tasks.jsonl``. Every task starts from one board (:func:`base_state`: 4 members, 14 cards,
``doing`` at its limit of 3) held by the example server (``envgym_mcp/servers/kanban.py``). Instructions
name cards by title and people by name, so the agent must look ids up through the server's read tools.
Kinds (``metadata.kind``): ``write`` (one or more writes with exact arguments, some ``ordered`` where the
board's rules force an order), ``question`` (an answer, nothing written) and ``refuse`` (the board's rules
forbid it: nothing written, the answer says why). Every task is graded on the server's final state
(the write-action verifier: expected writes, no other write, the state equal to the reference's) and,
where it asks for one, on the answer.
"""

from __future__ import annotations

import json
from typing import Any

from envgym.plugin import (
    Action,
    AnswerSpec,
    ExpectedWrite,
    Limits,
    TaskSpec,
    ToolCall,
    VerifierSpec,
    WriteActionSpec,
    answer_pattern,
    number_pattern,
    refuse_quote,
    write_suite,
)

ENV_ID = "mcp/kanban-v1"
MEMBERS = [("m1", "Dana"), ("m2", "Omar"), ("m3", "Lee"), ("m4", "Priya")]
CARDS = [  # id, title, column, assignee, points
    ("K-1", "Fix login timeout", "todo", "m1", 3),
    ("K-2", "Update privacy policy page", "backlog", None, 2),
    ("K-3", "Migrate CI to new runners", "doing", "m2", 5),
    ("K-4", "Add dark mode toggle", "doing", "m3", 3),
    ("K-5", "Write onboarding guide", "review", "m4", 2),
    ("K-6", "Refactor billing service", "done", "m2", 8),
    ("K-7", "Remove legacy export endpoint", "done", "m1", 3),
    ("K-8", "Investigate memory leak in worker", "todo", None, 5),
    ("K-9", "Translate settings screen", "backlog", "m3", 1),
    ("K-10", "Upgrade database driver", "review", "m2", 3),
    ("K-11", "Design new pricing page", "todo", "m1", 5),
    ("K-12", "Audit access logs", "backlog", None, 2),
    ("K-13", "Cache search results", "doing", "m1", 3),
    ("K-14", "Retire old dashboards", "done", "m3", 1),
]
LABELS = [("K-1", "bug"), ("K-3", "infra"), ("K-8", "bug")]
COMMENTS = [("K-5", "Needs a screenshot of step 2.")]
NAMES = [name for _, name in MEMBERS]


def base_state() -> dict[str, list[dict[str, Any]]]:
    return {
        "members": [{"id": i, "name": n} for i, n in MEMBERS],
        "cards": [{"id": c[0], "title": c[1], "col": c[2], "assignee": c[3], "points": c[4]} for c in CARDS],
        "labels": [{"card_id": c, "label": label} for c, label in LABELS],
        "comments": [{"card_id": c, "text": t} for c, t in COMMENTS],
    }


class _Script:
    """A reference solution with tool-call ids numbered per task (the file is byte-identical on every build)."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.writes: list[ExpectedWrite] = []

    def call(self, name: str, expect: dict[str, Any] | None = None, **arguments: Any) -> _Script:
        self.actions.append(Action(tool_calls=(ToolCall(id=f"call_{len(self.actions) + 1}", name=name,
                                                        arguments=json.dumps(arguments)),)))
        if expect is not None:
            self.writes.append(ExpectedWrite(tool=name, args=expect))
        return self

    def write(self, name: str, **arguments: Any) -> _Script:
        return self.call(name, dict(arguments), **arguments)


def _title(text: str) -> dict[str, str]:
    return {"$regex": rf"(?i)^\s*{text}\s*$"}


def _tasks() -> list[tuple[str, str, _Script, str, str | None, bool]]:
    """(id suffix, instruction, script, final message, answer regex or None, ordered)."""
    out: list[tuple[str, str, _Script, str, str | None, bool]] = []

    def add(slug: str, instruction: str, script: _Script, final: str = "Done.", answer: str | None = None,
            ordered: bool = False) -> None:
        out.append((slug, instruction, script, final, answer, ordered))

    s = _Script().call("list_cards").write("move_card", card_id="K-1", column="review")
    add("move-review", "Move the card 'Fix login timeout' to review.", s)
    s = _Script().call("list_cards").call("list_members").write("assign_card", card_id="K-8", member_id="m2")
    add("assign-leak", "Assign the memory leak investigation card to Omar.", s)
    s = _Script().call("list_members").call(
        "create_card", {"title": _title("write release notes"), "column": "todo", "assignee": "m4", "points": 2},
        title="Write release notes", column="todo", assignee="m4", points=2)
    add("create-notes", "Create a card 'Write release notes' in todo, assigned to Priya, worth 2 points.", s)
    s = _Script().call("list_cards", column="done")
    for card in ("K-6", "K-7", "K-14"):
        s.write("archive_card", card_id=card)
    add("archive-done", "Archive every card that is done.", s)
    s = _Script().call("list_cards").write("move_card", card_id="K-13", column="review").write(
        "move_card", card_id="K-8", column="doing")
    add("start-leak", "Start work on 'Investigate memory leak in worker' (move it to doing). Doing is at its "
        "limit, so first move 'Cache search results' to review.", s, ordered=True)
    s = _Script().call("list_cards").write("add_label", card_id="K-10", label="backend")
    add("label-driver", "Label the card 'Upgrade database driver' as 'backend'.", s)
    s = _Script().call("list_cards").call("add_comment", {"card_id": "K-5", "text": {"$regex": "(?i)screenshot"}},
                                          card_id="K-5", text="The screenshot of step 2 has been added.")
    add("comment-guide", "Add a comment to 'Write onboarding guide' saying that the screenshot of step 2 has been "
        "added.", s)
    s = _Script().call("list_cards").call("list_members").write("assign_card", card_id="K-2", member_id="m3").write(
        "move_card", card_id="K-2", column="done")
    add("done-privacy", "Lee finished 'Update privacy policy page': make it his card and mark it done.", s,
        ordered=True)
    s = _Script().call("list_cards", column="review")
    add("points-review", "How many story points are there in total on the cards in review? Answer with the number.",
        s, final="5", answer=answer_pattern(number_pattern(5), max_numbers=1))
    s = _Script().call("list_cards").call("list_members")
    add("who-dark-mode", "Who is assigned to 'Add dark mode toggle'? Answer with their name.", s, final="Lee.",
        answer=answer_pattern(r"\bLee\b", reject=(r"\bDana\b", r"\bOmar\b", r"\bPriya\b")))
    s = _Script().call("list_members").call("list_cards", column="todo", assignee="m1")
    for card in ("K-1", "K-11"):
        s.write("assign_card", card_id=card, member_id="m2")
    add("reassign-dana", "Reassign all of Dana's cards in todo to Omar.", s)
    s = _Script().call("list_cards", column="backlog")
    for card in ("K-2", "K-12"):
        s.write("move_card", card_id=card, column="todo")
    add("unassigned-backlog", "Move every unassigned card in backlog to todo.", s)
    s = _Script().call("create_card", {"title": _title("crash on empty cart"), "column": "backlog"},
                       title="Crash on empty cart", column="backlog").write("add_label", card_id="K-15", label="bug")
    add("create-bug", "Create a card 'Crash on empty cart' in backlog and label it 'bug'.", s, ordered=True)
    s = _Script().call("list_cards").write("move_card", card_id="K-9", column="done").write(
        "archive_card", card_id="K-9")
    add("archive-translate", "'Translate settings screen' will not be done after all: archive it (only done cards "
        "can be archived, so move it to done first).", s, ordered=True)
    s = _Script().call("list_cards").write("move_card", card_id="K-3", column="review").call(
        "add_comment", {"card_id": "K-3", "text": {"$regex": "(?i)ready for review"}}, card_id="K-3",
        text="Ready for review")
    add("ci-review", "Move 'Migrate CI to new runners' to review and comment 'Ready for review' on it.", s)
    s = _Script().call("list_cards")
    for card in ("K-1", "K-8"):
        s.call("get_card", card_id=card)
    for card in ("K-1", "K-8"):
        s.write("add_label", card_id=card, label="urgent")
    add("urgent-bugs", "Add the label 'urgent' to every card labelled 'bug'.", s)
    s = _Script().call("list_members").call("list_cards", assignee="m2")
    add("omar-open", "How many cards assigned to Omar are not done yet? Answer with the number.", s, final="2",
        answer=answer_pattern(number_pattern(2), max_numbers=1))
    s = _Script().call("list_cards", column="doing")
    add("refuse-doing-full", "Put 'Audit access logs' in doing. If doing is already at its limit, change nothing "
        "and tell me so.", s, final="Doing is full (3 cards, its limit); nothing changed.",
        answer=answer_pattern(r"\b(full|limit)\b"))
    s = _Script().call("list_cards", column="doing").call("list_members").call(
        "create_card", {"title": _title("rotate api keys"), "column": "todo", "assignee": "m3"},
        title="Rotate API keys", column="todo", assignee="m3")
    add("create-keys", "Create a card 'Rotate API keys' assigned to Lee, in doing; if doing is at its limit, put "
        "it in todo instead.", s)
    s = _Script().call("list_cards", column="done").write("move_card", card_id="K-7", column="review")
    add("reopen-export", "Move 'Remove legacy export endpoint' back to review.", s)
    s = _Script().call("list_cards").call("list_members")
    for card in ("K-2", "K-8", "K-12"):
        s.write("assign_card", card_id=card, member_id="m4")
    add("assign-priya", "Assign every unassigned card on the board to Priya.", s)
    s = _Script().call("list_cards", column="review")
    for card in ("K-5", "K-10"):
        s.call("add_comment", {"card_id": card, "text": {"$regex": "(?i)review due friday"}}, card_id=card,
               text="Review due Friday")
    add("comment-review", "Comment 'Review due Friday' on every card in review.", s)
    s = _Script().call("list_cards")
    add("refuse-archive-review", "Archive 'Upgrade database driver'. If the board does not allow it, change "
        "nothing and tell me why.", s, final="It is in review, and only done cards can be archived; nothing changed.",
        answer=answer_pattern(r"(only done|is in review|not done|must be done|isn't done)"))
    return out


def build() -> list[TaskSpec]:
    tasks = []
    for index, (slug, instruction, script, final, answer, ordered) in enumerate(_tasks()):
        kind = "question" if slug.startswith(("points", "who", "omar")) else (
            "refuse" if slug.startswith("refuse") else "write")
        verifiers: list[VerifierSpec] = [WriteActionSpec(expected=tuple(script.writes), ordered=ordered,
                                                         ignore_fields=("comments.text",))]
        if answer is not None:
            # the instruction quoted back is not an answer (it names the limit, the card, the people)
            verifiers.append(AnswerSpec(kind="regex", expected=refuse_quote(answer, instruction)))
        tasks.append(TaskSpec(
            id=f"kanban-{index:03d}-{slug}", env_id=ENV_ID, split="test" if index % 5 in (1, 3) else "train",
            instruction=instruction, initial_state=base_state(), limits=Limits(max_steps=25),
            verifiers=tuple(verifiers), solution=(*script.actions, Action.say(final)), tags=(kind, "mcp"),
            metadata={"kind": kind}))
    return tasks


if __name__ == "__main__":
    write_suite("mcp-kanban", build())
