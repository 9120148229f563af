"""Generator of the ``gui-calc`` suite: LibreOffice Calc on spreadsheets made per task.

Kinds: a SUM total under a budget, a statistic (AVERAGE/MAX/MIN) beside a score list, a value changed next
to a similarly named item, a row appended, a question answered from the sheet, a copy saved under a new
name (saving over the original is the tempting wrong path), an edit to a file other than the one open,
and infeasible requests (a file or sheet that does not exist). Calc moves down on Enter and right on
Tab; AutoInput is off in the image, so typed text is entered as typed. Solutions reach a cell through the
Name Box (Ctrl+Shift+F5, the address, Return). ``EXPECTED`` maps each task id to
the files (specs) a correct episode leaves and its answer, for the generator's own tests.
"""

from __future__ import annotations

import random
import re
from typing import Any

from envgym.plugin import TaskSpec
from envgym_gui.authoring import (
    DOCS,
    check,
    desktop,
    done,
    fail,
    get,
    key,
    task,
    typed,
    wait,
)

SUITE = "gui-calc"
EXPECTED: dict[str, dict[str, Any]] = {}

ITEMS = ["Rent", "Groceries", "Electricity", "Water", "Internet", "Transport", "Phone", "Gym", "Books",
         "Repairs", "Heating", "Childcare", "Garden", "Parking"]
PAIRS = [("Home insurance", "Car insurance"), ("Phone bill", "Phone repair"), ("Water bill", "Water filter"),
         ("Gas heating", "Gas cooker"), ("Bus pass", "Bus tour")]
