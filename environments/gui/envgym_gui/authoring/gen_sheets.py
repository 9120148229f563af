"""``gui-desktop-gen``'s spreadsheet families (LibreOffice Calc): a seeded table, ``level`` edits to it.

- ``sheet-update`` (train): change the numbers of ``level`` named rows; at level 3 one of them has a
  near-namesake (``Phone bill`` beside ``Phone repair``).
- ``sheet-formula`` (train): ``level`` summary rows under or beside the table, a label and a formula (SUM,
  AVERAGE, MAX, MIN, COUNT) over the column.
- ``sheet-append`` (test): ``level`` rows appended to a product table.
- ``sheet-product`` (test): a value column (D or E, its header drawn) holding ``=B*C`` for ``level`` named
  products.

The table grows with the level. Cells are reached through the Name Box (Ctrl+Shift+F5, the address,
Return), never by runs of arrow keys, and each edit is committed with Return; AutoInput is off in the image.
"""

from __future__ import annotations

import random
from typing import Any

from envgym_gui.authoring import DOCS
from envgym_gui.authoring.gen_base import Draft, check, get, key, opener, typed, wait

__all__ = ["FAMILIES"]

THEMES = (  # file stem, first and second header, labels, low and high value (x step)
    ("budget", "Item", "Cost", ("Rent", "Groceries", "Electricity", "Water", "Internet", "Transport", "Phone", "Gym",
                                "Books", "Repairs", "Heating", "Childcare", "Garden", "Parking", "Insurance",
                                "Cleaning", "Pet food", "Streaming", "Laundry", "Gifts"), 20, 150, 10),
    ("scores", "Name", "Score", ("Alice", "Bruno", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivan", "Jola",
                                 "Kofi", "Lena", "Marta", "Nils", "Omar", "Petra", "Rafael", "Sanne", "Tomas",
                                 "Uma"), 30, 100, 1),
    ("sales", "Region", "Sales", ("North", "South", "East", "West", "Central", "Coast", "Highlands", "Lakes",
                                  "Valley", "Harbour", "Midlands", "Islands", "Plains", "Forest"), 100, 999, 1),
    ("stock", "Product", "Units", ("Pencils", "Stapler", "Folders", "Markers", "Tape", "Scissors", "Notebooks",
                                   "Envelopes", "Glue", "Rulers", "Erasers", "Binders", "Labels", "Clips",
                                   "Sticky notes", "Highlighters"), 5, 400, 1),
)
TWINS = (("Phone bill", "Phone repair"), ("Water bill", "Water filter"), ("Gas heating", "Gas cooker"),
         ("Bus pass", "Bus tour"), ("Car insurance", "Home insurance"), ("Gym fee", "Gym kit"),
         ("Book club", "Book fair"), ("Dog food", "Dog walker"))
YEARS = ("2024", "2025", "2026", "2027")
SUMMARIES = ((("Total", "Sum", "Grand total", "Overall"), "SUM"), (("Average", "Mean", "Typical"), "AVERAGE"),
             (("Highest", "Maximum", "Top", "Best"), "MAX"), (("Lowest", "Minimum", "Smallest"), "MIN"),
             (("Count", "Entries", "How many"), "COUNT"))
PRODUCTS = ("Pencils", "Stapler", "Folders", "Markers", "Tape", "Scissors", "Notebooks", "Envelopes", "Glue",
            "Rulers", "Erasers", "Binders", "Labels", "Clips", "Paper", "Ink", "Toner", "Pens", "Chalk", "Crayons",
            "Staples", "Pins", "Twine", "Cards")
VALUE_HEADERS = ("Value", "Stock value", "Worth", "Amount", "Line total", "Subtotal")
STOCK_FILES = ("inventory", "supplies", "storeroom", "warehouse", "shop-stock")


def _ods(rows: list[list[Any]]) -> dict[str, Any]:
    return {"ods": {"sheets": [{"name": "Sheet1", "rows": rows}]}}


def _goto(address: str) -> list[Any]:
    return [key("Escape ctrl+shift+F5"), typed(address), key("Return")]


def _enter(text: str) -> list[Any]:
    """Type into the current cell (Tab moves right) and commit with Return."""
    return [typed(text), key("Return")]


def _save() -> list[Any]:
    return [key("ctrl+s"), wait(5)]


def _number(value: float) -> str:
    return f"{value:g}"


