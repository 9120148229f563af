"""``web-forum-gen``: EnvForum tasks by the thousand, each a seeded forum and a member's seeded errands.

:func:`generate` is the generator (registered in :func:`envgym_web.register_all`); every choice comes from
the request's seeded ``rng``. A task is built in three moves:

1. **A forum** (``initial_state.db``): users with seeded names, ids, passwords and roles (an admin, one or two
   moderators, members, at times a banned one), boards, threads with seeded titles, authors, pins and locks,
   and replies; for the ``delete-spam`` errand, a spam thread.
2. **Errands**: ``level`` requests, each from a different template family of the request's split, done in
   order by one user who may do all of them (a member posts and replies, a moderator pins, locks and deletes,
   the admin changes roles and bans); at most one is a question, and it comes last.
3. **The reference**: browser actions addressing the element ids of the generated forum, and the app writes
   they make, applied with the app's own write functions (:class:`~.generated.Replay`, which also checks the
   acting user may make them); the new post's id and every answer (a thread's replies after the errands, an
   author's display name) are read from the replayed database.

Grading: the expected writes in order (the acting user's id among their arguments) and the final database
equal to the replay's; a question adds its answer and the thread it is read on.

Template families and their splits (:data:`envgym_web.FORUM_TEMPLATES`; a test task uses test families only)::

    train: create-post, reply, pin, set-role, author
    test:  lock, delete-spam, ban, reply-count

Levels (:data:`SIZES`):

- 1: one request, signed in already; threads and users named by title and username; 6 users, 3 boards,
  6 threads;
- 2: two requests; users named by display name, pins and locks may be undone, a reply count may include the
  errands' own reply; 9 users, 4 boards, 10 threads;
- 3: three requests, starting signed out (the credentials are in the instruction); 12 users, 5 boards,
  14 threads.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envgym.plugin import (
    Action,
    ExpectedWrite,
    Limits,
    TaskSpec,
    WriteActionSpec,
    answer_pattern,
    number_pattern,
    refuse_quotes,
)
from envgym_web import FORUM_TEMPLATES
from envgym_web.apps.forum import APP, RANK
from envgym_web.authoring import act
from envgym_web.authoring.generated import Replay, asked, families_for, numbered

NAME = "web-forum-gen"
ENV_ID = "web/forum-v1"
TEMPLATES = FORUM_TEMPLATES
QUESTIONS = frozenset({"author", "reply-count"})
NEEDS = {"create-post": "member", "reply": "member", "pin": "moderator", "lock": "moderator",
         "delete-spam": "moderator", "set-role": "admin", "ban": "admin", "author": "member", "reply-count": "member"}
"""The least role that may do each errand."""
FIRST = ("Alice", "Bruno", "Carol", "Dmitri", "Erin", "Farah", "Gustav", "Heidi", "Ines", "Jonas", "Keiko", "Lars",
         "Mona", "Nadia", "Oscar", "Priya", "Quentin", "Rosa", "Stefan", "Tomas", "Ulla", "Viktor", "Wanda", "Yara")
LAST = ("Abbott", "Brandt", "Castillo", "Dunmore", "Eriksen", "Fontaine", "Gallagher", "Holloway", "Iwasaki",
        "Jaramillo", "Kowalczyk", "Lindgren", "Moreau", "Nakamura", "Okonkwo", "Pemberton", "Quinlan", "Rasmussen")
"""No name is part of another (an answer naming one author must not contain another's name)."""
BOARDS = (("general", "General"), ("help", "Help Desk"), ("announcements", "Announcements"), ("offtopic", "Off Topic"),
          ("events", "Events"), ("marketplace", "Marketplace"), ("feedback", "Feedback"), ("projects", "Projects"))
TOPICS = ("Tips for {}", "Question about {}", "Looking for help with {}", "Thoughts on {}", "Notes on {}",
          "Anyone tried {}?", "Plans for {}", "Photos from {}")
SUBJECTS = ("the community garden", "night photography", "sourdough bread", "the bike repair workshop",
            "remote work setups", "the book swap", "board game night", "winter hiking", "home brewing",
            "the new library hours", "budget travel", "learning Rust", "the spring fair", "balcony plants",
            "vintage radios", "marathon training", "the town hall meeting", "the kids' coding club", "recycling rules",
            "the film society")
BODIES = ("Details below.", "Happy to answer questions.", "Please reply if you can help.", "All ideas welcome.",
          "I will post updates here.", "Links and notes to follow.", "Let me know what you think.")
OPENERS = ("Thanks for posting this.", "Good question.", "I had the same issue.", "Count me in.", "Great idea.",
           "Interesting thread.", "Seconded.", "Nice write-up.", "Following this.", "Same here.")
FOLLOWS = ("I can help on Saturday.", "Let's talk at the next meetup.", "Try restarting it first.",
           "I'll bring snacks.", "The FAQ covers part of it.", "I'll share my notes tonight.", "Sent you a message.",
           "Happy to lend mine.", "Works for me.", "See you there.")
SPAM = ("FREE GIFT CARDS!!! click here", "Cheap watches!!! limited offer", "Earn money from home, no work needed",
        "You won a prize, claim it now", "Miracle pills, 90% off today")
SIZES = {1: (6, 3, 6), 2: (9, 4, 10), 3: (12, 5, 14)}
"""Per level: users, boards, threads."""


@dataclass
class Forum:
    rng: random.Random
    level: int
    db: dict[str, Any]
    actor: dict[str, Any] = field(default_factory=dict)
    used: set[int] = field(default_factory=set)
    """Threads an errand changes: no other errand touches them."""
    users_used: set[int] = field(default_factory=set)
    spam: dict[str, Any] | None = None

    def thread(self, *, without: str | None = None) -> dict[str, Any]:
        """A thread no errand has touched, not the spam; ``without`` that flag set where there is one."""
        pool = [p for p in self.db["posts"] if p["id"] not in self.used and p is not self.spam]
        post = self.rng.choice([p for p in pool if not (without and p[without])] or pool)
        self.used.add(post["id"])
        return post

    def user(self) -> dict[str, Any]:
        pool = [u for u in self.db["users"] if u["id"] != self.actor["id"] and u["id"] not in self.users_used]
        user = self.rng.choice(pool)
        self.users_used.add(user["id"])
        return user

    def who(self, user: dict[str, Any]) -> str:
        return user["username"] if self.level == 1 else user["display_name"]

    def board_name(self, slug: str) -> str:
        return next(b["name"] for b in self.db["boards"] if b["slug"] == slug)


@dataclass
class Errand:
    ask: str
    steps: list[Action]
    expected: list[ExpectedWrite] = field(default_factory=list)
    done: str = ""
    """What the final message says about it (a write), or the answer (a question)."""
    verifiers: tuple[Any, ...] = ()


# --- the forum ------------------------------------------------------------------------------------------

def _forum(rng: random.Random, level: int) -> Forum:
    n_users, n_boards, n_posts = SIZES[level]
    names = rng.sample([(f, la) for f in FIRST for la in LAST], n_users)
    firsts = set()
    roles = ["admin", "moderator", *(["moderator"] if level > 1 else [])]
    roles += ["member"] * (n_users - len(roles))
    rng.shuffle(roles)
    users, uid = [], rng.randrange(1, 60)
    for (first, last), role in zip(names, roles, strict=True):
        username = first.lower() if first not in firsts else f"{first.lower()}_{last[0].lower()}"
        firsts.add(first)
        password = f"{rng.choice(LAST).lower()}-{rng.randrange(10, 99)}"
        users.append({"id": uid, "username": username, "password": password, "display_name": f"{first} {last}",
                      "role": role, "banned": 0})
        uid += rng.randrange(1, 4)
    if level > 1 and rng.random() < 0.5:
        rng.choice([u for u in users if u["role"] == "member"])["banned"] = 1
    boards = [{"slug": s, "name": n} for s, n in rng.sample(BOARDS, n_boards)]
    titles = rng.sample([t.format(s) for t in TOPICS for s in SUBJECTS], n_posts)
    posts, replies, pid, rid = [], [], rng.randrange(1, 400), rng.randrange(1, 900)
    for title in titles:
        posts.append({"id": pid, "board": rng.choice(boards)["slug"], "author_id": rng.choice(users)["id"],
                      "title": title, "body": rng.choice(BODIES), "pinned": int(rng.random() < 0.2),
                      "locked": int(rng.random() < 0.2)})
        for _ in range(rng.randrange(0, 5)):
            replies.append({"id": rid, "post_id": pid, "author_id": rng.choice(users)["id"],
                            "body": f"{rng.choice(OPENERS)} {rng.choice(FOLLOWS)}"})
            rid += 1
        pid += rng.randrange(1, 4)
    return Forum(rng, level, {"users": users, "boards": boards, "posts": posts, "replies": replies})


def _add_spam(f: Forum) -> None:
    """The ``delete-spam`` errand's thread, by a member, in the initial state."""
    spammer = f.rng.choice([u for u in f.db["users"] if u["role"] == "member"])
    f.spam = {"id": max(p["id"] for p in f.db["posts"]) + f.rng.randrange(1, 4),
              "board": f.rng.choice(f.db["boards"])["slug"], "author_id": spammer["id"], "title": f.rng.choice(SPAM),
              "body": "Totally legit offer, act fast.", "pinned": 0, "locked": 0}
    f.db["posts"].append(f.spam)


def _actor(f: Forum, families: list[str]) -> dict[str, Any]:
    """Who does the errands: a user whose role allows every one (level 1: the least such role)."""
    need = max((NEEDS[x] for x in families), key=RANK.__getitem__)
    pool = [u for u in f.db["users"] if not u["banned"] and RANK[u["role"]] >= RANK[need]]
    if f.level == 1:
        pool = [u for u in pool if RANK[u["role"]] == min(RANK[v["role"]] for v in pool)]
    return f.rng.choice(pool)


# --- browser steps --------------------------------------------------------------------------------------

def _open(post: dict[str, Any]) -> list[Action]:
    return [act("click", element_id="nav-home"), act("click", element_id=f"board-{post['board']}"),
            act("click", element_id=f"post-{post['id']}")]


def _admin(user: dict[str, Any]) -> list[Action]:
    return [act("click", element_id="nav-admin"), act("click", element_id=f"user-{user['id']}")]


# --- errands (each applies its writes to the replay, in order) ---------------------------------------------

def _create_post(f: Forum, r: Replay) -> Errand:
    board = f.rng.choice(f.db["boards"])
    taken = {p["title"] for p in f.db["posts"]}
    title = f.rng.choice([t.format(s) for t in TOPICS for s in SUBJECTS if t.format(s) not in taken])
    body = f"{f.rng.choice(BODIES)} {f.rng.choice(FOLLOWS)}"
    args = {"actor": f.actor["id"], "board": board["slug"], "title": title, "body": body}
    pid = r.write("create_post", **args)
    return Errand(f"Publish a new post in the “{board['name']}” board titled “{title}” with the text “{body}”.",
                  [act("click", element_id="nav-new-post"),
                   act("select_option", element_id="board", option=board["name"]),
                   act("fill", element_id="title", value=title), act("fill", element_id="body", value=body),
                   act("click", element_id="submit-post")],
                  [ExpectedWrite(tool="create_post", args=args)], f"published post #{pid}")


def _reply(f: Forum, r: Replay) -> Errand:
    post = f.thread(without="locked")
    text = f"{f.rng.choice(OPENERS)} {f.rng.choice(FOLLOWS)}"
    args = {"actor": f.actor["id"], "post_id": post["id"], "body": text}
    r.write("reply", **args)
    return Errand(f"Reply “{text}” to the post “{post['title']}”.",
                  [*_open(post), act("fill", element_id="reply-body", value=text),
                   act("click", element_id="reply-button")],
                  [ExpectedWrite(tool="reply", args=args)], f"replied to post #{post['id']}")


def _flag(f: Forum, r: Replay, tool: str, field_: str, verb: str) -> Errand:
    post = f.thread(without=field_ if f.level == 1 else None)  # level 1 only sets flags
    on = not post[field_]
    word = verb if on else f"un{verb}"
    args = {"actor": f.actor["id"], "post_id": post["id"], field_: on}
    r.write(tool, **args)
    return Errand(f"{word.capitalize()} the post “{post['title']}”.",
                  [*_open(post), act("click", element_id=f"{word}-post")], [ExpectedWrite(tool=tool, args=args)],
                  f"{word}{'ned' if verb == 'pin' else 'ed'} post #{post['id']}")


def _pin(f: Forum, r: Replay) -> Errand:
    return _flag(f, r, "set_pinned", "pinned", "pin")


def _lock(f: Forum, r: Replay) -> Errand:
    return _flag(f, r, "set_locked", "locked", "lock")


def _delete_spam(f: Forum, r: Replay) -> Errand:
    assert f.spam is not None  # _add_spam ran: generate() adds the thread when this errand is chosen
    args = {"actor": f.actor["id"], "post_id": f.spam["id"]}
    r.write("delete_post", **args)
    board = f.board_name(f.spam["board"])
    return Errand(f"Delete the spam post “{f.spam['title']}” in the “{board}” board; leave every other post alone.",
                  [*_open(f.spam), act("click", element_id="delete-post")],
                  [ExpectedWrite(tool="delete_post", args=args)], f"deleted post #{f.spam['id']}")


def _set_role(f: Forum, r: Replay) -> Errand:
    target = f.user()
    role = f.rng.choice([x for x in RANK if x != target["role"]])
    args = {"actor": f.actor["id"], "user_id": target["id"], "role": role}
    r.write("set_role", **args)
    return Errand(f"Make {f.who(target)} {'an' if role == 'admin' else 'a'} {role} in the admin panel.",
                  [*_admin(target), act("select_option", element_id="role", option=role),
                   act("click", element_id="save-role")],
                  [ExpectedWrite(tool="set_role", args=args)], f"{target['username']} is now {role}")


def _ban(f: Forum, r: Replay) -> Errand:
    target = f.user()
    ban = not target["banned"]
    args = {"actor": f.actor["id"], "user_id": target["id"], "banned": ban}
    r.write("set_banned", **args)
    ask = f"Ban the user {f.who(target)}." if ban else f"Lift the ban on {f.who(target)}."
    return Errand(ask, [*_admin(target), act("click", element_id="ban-user" if ban else "unban-user")],
                  [ExpectedWrite(tool="set_banned", args=args)],
                  f"{'banned' if ban else 'unbanned'} {target['username']}")


def _author(f: Forum, r: Replay) -> Errand:
    post = f.rng.choice([p for p in f.db["posts"] if p is not f.spam])
    author = r.value("SELECT u.display_name FROM posts p JOIN users u ON u.id = p.author_id WHERE p.id = ?",
                     post["id"])
    others = tuple(u["display_name"] for u in f.db["users"] if u["display_name"] != author)
    pattern = answer_pattern(re.escape(author), reject=tuple(re.escape(o) for o in others))
    return Errand(f"Who wrote the post “{post['title']}”? Open it and tell me the author's display name.",
                  _open(post), done=author, verifiers=asked(pattern, f"/p/{post['id']}", "post page open"))


def _reply_count(f: Forum, r: Replay) -> Errand:
    post = f.rng.choice([p for p in f.db["posts"] if p is not f.spam])
    count = r.value("SELECT COUNT(*) FROM replies WHERE post_id = ?", post["id"])
    now = " now" if r.writes else ""
    pattern = answer_pattern(number_pattern(count), max_numbers=3)
    return Errand(f"How many replies does the post “{post['title']}” have{now}? Open it to check.", _open(post),
                  done=f"{count} {'reply' if count == 1 else 'replies'}",
                  verifiers=asked(pattern, f"/p/{post['id']}", "post page open"))


ERRANDS: dict[str, Callable[[Forum, Replay], Errand]] = {
    "create-post": _create_post, "reply": _reply, "pin": _pin, "set-role": _set_role, "author": _author,
    "lock": _lock, "delete-spam": _delete_spam, "ban": _ban, "reply-count": _reply_count}


# --- the task -------------------------------------------------------------------------------------------

def generate(request: Any) -> TaskSpec:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`)."""
    rng, level = request.rng(), request.level
    f = _forum(rng, level)
    families = families_for(rng, request.templates, QUESTIONS, level)
    if "delete-spam" in families:
        _add_spam(f)
    f.actor = _actor(f, families)
    replay = Replay(NAME, APP, f.db)
    try:
        errands = [ERRANDS[x](f, replay) for x in families]
    finally:
        replay.close()
    steps: list[Action] = []
    state: dict[str, Any] = {"db": f.db, "start": "/", "sign_in": f.actor["username"]}
    instruction = numbered([e.ask for e in errands])
    if level == 3:  # signed out: the credentials are in the instruction
        state = {"db": f.db, "start": "/login"}
        instruction = f"Sign in as {f.actor['username']} (password: {f.actor['password']}). {instruction}"
        steps = [act("fill", element_id="username", value=f.actor["username"]),
                 act("fill", element_id="password", value=f.actor["password"]), act("click", element_id="login-button")]
    steps += [step for e in errands for step in e.steps]
    question = errands[-1] if errands[-1].verifiers else None
    message = question.done if question else "Done: " + "; ".join(e.done for e in errands) + "."
    steps.append(act("send_msg_to_user", text=message))
    verifiers: list[Any] = [WriteActionSpec(expected=tuple(w for e in errands for w in e.expected), ordered=True,
                                            allow_collateral=True, compare_final_state=True)]
    if question:
        verifiers += question.verifiers
    return TaskSpec(id=request.task_id, env_id=request.env_id, split=request.split, instruction=instruction,
                    initial_state=state, limits=Limits(max_steps=len(steps) + 10),
                    verifiers=refuse_quotes(verifiers, instruction), solution=tuple(steps),
                    tags=("web", "forum", "generated", f"level-{level}", *families),
                    metadata={"templates": families, "level": level, "seed": request.seed, "generator": NAME,
                              "reference_writes": replay.writes})
