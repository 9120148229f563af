"""EnvForum: a forum with an admin panel. Sign in, boards, posts, replies, moderation, users and roles.

Roles: ``member`` (post, reply), ``moderator`` (also pin, lock and delete posts), ``admin`` (also change
roles and ban users in the admin panel). Banned users cannot sign in. Writes (recorded for the verifiers):
``create_post(board, title, body)``, ``reply(post_id, body)``, ``set_pinned(post_id, pinned)``,
``set_locked(post_id, locked)``, ``delete_post(post_id)``, ``set_role(user_id, role)``,
``set_banned(user_id, banned)``; each checks the acting user's permission (``actor``).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from envgym_web.apps.base import App, AppFailure, AppSession, Forbidden, esc
from envgym_web.server import Request, Response

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL UNIQUE, password TEXT NOT NULL,
                    display_name TEXT NOT NULL, role TEXT NOT NULL CHECK (role IN ('member', 'moderator', 'admin')),
                    banned INTEGER NOT NULL DEFAULT 0);
CREATE TABLE boards (slug TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE posts (id INTEGER PRIMARY KEY, board TEXT NOT NULL REFERENCES boards(slug),
                    author_id INTEGER NOT NULL REFERENCES users(id), title TEXT NOT NULL, body TEXT NOT NULL,
                    pinned INTEGER NOT NULL DEFAULT 0, locked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE replies (id INTEGER PRIMARY KEY, post_id INTEGER NOT NULL REFERENCES posts(id),
                      author_id INTEGER NOT NULL REFERENCES users(id), body TEXT NOT NULL);
"""
ROLES = ("member", "moderator", "admin")
RANK = {role: i for i, role in enumerate(ROLES)}

APP = App(name="forum", title="EnvForum", schema_sql=SCHEMA, login_required=True)


def _need(conn: sqlite3.Connection, actor: int, role: str) -> None:
    row = conn.execute("SELECT role FROM users WHERE id = ?", (actor,)).fetchone()
    if row is None or RANK[row[0]] < RANK[role]:
        raise AppFailure(f"only a {role} may do that")


def _post(conn: sqlite3.Connection, post_id: int) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM posts WHERE id = ?", (post_id,)).fetchone()
    if row is None:
        raise AppFailure("no such post")
    return row


@APP.write("create_post")
def create_post(conn: sqlite3.Connection, a: dict[str, Any]) -> int:
    if conn.execute("SELECT 1 FROM boards WHERE slug = ?", (a["board"],)).fetchone() is None:
        raise AppFailure("choose a board")
    if not a["title"].strip() or not a["body"].strip():
        raise AppFailure("a post needs a title and a body")
    post_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM posts").fetchone()[0]
    conn.execute("INSERT INTO posts (id, board, author_id, title, body) VALUES (?, ?, ?, ?, ?)",
                 (post_id, a["board"], a["actor"], a["title"].strip(), a["body"].strip()))
    return post_id