def _table(rng: random.Random, n: int, *, twin: tuple[str, str] | None = None) -> tuple[str, list[list[Any]]]:
    stem, first, second, labels, low, high, step = rng.choice(THEMES)
    if twin is not None:  # a near-namesake pair only means something for costs
        stem, first, second, labels, low, high, step = THEMES[0]
    names = rng.sample(labels, n - (2 if twin else 0)) + list(twin or ())
    rng.shuffle(names)
    rows: list[list[Any]] = [[first, second]] + [[name, rng.randrange(low, high) * step] for name in names]
    return f"{stem}-{rng.choice(YEARS)}", rows


def _other(rng: random.Random, path: str, rows: list[list[Any]]) -> tuple[str, dict[str, Any]]:
    """A copy with other numbers beside the task's file: the tempting wrong file, named collateral."""
    other = [rows[0]] + [[r[0], r[1] + rng.randrange(1, 9)] for r in rows[1:]]
    return path.replace(".ods", "-old.ods"), _ods(other)


def sheet_update(rng: random.Random, level: int) -> Draft:
    twin = rng.choice(TWINS) if level == 3 else None
    stem, rows = _table(rng, 4 + 2 * level, twin=twin)
    path = f"{DOCS}/{stem}.ods"
    places = rng.sample(range(1, len(rows)), level)
    if twin is not None and not any(rows[p][0] in twin for p in places):
        named = rng.choice(twin)
        places[0] = next(k for k in range(1, len(rows)) if rows[k][0] == named)
    after = [list(r) for r in rows]
    for p in places:
        after[p][1] = rows[p][1] + rng.choice((-1, 1)) * rng.randrange(1, 20) * 5
        if after[p][1] <= 0:
            after[p][1] = rows[p][1] + rng.randrange(1, 20) * 5
    changes = " and ".join(f"the {rows[0][1].lower()} of {rows[p][0]} to {after[p][1]}" for p in places)
    instruction = (f"In {stem}.ods (open in Calc), change {changes}. Change nothing else, and save the file in "
                   "place.")
    solution = []
    for p in places:
        solution += [*_goto(f"B{p + 1}"), *_enter(str(after[p][1]))]
    other, other_spec = _other(rng, path, rows)
    return Draft(instruction, {path: _ods(rows), other: other_spec}, opener("calc", path),
                 [*solution, *_save()], [check(get("ods_table", path=path), "table_equal", "sheet", expected=after)],
                 [other], after={path: _ods(after)})


def sheet_formula(rng: random.Random, level: int) -> Draft:
    stem, rows = _table(rng, 3 + 2 * level + rng.randrange(0, 3))
    path = f"{DOCS}/{stem}.ods"
    last = len(rows)
    values = [r[1] for r in rows[1:]]
    picked = rng.sample(SUMMARIES, level)
    below = rng.random() < 0.5  # under the table (A/B), or beside it (D/E) from a drawn row down
    top = last + 1 if below else rng.randrange(1, last - level + 2)
    column = f"B2:B{last}"
    asks, checks, solution = [], [], []
    grid: dict[tuple[int, int], Any] = {}
    for k, (labels, fn) in enumerate(picked):
        label, r = rng.choice(labels), top + k
        cl, cf = ("A", "B") if below else ("D", "E")
        value = {"SUM": sum(values), "AVERAGE": sum(values) / len(values), "MAX": max(values),
                 "MIN": min(values), "COUNT": len(values)}[fn]
        asks.append(f"in {cl}{r} the label {label} and in {cf}{r} a formula with the {fn} function over {column}")
        checks += [check(get("ods_cell", path=path, cell=f"{cl}{r}"), "exact", f"label {label}", expected=label),
                   check(get("ods_cell", path=path, cell=f"{cf}{r}", field="formula"), "regex", f"formula {fn}",
                         pattern=rf"^={fn}\(B2:B{last}\)$", ignore_case=True),
                   check(get("ods_cell", path=path, cell=f"{cf}{r}"), "numeric", f"value {fn}",
                         expected=round(value, 6), tolerance=0.01)]
        solution += [*_goto(f"{cl}{r}"), *_enter(f"{label}\t={fn}({column})")]
        grid[(r - 1, 0 if below else 3)] = label
        grid[(r - 1, 1 if below else 4)] = {"formula": f"={fn}({column})", "value": value}
    checks.append(check(get("ods_table", path=path, range=f"A1:B{last}"), "table_equal", "data kept", expected=rows))
    where = "under the table" if below else "beside the table"
    instruction = (f"In {stem}.ods (open in Calc), add {where}: " + "; ".join(asks) + ". Save the file in place.")
    other, other_spec = _other(rng, path, rows)
    return Draft(instruction, {path: _ods(rows), other: other_spec}, opener("calc", path), [*solution, *_save()],
                 checks, [other], after={path: _ods(_placed(rows, grid))})