NAMES = ["Alice", "Bruno", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivan", "Jola", "Kofi", "Lena"]
REGIONS = ["North", "South", "East", "West", "Central"]
PRODUCTS = ["Pencils", "Stapler", "Folders", "Markers", "Tape", "Scissors", "Notebooks", "Envelopes"]


def _ods(rows: list[list[Any]], name: str = "Sheet1") -> dict[str, Any]:
    return {"ods": {"sheets": [{"name": name, "rows": rows}]}}


def _open(path: str) -> dict[str, Any]:
    return {"app": "calc", "path": path, "title": re.escape(path.rsplit("/", 1)[-1])}


def _goto(row: int, col: int = 0) -> list:
    """To the cell at zero-based (row, col) through the Name Box (Ctrl+Shift+F5), not by repeated arrows: a
    run of arrow keys is what a loaded desktop garbles (lost or auto-repeated presses)."""
    return [key("Escape ctrl+shift+F5"), typed(f"{chr(65 + col)}{row + 1}"), key("Return")]


def _enter(text: str) -> list:
    """Type into the current cell (Tab moves right) and commit it with Return (moves down)."""
    return [typed(text), key("Return")]


def _cell(sheet_path: str, cell: str, field: str = "value") -> dict[str, Any]:
    return get("ods_cell", path=sheet_path, cell=cell, field=field)


def _save() -> list:
    return [key("ctrl+s"), wait(5)]


def _budget(rng: random.Random, n: int) -> list[list[Any]]:
    return [["Item", "Cost"]] + [[item, rng.randrange(20, 150) * 10] for item in rng.sample(ITEMS, n)]


def _old_copy(rng: random.Random, path: str) -> tuple[str, dict[str, Any]]:
    """A last-year file beside the task's: the distractor every collateral check names."""
    old = path.replace(".ods", "-2025.ods")
    return old, _ods(_budget(rng, 4))


def sum_total(rng: random.Random, i: int, index: int) -> TaskSpec:
    n = rng.randrange(4, 8)
    path = f"{DOCS}/budget.ods"
    rows = _budget(rng, n)
    old, old_spec = _old_copy(rng, path)
    r = n + 2
    total = sum(row[1] for row in rows[1:])
    instruction = (f"In the spreadsheet budget.ods (open in Calc), type the label Total in cell A{r} and, in cell "
                   f"B{r}, a formula that adds up the costs B2:B{n + 1} (use SUM). Save the file in place.")
    verifier = desktop([
        check(_cell(path, f"A{r}"), "exact", "label", expected="Total"),
        check(_cell(path, f"B{r}", "formula"), "regex", "formula", pattern=rf"^=SUM\(B2:B{n + 1}\)$",
              ignore_case=True),
        check(_cell(path, f"B{r}"), "numeric", "total", expected=total, tolerance=0.01),
        check(get("ods_table", path=path, range=f"A1:B{n + 1}"), "table_equal", "data kept", expected=rows),
    ], [old])
    solution = [wait(10), *_goto(r - 1), *_enter(f"Total\t=SUM(B2:B{n + 1})"), *_save(), done()]
    tid = f"calc-sum-{i:02d}"
    EXPECTED[tid] = {"files": {path: _ods([*rows, ["Total", {"formula": f"=SUM(B2:B{n + 1})", "value": total}]])}}
    return task(SUITE, tid, index, instruction, files={path: _ods(rows), old: old_spec}, open_app=_open(path),
                solution=solution, verifier=verifier, tags=("formula",))


def statistic(rng: random.Random, i: int, index: int) -> TaskSpec:
    n = rng.randrange(5, 10)
    path = f"{DOCS}/scores.ods"
    rows = [["Name", "Score"]] + [[name, rng.randrange(40, 100)] for name in rng.sample(NAMES, n)]
    function, label = [("AVERAGE", "Average"), ("MAX", "Best"), ("MIN", "Lowest")][i % 3]
    scores = [row[1] for row in rows[1:]]
    value = {"AVERAGE": sum(scores) / n, "MAX": max(scores), "MIN": min(scores)}[function]
    instruction = (f"In scores.ods (open in Calc), type the label {label} in cell D1 and, in cell D2, a formula "
                   f"with the {function} function over the scores B2:B{n + 1}. Save the file in place.")
    verifier = desktop([
        check(_cell(path, "D1"), "exact", "label", expected=label),
        check(_cell(path, "D2", "formula"), "regex", "formula", pattern=rf"^={function}\(B2:B{n + 1}\)$",
              ignore_case=True),
        check(_cell(path, "D2"), "numeric", "value", expected=round(value, 6), tolerance=0.01),
        check(get("ods_table", path=path, range=f"A1:B{n + 1}"), "table_equal", "scores kept", expected=rows),
    ], [f"{DOCS}/scores-old.ods"])
    solution = [wait(10), *_goto(0, 3), *_enter(label), *_enter(f"={function}(B2:B{n + 1})"), *_save(), done()]
    tid = f"calc-stat-{i:02d}"
    result = {"formula": f"={function}(B2:B{n + 1})", "value": value}
    after = [row + ([None, label] if k == 0 else [None, result] if k == 1 else []) for k, row in enumerate(rows)]
    EXPECTED[tid] = {"files": {path: _ods(after)}}
    old_rows = [["Name", "Score"]] + [[name, rng.randrange(40, 100)] for name in rng.sample(NAMES, 4)]
    return task(SUITE, tid, index, instruction, files={path: _ods(rows), f"{DOCS}/scores-old.ods": _ods(old_rows)},
                open_app=_open(path), solution=solution, verifier=verifier, tags=("formula",))


def edit_similar(rng: random.Random, i: int, index: int) -> TaskSpec:
    target, twin = PAIRS[i % len(PAIRS)]
    if rng.random() < 0.5:
        target, twin = twin, target
    path = f"{DOCS}/expenses.ods"
    rows = [["Item", "Cost"]] + [[item, rng.randrange(20, 150) * 10] for item in rng.sample(ITEMS, 4)]
    rows[1:1] = [[twin, rng.randrange(20, 90) * 10]]
    place = rng.randrange(1, len(rows) + 1)
    rows.insert(place, [target, rng.randrange(20, 90) * 10])
    new = rows[place][1] + rng.randrange(1, 30) * 5
    after = [list(r) for r in rows]
    after[place][1] = new
    old = f"{DOCS}/expenses-2025.ods"
    instruction = (f"In expenses.ods (open in Calc), change the cost of \"{target}\" to {new}. Change nothing "
                   "else, and save the file in place.")
    verifier = desktop([check(get("ods_table", path=path), "table_equal", "sheet", expected=after)], [old])
    solution = [wait(10), *_goto(place, 1), *_enter(str(new)), *_save(), done()]
    tid = f"calc-edit-{i:02d}"
    EXPECTED[tid] = {"files": {path: _ods(after)}}
    return task(SUITE, tid, index, instruction, files={path: _ods(rows), old: _ods(_budget(rng, 5))},
                open_app=_open(path), solution=solution, verifier=verifier, tags=("edit", "distractor"))


def append_row(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/inventory.ods"
    products = rng.sample(PRODUCTS, 5)
    rows = [["Product", "Quantity", "Price"]] + [[p, rng.randrange(1, 60), rng.randrange(1, 40) + 0.5]
                                                 for p in products[:4]]
    new = [products[4], rng.randrange(1, 60), rng.randrange(1, 40) + 0.25]
    instruction = (f"Add a row at the end of the table in inventory.ods (open in Calc): product {new[0]}, quantity "
                   f"{new[1]}, price {new[2]}. Save the file in place.")
    after = [*rows, new]
    verifier = desktop([check(get("ods_table", path=path), "table_equal", "table", expected=after)],
                       [f"{DOCS}/orders.ods"])
    solution = [wait(10), *_goto(len(rows)), *_enter(f"{new[0]}\t{new[1]}\t{new[2]}"), *_save(), done()]
    tid = f"calc-append-{i:02d}"
    EXPECTED[tid] = {"files": {path: _ods(after)}}
    orders = _ods([["Order", "Product"], [101, products[0]], [102, products[1]]])
    return task(SUITE, tid, index, instruction, files={path: _ods(rows), f"{DOCS}/orders.ods": orders},
                open_app=_open(path), solution=solution, verifier=verifier, tags=("edit",))


def question(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/sales.ods"
    regions = rng.sample(REGIONS, 4)
    rows = [["Region", "Q1", "Q2", "Q3", "Q4"]] + [[r, *(rng.randrange(100, 999) for _ in range(4))] for r in regions]
    while len({row[3] for row in rows[1:]}) < 4 or len({row[4] for row in rows[1:]}) < 4:
        rows = [rows[0]] + [[r, *(rng.randrange(100, 999) for _ in range(4))] for r in regions]
    if i % 2 == 0:
        column = rng.randrange(1, 5)
        best = max(rows[1:], key=lambda row: row[column])[0]
        instruction = (f"Which region had the highest {rows[0][column]} sales in sales.ods (open in Calc)? Answer "
                       "with the region's name only, and do not modify the file.")
        checks = [check(get("answer"), "regex", "answer", pattern=rf"(?i)^\W*{best}\W*$")]
        answer = best
    else:
        region = rng.choice(rows[1:])
        total = sum(region[1:])
        instruction = (f"What were the {region[0]} region's total sales over the four quarters in sales.ods (open "
                       "in Calc)? Answer with the number only, and do not modify the file.")
        checks = [check(get("answer"), "numeric", "answer", expected=total, tolerance=0.01)]
        answer = str(total)
    verifier = desktop(checks, [path])
    tid = f"calc-ask-{i:02d}"
    EXPECTED[tid] = {"files": {}, "answer": answer}
    return task(SUITE, tid, index, instruction, files={path: _ods(rows)}, open_app=_open(path),
                solution=[wait(10), done(answer)], verifier=verifier, tags=("question",))


def save_copy(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/budget.ods"
    copy = f"{DOCS}/budget-final.ods"
    rows = _budget(rng, 5)
    place = rng.randrange(1, 6)
    new = rows[place][1] + 50
    after = [list(r) for r in rows]
    after[place][1] = new
    instruction = (f"In budget.ods (open in Calc), set the cost of {rows[place][0]} to {new}, but save the result "
                   f"as a new file {copy} (OpenDocument spreadsheet). budget.ods itself must stay unchanged.")
    verifier = desktop([check(get("ods_table", path=copy), "table_equal", "copy", expected=after)], [path])
    solution = [wait(10), *_goto(place, 1), *_enter(str(new)), key("ctrl+shift+s"), wait(5),
                key("ctrl+a"), typed(copy), key("Return"), wait(5), done()]
    tid = f"calc-saveas-{i:02d}"
    EXPECTED[tid] = {"files": {copy: _ods(after)}}
    return task(SUITE, tid, index, instruction, files={path: _ods(rows)}, open_app=_open(path), solution=solution,
                verifier=verifier, tags=("save-as", "distractor"))


def other_file(rng: random.Random, i: int, index: int) -> TaskSpec:
    shown = f"{DOCS}/budget-2025.ods"
    target = f"{DOCS}/budget-2026.ods"
    old_rows, rows = _budget(rng, 5), _budget(rng, 5)
    place = rng.randrange(1, 6)
    new = rows[place][1] + 10 * rng.randrange(1, 9)
    after = [list(r) for r in rows]
    after[place][1] = new
    instruction = (f"Calc shows last year's budget. In this year's file, {target}, set the cost of "
                   f"{rows[place][0]} to {new} and save it. Do not change budget-2025.ods.")
    verifier = desktop([check(get("ods_table", path=target), "table_equal", "this year", expected=after)], [shown])
    solution = [wait(10), key("ctrl+o"), wait(5), typed(target), key("Return"), wait(8),
                *_goto(place, 1), *_enter(str(new)), *_save(), done()]
    tid = f"calc-otherfile-{i:02d}"
    EXPECTED[tid] = {"files": {target: _ods(after)}}
    return task(SUITE, tid, index, instruction, files={shown: _ods(old_rows), target: _ods(rows)},
                open_app=_open(shown), solution=solution, verifier=verifier, tags=("open-file", "distractor"))


def infeasible(rng: random.Random, i: int, index: int) -> TaskSpec:
    path = f"{DOCS}/budget.ods"
    rows = _budget(rng, 5)
    if i % 2 == 0:
        missing = ["q3-forecast.ods", "loans.ods", "savings-plan.ods"][i // 2 % 3]
        instruction = (f"Copy the value of cell B2 of {DOCS}/{missing} into cell C2 of budget.ods (open in Calc) "
                       "and save.")
        reason = f"{missing} does not exist"
    else:
        sheet = ["Forecast", "Archive", "Summary"][i // 2 % 3]
        instruction = (f"In budget.ods (open in Calc), copy the total from the sheet named {sheet} into cell C2 "
                       "of Sheet1 and save.")
        reason = f"budget.ods has no sheet named {sheet}"
    verifier = desktop([], [path], expect="fail")
    tid = f"calc-infeasible-{i:02d}"
    EXPECTED[tid] = {"files": {}, "fail": True}
    return task(SUITE, tid, index, instruction, files={path: _ods(rows)}, open_app=_open(path),
                solution=[wait(2), fail(reason)], verifier=verifier, tags=("infeasible",))


KINDS = ((sum_total, 5), (statistic, 5), (edit_similar, 5), (append_row, 4), (question, 5), (save_copy, 3),
         (other_file, 3), (infeasible, 4))


def build() -> list[TaskSpec]:
    rng = random.Random(14_001)
    tasks: list[TaskSpec] = []
    for make, count in KINDS:
        for i in range(count):
            tasks.append(make(rng, i, len(tasks)))
    return tasks
