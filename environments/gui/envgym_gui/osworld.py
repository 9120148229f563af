"""Import OSWorld task JSON (xlang-ai/OSWorld, ``evaluation_examples/examples/<domain>/<id>.json``) as
``gui/osworld-v1`` tasks, and say why for every task that cannot be imported.

An OSWorld task is an instruction, ``config`` (setup steps run in a VM: ``download``, ``open``, ``launch``,
``execute``/``command``, ``sleep``, ``activate_window``, Chrome and Google Drive steps) and an
``evaluator`` (``func``: metric names; ``result``/``expected``: getters such as ``vm_file``, ``cloud_file``,
``rule``, ``vm_command_line``; ``conj``; ``postconfig``). The importer maps what an envgym desktop can
reproduce without a network and without running anything at grading time:

* setup: ``launch``/``open`` of an app the desktop has (text editor, file manager, terminal, LibreOffice
  Calc/Writer) -> ``initial_state.open``; ``execute``/``command`` that only create folders and files
  (``mkdir``, ``touch``, ``echo ... > file``, ``chmod``; ``sudo`` and shell variables understood) ->
  ``initial_state.files``; a pyautogui script that only clicks the screen's centre and sleeps is dropped,
  one that presses ctrl+alt+t opens the terminal; ``sleep`` and ``activate_window`` are dropped.
* grading: ``infeasible`` -> ``expect: "fail"``; the ``vm_command_line`` test ``[ -d P ] && echo A || echo
  B`` (also ``-f``/``-e``, ``if ...; then ...; else ...; fi``) under ``exact_match`` -> a folder/file
  exists (or not) check; ``cat P``'s output under ``exact_match``, ``check_include_exclude``,
  ``is_in_list``, ``literal_match`` -> ``file_text`` with ``exact``/``include_all``/``exclude_any``; a
  ``vm_file`` under ``file_contains``/``check_list`` -> the file must exist and its text match.
  The desktop verifier trims whitespace for ``exact`` where OSWorld compares the output byte for byte.

Everything else is skipped with a reason that starts with one of :data:`REASONS` (``download`` first:
a task that fetches data over the network is never imported). Setup paths must lie under ``/home/user``
(the desktop's root file system is read-only and the user has no sudo). A task that opens no app starts
with the terminal in the home folder (OSWorld's GNOME desktop opens one with ctrl+alt+t; this desktop has
no shell of its own). OSWorld ships no reference solutions: :data:`SOLUTIONS` holds keyboard-driven ones
written for the imported tasks (an infeasible task's reference is ``fail``); a task without one is imported
with ``solution`` None and kept out of the admission-gated suite by the CLI.

Command line (``envgym osworld import`` through the ``envgym.cli`` entry point, or the module itself)::

    python -m envgym_gui.osworld import OSWORLD_DIR [--out DIR] [--commit SHA] [-v]

writes (by :func:`import_suite`, into the bundled suite ``gui-osworld``'s folder unless ``--out`` names
another) ``tasks.jsonl`` (tasks with a reference), ``without-reference/tasks.jsonl``, ``import-report.json``
(counts, the source commit, every skipped id with its reason) and copies the repository's ``LICENSE``.

(Longer than most modules: OSWorld's format is one concept, and its setup reader, evaluator mapping and
skip reasons are read together when a new OSWorld task shape is added.)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shlex
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from envgym.plugin import SpecError

if TYPE_CHECKING:  # imported where used: `envgym --help` loads this module for its subcommand
    from envgym.plugin import TaskSpec

ENV_ID = "gui/osworld-v1"
SUITE = "gui-osworld"
HOME = "/home/user"
KEEP = ".envgym-keep"
"""Placeholder file that makes an (otherwise empty) folder exist: the files spec holds files only."""

REASONS = ("download", "network", "app", "setup", "evaluator", "postconfig", "windows", "unfinished", "malformed")
"""First word of every skip reason, in the order the checks run."""

# The desktop's apps by OSWorld launch command (A's image: sandboxes/desktop).
_LAUNCH = {"gedit": "editor", "mousepad": "editor", "nautilus": "files", "pcmanfm": "files",
           "gnome-terminal": "terminal", "xterm": "terminal", "lxterminal": "terminal"}
_OFFICE = {"--calc": "calc", "--writer": "writer"}
_BY_SUFFIX = {".ods": "calc", ".xlsx": "calc", ".xls": "calc", ".csv": "calc", ".odt": "writer", ".docx": "writer",
              ".doc": "writer", ".txt": "editor", ".md": "editor", ".py": "editor", ".json": "editor",
              ".conf": "editor", ".ini": "editor", ".sh": "editor"}
_TITLES = {"terminal": "^Terminal$", "calc": "LibreOffice Calc", "writer": "LibreOffice Writer", "editor": "Mousepad"}
"""Window titles to wait for when no file names the window (xterm is started with ``-title Terminal``)."""
_DEFAULT_OPEN = {"app": "terminal", "path": HOME, "title": _TITLES["terminal"]}

_NETWORK_STEPS = {"download", "googledrive", "login", "chrome_open_tabs", "chrome_close_tabs",
                  "update_browse_history", "proxy", "open_tabs"}
_NETWORK_GETTERS = {"cloud_file", "googledrive_file", "cache_file", "info_from_website", "pdf_from_url",
                    "gotoRecreationPage_and_get_html_content", "page_info"}
_NETWORK_WORDS = re.compile(r"\b(apt|apt-get|pip3?|conda|curl|wget|git\s+clone|snap)\b")


def _in_terminal(command: str) -> list[tuple[str, dict[str, Any]]]:
    """A reference that types one shell command into the open, focused terminal."""
    return [("wait", {"seconds": 1}), ("type", {"text": command}), ("key", {"keys": "Return"}),
            ("wait", {"seconds": 1}), ("done", {})]


SOLUTIONS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    # "change its name into todo_list_Jan_2"
    "e0df059f-28a6-4169-924f-b9623e7184cc": _in_terminal("mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"),
    # "move the file 'todo.txt' on the Desktop to the directory 'done/'"
    "7688b85f-87a4-4e4a-b2f8-f3d6c3f29b82": _in_terminal("mv ~/Desktop/todo.txt ~/Desktop/done/"),
}
"""Reference solutions written for the imported feasible tasks, by OSWorld id (keyboard only)."""


class Skip(SpecError):
    """One task cannot be imported; the message is the reason (it starts with one of :data:`REASONS`)."""


# ------------------------------------------------------------------------------------------ entry points


def import_tasks(source: str | Path | Iterable[dict[str, Any]], *, env_id: str = ENV_ID,
                 ) -> tuple[list[TaskSpec], list[tuple[str, str]]]:
    """Tasks and ``(id, reason)`` for every skipped one, from an OSWorld checkout (or its
    ``evaluation_examples/examples`` folder, or one domain folder, or one JSON file) or from task dicts.

    A file that is not JSON, or a task missing a field, is skipped naming the file and the field; nothing
    in the input raises. Tasks come out sorted by id.
    """
    from envgym_gui import verify

    verify.register()  # the family's entry point does it too; the importer also works without the plug-in loaded
    tasks: list[TaskSpec] = []
    skipped: list[tuple[str, str]] = []
    for where, domain, raw in _entries(source):
        if isinstance(raw, _Broken):
            skipped.append((where, raw.reason))
            continue
        tid = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else where
        stem = Path(where).stem if domain else tid
        if stem != tid and tid != where:  # OSWorld's runner loads examples/<domain>/<id>.json
            why = "windows: a Windows variant" if stem.endswith("-win") else "malformed"
            skipped.append((f"{domain}/{stem}", f"{why}: {where}: its 'id' is {tid!r}, not the file's name"))
            continue
        tid = f"{domain}/{tid}" if domain and tid != where else tid
        try:
            tasks.append(map_task(raw, domain=domain, env_id=env_id, where=where))
        except Skip as why:
            skipped.append((tid, str(why)))
    return sorted(tasks, key=lambda t: t.id), sorted(skipped)


def map_task(raw: Any, *, domain: str | None = None, env_id: str = ENV_ID, where: str = "task") -> TaskSpec:
    """One OSWorld task dict -> a :class:`TaskSpec`, or :class:`Skip` with the reason."""
    from pydantic import ValidationError

    from envgym.plugin import Action, Limits, TaskSpec

    if not isinstance(raw, dict):
        raise Skip(f"malformed: {where}: a task is a JSON object, not {type(raw).__name__}")
    for name, kinds in (("id", str), ("instruction", str), ("evaluator", dict)):
        if not isinstance(raw.get(name), kinds):
            raise Skip(f"malformed: {where}: field {name!r} is missing or not a {kinds.__name__}")
    config = raw.get("config") or []
    if not isinstance(config, list) or not all(isinstance(s, dict) and isinstance(s.get("type"), str)
                                               for s in config):
        raise Skip(f"malformed: {where}: field 'config' must be a list of steps with a 'type'")
    oid, evaluator = raw["id"], raw["evaluator"]
    domain = domain or str(raw.get("snapshot") or "unknown")
    if domain == "Windows" or str(raw.get("snapshot", "")).lower().startswith("windows"):
        raise Skip("windows: a Windows task (this desktop is Debian)")
    _refuse_network(config, evaluator)
    files, opening = _setup(config)
    checks, expect = _evaluator(evaluator)
    initial: dict[str, Any] = {"files": {p: spec for p, spec in sorted(files.items())},
                               "open": opening or dict(_DEFAULT_OPEN)}
    verifier = _verifier(checks, expect)
    if expect == "fail":
        solution = [Action.call("fail", reason="The request cannot be carried out on this system.")]
    elif oid in SOLUTIONS:
        solution = [Action.call(name, **args) for name, args in SOLUTIONS[oid]]
    else:
        solution = None
    try:
        return TaskSpec(
            id=re.sub(r"[^a-z0-9_.-]+", "-", f"osworld-{domain}-{oid}".lower()), env_id=env_id, split="test",
            instruction=raw["instruction"], initial_state=initial, limits=Limits(max_steps=30),
            verifiers=(verifier,), solution=tuple(solution) if solution else None,
            tags=("osworld", domain), metadata={"osworld": {
                "id": oid, "domain": domain, "source": raw.get("source", ""),
                "related_apps": list(raw.get("related_apps") or [])}})
    except (ValidationError, SpecError) as exc:
        raise Skip(f"malformed: {where}: not a valid envgym task: {str(exc).splitlines()[0]}") from None


def _entries(source: str | Path | Iterable[dict[str, Any]]) -> Iterable[tuple[str, str | None, Any]]:
    """``(where, domain, parsed JSON or a Skip-worthy marker)`` for every task of the source."""
    if isinstance(source, str | Path):
        root = Path(source)
        if root.is_file():
            paths = [root]
        else:
            for candidate in (root / "evaluation_examples" / "examples", root):
                paths = sorted(p for p in candidate.glob("*/*.json") if p.name != "template.json")
                if paths:
                    break
            else:
                paths = sorted(p for p in root.glob("*.json") if p.name not in ("template.json", "test_all.json"))
        if not paths:
            raise SpecError(f"{source}: no OSWorld task JSON here (expected evaluation_examples/examples/<domain>/"
                            "<id>.json)")
        for path in paths:
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                yield str(path), path.parent.name, _Broken(f"malformed: {path}: not JSON ({exc})")
                continue
            yield str(path), path.parent.name, raw
    else:
        for number, raw in enumerate(source):
            yield f"task #{number}", None, raw


class _Broken(dict):
    """A file that did not parse: :func:`import_tasks` reports it under the file's path."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


