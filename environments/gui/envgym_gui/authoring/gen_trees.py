"""``gui-desktop-gen``'s file-tree families (the text editor and the terminal): seeded files, ``level`` edits.

- ``config-set`` (train, editor): ``level`` keys of a ``key=value`` file set to new values (a ``.bak`` copy
  beside it is the tempting wrong file).
- ``tree-organise`` (train, terminal): the files of ``level`` extensions moved into new folders, the rest
  left in place; the reference names every file it moves, as listed in the tree it drew.
- ``list-rename`` (test, editor): ``level`` lines of a list of people replaced by other names.
- ``tree-extract`` (test, terminal): ``level`` new files derived from a log, a name list and a CSV
  (matching lines, a sorted unique list, a row count, a column, the first lines), each computed here.

Files, folders, names and numbers are all drawn from the seed; the trees and files grow with the level.
"""

from __future__ import annotations

import random
from typing import Any

from envgym_gui.authoring import HOME
from envgym_gui.authoring.gen_base import Draft, check, get, key, lines_keys, opener, text, typed, wait

__all__ = ["FAMILIES"]

APPS = ("player", "viewer", "backup", "mailer", "scanner", "clock", "radio", "notes", "photos", "sync", "weather",
        "reader")
SETTINGS = {"volume": (10, 90), "brightness": (20, 100), "timeout": (5, 60), "port": (8000, 8999),
            "retries": (1, 9), "width": (640, 1920), "height": (480, 1080), "interval": (5, 120),
            "cache_mb": (32, 512), "font_size": (9, 24), "max_items": (10, 500), "threads": (1, 16)}
WORDS = ("apple", "river", "stone", "cloud", "maple", "tiger", "amber", "cedar", "delta", "ember", "frost", "grove",
         "harbor", "indigo", "jasper", "kettle", "lemon", "meadow", "nectar", "orbit", "pepper", "quartz", "raven",
         "saffron", "timber", "umber", "violet", "willow")
FIRST = ("Olivia", "Noah", "Emma", "Liam", "Ava", "Mason", "Sophia", "Lucas", "Mia", "Ethan", "Zoe", "Oscar", "Nora",
         "Felix", "Ines", "Hugo", "Clara", "Jonas", "Lea", "Marcus", "Selma", "Tariq", "Vera", "Wendy")
LAST = ("Brandt", "Okafor", "Silva", "Novak", "Larsen", "Moreau", "Tanaka", "Costa", "Weber", "Nguyen", "Patel",
        "Haddad", "Kim", "Rossi", "Becker", "Duarte", "Sato", "Hughes")
SORTS = (("log", "logs"), ("csv", "tables"), ("png", "images"), ("pdf", "papers"), ("md", "notes"),
         ("zip", "archives"), ("mp3", "music"), ("json", "data"))
FOLDERS = ("inbox", "downloads", "desk", "scratch", "incoming", "transfer")
LEVELS = ("INFO", "WARN", "ERROR", "DEBUG")


def _editor_save() -> list[Any]:
    return [key("ctrl+s"), wait(1)]


def _run(*commands: str) -> list[Any]:
    out: list[Any] = []
    for command in commands:
        out += [typed(command + "\n"), wait(1)]
    return out


