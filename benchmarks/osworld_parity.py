"""OSWorld parity: envgym's grading of imported OSWorld tasks against OSWorld's own evaluation, end state by
end state.

    python benchmarks/osworld_parity.py OSWORLD_CHECKOUT [--out DIR] [--json FILE]

(needs ``pip install 'envgym[osworld]' && envgym osworld setup``; no Docker, no network.)

1. **Cache.** Builds a synthetic OSWorld cache (``<cache>/<task id>/<file>``) holding every file the tasks'
   ``download`` steps and ``cloud_file``/``cache_file`` getters name, made by the file's type (``.xlsx`` with
   openpyxl, ``.docx`` with python-docx, ``.pptx``, ``.ods``/``.odt``, images, text; other media as bytes),
   its content drawn from its name, so a task's gold file differs from the file its setup downloads.
2. **Import** with and without the cache; prints imported tasks per OSWorld domain both ways.
3. **Tasks, graded both ways.** For each imported feasible task, two end states: the *null* agent's (the files
   reset wrote, untouched) and the *scripted* agent's (each ``vm_file`` result holds the expected file's
   bytes; only tasks whose results are all compared with an expected file). envgym's grade is
   ``check_desktop`` on the end state (getters resolved by envgym, desktop-env's metric functions);
   OSWorld's is ``DesktopEnv.evaluate``'s loop written out here around desktop-env's own getters
   (``get_vm_file`` fed by a controller reading the end state, ``get_cloud_file``/``get_cache_file`` from the
   cache, ``get_rule``) and metric functions.
4. **Synthetic end states** of the mapped getter shapes (``[ -d/-f/-e P ]`` tests, positive and negative;
   ``cat P``; ``vm_file`` on a file, a folder, nothing) under ``exact_match``, ``check_include_exclude``,
   ``is_in_list``, ``literal_match``, ``check_list``, ``file_contains``: OSWorld's side runs the real command
   with bash over a folder holding the end state.

Prints a parity table per metric function (agree / total, and how many passed on each side).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import importlib
import io
import json
import random
import subprocess
import sys
import tempfile
import uuid
from collections import Counter, defaultdict
from pathlib import Path, PurePosixPath
from typing import Any

from envgym_gui import verify
from envgym_gui.files import materialize
from envgym_gui.osworld import import_suite, import_tasks
from envgym_gui.osworld.install import _load, require
from envgym_gui.state import DesktopState

HOME = "/home/user"

# ------------------------------------------------------------------------------------------ 1. cache


def _seed(name: str) -> random.Random:
    return random.Random(hashlib.sha256(name.encode()).hexdigest())


def synth_file(name: str) -> bytes:
    """A file of ``name``'s type whose content is drawn from ``name``."""
    rng = _seed(name)
    suffix = PurePosixPath(name).suffix.lower()
    words = ["alpha", "beta", "gamma", "delta", "total", "north", "south", "sales", "units", "price"]
    rows = [["Name", "Value", "Count"]] + [[rng.choice(words), rng.randint(1, 999), rng.randint(0, 9)]
                                           for _ in range(rng.randint(3, 8))]
    buffer = io.BytesIO()
    if suffix in (".xlsx", ".xlsm"):
        import openpyxl
        from openpyxl.chart import BarChart, LineChart, Reference

        book = openpyxl.Workbook()
        sheet = book.active
        sheet.title = "Sheet1"
        for title in ("Sheet1", "Sheet2"):  # each with a chart whose kind and title come from the name
            sheet = book[title] if title in book.sheetnames else book.create_sheet(title)
            for row in rows:
                sheet.append(row)
            chart = rng.choice([BarChart, LineChart])()
            chart.title = f"{rng.choice(words)} {rng.randint(1, 99)}"
            chart.add_data(Reference(sheet, min_col=2, min_row=1, max_row=len(rows)), titles_from_data=True)
            sheet.add_chart(chart, "E2")
        book.save(buffer)
        return buffer.getvalue()
    if suffix == ".docx":
        import docx
        from docx.enum.text import WD_COLOR_INDEX

        document = docx.Document()
        for row in rows:
            document.add_paragraph(" ".join(map(str, row)))
        marked = document.add_paragraph("see ")  # a highlighted word and a table, drawn from the name
        marked.add_run(rng.choice(words)).font.highlight_color = WD_COLOR_INDEX.YELLOW
        table = document.add_table(rows=len(rows), cols=3)
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                table.cell(r, c).text = str(value)
        document.save(buffer)
        return buffer.getvalue()
    if suffix == ".pptx":
        import pptx

        deck = pptx.Presentation()
        for row in rows[:3]:
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = " ".join(map(str, row))
        deck.save(buffer)
        return buffer.getvalue()
    if suffix == ".ods":
        return materialize({"/x.ods": {"ods": {"sheets": [{"name": "Sheet1", "rows": rows}]}}})["/x.ods"]
    if suffix == ".odt":
        return materialize({"/x.odt": {"odt": {"paragraphs": [" ".join(map(str, r)) for r in rows]}}})["/x.odt"]
    if suffix in (".png", ".jpg", ".jpeg", ".bmp", ".gif"):
        from PIL import Image

        image = Image.new("RGB", (64, 48), tuple(rng.randint(0, 255) for _ in range(3)))
        image.save(buffer, format={"jpg": "JPEG"}.get(suffix[1:], suffix[1:].upper()))
        return buffer.getvalue()
    if suffix in (".csv",):
        return "\n".join(",".join(map(str, r)) for r in rows).encode() + b"\n"
    if suffix in (".txt", ".md", ".py", ".json", ".html", ".sh", ".conf", ".ini", ".yaml", ".yml", ".xml", ".tex",
                  ".bib", ".log", ".srt", ""):
        return "\n".join(" ".join(map(str, r)) for r in rows).encode() + b"\n"
    return bytes(rng.getrandbits(8) for _ in range(256))


