"""Fakes for tests: a tiny ``notes`` tool domain with hand-made tasks, a store reader; the kit re-exported.

The real domains live in ``environments/tool``; these keep kernel tests independent of their content. What
is not tied to a family (scripted agents, the episode driver :func:`play`, fake envs and sandboxes) is in
:mod:`envgym.testing`, the kit a plug-in's own tests use too; it is re-exported here so test modules keep
one place to import from.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

import envgym
from envgym.task import TaskSpec, write_tasks
from envgym.testing import BrokenAgent, ScriptedAgent, play
from envgym.tools import store
from envgym.tools.args import NoArgs
from envgym.tools.domain import Domain, PolicyViolation, ToolContext, ToolFailure, tool
from envgym.types import Action
from envgym.verify.spec import AnswerSpec, ExpectedWrite, WriteActionSpec


class NoteId(BaseModel):
    note_id: int = Field(description="the note's id")


class NewNote(BaseModel):
    title: str
    body: str = ""


@tool("read", "List all notes.")
def list_notes(ctx: ToolContext, args: NoArgs) -> list[dict]:
    return ctx.all("SELECT id, title, pinned FROM notes ORDER BY id")


@tool("read", "Read one note.")
def get_note(ctx: ToolContext, args: NoteId) -> dict:
    note = ctx.one("SELECT * FROM notes WHERE id = ?", args.note_id)
    if note is None:
        raise ToolFailure(f"no note {args.note_id}")
    return note


@tool("write", "Add a note.")
def add_note(ctx: ToolContext, args: NewNote) -> dict:
    cur = ctx.conn.execute("INSERT INTO notes (title, body, pinned) VALUES (?, ?, 0)", (args.title, args.body))
    return {"id": cur.lastrowid}


@tool("write", "Delete a note (pinned notes cannot be deleted).")
def delete_note(ctx: ToolContext, args: NoteId) -> dict:
    note = ctx.one("SELECT * FROM notes WHERE id = ?", args.note_id)
    if note is None:
        raise ToolFailure(f"no note {args.note_id}")
    if note["pinned"]:
        raise PolicyViolation("pinned notes cannot be deleted")
    ctx.conn.execute("DELETE FROM notes WHERE id = ?", (args.note_id,))
    return {"deleted": args.note_id}


NOTES = Domain(
    name="notes",
    schema_sql="CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, pinned INTEGER);",
    tools=(list_notes, get_note, add_note, delete_note),
    policy="Never delete pinned notes.",
)

STATE = {"notes": [{"id": 1, "title": "groceries", "body": "milk", "pinned": 0},
                   {"id": 2, "title": "passwords", "body": "hunter2", "pinned": 1},
                   {"id": 3, "title": "todo", "body": "call mum", "pinned": 0}]}


def notes_tasks() -> list[TaskSpec]:
    return [
        TaskSpec(id="notes-delete", env_id="test/notes-v1", instruction="Delete the groceries note.",
                 initial_state=STATE,
                 verifiers=(WriteActionSpec(expected=(ExpectedWrite(tool="delete_note", args={"note_id": 1}),)),),
                 solution=(Action.call("list_notes"), Action.call("delete_note", note_id=1), Action.say("Done."))),
        TaskSpec(id="notes-count", env_id="test/notes-v1", instruction="How many notes do I have?",
                 initial_state=STATE, split="train",
                 verifiers=(WriteActionSpec(), AnswerSpec(kind="numeric", expected=3)),
                 solution=(Action.call("list_notes"), Action.say("You have 3 notes."))),
        TaskSpec(id="notes-add", env_id="test/notes-v1", instruction="Add a note titled 'gym' saying 'monday'.",
                 initial_state=STATE,
                 verifiers=(WriteActionSpec(expected=(ExpectedWrite(tool="add_note", args={"title": "gym"}),)),),
                 solution=(Action.call("add_note", title="gym", body="monday"), Action.say("Added."))),
    ]


NOTES_SUITE = Path(tempfile.mkdtemp(prefix="envgym-tests-")) / "notes.jsonl"
"""The notes tasks as a JSONL suite file (written once per test session)."""


def register_notes() -> None:
    """Register ``test/notes-v1`` (idempotent), serving :data:`NOTES_SUITE`."""
    if not NOTES_SUITE.exists():
        write_tasks(NOTES_SUITE, notes_tasks())
    if "test/notes-v1" not in envgym.registry._registry:
        envgym.register("test/notes-v1", "envgym_tool.env:ToolEnv", kwargs={"domain": NOTES},
                        suites=(str(NOTES_SUITE),), max_episode_steps=10)


def store_snapshot(path) -> dict:
    """Every table of the SQLite store at ``path``."""
    with contextlib.closing(store.connect(path)) as conn:
        return store.SqliteState(conn).snapshot()


__all__ = ["NOTES", "NOTES_SUITE", "STATE", "BrokenAgent", "ScriptedAgent", "notes_tasks", "play", "register_notes",
           "store_snapshot"]


@contextlib.contextmanager
def installed_plugin(tmp_path: Path, monkeypatch, package: Path, entry: str):
    """The plug-in in the folder ``package`` (its module of the same name beside it) installed as a third party's
    would be: a distribution ``<name>-0.1.0.dist-info`` with the ``envgym.environments`` entry point ``entry``
    (``key = module:function``), in an isolated registry that loads plug-ins; its modules forgotten after."""
    module = package.name
    site = tmp_path / "site"
    info = site / f"{module}-0.1.0.dist-info"
    info.mkdir(parents=True)
    name = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[envgym.environments]\n{entry}\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(package))
    try:
        with envgym.isolated(plugins=True):
            yield
    finally:
        for loaded in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
            del sys.modules[loaded]
