"""OSWorld's ``evaluator`` -> an :class:`~envgym_gui.osworld.grade.OsworldEval` (its getters resolved), and
its ``postconfig`` -> grading-time steps; :class:`~envgym_gui.osworld._importer.Skip` with the reason for what
cannot be graded offline by OSWorld's own metric functions.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

from envgym_gui.osworld._common import HOME, Skip, home_path

MAX_FILE = 16 << 20
"""Bytes a cached file may have to travel inside a task (setup files and expected files alike)."""

_NO_OFFLINE = {"compare_image_text": "it reads text off an image with OCR (easyocr, torch)"}


class Cache:
    """OSWorld's cache folder: ``<root>/<task id>/<file name>`` (its ``download`` steps and ``cloud_file`` getters
    store each file there; a ``download`` file is named ``<uuid5(url)>_<basename(path)>``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def get(self, task_id: str, name: str, what: str) -> bytes:
        path = self.root / task_id / name
        if PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts or not path.is_file():
            raise Skip(f"download: {what} {name!r} is not in the cache ({self.root}/{task_id}/)")
        size = path.stat().st_size
        if size > MAX_FILE:
            raise Skip(f"download: {what} {name!r} is {size >> 20} MiB, over the {MAX_FILE >> 20} MiB a task carries")
        return path.read_bytes()


def _listify(value: Any, n: int) -> list[Any]:
    return list(value) if isinstance(value, list) else [value] * n


def evaluator(ev: dict[str, Any], task_id: str, cache: Cache | None) -> tuple[dict[str, Any] | None, str]:
    """``(the osworld spec as a dict, expect)``; ``(None, "fail")`` for an infeasible task."""
    from envgym_gui.osworld.install import METRICS

    func = ev.get("func")
    if func == "infeasible" or func == ["infeasible"]:
        return None, "fail"
    if not func:
        raise Skip("unfinished: the evaluator names no metric function")
    funcs = func if isinstance(func, list) else [func]
    if not all(isinstance(f, str) for f in funcs):
        raise Skip("malformed: evaluator: 'func' must be a metric name or a list of them")
    conj = ev.get("conj", "and")
    if conj not in ("and", "or"):
        raise Skip(f"malformed: evaluator: conj {conj!r} is neither 'and' nor 'or'")
    for name in funcs:
        if name not in METRICS:
            why = _NO_OFFLINE.get(name, "it does not run on files read out of the container")
            raise Skip(f"evaluator: metric {name!r} is not graded offline: {why}")
    many = isinstance(func, list)
    results = _listify(ev.get("result"), len(funcs)) if many else [ev.get("result")]
    expecteds = _listify(ev.get("expected"), len(funcs)) if many else [ev.get("expected")]
    options = _listify(ev.get("options") or {}, len(funcs)) if many else [ev.get("options") or {}]
    if not len(results) == len(expecteds) == len(options) == len(funcs):
        raise Skip("malformed: evaluator: func, result, expected and options differ in length")
    if not all(isinstance(o, dict) for o in options):
        raise Skip("malformed: evaluator: 'options' must be an object (one per metric)")
    spec = {"func": funcs, "conj": conj,
            "result": [_getter(r, f"{n}'s result", task_id, cache) for n, r in zip(funcs, results, strict=True)],
            "expected": [None if e is None else _getter(e, f"{n}'s expected", task_id, cache)
                         for n, e in zip(funcs, expecteds, strict=True)],
            "options": options}
    return spec, "done"


_EXISTS = [
    re.compile(r"^\[\s+-(?P<t>[dfe])\s+(?P<p>\S+)\s+\]\s*&&\s*echo\s+(?P<yes>.+?)\s*\|\|\s*echo\s+(?P<no>.+?)\s*;?$"),
    re.compile(r"^if\s+\[\s+-(?P<t>[dfe])\s+(?P<p>\S+)\s+\];\s*then\s+echo\s+(?P<yes>.+?);\s*else\s+echo\s+"
               r"(?P<no>.+?);\s*fi$"),
]


