"""Generator of the ``gui-files`` suite: the text editor (Mousepad), the terminal (xterm) and the file manager
(PCManFM) on files made per task.

Editor kinds: a ``key=value`` or ini setting changed (a ``.bak`` copy beside it is the tempting wrong
file), a line appended, a line deleted. Terminal kinds: log files moved into a new folder, a count
written to a file, a sorted list, matching lines extracted, a backup copy, a question about the folder.
File-manager kind: a new folder. Infeasible kinds: a file or archive that does not exist. ``EXPECTED``
maps each task id to what a correct episode leaves, for the generator's own tests.
"""

from __future__ import annotations

import random
import re
from typing import Any

from envgym.plugin import TaskSpec
from envgym_gui.authoring import HOME, check, desktop, done, fail, get, key, task, typed, wait

SUITE = "gui-files"
EXPECTED: dict[str, dict[str, Any]] = {}

SETTINGS = {"volume": (10, 90), "brightness": (20, 100), "timeout": (5, 60), "port": (8000, 8999),
            "retries": (1, 9), "width": (640, 1920)}
WORDS = ["apple", "river", "stone", "cloud", "maple", "tiger", "amber", "cedar", "delta", "ember", "frost", "grove"]
FIRST = ["Olivia", "Noah", "Emma", "Liam", "Ava", "Mason", "Sophia", "Lucas", "Mia", "Ethan", "Zoe", "Oscar"]


def _text(body: str) -> dict[str, Any]:
    return {"text": body}


def _editor(path: str) -> dict[str, Any]:
    return {"app": "editor", "path": path, "title": re.escape(path.rsplit("/", 1)[-1])}


def _terminal(folder: str) -> dict[str, Any]:
    return {"app": "terminal", "path": folder, "title": "Terminal"}


def _line_keys(k: int) -> str:
    """Keys from anywhere to the start of line ``k`` (0-based) in the editor."""
    return " ".join(["ctrl+Home", *["Down"] * k, "Home"])


def _editor_save() -> list:
    return [key("ctrl+s"), wait(1)]


def setting(rng: random.Random, i: int, index: int) -> TaskSpec:
    app = ["player", "viewer", "backup", "mailer"][i % 4]
    folder = f"{HOME}/.{app}"  # not under ~/.config: the session makes that 0700, unreadable to grading
    path, bak = f"{folder}/{app}.conf", f"{folder}/{app}.conf.bak"
    names = rng.sample(sorted(SETTINGS), 4)
    values = {n: rng.randrange(*SETTINGS[n]) for n in names}
    lines = [f"# {app} settings"] + [f"{n}={values[n]}" for n in names]
    target = rng.choice(names)
    new = values[target]
    while new == values[target]:
        new = rng.randrange(*SETTINGS[target])
    after = [f"{target}={new}" if line.startswith(f"{target}=") else line for line in lines]
    body = "\n".join(lines) + "\n"
    instruction = (f"Set {target} to {new} in {path} (open in the text editor), leaving every other line as it "
                   "is, and save the file.")
    checks = [check(get("config_key", path=path, format="kv", key=target), "exact", target, expected=str(new)),
              check(get("file_text", path=path), "exact", "other lines kept", expected="\n".join(after) + "\n")]
    solution = [wait(2), key(f"{_line_keys(lines.index(f'{target}={values[target]}'))} shift+End"),
                typed(f"{target}={new}"), *_editor_save(), done()]
    tid = f"files-setting-{i:02d}"
    EXPECTED[tid] = {"files": {path: _text("\n".join(after) + "\n")}}
    return task(SUITE, tid, index, instruction, files={path: _text(body), bak: _text(body)}, open_app=_editor(path),
                solution=solution, verifier=desktop(checks, [bak]), tags=("editor", "config", "distractor"))


