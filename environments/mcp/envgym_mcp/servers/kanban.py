"""A kanban board as an MCP server over stdio: the example server of the ``mcp/kanban-v1`` env.

Standard library only, so it runs in any sandbox image with ``python3``. It speaks the Model Context
Protocol's stdio transport (one JSON-RPC 2.0 message per line): ``initialize``, ``ping``, ``tools/list``
and ``tools/call`` (other requests get "method not found", which is also how a client's ``server/discover``
probe learns to fall back to the ``initialize`` handshake). The board lives in a SQLite file (``--db``),
created from a JSON file of initial rows (``--init``) on the first start; every tool call is one committed
transaction, so the file is the server's whole state at any moment (what the env's verifiers read).

Rules the tools enforce (refusals come back as tool errors, ``isError``): a card moves only between the
columns backlog, todo, doing, review, done; ``doing`` holds at most 3 cards; a card goes to ``done`` only
with an assignee; only ``done`` cards can be archived; archived cards cannot change. A write the disk cannot
hold (a full disk, a file-size limit) is refused the same way, and nothing of it is stored.

    python3 kanban.py --db state.sqlite --init init.json
"""

import argparse
import json
import os
import sqlite3
import sys

SCHEMA = """
CREATE TABLE members (id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE cards (
    id TEXT PRIMARY KEY, title TEXT NOT NULL,
    col TEXT NOT NULL CHECK (col IN ('backlog', 'todo', 'doing', 'review', 'done')),
    assignee TEXT REFERENCES members(id), points INTEGER, archived INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE labels (card_id TEXT NOT NULL REFERENCES cards(id), label TEXT NOT NULL, PRIMARY KEY (card_id, label));
CREATE TABLE comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT, card_id TEXT NOT NULL REFERENCES cards(id), text TEXT NOT NULL
);
"""
COLUMNS = ("backlog", "todo", "doing", "review", "done")
WIP_LIMIT = 3
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


class Refused(Exception):  # stays: this stdlib-only server runs in the sandbox; a refusal is a JSON-RPC tool error
    """A call the board's rules refuse: returned as a tool error."""


def _obj(properties, required=()):
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


CARD = {"type": "string", "description": "Card id, e.g. 'K-3'."}
TOOLS = [
    ("list_cards", True, "Cards on the board (not archived), optionally of one column or one assignee.",
     _obj({"column": {"type": "string", "enum": list(COLUMNS)}, "assignee": {"type": "string"}})),
    ("get_card", True, "One card with its labels and comments.", _obj({"card_id": CARD}, ["card_id"])),
    ("list_members", True, "The team members (id and name).", _obj({})),
    ("create_card", False, "Create a card; returns its id.",
     _obj({"title": {"type": "string", "minLength": 1}, "column": {"type": "string", "enum": list(COLUMNS)},
           "assignee": {"type": "string"}, "points": {"type": "integer", "minimum": 0}}, ["title"])),
    ("move_card", False, "Move a card to a column (doing holds at most 3 cards; done needs an assignee).",
     _obj({"card_id": CARD, "column": {"type": "string", "enum": list(COLUMNS)}}, ["card_id", "column"])),
    ("assign_card", False, "Assign a card to a team member (by member id).",
     _obj({"card_id": CARD, "member_id": {"type": "string"}}, ["card_id", "member_id"])),
    ("add_label", False, "Add a label to a card.", _obj({"card_id": CARD, "label": {"type": "string", "minLength": 1}},
                                                       ["card_id", "label"])),
    ("add_comment", False, "Add a comment to a card.",
     _obj({"card_id": CARD, "text": {"type": "string", "minLength": 1}}, ["card_id", "text"])),
    ("archive_card", False, "Archive a card that is done.", _obj({"card_id": CARD}, ["card_id"])),
]


def open_board(db, init):
    fresh = not os.path.exists(db)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    if fresh:
        conn.executescript(SCHEMA)
        rows = {}
        if init and os.path.exists(init):
            with open(init) as handle:
                rows = json.load(handle)
        conn.execute("BEGIN")
        for table in ("members", "cards", "labels", "comments"):
            for row in rows.get(table, []):
                cols = ", ".join(row)
                marks = ", ".join("?" for _ in row)
                conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(row.values()))
        conn.execute("COMMIT")
    return conn


def card(conn, card_id, *, live=True):
    row = conn.execute("SELECT * FROM cards WHERE id = ?", (card_id,)).fetchone()
    if row is None:
        raise Refused(f"no card {card_id!r}")
    if live and row["archived"]:
        raise Refused(f"card {card_id} is archived")
    return dict(row)


def member(conn, member_id):
    if conn.execute("SELECT 1 FROM members WHERE id = ?", (member_id,)).fetchone() is None:
        raise Refused(f"no member {member_id!r}")


