"""OSWorld task JSON (``evaluation_examples/examples/<domain>/<id>.json``) -> ``gui/osworld-v1`` tasks.

An OSWorld task is an instruction, ``config`` (setup steps run in a VM: ``download``, ``open``, ``launch``,
``execute``/``command``, ``sleep``, ``activate_window``, Chrome and Google Drive steps) and an ``evaluator``
(metric names, ``result``/``expected`` getters, ``options``, ``conj``, ``postconfig``). What maps:

* setup: ``download`` -> the file from OSWorld's cache (``--cache``: ``<cache>/<id>/<uuid5(url)>_<name>``),
  carried in ``initial_state.files``; ``launch``/``open`` of an app the desktop has (its base apps, and those
  :data:`envgym_gui.apps.EXTRA_APPS` names, read at import) -> ``initial_state.open``; ``execute``/``command``
  that only create folders and files (``mkdir``, ``touch``, ``echo ... > file``, ``chmod``; ``sudo`` and shell
  variables understood) -> ``initial_state.files``, an empty folder -> an ``initial_state.setup`` step
  (``mkdir -p``, run in the container as the user); a pyautogui script that only clicks and sleeps is dropped,
  one that presses ctrl+alt+t opens the terminal; ``sleep`` and ``activate_window`` are dropped.
* grading: OSWorld's own metric functions (:mod:`envgym_gui.osworld.grade`, desktop-env) on getters resolved
  by :mod:`envgym_gui.osworld._evaluator`; ``postconfig`` (focus a window, press ctrl+s) -> the
  ``initial_state.postconfig`` steps the env runs before grading; ``infeasible`` -> ``expect: "fail"``.

Everything else is skipped with a reason that starts with one of :data:`REASONS`: ``download`` when a file is
not in the cache (or no cache was given), ``network`` for steps that need the network at run time (Chrome
tabs, Google Drive, logins, installs). Setup paths must lie under ``/home/user``. A task that opens no app
starts with the terminal in the home folder. OSWorld ships no reference solutions: :data:`SOLUTIONS` holds
keyboard-driven ones (an infeasible task's reference is ``fail``); a task without one is imported with
``solution`` None and kept out of the admission-gated suite by the CLI.
"""

from __future__ import annotations

import ast
import base64
import json
import re
import shlex
import uuid
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from envgym.plugin import SpecError
from envgym_gui.osworld._common import ENV_ID, HOME, Skip
from envgym_gui.osworld._common import home_path as _home_path
from envgym_gui.osworld._evaluator import Cache, postconfig
from envgym_gui.osworld._evaluator import evaluator as _evaluate

if TYPE_CHECKING:  # imported where used: `envgym --help` loads this module for its subcommand
    from envgym.plugin import TaskSpec

# The desktop's apps by OSWorld launch command (sandboxes/desktop), and those an image FROM it may add
# (envgym_gui.apps.EXTRA_APPS, by the app key H2's images register).
_LAUNCH = {"gedit": "editor", "mousepad": "editor", "nautilus": "files", "pcmanfm": "files",
           "gnome-terminal": "terminal", "xterm": "terminal", "lxterminal": "terminal"}
_EXTRA_LAUNCH = {"gimp": "gimp", "vlc": "vlc", "thunderbird": "thunderbird", "google-chrome": "chromium",
                 "chromium": "chromium", "chromium-browser": "chromium"}
_OFFICE = {"--calc": "calc", "--writer": "writer", "--impress": "impress"}
_BY_SUFFIX = {".ods": "calc", ".xlsx": "calc", ".xls": "calc", ".csv": "calc", ".odt": "writer", ".docx": "writer",
              ".doc": "writer", ".txt": "editor", ".md": "editor", ".py": "editor", ".json": "editor",
              ".conf": "editor", ".ini": "editor", ".sh": "editor", ".pptx": "impress", ".odp": "impress",
              ".ppt": "impress", ".png": "gimp", ".jpg": "gimp", ".jpeg": "gimp", ".xcf": "gimp", ".mp4": "vlc",
              ".mp3": "vlc", ".wav": "vlc", ".avi": "vlc"}