# ------------------------------------------------------------------------------------------ network


def _walk(node: Any) -> Iterable[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _refuse_network(config: list[dict[str, Any]], evaluator: dict[str, Any]) -> None:
    for part, tree in (("setup", config), ("evaluator", evaluator)):
        for step in _walk(tree):
            kind = step.get("type")
            if kind in _NETWORK_STEPS or kind in _NETWORK_GETTERS:
                raise Skip(f"download: {part} step {kind!r} fetches data over the network")
    for step in config:
        command = step.get("parameters", {}).get("command") if isinstance(step.get("parameters"), dict) else None
        text = " ".join(map(str, command)) if isinstance(command, list) else str(command or "")
        if step["type"] in ("execute", "command") and _NETWORK_WORDS.search(text):
            raise Skip(f"network: setup command installs from the network: {text[:80]!r}")


# ------------------------------------------------------------------------------------------ setup


def _setup(config: list[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
    files: dict[str, dict[str, Any]] = {}
    opening: dict[str, Any] | None = None

    def open_app(app: str, path: str | None) -> None:
        nonlocal opening
        wanted: dict[str, Any] = {"app": app}
        if path is not None:
            wanted["path"] = path
        if app == "terminal" or path is None:
            wanted["title"] = _TITLES.get(app, ".")
        if opening is not None and opening != wanted:
            raise Skip(f"setup: opens more than one app ({opening['app']}, {app}); a task opens one")
        opening = wanted

    for number, step in enumerate(config):
        kind, params = step["type"], step.get("parameters", {})
        if not isinstance(params, dict):
            raise Skip(f"malformed: config[{number}].parameters must be an object")
        if kind in ("sleep", "activate_window"):
            continue
        if kind == "launch":
            app, path = _launch(params.get("command"), number)
            if path is not None and app not in ("files", "terminal") and path not in files:
                raise Skip(f"setup: config[{number}] launches {app} on {path}, which no setup step creates "
                           "(a download?)")
            open_app(app, path)
        elif kind == "open":
            path = params.get("path")
            if not isinstance(path, str):
                raise Skip(f"malformed: config[{number}].parameters.path must be a string")
            path = _home_path(path, f"config[{number}] open")
            if path not in files and not any(p.startswith(path.rstrip("/") + "/") for p in files):
                raise Skip(f"setup: config[{number}] opens {path}, which no setup step creates (a download?)")
            open_app(_app_for(path, files), path)
        elif kind in ("execute", "command"):
            command = params.get("command")
            if not isinstance(command, str | list):
                raise Skip(f"malformed: config[{number}].parameters.command must be a string or a list")
            if isinstance(command, list) and command[:2] in (["python", "-c"], ["python3", "-c"]) and len(command) == 3:
                if _pyautogui(str(command[2]), number):
                    open_app("terminal", HOME)  # GNOME's terminal starts in the home folder
            else:
                text = command if isinstance(command, str) else shlex.join(map(str, command))
                _shell(text, files, number)
        else:
            raise Skip(f"setup: config[{number}] step type {kind!r} is not supported")
    return files, opening


def _launch(command: Any, number: int) -> tuple[str, str | None]:
    words = shlex.split(command) if isinstance(command, str) else [str(w) for w in command or []]
    if not words:
        raise Skip(f"malformed: config[{number}].parameters.command is empty")
    name = PurePosixPath(words[0]).name
    args = [w for w in words[1:] if not w.startswith("-")]
    if name in ("libreoffice", "soffice"):
        app = next((_OFFICE[w] for w in words[1:] if w in _OFFICE), None)
        if app is None:
            raise Skip(f"app: {' '.join(words[:2])} (only LibreOffice Calc and Writer are on this desktop)")
    elif name in _LAUNCH:
        app = _LAUNCH[name]
    else:
        raise Skip(f"app: {name} is not on this desktop")
    if len(args) > 1:
        raise Skip(f"setup: config[{number}] launches {name} with several paths")
    return app, _home_path(args[0], f"config[{number}] launch") if args else None


def _app_for(path: str, files: dict[str, Any]) -> str:
    if path not in files:
        return "files"
    app = _BY_SUFFIX.get(PurePosixPath(path).suffix.lower())
    if app is None:
        raise Skip(f"app: no app of this desktop opens {PurePosixPath(path).name}")
    return app


def _pyautogui(script: str, number: int) -> bool:
    """Whether a setup script opens the terminal; Skip unless it only clicks, sleeps and presses ctrl+alt+t."""
    try:
        tree = ast.parse(script)
    except SyntaxError:
        raise Skip(f"malformed: config[{number}]: the python -c script does not parse") from None
    opens = False
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
        func = call.func if call else None
        name = f"{func.value.id}.{func.attr}" if isinstance(func, ast.Attribute) and isinstance(
            func.value, ast.Name) else ""
        if name in ("time.sleep", "pyautogui.click", "pyautogui.moveTo"):
            continue  # OSWorld focuses the screen's centre first; the env focuses the opened app itself
        if name == "pyautogui.hotkey":
            keys = [a.value for a in call.args if isinstance(a, ast.Constant)]
            if call.args and isinstance(call.args[0], ast.List):
                keys = [e.value for e in call.args[0].elts if isinstance(e, ast.Constant)]
            if [str(k).lower() for k in keys] == ["ctrl", "alt", "t"]:
                opens = True
                continue
        raise Skip(f"setup: config[{number}]: GUI input at setup ({ast.unparse(node)[:60]!r}) is not replayed")
    return opens


_SUDO = ("sudo", "-S")


def _shell(text: str, files: dict[str, dict[str, Any]], number: int) -> None:
    """Apply a shell command that only makes folders and files; Skip for anything else."""
    if "$(" in text or "`" in text:
        raise Skip(f"setup: config[{number}]: command substitution in {text[:60]!r} is not understood")
    lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace, lexer.whitespace_split = " \t\r", True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise Skip(f"setup: config[{number}]: the shell command does not parse ({exc})") from None
    statements: list[list[str]] = [[]]
    for token in tokens:
        if token in ("&&", ";", "\n"):
            statements.append([])
        else:
            statements[-1].append(token)
    env: dict[str, str] = {"HOME": HOME}
    for words in filter(None, statements):
        if words[:3] == ["echo", "password", "|"]:  # OSWorld's sudo password on stdin
            words = words[3:]
        while words and words[0] in _SUDO:
            words = words[1:]
        words = [_expand(w, env, number) for w in words]
        if len(words) == 1 and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
            name, _, value = words[0].partition("=")
            env[name] = value
            continue
        _statement(words, files, number, text)


def _expand(word: str, env: dict[str, str], number: int) -> str:
    def var(m: re.Match[str]) -> str:
        name = m[1] or m[2]
        if name not in env:
            raise Skip(f"setup: config[{number}]: shell variable ${name} is not set by the command")
        return env[name]

    word = re.sub(r"\$\{(\w+)\}|\$(\w+)", var, word)
    return HOME + word[1:] if word == "~" or word.startswith("~/") else word


def _home_path(path: str, where: str, part: str = "setup") -> str:
    path = HOME + path[1:] if path == "~" or path.startswith("~/") else path
    if not path.startswith("/"):
        path = f"{HOME}/{path}"
    clean = str(PurePosixPath(path))
    if ".." in PurePosixPath(clean).parts or not (clean == HOME or clean.startswith(HOME + "/")):
        raise Skip(f"{part}: {where} names {path}, outside {HOME} (the desktop's root file system is read-only "
                   "and the user has no sudo)")
    return clean


def _statement(words: list[str], files: dict[str, dict[str, Any]], number: int, text: str) -> None:
    command, args = words[0], words[1:]
    where = f"config[{number}] {command}"
    if command == "mkdir":
        for arg in (a for a in args if not a.startswith("-")):
            folder = _home_path(arg, where)
            if not any(p.startswith(folder + "/") for p in files):
                files[f"{folder}/{KEEP}"] = {"text": ""}
    elif command == "touch":
        for arg in (a for a in args if not a.startswith("-")):
            files.setdefault(_home_path(arg, where), {"text": ""})
    elif command == "chmod":
        return  # OSWorld makes root-created files writable; here the user owns every file it is given
    elif command == "echo" and len(args) >= 2 and args[-2] in (">", ">>"):
        flags = [a for a in args[:-2] if a in ("-e", "-n", "-en", "-ne")]
        body = " ".join(a for a in args[:-2] if a not in flags)
        if any("e" in f for f in flags):
            body = re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m[1]], body)
        if not any("n" in f.lstrip("-") for f in flags):
            body += "\n"
        path = _home_path(args[-1], where)
        old = files.get(path, {}).get("text", "") if args[-2] == ">>" else ""
        files[path] = {"text": old + body}
    else:
        raise Skip(f"setup: config[{number}]: command {command!r} is not understood ({text[:60]!r})")
    for path in list(files):  # a folder that holds something needs no placeholder
        inside = PurePosixPath(path).parent if path.endswith(f"/{KEEP}") else PurePosixPath(path)
        for parent in inside.parents:
            files.pop(f"{parent}/{KEEP}", None)


# ------------------------------------------------------------------------------------------ evaluator


def _listify(value: Any, n: int) -> list[Any]:
    return list(value) if isinstance(value, list) else [value] * n


def _evaluator(ev: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    func = ev.get("func")
    if func == "infeasible" or func == ["infeasible"]:
        return [], "fail"
    if not func:
        raise Skip("unfinished: the evaluator names no metric function")
    if ev.get("postconfig"):
        if not isinstance(ev["postconfig"], list):
            raise Skip("malformed: evaluator: 'postconfig' must be a list of steps")
        kinds = {s.get("type") for s in ev["postconfig"] if isinstance(s, dict)}
        if kinds - {"sleep"}:
            raise Skip(f"postconfig: grading-time steps {sorted(map(str, kinds - {'sleep'}))} are not replayed")
    funcs = func if isinstance(func, list) else [func]
    if ev.get("conj", "and") != "and" and len(funcs) > 1:
        raise Skip(f"evaluator: conj {ev.get('conj')!r} (only 'and' of several metrics maps)")
    results, expecteds = _listify(ev.get("result"), len(funcs)), _listify(ev.get("expected"), len(funcs))
    options = _listify(ev.get("options") or {}, len(funcs))
    if not len(results) == len(expecteds) == len(options) == len(funcs):
        raise Skip("malformed: evaluator: func, result, expected and options differ in length")
    checks: list[dict[str, Any]] = []
    for name, result, expected, opts in zip(funcs, results, expecteds, options, strict=True):
        checks.extend(_metric(str(name), result, expected, opts or {}))
    return checks, "done"


def _rules(expected: Any, name: str) -> dict[str, Any]:
    if not isinstance(expected, dict) or expected.get("type") != "rule" or not isinstance(expected.get("rules"), dict):
        raise Skip(f"evaluator: {name} needs a 'rule' expected value, got {_kind(expected)}")
    return expected["rules"]


def _kind(getter: Any) -> str:
    return repr(getter.get("type")) if isinstance(getter, dict) else type(getter).__name__


_ON_OUTPUT = ("exact_match", "check_include_exclude", "is_in_list", "literal_match")
"""OSWorld metrics that compare a getter's text (a command's output); on a ``vm_file`` they would see its local
path. The file metrics (``file_contains``, ``check_list``) read the file a ``vm_file`` fetched."""


def _metric(name: str, result: Any, expected: Any, options: dict[str, Any]) -> list[dict[str, Any]]:
    getter = _getter(result, name)
    if getter[0] == "exists":
        _, path, test, yes, no = getter
        want = _rules(expected, name).get("expected") if name == "exact_match" else None
        if want not in (yes, no):
            raise Skip(f"evaluator: {name} on a test command's output is mapped only for exact_match with "
                       f"one of its outputs ({yes!r}, {no!r})")
        return [_exists_check(path, test, want == yes)]
    kind, path = getter
    if (kind == "output") != (name in _ON_OUTPUT):
        what = "a command's output" if kind == "output" else "a vm_file (its local path)"
        raise Skip(f"evaluator: {name} on {what} is not mapped")
    if name == "exact_match":
        return [_check(path, {"kind": "exact", "expected": _rules(expected, name).get("expected")})]
    if name in ("check_include_exclude", "is_in_list", "file_contains"):
        rules = _rules(expected, name)
        include = rules.get("include", []) if name == "check_include_exclude" else rules.get("expected")
        include = [include] if isinstance(include, str) else include
        exclude = rules.get("exclude", []) if name == "check_include_exclude" else []
        if not isinstance(include, list) or not isinstance(exclude, list):
            raise Skip(f"malformed: evaluator: {name} rules must be lists of strings")
        out = [_file_check(path)] if kind == "file" else []
        if include:
            out.append(_check(path, {"kind": "include_all", "expected": [str(s) for s in include]}))
        if exclude:
            out.append(_check(path, {"kind": "exclude_any", "expected": [str(s) for s in exclude]}))
        if not out:
            raise Skip(f"evaluator: {name} with nothing to include or exclude")
        return out
    if name == "check_list":
        rules = _rules(expected, name)
        if rules.get("unexpect"):
            raise Skip("evaluator: check_list with 'unexpect' patterns (no negated regex metric)")
        return [_file_check(path)] + [_check(path, {"kind": "regex", "pattern": f"(?m){p}"})
                                      for p in map(str, rules.get("expect", []))]
    if name == "literal_match":
        if not isinstance(expected, dict) or "rules" not in expected or options.get("type", "str") != "str":
            raise Skip("evaluator: literal_match other than of strings is not mapped")
        return [_check(path, {"kind": "exact", "expected": str(expected["rules"].get("expected")),
                              "ignore_case": bool(options.get("ignore_case", False))})]
    raise Skip(f"evaluator: metric {name!r} is not mapped")


_EXISTS = [
    re.compile(r"^\[\s+-(?P<t>[dfe])\s+(?P<p>\S+)\s+\]\s*&&\s*echo\s+(?P<yes>.+?)\s*\|\|\s*echo\s+(?P<no>.+?)\s*;?$"),
    re.compile(r"^if\s+\[\s+-(?P<t>[dfe])\s+(?P<p>\S+)\s+\];\s*then\s+echo\s+(?P<yes>.+?);\s*else\s+echo\s+"
               r"(?P<no>.+?);\s*fi$"),
]


def _getter(result: Any, name: str) -> tuple[Any, ...]:
    """``("file", path)`` (a vm_file), ``("output", path)`` (``cat``'s output) or ``("exists", path, test, yes,
    no)`` (a ``[ -d/-f/-e ]`` test printing one of two lines); Skip otherwise."""
    if not isinstance(result, dict) or not isinstance(result.get("type"), str):
        raise Skip(f"malformed: evaluator: {name}'s result getter must be an object with a 'type'")
    kind = result["type"]
    if kind == "vm_file":
        if result.get("multi") or not isinstance(result.get("path"), str):
            raise Skip("evaluator: vm_file with several paths is not mapped")
        return ("file", _home_path(result["path"], "vm_file", "evaluator"))
    if kind == "vm_command_line":
        command = result.get("command")
        text = command if isinstance(command, str) else shlex.join(map(str, command or []))
        text = text.strip()
        m = re.fullmatch(r"cat\s+(\S+)", text)
        if m:  # the command's output is the file's text (empty when it is absent)
            return ("output", _home_path(_unquote(m[1]), "cat", "evaluator"))
        for pattern in _EXISTS:
            m = pattern.fullmatch(text)
            if m:
                path = _home_path(_unquote(m["p"]), "test", "evaluator")
                return ("exists", path, m["t"], _unquote(m["yes"]) + "\n", _unquote(m["no"]) + "\n")
        raise Skip(f"evaluator: command {text[:60]!r} would run at grading time (only cat and [ -d/-f ] map)")
    raise Skip(f"evaluator: getter {kind!r} is not mapped")


def _unquote(word: str) -> str:
    parts = shlex.split(word)
    if len(parts) != 1:
        raise Skip(f"evaluator: cannot read the shell word {word!r}")
    return parts[0]


# ------------------------------------------------------------------------------------------ desktop verifier


def _file_check(path: str) -> dict[str, Any]:
    """OSWorld scores a metric on a missing ``vm_file`` 0; the desktop verifier's ``exclude_any`` would pass."""
    return {"name": f"{path} exists", "get": {"kind": "file_exists", "path": path},
            "metric": {"kind": "exact", "expected": True}}


def _check(path: str, metric: dict[str, Any]) -> dict[str, Any]:
    return {"get": {"kind": "file_text", "path": path}, "metric": metric}


def _exists_check(path: str, test: str, present: bool) -> dict[str, Any]:
    if not present:
        return {"name": f"nothing at {path}", "get": {"kind": "file_absent", "path": path},
                "metric": {"kind": "exact", "expected": True}}
    if test == "d":  # a folder: its listing exists (no name holds a slash, so exclude_any only tests that)
        return {"name": f"folder {path}", "get": {"kind": "dir_listing", "path": path, "hidden": True},
                "metric": {"kind": "exclude_any", "expected": ["/"]}}
    if test == "f":  # a regular file: its text can be read (any text matches the empty pattern)
        return {"name": f"file {path}", "get": {"kind": "file_text", "path": path},
                "metric": {"kind": "regex", "pattern": ""}}
    return _file_check(path)


def _verifier(checks: list[dict[str, Any]], expect: str) -> dict[str, Any]:
    return {"type": "desktop", "checks": checks, "expect": expect}


# ------------------------------------------------------------------------------------------ CLI


def import_suite(source: str | Path, out: str | Path | None = None, *, commit: str | None = None) -> dict[str, Any]:
    """Import ``source`` into the folder ``out`` (default: suite ``gui-osworld``'s folder as the registry knows
    it), see the module docstring; return the report written."""
    from envgym.plugin import suites_root, write_suite
    from envgym.plugin.cli import output_dir

    tasks, skipped = import_tasks(source)
    # below a file or unwritable: a SpecError naming --out, not an OSError
    out = output_dir(suites_root(SUITE) if out is None else out)
    with_ref = [t for t in tasks if t.solution]
    without = [t for t in tasks if not t.solution]
    write_suite(SUITE, with_ref, folder=out, log=None)
    if without:
        write_suite(SUITE, without, file="without-reference/tasks.jsonl", folder=out, log=None)
    root = Path(source)
    commit = commit or _git_head(root)
    licence = root / "LICENSE"
    if licence.is_file():
        (out / "LICENSE").write_bytes(licence.read_bytes())
    in_test_all = _test_all(root)
    report = {
        "source": "xlang-ai/OSWorld", "commit": commit,
        "total": len(tasks) + len(skipped),
        "no_download": len(tasks) + sum(not r.startswith(_NOT_COUNTED) for _, r in skipped),
        "imported": len(tasks), "with_reference": len(with_ref),
        "skipped_by_reason": dict(sorted(Counter(r.split(":", 1)[0] for _, r in skipped).items())),
        "test_all": _test_all_counts(in_test_all, tasks, skipped) if in_test_all else None,
        "imported_tasks": [_key(t) for t in tasks],
        "skipped": [{"id": i, "reason": r} for i, r in skipped],
    }
    (out / "import-report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report


_NOT_COUNTED = ("download", "network", "windows", "malformed", "unfinished")
"""Skip reasons of tasks not counted as needing no download (malformed files and examples without a metric
are counted nowhere)."""


def _git_head(root: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _test_all(root: Path) -> set[str]:
    for path in (root / "evaluation_examples" / "test_all.json", root.parent / "test_all.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return {f"{domain}/{i}" for domain, ids in data.items() for i in ids}
        except (OSError, ValueError, AttributeError, TypeError):
            continue
    return set()


def _key(task: TaskSpec) -> str:
    return f"{task.metadata['osworld']['domain']}/{task.metadata['osworld']['id']}"


def _test_all_counts(ids: set[str], tasks: list[TaskSpec], skipped: list[tuple[str, str]]) -> dict[str, int]:
    """The same counts over OSWorld's benchmark set (``test_all.json``)."""
    mine = [t for t in tasks if _key(t) in ids]
    out = [r for i, r in skipped if i in ids]
    return {"total": len(mine) + len(out),
            "no_download": len(mine) + sum(not r.startswith(_NOT_COUNTED) for r in out),
            "imported": len(mine), "with_reference": sum(bool(t.solution) for t in mine)}


def write_suite(source: str | Path, out: str | Path, *, commit: str | None = None) -> dict[str, Any]:
    """Deprecated: :func:`import_suite` (``envgym.plugin.write_suite`` is the one function that writes a suite)."""
    import warnings

    warnings.warn("envgym_gui.osworld.write_suite moved to envgym_gui.osworld.import_suite "
                  "(since 0.2; the alias goes in 0.3)", DeprecationWarning, stacklevel=2)
    return import_suite(source, out, commit=commit)


def _cmd_import(args: argparse.Namespace) -> int:
    try:
        report = import_suite(args.osworld_dir, args.out, commit=args.commit)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.verbose:
        for entry in report["skipped"]:
            print(f"skipped {entry['id']}: {entry['reason']}")
    print(f"OSWorld tasks: {report['total']}, needing no download: {report['no_download']}, imported: "
          f"{report['imported']}, with a reference: {report['with_reference']} -> {args.out or SUITE}")
    print("skipped: " + ", ".join(f"{k} {v}" for k, v in report["skipped_by_reason"].items()))
    return 0 if report["imported"] else 1


def _add_import(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser("import", help="an OSWorld checkout -> a task suite folder (tasks.jsonl + report)")
    i.add_argument("osworld_dir", help="OSWorld checkout, its evaluation_examples/examples folder, or a JSON file")
    i.add_argument("--out", help=f"output folder (default: suite {SUITE}'s folder, where envgym finds it)")
    i.add_argument("--commit", help="the source commit, recorded in the report (default: git HEAD of the folder)")
    i.add_argument("--verbose", "-v", action="store_true", help="print every skipped task with its reason")
    i.set_defaults(fn=_cmd_import)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``osworld import`` to the ``envgym`` command line (entry point group ``envgym.cli``)."""
    p = subparsers.add_parser("osworld", help="import OSWorld task JSON as gui/osworld-v1 tasks")
    _add_import(p.add_subparsers(dest="osworld_command", required=True))
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m envgym_gui.osworld import OSWORLD_DIR ...``"""
    parser = argparse.ArgumentParser(prog="python -m envgym_gui.osworld", description=__doc__.split("\n")[0])
    _add_import(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
