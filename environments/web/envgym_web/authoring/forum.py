"""Generator of the ``web-forum`` suite: posting, replying, moderation, user administration, questions.

Each task seeds its own forum (users, boards, posts, replies). Who is signed in matters: members post and
reply, the moderator (bob) pins, locks and deletes, the admin (alice) changes roles and bans. Some tasks
start signed out, with the credentials in the instruction.
"""

from __future__ import annotations

import random
from typing import Any

from envgym.plugin import ExpectedWrite, Limits, TaskSpec, WriteActionSpec, refuse_quotes, write_suite
from envgym_web.authoring import act, answer_rubric, split_of

ENV_ID = "web/forum-v1"
SUITE = "web-forum"
USERS = [("alice", "Alice Admin", "admin"), ("bob", "Bob Moderator", "moderator"), ("carol", "Carol Chen", "member"),
         ("dave", "Dave Diaz", "member"), ("erin", "Erin Evans", "member"), ("frank", "Frank Fox", "member"),
         ("grace", "Grace Green", "member"), ("heidi", "Heidi Hall", "member")]
BOARDS = [("general", "General"), ("help", "Help Desk"), ("announcements", "Announcements"), ("offtopic", "Off Topic")]
TITLES = ["Welcome thread", "How do I reset my password?", "Weekly meetup notes", "Favourite hiking trails",
          "Bug in the search page", "Release 2.0 is out", "Best budget headphones", "Book club: March pick",
          "Printer keeps jamming", "Photo contest results", "Moving the server on Friday", "Recipe swap",
          "Cheap watches!!! click here", "Question about permissions"]
REPLIES = ["Thanks for sharing!", "I have the same problem.", "Count me in.", "Great news.", "Try restarting it.",
           "+1", "See the FAQ.", "Looks good to me."]


def _password(username: str) -> str:
    return f"{username}-pass-42"


def _world(rng: random.Random) -> dict[str, Any]:
    users = [{"id": i + 1, "username": u, "password": _password(u), "display_name": d, "role": r, "banned": 0}
             for i, (u, d, r) in enumerate(USERS)]
    titles = rng.sample(TITLES, 10)
    posts, replies = [], []
    for pid, title in enumerate(titles, start=1):
        posts.append({"id": pid, "board": rng.choice(BOARDS)[0], "author_id": rng.randrange(3, 9), "title": title,
                      "body": f"{title}: details inside.", "pinned": 0, "locked": 0})
        for _ in range(rng.randrange(0, 4)):
            replies.append({"id": len(replies) + 1, "post_id": pid, "author_id": rng.randrange(1, 9),
                            "body": rng.choice(REPLIES)})
    return {"users": users, "boards": [{"slug": s, "name": n} for s, n in BOARDS], "posts": posts, "replies": replies}


def _uid(name: str) -> int:
    return next(i + 1 for i, u in enumerate(USERS) if u[0] == name)


def _sign_in(name: str) -> list:
    return [act("fill", element_id="username", value=name), act("fill", element_id="password", value=_password(name)),
            act("click", element_id="login-button")]


def _open_post(post: dict[str, Any]) -> list:
    return [act("click", element_id=f"board-{post['board']}"), act("click", element_id=f"post-{post['id']}")]