def config_set(rng: random.Random, level: int) -> Draft:
    app = rng.choice(APPS)
    folder = f"{HOME}/.{app}"  # not under ~/.config: the session makes that 0700, unreadable to grading
    path, bak = f"{folder}/{app}.conf", f"{folder}/{app}.conf.bak"
    names = rng.sample(sorted(SETTINGS), 3 + level)
    values = {n: rng.randrange(*SETTINGS[n]) for n in names}
    lines = [f"# {app} settings"] + [f"{n}={values[n]}" for n in names]
    targets = rng.sample(names, level)
    new = {}
    for t in targets:
        new[t] = values[t]
        while new[t] == values[t]:
            new[t] = rng.randrange(*SETTINGS[t])
    after = [f"{n}={new[n]}" if n in new else line for n, line in zip(["", *names], lines, strict=True)]
    asks = " and ".join(f"{t} to {new[t]}" for t in targets)
    instruction = (f"Set {asks} in {path} (open in the text editor), leaving every other line as it is, and save "
                   "the file.")
    solution = []
    for t in targets:
        solution += [key(f"{lines_keys(lines.index(f'{t}={values[t]}'))} shift+End"), typed(f"{t}={new[t]}")]
    checks = [check(get("config_key", path=path, format="kv", key=t), "exact", t, expected=str(new[t]))
              for t in targets]
    checks.append(check(get("file_text", path=path), "exact", "other lines kept", expected="\n".join(after) + "\n"))
    body = "\n".join(lines) + "\n"
    return Draft(instruction, {path: text(body), bak: text(body)}, opener("editor", path),
                 [*solution, *_editor_save()], checks, [bak], after={path: text("\n".join(after) + "\n")})


def list_rename(rng: random.Random, level: int) -> Draft:
    stem = rng.choice(("guests", "team", "rota", "invites", "members", "players"))
    path = f"{HOME}/{stem}.txt"
    people = rng.sample([f"{f} {la}" for f in FIRST for la in LAST], 3 + 3 * level)  # the list, a spare a line
    names, spare = people[:3 + 2 * level], people[3 + 2 * level:]
    ks = sorted(rng.sample(range(len(names)), level))
    after = list(names)
    for k, person in zip(ks, spare, strict=True):
        after[k] = person
    asks = " and ".join(f"{names[k]} with {after[k]}" for k in ks)
    instruction = (f"In the list {path} (open in the text editor), replace {asks}, one name a line as before. "
                   "Change nothing else and save the file.")
    solution = []
    for k in ks:
        solution += [key(f"{lines_keys(k)} shift+End"), typed(after[k])]
    other = f"{HOME}/{stem}-old.txt"
    body = "\n".join(names) + "\n"
    return Draft(instruction, {path: text(body), other: text(body)}, opener("editor", path),
                 [*solution, *_editor_save()],
                 [check(get("file_text", path=path), "exact", "list", expected="\n".join(after) + "\n")], [other],
                 after={path: text("\n".join(after) + "\n")})


def tree_organise(rng: random.Random, level: int) -> Draft:
    root = f"{HOME}/{rng.choice(FOLDERS)}"
    kinds = rng.sample(SORTS, level + 1)
    moved, kept = kinds[:level], kinds[level]
    names = iter(rng.sample(WORDS, len(kinds) * (2 + level) + 1))
    files: dict[str, list[str]] = {ext: sorted(f"{next(names)}.{ext}" for _ in range(rng.randrange(1, 3 + level)))
                                   for ext, _ in kinds}
    files[kept[0]].append(f"{next(names)}.txt")
    spec = {f"{root}/{n}": text(f"{n} {rng.randrange(1000, 9999)}\n") for ns in files.values() for n in ns}
    asks = "; ".join(f"every .{ext} file into a new folder {folder}" for ext, folder in moved)
    instruction = (f"In {root} (a terminal is open there), move {asks}. Leave the other files where they are.")
    commands = [f"mkdir {folder} && mv {' '.join(files[ext])} {folder}/" for ext, folder in moved]
    keep = sorted(files[kept[0]])
    checks = [check(get("dir_listing", path=root), "exact", "folder", expected=sorted([*keep, *(f for _, f in moved)]))]
    checks += [check(get("dir_listing", path=f"{root}/{folder}"), "exact", folder, expected=files[ext])
               for ext, folder in moved]
    after = {f"{root}/{folder}/{n}": spec[f"{root}/{n}"] for ext, folder in moved for n in files[ext]}
    return Draft(instruction, spec, opener("terminal", root, "Terminal"), _run(*commands), checks,
                 [f"{root}/{n}" for n in keep], after=after,
                 remove=[f"{root}/{n}" for ext, _ in moved for n in files[ext]],
                 dirs=[f"{root}/{f}" for _, f in moved])