def _walk(node: Any):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def needed(raw: dict[str, Any]) -> list[str]:
    """The cache file names a task's download steps and cloud_file/cache_file getters name."""
    names: list[str] = []
    for step in raw.get("config") or []:
        if isinstance(step, dict) and step.get("type") == "download":
            for entry in (step.get("parameters") or {}).get("files") or []:
                if isinstance(entry, dict) and isinstance(entry.get("url"), str) and isinstance(entry.get("path"), str):
                    names.append(f"{uuid.uuid5(uuid.NAMESPACE_URL, entry['url'])}_{PurePosixPath(entry['path']).name}")
    for node in _walk(raw.get("evaluator") or {}):
        kind = node.get("type")
        if kind == "cloud_file":
            dest = node.get("dest")
            names.extend(d for d in (dest if isinstance(dest, list) else [dest]) if isinstance(d, str))
        elif kind == "cache_file" and isinstance(node.get("path"), str):
            names.append(node["path"])
    return names


def build_cache(examples: Path, cache: Path) -> int:
    made = 0
    for path in sorted(examples.glob("*/*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            continue
        for name in needed(raw):
            target = cache / raw["id"] / name
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(synth_file(name))
                made += 1
    return made


# ------------------------------------------------------------------------------------------ grading both ways


class EndState:
    """Files and folders as an episode left them, in the shapes both graders read."""

    def __init__(self, files: dict[str, bytes], folders: set[str]) -> None:
        self.files = dict(files)
        self.folders = set(folders) | {str(p) for f in files for p in PurePosixPath(f).parents}

    async def read(self, path: str) -> bytes | None:
        return self.files.get(path)

    async def list_dir(self, path: str) -> list[str] | None:
        if path not in self.folders:
            return None
        return sorted({PurePosixPath(p).relative_to(path).parts[0] for p in [*self.files, *self.folders]
                       if p.startswith(path.rstrip("/") + "/")})

    def state(self, initial: dict[str, bytes]) -> DesktopState:
        async def nothing() -> list[dict[str, Any]]:
            return []

        async def no_clip() -> str | None:
            return None

        return DesktopState(final="done", answer=None, initial_files=initial, _read_file=self.read,
                            _list_dir=self.list_dir, _windows=nothing, _clipboard=no_clip)

    def on_disk(self, root: Path) -> None:
        for folder in self.folders:
            (root / folder.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for path, data in self.files.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


async def envgym_grade(task: Any, end: EndState) -> float:
    spec = verify.DesktopSpec.model_validate(task.verifiers[0].model_dump(mode="json"))
    from envgym.verify import VerifyContext

    verdict = await verify.check_desktop(spec, VerifyContext(calls=[], final_answer=None, state=end.state({}),
                                                             task=task))
    return verdict.score


def _getters() -> dict[str, Any]:
    require()
    _load("general")  # makes the namespace packages; the getters are loaded the same way, module by module
    pkg = "desktop_env.evaluators.getters"
    if pkg not in sys.modules:
        import types

        root = next(iter(sys.modules["desktop_env"].__path__))
        stub = types.ModuleType(pkg)
        stub.__path__ = [root + "/evaluators/getters"]
        sys.modules[pkg] = stub
    file_getters = importlib.import_module(f"{pkg}.file")
    misc = importlib.import_module(f"{pkg}.misc")
    return {"vm_file": file_getters.get_vm_file, "cloud_file": file_getters.get_cloud_file,
            "cache_file": file_getters.get_cache_file, "rule": misc.get_rule}


class _Controller:
    def __init__(self, end: EndState) -> None:
        self.end = end

    def get_file(self, path: str) -> bytes | None:
        return self.end.files.get(path)


class _Env:
    """What desktop-env's getters use of its DesktopEnv: ``cache_dir``, ``controller.get_file``, and (here) the
    end state on disk for vm_command_line."""

    def __init__(self, cache_dir: str, end: EndState, root: Path) -> None:
        self.cache_dir, self.controller, self.root = cache_dir, _Controller(end), root


def _command_line(env: _Env, config: dict[str, Any]) -> str:
    """OSWorld's server runs the command in the VM and returns its stdout; here bash runs it over the end state
    on disk (the home folder's paths moved under it)."""
    command = config["command"]
    text = command if isinstance(command, str) else " ".join(command)
    text = text.replace(HOME, str(env.root) + HOME).replace("~/", str(env.root) + HOME + "/")
    return subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=10, check=False).stdout


def osworld_grade(raw: dict[str, Any], end: EndState, cache_dir: Path) -> float:
    """``DesktopEnv.evaluate`` (desktop-env 1.0.2) for an episode that did not end with FAIL."""
    from envgym_gui.osworld.install import metric

    getters = {**_getters(), "vm_command_line": _command_line}
    ev = raw["evaluator"]
    funcs = ev["func"] if isinstance(ev["func"], list) else [ev["func"]]
    many = isinstance(ev["func"], list)
    results = ev["result"] if many else [ev["result"]]
    expecteds = (ev.get("expected") if many else [ev.get("expected")]) if ev.get("expected") else None
    options = (ev.get("options") or [{}] * len(funcs)) if many else [ev.get("options") or {}]
    conj = ev.get("conj", "and")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "cache"  # OSWorld writes vm files into the task's cache folder: a copy of it
        if cache_dir.is_dir():
            subprocess.run(["cp", "-r", str(cache_dir), str(work)], check=True)
        else:
            work.mkdir()
        root = Path(tmp) / "vm"
        end.on_disk(root)
        env = _Env(str(work), end, root)
        scores = []
        for index, name in enumerate(funcs):
            result = getters[results[index]["type"]](env, results[index])
            function = metric(name)
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    if expecteds and expecteds[index]:
                        expected = getters[expecteds[index]["type"]](env, expecteds[index])
                        value = float(function(result, expected, **options[index]))
                    else:
                        value = float(function(result, **options[index]))
                except Exception:  # as envgym scores a metric that raises on the agent's file
                    value = 0.0
            if conj == "and" and value == 0.0:
                return 0.0
            if conj == "or" and value == 1.0:
                return 1.0
            scores.append(value)
    return sum(scores) / len(scores) if conj == "and" else max(scores)


def initial_end(task: Any) -> EndState:
    files = materialize(task.initial_state.get("files") or {})
    folders = {p for step in task.initial_state.get("setup") or [] for p in step["command"][2:]}
    return EndState(files, folders)


def scripted_end(task: Any, start: EndState) -> EndState | None:
    """Each vm_file result holds its expected file's bytes; None unless every result has an expected file."""
    spec = task.verifiers[0].model_dump(mode="json").get("osworld") or {}
    files = dict(start.files)
    for result, expected in zip(spec.get("result", []), spec.get("expected", []), strict=True):
        if result["type"] != "vm_file" or not expected or expected["type"] != "expected_file":
            return None
        wanted = [f for i, f in enumerate(expected["files"]) if i in expected["gives"]]
        paths = [p for i, p in enumerate(result["paths"]) if i in result["gives"]]
        if len(wanted) != len(paths):
            return None
        for path, stored in zip(paths, wanted, strict=True):
            files[path] = base64.b64decode(stored["b64"])
    return EndState(files, start.folders)


# ------------------------------------------------------------------------------------------ 4. synthetic states


def synthetic_cases() -> list[tuple[str, dict[str, Any], EndState]]:
    """(metric, an OSWorld task dict, an end state) for every mapped getter shape and the end states that tell
    its readings apart."""
    p, d = f"{HOME}/Desktop/notes.txt", f"{HOME}/Desktop/done"
    ends = {
        "absent": EndState({}, set()),
        "folder": EndState({}, {p, d}),
        "exact": EndState({p: b"hello world\n"}, {d}),
        "bare": EndState({p: b"hello world"}, set()),
        "spaced": EndState({p: b"  hello world  \n\n"}, set()),
        "case": EndState({p: b"Hello World\n"}, set()),
        "lines": EndState({p: b"first: apple\nsecond: pear\n"}, set()),
        "across": EndState({p: b"first: apple second: pear\n"}, set()),
        "bad": EndState({p: b"first: apple\nsecond: pear\nthird: plum\n"}, set()),
        "empty": EndState({p: b""}, set()),
    }
    cases: list[tuple[str, dict[str, Any], EndState]] = []

    def task(func: str, result: dict[str, Any], expected: dict[str, Any] | None, options: dict[str, Any] | None = None
             ) -> dict[str, Any]:
        ev: dict[str, Any] = {"func": func, "result": result}
        if expected is not None:
            ev["expected"] = expected
        if options is not None:
            ev["options"] = options
        return {"id": f"synthetic-{len(cases)}", "instruction": "x", "config": [], "evaluator": ev}

    for test in ("d", "f", "e"):
        for target in (p, d):
            for yes_no, want in ((("yes", "no"), "yes\n"), (("yes", "no"), "no\n")):
                command = f"[ -{test} {target} ] && echo {yes_no[0]} || echo {yes_no[1]}"
                for end in ("absent", "folder", "exact"):
                    cases.append(("exact_match", task("exact_match", {"type": "vm_command_line", "command": command,
                                                                      "shell": True},
                                                      {"type": "rule", "rules": {"expected": want}}), ends[end]))
    cat = {"type": "vm_command_line", "command": f"cat {p}", "shell": True}
    for end in ("absent", "exact", "bare", "spaced", "case"):
        for want in ("hello world\n", "hello world"):
            cases.append(("exact_match", task("exact_match", cat, {"type": "rule", "rules": {"expected": want}}),
                          ends[end]))
        cases.append(("check_include_exclude", task("check_include_exclude", cat, {"type": "rule", "rules": {
            "include": ["hello"], "exclude": ["World"]}}), ends[end]))
        cases.append(("is_in_list", task("is_in_list", cat, {"type": "rule", "rules": {"expected": "world"}}),
                      ends[end]))
        for options in (None, {"ignore_case": True}, {"type": "str"}):
            cases.append(("literal_match", task("literal_match", cat, {"type": "rule", "rules": "hello world\n"},
                                                options), ends[end]))
        # a rule dict: OSWorld compares the output with str(dict) (the importer once mapped its "expected")
        cases.append(("literal_match", task("literal_match", cat, {"type": "rule", "rules": {
            "expected": "hello world\n"}}), ends[end]))
    vm = {"type": "vm_file", "path": p, "dest": "notes.txt"}
    for end in ("absent", "folder", "lines", "across", "bad", "empty"):
        cases.append(("check_list", task("check_list", vm, {"type": "rule", "rules": {
            "expect": ["^first: apple$", "^second: pear$"], "unexpect": ["plum"]}}), ends[end]))
        cases.append(("check_list", task("check_list", vm, {"type": "rule", "rules": {
            "expect": ["apple.*pear"]}}), ends[end]))
        cases.append(("file_contains", task("file_contains", vm, {"type": "rule", "rules": {
            "expected": ["apple", "pear"]}}), ends[end]))
    return cases


# ------------------------------------------------------------------------------------------ run


async def run(checkout: Path, out: Path) -> dict[str, Any]:
    examples = checkout / "evaluation_examples" / "examples"
    cache = out / "cache"
    made = build_cache(examples, cache)
    report_plain = import_suite(checkout, out / "no-cache")
    report = import_suite(checkout, out / "with-cache", cache=cache)
    raws = {}
    for path in examples.glob("*/*.json"):
        with contextlib.suppress(OSError, ValueError):
            raw = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(raw, dict):
                raws[(path.parent.name, raw.get("id"))] = raw
    tasks, _ = import_tasks(checkout, cache=cache)
    table: dict[str, Counter] = defaultdict(Counter)
    disagreements: list[dict[str, Any]] = []
    graded = 0
    for task in tasks:
        meta = task.metadata["osworld"]
        spec = task.verifiers[0].model_dump(mode="json")
        if spec["expect"] != "done":
            continue
        raw = raws[(meta["domain"], meta["id"])]
        start = initial_end(task)
        graded += 1
        for agent, end in (("null", start), ("scripted", scripted_end(task, start))):
            if end is None:
                continue
            mine = await envgym_grade(task, end)
            theirs = osworld_grade(raw, end, cache / meta["id"])
            key = "+".join(spec["osworld"]["func"])
            row = table[key]
            row[f"{agent}_n"] += 1
            row[f"{agent}_agree"] += mine == theirs
            row[f"{agent}_pass_envgym"] += mine >= 1.0
            row[f"{agent}_pass_osworld"] += theirs >= 1.0
            if mine != theirs:
                disagreements.append({"task": task.id, "agent": agent, "envgym": mine, "osworld": theirs})
    synthetic: dict[str, Counter] = defaultdict(Counter)
    for name, raw, end in synthetic_cases():
        [task], skipped = import_tasks([raw])
        assert not skipped, skipped
        mine = await envgym_grade(task, end)
        theirs = osworld_grade(raw, end, Path("/nonexistent"))
        synthetic[name]["n"] += 1
        synthetic[name]["agree"] += mine == theirs
        synthetic[name]["pass"] += theirs >= 1.0
        if mine != theirs:
            disagreements.append({"synthetic": raw["evaluator"], "envgym": mine, "osworld": theirs})
    return {"cache_files": made, "no_cache": report_plain["by_domain"], "with_cache": report["by_domain"],
            "imported": {"no_cache": report_plain["imported"], "with_cache": report["imported"]},
            "graded_tasks": graded, "tasks": {k: dict(v) for k, v in sorted(table.items())},
            "synthetic": {k: dict(v) for k, v in sorted(synthetic.items())}, "disagreements": disagreements}


def _print(result: dict[str, Any]) -> None:
    print(f"synthetic cache files: {result['cache_files']}")
    print(f"imported: {result['imported']['no_cache']} without a cache, {result['imported']['with_cache']} with it")
    print(f"{'domain':<22}{'no cache':>9}{'cache':>7}  why the rest stay out (with the cache)")
    for domain in sorted(set(result["no_cache"]) | set(result["with_cache"])):
        a, b = result["no_cache"].get(domain, {}), result["with_cache"].get(domain, {})
        why = ", ".join(f"{k} {v}" for k, v in b.get("skipped", {}).items())
        print(f"{domain:<22}{a.get('imported', 0):>9}{b.get('imported', 0):>7}  {why}")
    print(f"\nimported feasible tasks graded both ways: {result['graded_tasks']}")
    print(f"{'metric':<44}{'null agree':>11}{'null pass e/o':>14}{'scripted agree':>15}{'scr. pass e/o':>14}")
    total = Counter()
    for name, row in result["tasks"].items():
        total.update(row)
        print(f"{name[:43]:<44}{row.get('null_agree', 0):>5}/{row.get('null_n', 0):<5}"
              f"{row.get('null_pass_envgym', 0):>7}/{row.get('null_pass_osworld', 0):<6}"
              f"{row.get('scripted_agree', 0):>9}/{row.get('scripted_n', 0):<5}"
              f"{row.get('scripted_pass_envgym', 0):>7}/{row.get('scripted_pass_osworld', 0):<6}")
    print(f"{'all':<44}{total['null_agree']:>5}/{total['null_n']:<5}{total['null_pass_envgym']:>7}/"
          f"{total['null_pass_osworld']:<6}{total['scripted_agree']:>9}/{total['scripted_n']:<5}"
          f"{total['scripted_pass_envgym']:>7}/{total['scripted_pass_osworld']:<6}")
    print(f"\nsynthetic end states: {'metric':<24}{'agree':>10}{'OSWorld passes':>16}")
    n = agree = 0
    for name, row in result["synthetic"].items():
        n, agree = n + row["n"], agree + row["agree"]
        print(f"{'':<22}{name:<24}{row['agree']:>5}/{row['n']:<4}{row['pass']:>16}")
    print(f"{'':<22}{'all':<24}{agree:>5}/{n:<4}")
    print(f"disagreements: {len(result['disagreements'])}")
    for d in result["disagreements"][:20]:
        print("  ", json.dumps(d)[:200])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path, help="an OSWorld checkout (evaluation_examples/examples/...)")
    parser.add_argument("--out", type=Path, help="work folder (default: a temp folder)")
    parser.add_argument("--json", type=Path, help="also write the result as JSON here")
    args = parser.parse_args()
    verify.register()
    with tempfile.TemporaryDirectory(prefix="osworld-parity-") as tmp:
        result = asyncio.run(run(args.checkout, args.out or Path(tmp)))
    _print(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0 if not result["disagreements"] else 1


if __name__ == "__main__":
    sys.exit(main())