def _specs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    rng = random.Random(11)

    def add(kind: str, n: int, instruction: str, db: dict[str, Any], solution: list, verifiers: list,
            writes: list[dict[str, Any]], *, user: str | None) -> None:
        state: dict[str, Any] = {"db": db, "start": "/" if user else "/login"}
        if user:
            state["sign_in"] = user
        out.append({"id": f"forum-{kind}-{n:02d}", "instruction": instruction, "initial_state": state,
                    "solution": solution, "verifiers": verifiers, "writes": writes, "tags": ("web", "forum", kind)})

    def write_check(*expected: tuple[str, dict[str, Any]]) -> WriteActionSpec:
        return WriteActionSpec(expected=tuple(ExpectedWrite(tool=t, args=a) for t, a in expected))

    for n in range(5):  # create a post
        db, user = _world(rng), rng.choice(["carol", "dave", "erin"])
        slug, board_name = rng.choice(BOARDS)
        title = rng.choice(["Lost keys near the entrance", "Looking for a running partner", "Lamp for sale",
                            "Server down again?", "Thank you all"]) + f" ({n + 1})"
        body = rng.choice(["Please reply if you can help.", "Details below.", "Happy to answer questions."])
        args = {"actor": _uid(user), "board": slug, "title": title, "body": body}
        add("create-post", n, f"Publish a new post in the “{board_name}” board titled “{title}” with the text "
            f"“{body}”.", db, [act("click", element_id="nav-new-post"),
                               act("select_option", element_id="board", option=board_name),
                               act("fill", element_id="title", value=title), act("fill", element_id="body", value=body),
                               act("click", element_id="submit-post"), act("send_msg_to_user", text="Posted.")],
            [write_check(("create_post", args))], [{"tool": "create_post", "args": args}], user=user)
    for n in range(5):  # reply to a post
        db, user = _world(rng), rng.choice(["dave", "frank", "grace"])
        post = rng.choice(db["posts"])
        text = rng.choice(["I can help with this tomorrow.", "Same here, following.", "Thanks, that fixed it!"])
        args = {"actor": _uid(user), "post_id": post["id"], "body": text}
        add("reply", n, f"Reply “{text}” to the post “{post['title']}”.", db,
            [*_open_post(post), act("fill", element_id="reply-body", value=text),
             act("click", element_id="reply-button"), act("send_msg_to_user", text="Replied.")],
            [write_check(("reply", args))], [{"tool": "reply", "args": args}], user=user)
    for n in range(3):  # sign in, then reply
        db, user = _world(rng), rng.choice(["carol", "heidi"])
        post = rng.choice(db["posts"])
        text = "Signing in just to say: great post."
        args = {"actor": _uid(user), "post_id": post["id"], "body": text}
        add("login-reply", n, f"Sign in as {user} (password: {_password(user)}) and reply “{text}” to the post "
            f"“{post['title']}”.", db, [*_sign_in(user), *_open_post(post),
                                        act("fill", element_id="reply-body", value=text),
                                        act("click", element_id="reply-button"), act("send_msg_to_user", text="Done.")],
            [write_check(("reply", args))], [{"tool": "reply", "args": args}], user=None)
    for n in range(5):  # pin or lock
        db = _world(rng)
        post = rng.choice(db["posts"])
        op, tool, field = [("pin", "set_pinned", "pinned"), ("lock", "set_locked", "locked")][n % 2]
        args = {"actor": _uid("bob"), "post_id": post["id"], field: True}
        add(f"{op}", n, f"As the moderator, {op} the post “{post['title']}”.", db,
            [*_open_post(post), act("click", element_id=f"{op}-post"), act("send_msg_to_user", text="Done.")],
            [write_check((tool, args))], [{"tool": tool, "args": args}], user="bob")
    for n in range(3):  # delete spam
        db = _world(rng)
        spam = {"id": len(db["posts"]) + 1, "board": rng.choice(BOARDS)[0], "author_id": _uid("frank"),
                "title": "FREE GIFT CARDS!!! click here", "body": "totally legit offer", "pinned": 0, "locked": 0}
        db["posts"].append(spam)
        args = {"actor": _uid("bob"), "post_id": spam["id"]}
        add("delete-spam", n, "Delete the spam post “FREE GIFT CARDS!!! click here”; leave every other post alone.",
            db, [*_open_post(spam), act("click", element_id="delete-post"), act("send_msg_to_user", text="Deleted.")],
            [write_check(("delete_post", args))], [{"tool": "delete_post", "args": args}], user="bob")
    for n in range(4):  # change a role
        db = _world(rng)
        target = rng.choice(["carol", "dave", "erin", "grace"])
        role = "moderator" if n % 2 == 0 else "admin"
        args = {"actor": _uid("alice"), "user_id": _uid(target), "role": role}
        add("set-role", n, f"Make {target} a {role} in the admin panel.", db,
            [act("click", element_id="nav-admin"), act("click", element_id=f"user-{_uid(target)}"),
             act("select_option", element_id="role", option=role), act("click", element_id="save-role"),
             act("send_msg_to_user", text="Role changed.")],
            [write_check(("set_role", args))], [{"tool": "set_role", "args": args}], user="alice")
    for n in range(3):  # ban
        db = _world(rng)
        target = rng.choice(["frank", "heidi", "dave"])
        args = {"actor": _uid("alice"), "user_id": _uid(target), "banned": True}
        add("ban", n, f"Ban the user {target}. Do not change anything else.", db,
            [act("click", element_id="nav-admin"), act("click", element_id=f"user-{_uid(target)}"),
             act("click", element_id="ban-user"), act("send_msg_to_user", text="Banned.")],
            [write_check(("set_banned", args))], [{"tool": "set_banned", "args": args}], user="alice")
    unchanged = WriteActionSpec(compare_final_state=True)
    for n in range(3):  # who wrote a post
        db = _world(rng)
        post = rng.choice(db["posts"])
        author = USERS[post["author_id"] - 1][1]
        add("author", n, f"Open the post “{post['title']}” and tell me the display name of its author.", db,
            [*_open_post(post), act("send_msg_to_user", text=author)],
            [unchanged, answer_rubric(author, "contains", f"SELECT COUNT(*) FROM page WHERE path = '/p/{post['id']}'",
                                      "post page open", tuple(u[1] for u in USERS if u[1] != author))],
            [], user="erin")
    for n in range(3):  # count replies
        db = _world(rng)
        post = rng.choice(db["posts"])
        count = sum(r["post_id"] == post["id"] for r in db["replies"])
        add("reply-count", n, f"How many replies does the post “{post['title']}” have? Open it to check.", db,
            [*_open_post(post), act("send_msg_to_user", text=f"{count} replies")],
            [unchanged, answer_rubric(count, "numeric", f"SELECT COUNT(*) FROM page WHERE path = '/p/{post['id']}'",
                                      "post page open")], [], user="grace")
    return out


def build() -> list[TaskSpec]:
    return [TaskSpec(id=raw["id"], env_id=ENV_ID, split=split_of(index), instruction=raw["instruction"],
                     initial_state=raw["initial_state"], limits=Limits(max_steps=20),
                     verifiers=refuse_quotes(raw["verifiers"], raw["instruction"]),
                     solution=tuple(raw["solution"]), tags=raw["tags"], metadata={"reference_writes": raw["writes"]})
            for index, raw in enumerate(_specs())]


def main() -> None:
    write_suite(SUITE, build())


if __name__ == "__main__":
    main()