def _unquote(word: str) -> str:
    try:
        parts = shlex.split(word)
    except ValueError:
        parts = []
    if len(parts) != 1:
        raise Skip(f"evaluator: cannot read the shell word {word!r}")
    return parts[0]


def _vm_path(path: Any, where: str) -> str:
    if not isinstance(path, str) or not path:
        raise Skip(f"malformed: evaluator: {where}: 'path' must be a string")
    if path.startswith("~") or not path.startswith("/"):
        return home_path(path, where, "evaluator")
    return str(PurePosixPath(path))


def _names(getter: dict[str, Any], where: str, key: str) -> tuple[list[Any], list[Any]]:
    paths, dests = getter.get("path"), getter.get(key, getter.get("path"))
    if getter.get("multi"):
        if not isinstance(paths, list) or not isinstance(dests, list) or len(paths) != len(dests):
            raise Skip(f"malformed: evaluator: {where}: a multi getter has lists of paths and {key}s")
        return paths, dests
    return [paths], [dests]


def _gives(getter: dict[str, Any], n: int, where: str) -> list[int]:
    gives = getter.get("gives", [0])
    if not isinstance(gives, list) or not all(isinstance(g, int) and 0 <= g < n for g in gives):
        raise Skip(f"malformed: evaluator: {where}: 'gives' must list indexes of its files")
    return gives


def _getter(getter: Any, where: str, task_id: str, cache: Cache | None) -> dict[str, Any]:
    if not isinstance(getter, dict) or not isinstance(getter.get("type"), str):
        raise Skip(f"malformed: evaluator: {where} getter must be an object with a 'type' string")
    kind = getter["type"]
    if kind == "rule":
        return {"type": "rule", "rules": getter.get("rules")}
    if kind == "vm_file":
        if getter.get("time_suffix"):
            raise Skip("evaluator: vm_file with a time suffix (a name known only at grading time) is not mapped")
        paths, dests = _names(getter, where, "dest")
        if not all(isinstance(d, str) and d and "/" not in d for d in dests):
            raise Skip(f"malformed: evaluator: {where}: vm_file 'dest' must be file names")
        return {"type": "vm_file", "paths": [_vm_path(p, where) for p in paths], "dests": dests,
                "gives": _gives(getter, len(paths), where)}
    if kind in ("cloud_file", "cache_file"):
        if cache is None:
            raise Skip(f"download: evaluator getter {kind!r} needs OSWorld's cache (envgym osworld import --cache)")
        if kind == "cloud_file":
            _, names = _names(getter, where, "dest")
        else:
            names = [getter.get("path")]
        if not all(isinstance(n, str) and n for n in names):
            raise Skip(f"malformed: evaluator: {where}: {kind} names no file")
        files = []
        for name in names:
            data = cache.get(task_id, name, f"expected file ({kind})")
            files.append({"name": PurePosixPath(name).name, "sha256": hashlib.sha256(data).hexdigest(),
                          "b64": base64.b64encode(data).decode()})
        return {"type": "expected_file", "files": files, "gives": _gives(getter, len(files), where)}
    if kind == "vm_command_line":
        command = getter.get("command")
        if not isinstance(command, str | list):
            raise Skip(f"malformed: evaluator: {where}: 'command' must be a string or a list")
        text = (command if isinstance(command, str) else shlex.join(map(str, command))).strip()
        m = re.fullmatch(r"cat\s+(\S+)", text)
        if m:
            return {"type": "command_output", "command": text, "how": "cat",
                    "path": home_path(_unquote(m[1]), "cat", "evaluator")}
        for pattern in _EXISTS:
            m = pattern.fullmatch(text)
            if m:
                return {"type": "command_output", "command": text, "how": "test", "test": m["t"],
                        "path": home_path(_unquote(m["p"]), "test", "evaluator"),
                        "yes": _unquote(m["yes"]) + "\n", "no": _unquote(m["no"]) + "\n"}
        raise Skip(f"evaluator: command {text[:60]!r} would run at grading time (only cat and [ -d/-f ] map)")
    raise Skip(f"evaluator: getter {kind!r} is not graded offline")