_BASE = {"editor", "files", "terminal", "calc", "writer"}
_TITLES = {"terminal": "^Terminal$", "calc": "LibreOffice Calc", "writer": "LibreOffice Writer", "editor": "Mousepad"}
"""Window titles to wait for when no file names the window (xterm is started with ``-title Terminal``)."""
_DEFAULT_OPEN = {"app": "terminal", "path": HOME, "title": _TITLES["terminal"]}

_NETWORK_STEPS = {"googledrive", "login", "chrome_open_tabs", "chrome_close_tabs", "update_browse_history",
                  "proxy", "open_tabs"}
_NETWORK_GETTERS = {"googledrive_file", "info_from_website", "pdf_from_url", "gotoRecreationPage_and_get_html_content",
                    "page_info"}
_NETWORK_WORDS = re.compile(r"\b(apt|apt-get|pip3?|conda|curl|wget|git\s+clone|snap)\b")


def _apps() -> set[str]:
    """The app keys tasks may open: the desktop image's and :data:`envgym_gui.apps.EXTRA_APPS`' (read now)."""
    from envgym_gui.apps import EXTRA_APPS

    return _BASE | set(EXTRA_APPS)


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


# ------------------------------------------------------------------------------------------ entry points


def import_tasks(source: str | Path | Iterable[dict[str, Any]], *, env_id: str = ENV_ID,
                 cache: str | Path | None = None) -> tuple[list[TaskSpec], list[tuple[str, str]]]:
    """Tasks and ``(id, reason)`` for every skipped one, from an OSWorld checkout (or its
    ``evaluation_examples/examples`` folder, or one domain folder, or one JSON file) or from task dicts;
    ``cache``: OSWorld's cache folder (``<cache>/<task id>/<file>``), where downloaded files are taken from.

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
            tasks.append(map_task(raw, domain=domain, env_id=env_id, where=where,
                                  cache=None if cache is None else Cache(cache)))
        except Skip as why:
            skipped.append((tid, str(why)))
    return sorted(tasks, key=lambda t: t.id), sorted(skipped)


def map_task(raw: Any, *, domain: str | None = None, env_id: str = ENV_ID, where: str = "task",
             cache: Cache | None = None) -> TaskSpec:
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
    oid, evaluator_ = raw["id"], raw["evaluator"]
    domain = domain or str(raw.get("snapshot") or "unknown")
    if domain == "Windows" or str(raw.get("snapshot", "")).lower().startswith("windows"):
        raise Skip("windows: a Windows task (this desktop is Debian)")
    _refuse_network(config, evaluator_, cache)
    files, folders, opening = _setup(config, oid, cache)
    after = postconfig(evaluator_)
    spec, expect = _evaluate(evaluator_, oid, cache)
    initial: dict[str, Any] = {"files": {p: body for p, body in sorted(files.items())},
                               "open": opening or dict(_DEFAULT_OPEN)}
    empty = sorted(f for f in folders if not any(p.startswith(f + "/") for p in files)
                   and not any(g.startswith(f + "/") for g in folders))
    if empty:  # the files spec holds files only: an empty folder is made in the container, as the user
        initial["setup"] = [{"type": "execute", "command": ["mkdir", "-p", *empty]}]
    if expect == "done" and after:  # OSWorld runs it before grading (an infeasible task has no metric to run)
        initial["postconfig"] = after
    verifier: dict[str, Any] = {"type": "desktop", "checks": [], "expect": expect}
    if spec is not None:
        verifier["osworld"] = spec
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


def _refuse_network(config: list[dict[str, Any]], evaluator: dict[str, Any], cache: Cache | None) -> None:
    """Skip a task that needs the network at run time, or (without a cache) a download."""
    for part, tree in (("setup", config), ("evaluator", evaluator)):
        for step in _walk(tree):
            kind = step.get("type")  # a dict-valued "type" (metric options) is no step
            if not isinstance(kind, str):
                continue
            if kind in _NETWORK_STEPS or kind in _NETWORK_GETTERS:
                raise Skip(f"network: {part} step {kind!r} needs the network at run time")
            if cache is None and kind in ("download", "cloud_file", "cache_file"):
                raise Skip(f"download: {part} step {kind!r} fetches data over the network (give OSWorld's "
                           "cache: envgym osworld import --cache)")
    for step in config:
        command = step.get("parameters", {}).get("command") if isinstance(step.get("parameters"), dict) else None
        text = " ".join(map(str, command)) if isinstance(command, list) else str(command or "")
        if step["type"] in ("execute", "command") and _NETWORK_WORDS.search(text):
            raise Skip(f"network: setup command installs from the network: {text[:80]!r}")


# ------------------------------------------------------------------------------------------ setup


def _setup(config: list[dict[str, Any]], oid: str, cache: Cache | None,
           ) -> tuple[dict[str, dict[str, Any]], set[str], dict[str, Any] | None]:
    """``(files, folders made, the app to open)`` of a task's setup steps."""
    files: dict[str, dict[str, Any]] = {}
    folders: set[str] = set()
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
        if kind == "download":
            _download(params, number, oid, cache, files)
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
            if path not in files and path not in folders and not any(
                    p.startswith(path.rstrip("/") + "/") for p in [*files, *folders]):
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
                _shell(text, files, folders, number)
        else:
            raise Skip(f"setup: config[{number}] step type {kind!r} is not supported")
    return files, folders, opening