def tree_extract(rng: random.Random, level: int) -> Draft:
    root = f"{HOME}/{rng.choice(('reports', 'data', 'service', 'project', 'exports'))}"
    n_log, n_rows = 8 + 4 * level, 5 + 5 * level
    log = [f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d} {rng.randrange(0, 24):02d}:"
           f"{rng.randrange(0, 60):02d} {rng.choice(LEVELS)} job {rng.choice(WORDS)} {k}" for k in range(n_log)]
    for k, lvl in zip(rng.sample(range(n_log), 2), ("WARN", "ERROR"), strict=True):  # each level matches a line
        parts = log[k].split(" ")
        log[k] = " ".join([*parts[:2], lvl, *parts[3:]])
    people = rng.sample(FIRST, 6 + level)
    names = people + rng.sample(people, 2 + level)
    rng.shuffle(names)
    rows = ["id,name,amount"] + [f"{k},{rng.choice(FIRST)},{rng.randrange(1, 500)}" for k in range(1, n_rows + 1)]
    outputs = rng.sample(WORDS, level)
    jobs = rng.sample(("grep", "sort", "count", "column", "head"), level)
    asks, commands, checks, after = [], [], [], {}
    for job, word in zip(jobs, outputs, strict=True):
        out = f"{root}/{word}.txt"
        if job == "grep":
            lvl = rng.choice(("WARN", "ERROR"))
            body = "".join(line + "\n" for line in log if f" {lvl} " in line)
            asks.append(f"{out} with every line of app.log that contains {lvl}, in their original order")
            commands.append(f"grep {lvl} app.log > {word}.txt")
        elif job == "sort":
            body = "".join(n + "\n" for n in sorted(set(names)))
            asks.append(f"{out} with the names of names.txt in alphabetical order, each only once")
            commands.append(f"sort -u names.txt > {word}.txt")
        elif job == "count":
            body = f"{n_rows}\n"
            asks.append(f"{out} with the number of data rows of sales.csv (every line but the header), as a plain "
                        "number")
            commands.append(f"tail -n +2 sales.csv | wc -l > {word}.txt")
        elif job == "column":
            body = "".join(r.split(",")[1] + "\n" for r in rows[1:])
            asks.append(f"{out} with the name column of sales.csv, one value a line, without the header")
            commands.append(f"tail -n +2 sales.csv | cut -d, -f2 > {word}.txt")
        else:
            k = rng.randrange(2, 6)
            body = "".join(line + "\n" for line in log[:k])
            asks.append(f"{out} with the first {k} lines of app.log")
            commands.append(f"head -n {k} app.log > {word}.txt")
        after[out] = text(body)
        checks.append(check(get("file_text", path=out), "regex", job, pattern=r"^\s*\d+\s*$")
                      if job == "count" else check(get("file_text", path=out), "exact", job, expected=body))
        if job == "count":  # the count itself, not just a number
            checks.append(check(get("file_text", path=out), "numeric", "count value", expected=n_rows))
    sources = {f"{root}/app.log": text("\n".join(log) + "\n"), f"{root}/names.txt": text("\n".join(names) + "\n"),
               f"{root}/sales.csv": text("\n".join(rows) + "\n")}
    instruction = (f"In {root} (a terminal is open there), make new files: " + "; ".join(asks)
                   + ". Do not change app.log, names.txt or sales.csv.")
    return Draft(instruction, sources, opener("terminal", root, "Terminal"), _run(*commands), checks, sorted(sources),
                 after=after)


FAMILIES = {"config-set": config_set, "list-rename": list_rename, "tree-organise": tree_organise,
            "tree-extract": tree_extract}