@APP.write("reply")
def reply(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    if _post(conn, a["post_id"])["locked"]:
        raise AppFailure("this thread is locked")
    if not a["body"].strip():
        raise AppFailure("a reply cannot be empty")
    reply_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM replies").fetchone()[0]
    conn.execute("INSERT INTO replies VALUES (?, ?, ?, ?)", (reply_id, a["post_id"], a["actor"], a["body"].strip()))


@APP.write("set_pinned")
def set_pinned(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    _need(conn, a["actor"], "moderator")
    _post(conn, a["post_id"])
    conn.execute("UPDATE posts SET pinned = ? WHERE id = ?", (int(a["pinned"]), a["post_id"]))


@APP.write("set_locked")
def set_locked(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    _need(conn, a["actor"], "moderator")
    _post(conn, a["post_id"])
    conn.execute("UPDATE posts SET locked = ? WHERE id = ?", (int(a["locked"]), a["post_id"]))


@APP.write("delete_post")
def delete_post(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    _need(conn, a["actor"], "moderator")
    _post(conn, a["post_id"])
    conn.execute("DELETE FROM replies WHERE post_id = ?", (a["post_id"],))
    conn.execute("DELETE FROM posts WHERE id = ?", (a["post_id"],))


@APP.write("set_role")
def set_role(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    _need(conn, a["actor"], "admin")
    if a["role"] not in ROLES:
        raise AppFailure("unknown role")
    if a["user_id"] == a["actor"]:
        raise AppFailure("you cannot change your own role")
    if conn.execute("UPDATE users SET role = ? WHERE id = ?", (a["role"], a["user_id"])).rowcount == 0:
        raise AppFailure("no such user")


@APP.write("set_banned")
def set_banned(conn: sqlite3.Connection, a: dict[str, Any]) -> None:
    _need(conn, a["actor"], "admin")
    if a["user_id"] == a["actor"]:
        raise AppFailure("you cannot ban yourself")
    if conn.execute("UPDATE users SET banned = ? WHERE id = ?", (int(a["banned"]), a["user_id"])).rowcount == 0:
        raise AppFailure("no such user")


# --- pages ---------------------------------------------------------------------------------------------------
def _me(s: AppSession, r: Request) -> sqlite3.Row:
    user = s.user(r)
    if user is None:
        raise Forbidden("sign in first")
    return user


def _page(s: AppSession, r: Request, title: str, body: str) -> str:
    me = s.user(r)
    nav = "<a id=nav-home href='/'>Boards</a><a id=nav-new-post href='/new'>New post</a>"
    if me is not None and me["role"] == "admin":
        nav += "<a id=nav-admin href='/admin/users'>Admin</a>"
    if me is not None:
        nav += (f"<a id=nav-profile href='/u/{esc(me['username'])}'>{esc(me['display_name'])}</a>"
                "<a id=nav-logout href='/logout'>Sign out</a>")
    return APP.page(title, body, nav=nav)


def _error(message: str) -> str:
    return f"<p id=error class=error>{esc(message)}</p>" if message else ""


def _login_page(error: str = "") -> str:
    return APP.page("Sign in", f"<h1>Sign in to EnvForum</h1>{_error(error)}<form action='/login' method=post>"
                    "<p><label for=username>Username</label> <input id=username name=username></p>"
                    "<p><label for=password>Password</label> <input id=password name=password type=password></p>"
                    "<button id=login-button>Sign in</button></form>")


@APP.route("GET", "/login")
def login(s: AppSession, r: Request) -> str:
    return _login_page()


@APP.route("POST", "/login")
def login_post(s: AppSession, r: Request) -> Response | str:
    user = s.row("SELECT * FROM users WHERE username = ? AND password = ?",
                 r.form.get("username", ""), r.form.get("password", ""))
    if user is None:
        return _login_page("Invalid username or password.")
    if user["banned"]:
        return _login_page("This account is banned.")
    return Response.redirect("/", cookie=s.sign_in(user["id"]))



@APP.route("GET", "/logout")
def logout(s: AppSession, r: Request) -> Response:
    s.sessions.pop(r.cookies.get("sid", ""), None)
    return Response.redirect("/login", cookie="sid=; Path=/; Max-Age=0")


@APP.route("GET", "/")
def home(s: AppSession, r: Request) -> str:
    boards = s.rows("SELECT b.slug, b.name, COUNT(p.id) AS n FROM boards b LEFT JOIN posts p ON p.board = b.slug "
                    "GROUP BY b.slug ORDER BY b.name")
    items = "".join(f"<li><a id=board-{esc(b['slug'])} href='/b/{esc(b['slug'])}'>{esc(b['name'])}</a> "
                    f"<span>{b['n']} posts</span></li>" for b in boards)
    return _page(s, r, "Boards", f"<h1>Boards</h1><ul>{items}</ul>")


@APP.route("GET", "/b/([a-z0-9-]+)")
def board(s: AppSession, r: Request, slug: str) -> Response | str:
    b = s.row("SELECT * FROM boards WHERE slug = ?", slug)
    if b is None:
        return Response(_page(s, r, "Not found", "<h1>No such board</h1>"), status=404)
    posts = s.rows("SELECT p.*, u.display_name, (SELECT COUNT(*) FROM replies WHERE post_id = p.id) AS n "
                   "FROM posts p JOIN users u ON u.id = p.author_id WHERE board = ? ORDER BY pinned DESC, p.id", slug)
    rows = "".join(f"<tr><td>{'📌 ' if p['pinned'] else ''}{'🔒 ' if p['locked'] else ''}"
                   f"<a id=post-{p['id']} href='/p/{p['id']}'>{esc(p['title'])}</a></td>"
                   f"<td>{esc(p['display_name'])}</td><td>{p['n']} replies</td></tr>" for p in posts)
    return _page(s, r, b["name"], f"<h1>{esc(b['name'])}</h1><table><tr><th>Post</th><th>Author</th><th>Replies</th>"
                 f"</tr>{rows}</table>")


def _post_page(s: AppSession, r: Request, pid: int, error: str = "") -> Response | str:
    p = s.row("SELECT p.*, u.display_name, u.username FROM posts p JOIN users u ON u.id = p.author_id "
              "WHERE p.id = ?", pid)
    if p is None:
        return Response(_page(s, r, "Not found", "<h1>No such post</h1>"), status=404)
    me = _me(s, r)
    found = s.rows("SELECT x.body, u.display_name FROM replies x JOIN users u ON u.id = x.author_id "
                   "WHERE post_id = ? ORDER BY x.id", pid)
    replies = "".join(f"<li><b>{esc(x['display_name'])}</b>: {esc(x['body'])}</li>" for x in found)
    form = ("<p>This thread is locked.</p>" if p["locked"] else
            f"<form action='/p/{pid}/reply' method=post><label for=reply-body>Your reply</label><br>"
            "<textarea id=reply-body name=body rows=3 cols=60></textarea><br>"
            "<button id=reply-button>Reply</button></form>")
    tools = ""
    if RANK[me["role"]] >= RANK["moderator"]:
        pin = ("unpin-post", "Unpin") if p["pinned"] else ("pin-post", "Pin")
        lock = ("unlock-post", "Unlock") if p["locked"] else ("lock-post", "Lock")
        tools = (f"<div class=mod><form action='/p/{pid}/moderate' method=post>"
                 f"<button id={pin[0]} name=op value={pin[0]}>{pin[1]}</button>"
                 f"<button id={lock[0]} name=op value={lock[0]}>{lock[1]}</button>"
                 "<button id=delete-post name=op value=delete-post>Delete</button></form></div>")
    return _page(s, r, p["title"], f"<h1>{esc(p['title'])}</h1>{_error(error)}<p>by "
                 f"<a id=author href='/u/{esc(p['username'])}'>{esc(p['display_name'])}</a> in "
                 f"<a id=post-board href='/b/{esc(p['board'])}'>{esc(p['board'])}</a></p>"
                 f"<div class=body>{esc(p['body'])}</div>{tools}<h2>Replies ({len(found)})</h2>"
                 f"<ul>{replies}</ul>{form}")


@APP.route("GET", r"/p/(\d+)")
def post(s: AppSession, r: Request, pid: str) -> Response | str:
    return _post_page(s, r, int(pid))


@APP.route("POST", r"/p/(\d+)/reply")
def post_reply(s: AppSession, r: Request, pid: str) -> Response | str:
    try:
        s.write("reply", actor=_me(s, r)["id"], post_id=int(pid), body=r.form.get("body", ""))
    except AppFailure as exc:
        return _post_page(s, r, int(pid), str(exc))
    return Response.redirect(f"/p/{pid}")


@APP.route("POST", r"/p/(\d+)/moderate")
def post_moderate(s: AppSession, r: Request, pid: str) -> Response | str:
    me, post_id, op = _me(s, r), int(pid), r.form.get("op", "")
    board_slug = s.row("SELECT board FROM posts WHERE id = ?", post_id)
    try:
        if op in ("pin-post", "unpin-post"):
            s.write("set_pinned", actor=me["id"], post_id=post_id, pinned=op == "pin-post")
        elif op in ("lock-post", "unlock-post"):
            s.write("set_locked", actor=me["id"], post_id=post_id, locked=op == "lock-post")
        elif op == "delete-post":
            s.write("delete_post", actor=me["id"], post_id=post_id)
            return Response.redirect(f"/b/{board_slug[0]}" if board_slug else "/")
        else:
            return _post_page(s, r, post_id, "unknown moderation action")
    except AppFailure as exc:
        return _post_page(s, r, post_id, str(exc))
    return Response.redirect(f"/p/{pid}")


def _new_page(s: AppSession, r: Request, error: str = "") -> str:
    options = "".join(f"<option value={esc(b['slug'])}>{esc(b['name'])}</option>"
                      for b in s.rows("SELECT * FROM boards ORDER BY name"))
    return _page(s, r, "New post", f"<h1>New post</h1>{_error(error)}<form action='/new' method=post>"
                 f"<p><label for=board>Board</label> <select id=board name=board>{options}</select></p>"
                 "<p><label for=title>Title</label> <input id=title name=title size=60></p>"
                 "<p><label for=body>Body</label><br><textarea id=body name=body rows=5 cols=60></textarea></p>"
                 "<button id=submit-post>Publish</button></form>")


@APP.route("GET", "/new")
def new(s: AppSession, r: Request) -> str:
    return _new_page(s, r)


@APP.route("POST", "/new")
def new_post(s: AppSession, r: Request) -> Response | str:
    try:
        post_id = s.write("create_post", actor=_me(s, r)["id"], board=r.form.get("board", ""),
                          title=r.form.get("title", ""), body=r.form.get("body", ""))
    except AppFailure as exc:
        return _new_page(s, r, str(exc))
    return Response.redirect(f"/p/{post_id}")


@APP.route("GET", "/u/([a-z0-9_]+)")
def profile(s: AppSession, r: Request, username: str) -> Response | str:
    u = s.row("SELECT * FROM users WHERE username = ?", username)
    if u is None:
        return Response(_page(s, r, "Not found", "<h1>No such user</h1>"), status=404)
    posts = s.rows("SELECT id, title FROM posts WHERE author_id = ? ORDER BY id", u["id"])
    items = "".join(f"<li><a id=user-post-{p['id']} href='/p/{p['id']}'>{esc(p['title'])}</a></li>" for p in posts)
    return _page(s, r, u["display_name"], f"<h1>{esc(u['display_name'])}</h1><p>Username: {esc(u['username'])}</p>"
                 f"<p>Role: {esc(u['role'])}</p><p>{'Banned' if u['banned'] else 'Active'}</p>"
                 f"<h2>Posts ({len(posts)})</h2><ul>{items}</ul>")


def _admin(s: AppSession, r: Request) -> sqlite3.Row:
    me = _me(s, r)
    if me["role"] != "admin":
        raise Forbidden("the admin panel is for administrators")
    return me


@APP.route("GET", "/admin/users")
def admin_users(s: AppSession, r: Request) -> str:
    _admin(s, r)
    rows = "".join(f"<tr><td><a id=user-{u['id']} href='/admin/users/{u['id']}'>{esc(u['username'])}</a></td>"
                   f"<td>{esc(u['display_name'])}</td><td>{esc(u['role'])}</td>"
                   f"<td>{'banned' if u['banned'] else 'active'}</td></tr>"
                   for u in s.rows("SELECT * FROM users ORDER BY username"))
    return _page(s, r, "Users", "<h1>Users</h1><table><tr><th>Username</th><th>Name</th><th>Role</th><th>Status</th>"
                 f"</tr>{rows}</table>")


def _user_admin_page(s: AppSession, r: Request, uid: int, error: str = "") -> Response | str:
    u = s.row("SELECT * FROM users WHERE id = ?", uid)
    if u is None:
        return Response(_page(s, r, "Not found", "<h1>No such user</h1>"), status=404)
    options = "".join(f"<option value={role}{' selected' if role == u['role'] else ''}>{role}</option>"
                      for role in ROLES)
    ban = ("unban-user", "Unban") if u["banned"] else ("ban-user", "Ban")
    return _page(s, r, f"User {u['username']}", f"<h1>User {esc(u['username'])}</h1>{_error(error)}"
                 f"<p>{esc(u['display_name'])} · {'banned' if u['banned'] else 'active'}</p>"
                 f"<form action='/admin/users/{uid}' method=post><label for=role>Role</label> "
                 f"<select id=role name=role>{options}</select> <button id=save-role name=op value=role>Save role"
                 f"</button> <button id={ban[0]} name=op value={ban[0]}>{ban[1]}</button></form>")


@APP.route("GET", r"/admin/users/(\d+)")
def admin_user(s: AppSession, r: Request, uid: str) -> Response | str:
    _admin(s, r)
    return _user_admin_page(s, r, int(uid))


@APP.route("POST", r"/admin/users/(\d+)")
def admin_user_post(s: AppSession, r: Request, uid: str) -> Response | str:
    me, user_id, op = _admin(s, r), int(uid), r.form.get("op", "")
    try:
        if op == "role":
            s.write("set_role", actor=me["id"], user_id=user_id, role=r.form.get("role", ""))
        elif op in ("ban-user", "unban-user"):
            s.write("set_banned", actor=me["id"], user_id=user_id, banned=op == "ban-user")
        else:
            return _user_admin_page(s, r, user_id, "unknown action")
    except AppFailure as exc:
        return _user_admin_page(s, r, user_id, str(exc))
    return Response.redirect(f"/admin/users/{uid}")