def _download(params: dict[str, Any], number: int, oid: str, cache: Cache | None,
              files: dict[str, dict[str, Any]]) -> None:
    """OSWorld's ``download`` step: each file from the cache, where OSWorld's setup controller stores it."""
    entries = params.get("files")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("url"), str)
                                                and isinstance(e.get("path"), str) for e in entries):
        raise Skip(f"malformed: config[{number}].parameters.files must list objects with 'url' and 'path'")
    if cache is None:
        raise Skip("download: setup step 'download' fetches data over the network (give OSWorld's cache: "
                   "envgym osworld import --cache)")
    for entry in entries:
        path = _home_path(entry["path"], f"config[{number}] download")
        name = f"{uuid.uuid5(uuid.NAMESPACE_URL, entry['url'])}_{PurePosixPath(entry['path']).name}"
        data = cache.get(oid, name, f"config[{number}]'s download")
        files[path] = {"bytes_b64": base64.b64encode(data).decode()}


def _launch(command: Any, number: int) -> tuple[str, str | None]:
    words = shlex.split(command) if isinstance(command, str) else [str(w) for w in command or []]
    if not words:
        raise Skip(f"malformed: config[{number}].parameters.command is empty")
    name = PurePosixPath(words[0]).name
    args = [w for w in words[1:] if not w.startswith("-")]
    if name in ("libreoffice", "soffice"):
        app = next((_OFFICE[w] for w in words[1:] if w in _OFFICE), None)
        if app is None and len(args) == 1:
            app = _BY_SUFFIX.get(PurePosixPath(args[0]).suffix.lower())
        if app is None or app not in _apps():
            raise Skip(f"app: {' '.join(words[:2])} (this desktop's LibreOffice apps: "
                       f"{', '.join(sorted(_apps() & {'calc', 'writer', 'impress'}))})")
    elif name in _LAUNCH:
        app = _LAUNCH[name]
    elif name in _EXTRA_LAUNCH and _EXTRA_LAUNCH[name] in _apps():
        app = _EXTRA_LAUNCH[name]
    else:
        raise Skip(f"app: {name} is not on this desktop")
    if len(args) > 1:
        raise Skip(f"setup: config[{number}] launches {name} with several paths")
    return app, _home_path(args[0], f"config[{number}] launch") if args else None


def _app_for(path: str, files: dict[str, Any]) -> str:
    if path not in files:
        return "files"
    app = _BY_SUFFIX.get(PurePosixPath(path).suffix.lower())
    if app is None or app not in _apps():
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


def _shell(text: str, files: dict[str, dict[str, Any]], folders: set[str], number: int) -> None:
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
        _statement(words, files, folders, number, text)


def _expand(word: str, env: dict[str, str], number: int) -> str:
    def var(m: re.Match[str]) -> str:
        name = m[1] or m[2]
        if name not in env:
            raise Skip(f"setup: config[{number}]: shell variable ${name} is not set by the command")
        return env[name]

    word = re.sub(r"\$\{(\w+)\}|\$(\w+)", var, word)
    return HOME + word[1:] if word == "~" or word.startswith("~/") else word


def _statement(words: list[str], files: dict[str, dict[str, Any]], folders: set[str], number: int,
               text: str) -> None:
    command, args = words[0], words[1:]
    where = f"config[{number}] {command}"
    if command == "mkdir":
        for arg in (a for a in args if not a.startswith("-")):
            folders.add(_home_path(arg, where))
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