def call(conn, name, args):
    if name == "list_cards":
        sql, params = "SELECT id, title, col AS column, assignee, points FROM cards WHERE archived = 0", []
        if args.get("column"):
            sql, params = sql + " AND col = ?", [*params, args["column"]]
        if args.get("assignee"):
            sql, params = sql + " AND assignee = ?", [*params, args["assignee"]]
        return [dict(r) for r in conn.execute(sql + " ORDER BY id", params)]
    if name == "get_card":
        found = card(conn, args["card_id"], live=False)
        found["column"] = found.pop("col")
        found["labels"] = [r[0] for r in conn.execute("SELECT label FROM labels WHERE card_id = ? ORDER BY label",
                                                      (found["id"],))]
        found["comments"] = [r[0] for r in conn.execute("SELECT text FROM comments WHERE card_id = ? ORDER BY id",
                                                        (found["id"],))]
        return found
    if name == "list_members":
        return [dict(r) for r in conn.execute("SELECT * FROM members ORDER BY id")]
    if name == "create_card":
        column = args.get("column", "backlog")
        if column == "doing":
            wip(conn)
        if args.get("assignee"):
            member(conn, args["assignee"])
        number = 1 + max([int(r[0].split("-")[1]) for r in conn.execute("SELECT id FROM cards")] or [0])
        card_id = f"K-{number}"
        conn.execute("INSERT INTO cards (id, title, col, assignee, points) VALUES (?, ?, ?, ?, ?)",
                     (card_id, args["title"], column, args.get("assignee"), args.get("points")))
        return {"card_id": card_id}
    found = card(conn, args["card_id"])
    if name == "move_card":
        column = args["column"]
        if column == found["col"]:
            raise Refused(f"card {found['id']} is already in {column}")
        if column == "doing":
            wip(conn)
        if column == "done" and not found["assignee"]:
            raise Refused(f"card {found['id']} has no assignee; assign it before moving it to done")
        conn.execute("UPDATE cards SET col = ? WHERE id = ?", (column, found["id"]))
        return {"card_id": found["id"], "column": column}
    if name == "assign_card":
        member(conn, args["member_id"])
        conn.execute("UPDATE cards SET assignee = ? WHERE id = ?", (args["member_id"], found["id"]))
        return {"card_id": found["id"], "assignee": args["member_id"]}
    if name == "add_label":
        conn.execute("INSERT OR IGNORE INTO labels VALUES (?, ?)", (found["id"], args["label"].strip().lower()))
        return {"card_id": found["id"], "label": args["label"].strip().lower()}
    if name == "add_comment":
        conn.execute("INSERT INTO comments (card_id, text) VALUES (?, ?)", (found["id"], args["text"]))
        count = conn.execute("SELECT COUNT(*) FROM comments WHERE card_id = ?", (found["id"],)).fetchone()[0]
        return {"card_id": found["id"], "comments": count}
    if name == "archive_card":
        if found["col"] != "done":
            raise Refused(f"card {found['id']} is in {found['col']}; only done cards can be archived")
        conn.execute("UPDATE cards SET archived = 1 WHERE id = ?", (found["id"],))
        return {"card_id": found["id"], "archived": True}
    raise Refused(f"unknown tool {name!r}")


def wip(conn):
    if conn.execute("SELECT COUNT(*) FROM cards WHERE col = 'doing' AND archived = 0").fetchone()[0] >= WIP_LIMIT:
        raise Refused(f"doing already holds {WIP_LIMIT} cards (its limit)")


def check_args(schema, args):
    """The few JSON-schema rules the tools' schemas use: required, types, enums, no extra properties."""
    if not isinstance(args, dict):
        raise Refused("arguments must be an object")
    props = schema["properties"]
    for key in schema["required"]:
        if key not in args:
            raise Refused(f"missing argument {key!r}")
    for key, value in args.items():
        rule = props.get(key)
        if rule is None:
            raise Refused(f"unexpected argument {key!r}")
        kind = {"string": str, "integer": int}[rule["type"]]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise Refused(f"argument {key!r} must be a {rule['type']}")
        if "enum" in rule and value not in rule["enum"]:
            raise Refused(f"argument {key!r} must be one of {', '.join(rule['enum'])}")
        if rule.get("minLength") and len(value.strip()) < rule["minLength"]:
            raise Refused(f"argument {key!r} must not be empty")
        if "minimum" in rule and value < rule["minimum"]:
            raise Refused(f"argument {key!r} must be at least {rule['minimum']}")


def handle(conn, message):
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {"protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "envgym-kanban", "version": "1.0.0"},
                "instructions": "A team's kanban board."}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [{"name": n, "description": d, "inputSchema": s,
                           "annotations": {"readOnlyHint": ro, "destructiveHint": not ro}} for n, ro, d, s in TOOLS]}
    if method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        schema = next((s for n, _, _, s in TOOLS if n == name), None)
        try:
            if schema is None:
                raise Refused(f"unknown tool {name!r}")
            check_args(schema, args)
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = call(conn, name, args)
            except BaseException:
                if conn.in_transaction:  # SQLite rolls a full disk's transaction back by itself
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except Refused as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        except (sqlite3.OperationalError, OSError) as exc:  # a full disk (or a file-size limit): nothing was stored
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return {"content": [{"type": "text", "text": f"the board could not store this: {exc}"}], "isError": True}
        return {"content": [{"type": "text", "text": json.dumps(result, sort_keys=True)}], "isError": False}
    raise LookupError(method)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--init")
    args = parser.parse_args()
    conn = open_board(args.db, args.init)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError("not an object")
        except (ValueError, RecursionError):
            out.write(json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}))
            out.write("\n")
            out.flush()
            continue
        if "id" not in message:  # a notification (initialized, cancelled): nothing to answer
            continue
        try:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": handle(conn, message)}
        except LookupError:
            reply = {"jsonrpc": "2.0", "id": message["id"],
                     "error": {"code": -32601, "message": f"method not found: {message.get('method')}"}}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