# ------------------------------------------------------------------------------------------ postconfig

_KEYS = {"ctrl": "ctrl", "shift": "shift", "alt": "alt", "enter": "Return", "return": "Return", "s": "s",
         "q": "q", "e": "e", "tab": "Tab", "esc": "Escape", "escape": "Escape"}


def postconfig(ev: dict[str, Any]) -> list[dict[str, Any]]:
    """OSWorld's grading-time steps as envgym setup steps (``activate``, ``key``, ``sleep``), run in the container
    by the env before the files are read; Skip for a step that would need more (a download, a command)."""
    steps = ev.get("postconfig") or []
    if not isinstance(steps, list):
        raise Skip("malformed: evaluator: 'postconfig' must be a list of steps")
    out: list[dict[str, Any]] = []
    for number, step in enumerate(steps):
        params = step.get("parameters", {}) if isinstance(step, dict) else None
        if not isinstance(params, dict) or not isinstance(step.get("type"), str):
            raise Skip(f"malformed: evaluator: postconfig[{number}] must be a step with a 'type'")
        kind = step["type"]
        if kind == "sleep":
            seconds = params.get("seconds", 1)
            out.append({"type": "sleep", "seconds": min(float(seconds), 5.0)
                        if isinstance(seconds, int | float) else 1.0})
        elif kind == "activate_window":
            name = params.get("window_name")
            if not isinstance(name, str):
                raise Skip(f"malformed: evaluator: postconfig[{number}].window_name must be a string")
            out.append({"type": "activate", "title": re.escape(name)})
        elif kind in ("execute", "command"):
            out.extend(_postconfig_keys(params.get("command"), number))
        else:
            raise Skip(f"postconfig: grading-time step {kind!r} is not replayed")
    return out


def _postconfig_keys(command: Any, number: int) -> list[dict[str, Any]]:
    """A ``python -c`` pyautogui one-liner that only presses keys and sleeps -> ``key`` steps."""
    if not (isinstance(command, list) and len(command) == 3 and command[:2] in (["python", "-c"],
                                                                               ["python3", "-c"])):
        text = command if isinstance(command, str) else " ".join(map(str, command or []))
        raise Skip(f"postconfig: grading-time command {text[:60]!r} is not replayed")
    try:
        tree = ast.parse(str(command[2]))
    except SyntaxError:
        raise Skip(f"malformed: evaluator: postconfig[{number}]: the python -c script does not parse") from None
    out: list[dict[str, Any]] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
        func = call.func if call else None
        name = f"{func.value.id}.{func.attr}" if isinstance(func, ast.Attribute) and isinstance(
            func.value, ast.Name) else ""
        args = call.args if call else []
        words = [a.value for a in args if isinstance(a, ast.Constant)]
        if args and isinstance(args[0], ast.List):
            words = [e.value for e in args[0].elts if isinstance(e, ast.Constant)]
        if name == "time.sleep" and words:
            out.append({"type": "sleep", "seconds": min(float(words[0]), 5.0)})
        elif name in ("pyautogui.hotkey", "pyautogui.press") and words and all(
                str(w).lower() in _KEYS for w in words):
            keys = [_KEYS[str(w).lower()] for w in words]
            if name == "pyautogui.hotkey":
                out.append({"type": "key", "keys": "+".join(keys)})
            else:
                out.extend({"type": "key", "keys": k} for k in keys)
        else:
            raise Skip(f"postconfig: grading-time input {ast.unparse(node)[:60]!r} is not replayed")
    return out


__all__ = ["HOME", "Cache", "evaluator", "postconfig"]