def ini_setting(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{HOME}/.notes/notes.ini"
    sections = {"window": {"width": rng.randrange(640, 1920), "height": rng.randrange(480, 1080)},
                "editor": {"font_size": rng.randrange(9, 14), "tab_width": rng.choice([2, 4, 8])},
                "sync": {"interval": rng.randrange(5, 60), "retries": rng.randrange(1, 9)}}
    lines: list[str] = []
    for name, keys in sections.items():
        lines += [f"[{name}]", *(f"{k} = {v}" for k, v in keys.items()), ""]
    section = ["editor", "sync", "window"][i % 3]
    name = rng.choice(sorted(sections[section]))
    new = sections[section][name] + rng.randrange(1, 5)
    line = f"{name} = {sections[section][name]}"
    k = lines.index(line, lines.index(f"[{section}]"))
    after = list(lines)
    after[k] = f"{name} = {new}"
    instruction = (f"In {path} (open in the text editor), set {name} in the [{section}] section to {new}. Change "
                   "nothing else and save the file.")
    checks = [check(get("config_key", path=path, format="ini", section=section, key=name), "exact", name,
                    expected=str(new)),
              check(get("file_text", path=path), "exact", "other lines kept", expected="\n".join(after))]
    other = f"{HOME}/.notes/notes-default.ini"
    solution = [wait(2), key(f"{_line_keys(k)} shift+End"), typed(f"{name} = {new}"), *_editor_save(), done()]
    tid = f"files-ini-{i:02d}"
    EXPECTED[tid] = {"files": {path: _text("\n".join(after))}}
    return task(SUITE, tid, index, instruction, files={path: _text("\n".join(lines)), other: _text("\n".join(lines))},
                open_app=_editor(path), solution=solution, verifier=desktop(checks, [other]), tags=("editor", "config"))


def append_line(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{HOME}/todo.txt"
    items = [f"Buy {w}s" for w in rng.sample(WORDS, 3)]
    new = f"Call {rng.choice(FIRST)} about the {rng.choice(WORDS)} order"
    body = "\n".join(items) + "\n"
    instruction = f"Add the line \"{new}\" at the end of {path} (open in the text editor) and save the file."
    checks = [check(get("file_text", path=path), "exact", "text", expected=body + new + "\n")]
    solution = [wait(2), key("ctrl+End"), typed(f"{new}\n"), *_editor_save(), done()]
    tid = f"files-append-{i:02d}"
    EXPECTED[tid] = {"files": {path: _text(body + new + "\n")}}
    other = f"{HOME}/shopping.txt"
    return task(SUITE, tid, index, instruction, files={path: _text(body), other: _text(body)}, open_app=_editor(path),
                solution=solution, verifier=desktop(checks, [other]), tags=("editor",))


def delete_line(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{HOME}/guests.txt"
    names = rng.sample(FIRST, 5)
    k = rng.randrange(0, 4)
    gone = names[k]
    left = [n for n in names if n != gone]
    instruction = (f"Remove {gone} from the guest list {path} (open in the text editor): delete that whole line, "
                   "leaving no empty line, and save the file.")
    checks = [check(get("file_text", path=path), "exact", "text", expected="\n".join(left) + "\n")]
    solution = [wait(2), key(f"{_line_keys(k)} shift+Down"), key("Delete"), *_editor_save(), done()]
    tid = f"files-delline-{i:02d}"
    EXPECTED[tid] = {"files": {path: _text("\n".join(left) + "\n")}}
    other = f"{HOME}/guests-2025.txt"
    return task(SUITE, tid, index, instruction, files={path: _text("\n".join(names) + "\n"),
                                                       other: _text("\n".join(names) + "\n")},
                open_app=_editor(path), solution=solution, verifier=desktop(checks, [other]), tags=("editor",))


def _run(command: str) -> list:
    return [wait(2), typed(command + "\n"), wait(2)]


def move_logs(rng: random.Random, i: int, index: int) -> TaskSpec:
    folder = f"{HOME}/logs"
    logs = sorted({f"{w}.log" for w in rng.sample(WORDS, 3)})
    keep = sorted({f"{w}.txt" for w in rng.sample(WORDS, 2)} | {"readme.md"})
    files = {f"{folder}/{n}": _text(f"{n} line\n") for n in logs + keep}
    instruction = (f"In {folder} (a terminal is open there), create a folder named archive and move every .log "
                   "file into it. Leave the other files where they are.")
    checks = [check(get("dir_listing", path=folder), "exact", "folder", expected=sorted(["archive", *keep])),
              check(get("dir_listing", path=f"{folder}/archive"), "exact", "archive", expected=logs)]
    tid = f"files-archive-{i:02d}"
    EXPECTED[tid] = {"files": {f"{folder}/archive/{n}": _text(f"{n} line\n") for n in logs},
                     "remove": [f"{folder}/{n}" for n in logs]}
    return task(SUITE, tid, index, instruction, files=files, open_app=_terminal(folder),
                solution=[*_run("mkdir archive && mv *.log archive/"), done()],
                verifier=desktop(checks, [f"{folder}/{n}" for n in keep]), tags=("terminal",))


def count_rows(rng: random.Random, i: int, index: int) -> TaskSpec:
    folder = f"{HOME}/data"
    n = rng.randrange(5, 30)
    rows = ["id,name,amount"] + [f"{k},{rng.choice(FIRST)},{rng.randrange(1, 500)}" for k in range(1, n + 1)]
    instruction = (f"Write the number of data rows of {folder}/sales.csv (every line except the header line) into "
                   f"a new file {folder}/rows.txt, as a plain number.")
    checks = [check(get("file_text", path=f"{folder}/rows.txt"), "regex", "count", pattern=rf"^\s*{n}\s*$")]
    tid = f"files-count-{i:02d}"
    EXPECTED[tid] = {"files": {f"{folder}/rows.txt": _text(f"{n}\n")}}
    return task(SUITE, tid, index, instruction, files={f"{folder}/sales.csv": _text("\n".join(rows) + "\n")},
                open_app=_terminal(folder), solution=[*_run("tail -n +2 sales.csv | wc -l > rows.txt"), done()],
                verifier=desktop(checks, [f"{folder}/sales.csv"]), tags=("terminal",))


def sort_names(rng: random.Random, i: int, index: int) -> TaskSpec:
    folder = f"{HOME}/lists"
    names = rng.sample(FIRST, 6)
    names += rng.sample(names, 2)  # duplicates
    rng.shuffle(names)
    result = sorted(set(names))
    instruction = (f"Write the names of {folder}/names.txt into a new file {folder}/sorted.txt in alphabetical "
                   "order, one per line, each name only once. Do not change names.txt.")
    checks = [check(get("file_text", path=f"{folder}/sorted.txt"), "exact", "sorted",
                    expected="\n".join(result) + "\n")]
    tid = f"files-sort-{i:02d}"
    EXPECTED[tid] = {"files": {f"{folder}/sorted.txt": _text("\n".join(result) + "\n")}}
    return task(SUITE, tid, index, instruction, files={f"{folder}/names.txt": _text("\n".join(names) + "\n")},
                open_app=_terminal(folder), solution=[*_run("sort -u names.txt > sorted.txt"), done()],
                verifier=desktop(checks, [f"{folder}/names.txt"]), tags=("terminal",))


def grep_errors(rng: random.Random, i: int, index: int) -> TaskSpec:
    folder = f"{HOME}/service"
    lines = [f"2026-03-0{1 + k // 4} 1{k % 10}:00 {rng.choice(['INFO', 'INFO', 'WARN', 'ERROR'])} job "
             f"{rng.choice(WORDS)} {k}" for k in range(12)]
    if not any(" ERROR " in line for line in lines):
        lines[5] = lines[5].replace(" INFO ", " ERROR ").replace(" WARN ", " ERROR ")
    errors = [line for line in lines if " ERROR " in line]
    instruction = (f"Copy every line of {folder}/app.log that contains ERROR, in their original order, into a new "
                   f"file {folder}/errors.txt. Do not change app.log.")
    checks = [check(get("file_text", path=f"{folder}/errors.txt"), "exact", "errors",
                    expected="\n".join(errors) + "\n")]
    tid = f"files-grep-{i:02d}"
    EXPECTED[tid] = {"files": {f"{folder}/errors.txt": _text("\n".join(errors) + "\n")}}
    return task(SUITE, tid, index, instruction, files={f"{folder}/app.log": _text("\n".join(lines) + "\n")},
                open_app=_terminal(folder), solution=[*_run("grep ERROR app.log > errors.txt"), done()],
                verifier=desktop(checks, [f"{folder}/app.log"]), tags=("terminal",))


def backup(rng: random.Random, i: int, index: int) -> TaskSpec:
    folder = f"{HOME}/work"
    name = ["thesis", "plan", "recipe"][i % 3]
    body = "\n".join(rng.sample(SENTENCES_SHORT, 3)) + "\n"
    src, dst = f"{folder}/{name}.txt", f"{folder}/{name}.txt.bak"
    instruction = f"Make a backup copy of {src} named {dst} (same content). Keep the original where it is."
    checks = [check(get("file_text", path=dst), "exact", "copy", expected=body)]
    tid = f"files-backup-{i:02d}"
    EXPECTED[tid] = {"files": {dst: _text(body)}}
    return task(SUITE, tid, index, instruction, files={src: _text(body)}, open_app=_terminal(folder),
                solution=[*_run(f"cp {name}.txt {name}.txt.bak"), done()], verifier=desktop(checks, [src]),
                tags=("terminal",))


SENTENCES_SHORT = ["Chapter one is finished.", "Check the figures again.", "Add the missing references.",
                   "Ask Ana about the deadline.", "Boil the water first.", "Use two cups of flour."]


def count_question(rng: random.Random, i: int, index: int) -> TaskSpec:
    folder = f"{HOME}/photos"
    files: dict[str, Any] = {}
    jpgs = 0
    for sub in ("", "2025/", "2026/"):
        for w in rng.sample(WORDS, rng.randrange(2, 5)):
            ext = rng.choice(["jpg", "jpg", "png", "txt"])
            files[f"{folder}/{sub}{w}.{ext}"] = {"png": {"width": 2, "height": 2}} if ext != "txt" else _text("x\n")
            jpgs += ext == "jpg"
    instruction = (f"How many files with the extension .jpg are there in {folder}, subfolders included? Answer "
                   "with the number only; do not change any file.")
    checks = [check(get("answer"), "numeric", "answer", expected=jpgs)]
    tid = f"files-ask-{i:02d}"
    EXPECTED[tid] = {"files": {}, "answer": str(jpgs)}
    return task(SUITE, tid, index, instruction, files=files, open_app=_terminal(folder),
                solution=[wait(2), done(str(jpgs))], verifier=desktop(checks, sorted(files)[:3]), tags=("question",))


def new_folder(rng: random.Random, i: int, index: int) -> TaskSpec:
    folder = f"{HOME}/Projects"
    name = ["invoices", "drafts", "archive-2026"][i % 3]
    existing = sorted(rng.sample(WORDS, 3))
    files = {f"{folder}/{w}.txt": _text(f"{w}\n") for w in existing}
    instruction = f"In the file manager (showing {folder}), create a new folder named {name} inside {folder}."
    checks = [check(get("dir_listing", path=folder), "exact", "folder",
                    expected=sorted([name, *(f"{w}.txt" for w in existing)])),
              check(get("dir_listing", path=f"{folder}/{name}"), "exact", "empty", expected=[])]
    tid = f"files-mkdir-{i:02d}"
    EXPECTED[tid] = {"files": {}, "dirs": [f"{folder}/{name}"]}
    solution = [wait(2), key("ctrl+shift+n"), wait(1), key("ctrl+a"), typed(name), key("Return"), wait(1), done()]
    return task(SUITE, tid, index, instruction, files=files, open_app={"app": "files", "path": folder,
                                                                       "title": "Projects"},
                solution=solution, verifier=desktop(checks, sorted(files)), tags=("file-manager",))


def infeasible(rng: random.Random, i: int, index: int) -> TaskSpec:
    folder = f"{HOME}/downloads"
    present = {f"{folder}/{w}.txt": _text(f"{w}\n") for w in rng.sample(WORDS, 2)}
    if i == 0:
        instruction = f"Extract {folder}/photos-2019.zip into {folder}/photos."
        reason = "photos-2019.zip does not exist"
        open_app = _terminal(folder)
    elif i == 1:
        path = f"{HOME}/notes/meeting-2024.txt"
        instruction = f"Fix the spelling of the word 'recieve' in {path} and save it."
        reason = "meeting-2024.txt does not exist"
        open_app = _terminal(folder)
    else:
        path = sorted(present)[0]
        present[path] = _text("alpha\nbeta\n")
        instruction = f"Change the line that reads 'delta' in {path} (open in the text editor) to 'gamma' and save."
        reason = f"{path.rsplit('/', 1)[-1]} has no line 'delta'"
        open_app = _editor(path)
    tid = f"files-infeasible-{i:02d}"
    EXPECTED[tid] = {"files": {}, "fail": True}
    return task(SUITE, tid, index, instruction, files=present, open_app=open_app, solution=[wait(1), fail(reason)],
                verifier=desktop([], sorted(present), expect="fail"), tags=("infeasible",))


KINDS = ((setting, 4), (ini_setting, 3), (append_line, 3), (delete_line, 2), (move_logs, 3), (count_rows, 3),
         (sort_names, 3), (grep_errors, 2), (backup, 2), (count_question, 2), (new_folder, 2), (infeasible, 3))


def build() -> list[TaskSpec]:
    rng = random.Random(14_003)
    tasks: list[TaskSpec] = []
    for make, count in KINDS:
        for i in range(count):
            tasks.append(make(rng, i, len(tasks)))
    return tasks