def _placed(rows: list[list[Any]], grid: dict[tuple[int, int], Any]) -> list[list[Any]]:
    """``rows`` with the cells of ``grid`` ((row, column), 0-based) written in, padded with empty cells."""
    height = max([len(rows), *(r + 1 for r, _ in grid)])
    out = [list(rows[r]) if r < len(rows) else [] for r in range(height)]
    for (r, c), value in grid.items():
        out[r] += [None] * (c + 1 - len(out[r]))
        out[r][c] = value
    return out


def _stock(rng: random.Random, n: int, extra: int) -> tuple[str, list[list[Any]], list[str]]:
    names = rng.sample(PRODUCTS, n + extra)
    rows: list[list[Any]] = [["Product", "Quantity", "Price"]]
    rows += [[p, rng.randrange(1, 80), rng.randrange(1, 40) + rng.choice((0, 0.25, 0.5, 0.75))] for p in names[:n]]
    return rng.choice(STOCK_FILES), rows, names[n:]


def sheet_append(rng: random.Random, level: int) -> Draft:
    stem, rows, new_names = _stock(rng, 2 + level, level)
    path = f"{DOCS}/{stem}.ods"
    new = [[p, rng.randrange(1, 80), rng.randrange(1, 40) + rng.choice((0.25, 0.5, 0.75))] for p in new_names]
    listed = "; ".join(f"product {p}, quantity {q}, price {_number(c)}" for p, q, c in new)
    instruction = (f"Add {'a row' if level == 1 else f'{level} rows'} at the end of the table in {stem}.ods (open in "
                   f"Calc), in this order: {listed}. Save the file in place.")
    solution = []
    for k, (p, q, c) in enumerate(new):
        solution += [*_goto(f"A{len(rows) + 1 + k}"), *_enter(f"{p}\t{q}\t{_number(c)}")]
    after = [*rows, *new]
    orders = f"{DOCS}/orders.ods"
    order_rows = [["Order", "Product"]] + [[rng.randrange(100, 999), r[0]] for r in rows[1:3]]
    return Draft(instruction, {path: _ods(rows), orders: _ods(order_rows)}, opener("calc", path),
                 [*solution, *_save()], [check(get("ods_table", path=path), "table_equal", "table", expected=after)],
                 [orders], after={path: _ods(after)})


def sheet_product(rng: random.Random, level: int) -> Draft:
    stem, rows, _ = _stock(rng, 3 + level + rng.randrange(0, 4), 0)
    path = f"{DOCS}/{stem}.ods"
    places = sorted(rng.sample(range(1, len(rows)), level))
    rest = next(k for k in range(1, len(rows)) if k not in places)
    header, col = rng.choice(VALUE_HEADERS), rng.choice(("D", "E"))
    c = ord(col) - 65
    names = " and ".join(rows[p][0] for p in places)
    instruction = (f"In {stem}.ods (open in Calc), type the header {header} in {col}1 and, for {names}, a formula in "
                   f"column {col} that multiplies the row's Quantity by its Price. Leave column {col} empty for the "
                   "other products and save the file in place.")
    solution = [*_goto(f"{col}1"), *_enter(header)]
    checks = [check(get("ods_cell", path=path, cell=f"{col}1"), "exact", "header", expected=header)]
    grid: dict[tuple[int, int], Any] = {(0, c): header}
    for p in places:
        r, value = p + 1, rows[p][1] * rows[p][2]
        solution += [*_goto(f"{col}{r}"), *_enter(f"=B{r}*C{r}")]
        checks += [check(get("ods_cell", path=path, cell=f"{col}{r}", field="formula"), "regex", f"formula {col}{r}",
                         pattern=rf"^=B{r}\*C{r}$", ignore_case=True),
                   check(get("ods_cell", path=path, cell=f"{col}{r}"), "numeric", f"value {col}{r}", expected=value,
                         tolerance=0.01)]
        grid[(p, c)] = {"formula": f"=B{r}*C{r}", "value": value}
    checks += [check(get("ods_cell", path=path, cell=f"{col}{rest + 1}"), "exact", "other rows empty", expected=None),
               check(get("ods_table", path=path, range=f"A1:C{len(rows)}"), "table_equal", "data kept",
                     expected=rows)]
    other = f"{DOCS}/{stem}-old.ods"
    return Draft(instruction, {path: _ods(rows), other: _ods(rows[:3])}, opener("calc", path),
                 [*solution, *_save()], checks, [other], after={path: _ods(_placed(rows, grid))})


FAMILIES = {"sheet-update": sheet_update, "sheet-formula": sheet_formula, "sheet-append": sheet_append,
            "sheet-product": sheet_product}
