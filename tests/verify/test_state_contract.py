"""The state and matching contracts, made loud: snapshots with JSON values, ``ignore_fields`` entries that
name nothing (or a dotted table), nested argument dicts, the argument that differed, no expected state."""

from __future__ import annotations

import pytest

from envgym.errors import VerifierError
from envgym.verify import CallRecord, VerifyContext, verify_one
from envgym.verify.matching import args_match, check_matchers, mismatches
from envgym.verify.spec import ExpectedWrite, WriteActionSpec
from envgym.verify.state import diff_states, diff_views, drop_fields, sort_rows


class View:
    """A StateView over fixed tables, optionally with ``columns()``."""

    def __init__(self, tables, columns=None):
        self.tables = tables
        if columns is not None:
            self.columns = lambda: columns

    def snapshot(self):
        return self.tables

    def query(self, sql):
        raise NotImplementedError


def _ctx(calls=(), state=None, expected=None):
    return VerifyContext(calls=list(calls), final_answer=None, state=state, expected_state=expected)


def _write(i, name, **args):
    return CallRecord(index=i, name=name, kind="write", arguments=args, ok=True)


# --- snapshots with JSON (unhashable) values --------------------------------------------------------------

async def test_json_column_values_are_compared_not_a_type_error():
    tags = {"items": [{"sku": "a", "qty": 1}], "note": None}
    same_reordered = {"note": None, "items": [{"qty": 1, "sku": "a"}]}
    spec = WriteActionSpec()
    verdict = await verify_one(spec, _ctx(state=View({"orders": [{"id": 1, "meta": tags}]}),
                                          expected=View({"orders": [{"id": 1, "meta": same_reordered}]})))
    assert verdict.passed
    differs = await verify_one(spec, _ctx(state=View({"orders": [{"id": 1, "meta": [1, 2]}]}),
                                          expected=View({"orders": [{"id": 1, "meta": [2, 1]}]})))
    assert not differs.passed
    assert differs.evidence["state_diff"]["orders"] == {"unexpected": [{"id": 1, "meta": [1, 2]}],
                                                        "missing": [{"id": 1, "meta": [2, 1]}]}


def test_a_list_never_equals_a_tuple_and_rows_sort_deterministically():
    assert diff_states({"t": [{"v": [1]}]}, {"t": [{"v": (1,)}]})["t"]["missing"] == [{"v": (1,)}]
    rows = [{"id": 2, "v": {"b": 1, "a": [1]}}, {"id": 1, "v": b"\x00"}, {"id": 3, "v": None}]
    assert sort_rows("t", rows) == sort_rows("t", list(reversed(rows)))
    assert [r["id"] for r in sort_rows("t", rows)] == [1, 2, 3]


def test_a_value_that_cannot_be_compared_names_its_table_and_column():
    class Opaque:
        __hash__ = None

    with pytest.raises(VerifierError, match=r"table 'orders', column 'meta'"):
        diff_states({"orders": [{"id": 1, "meta": Opaque()}]}, {"orders": []})


# --- ignore_fields ---------------------------------------------------------------------------------------

def test_a_table_name_with_a_dot_is_split_on_the_last_dot():
    snapshot = {"shop.orders": [{"id": 1, "ts": 5}], "shop": [{"id": 1, "orders": 3}]}
    dropped = drop_fields(snapshot, ("shop.orders.ts",))
    assert dropped == {"shop.orders": [{"id": 1}], "shop": [{"id": 1, "orders": 3}]}


async def test_a_dotted_table_is_ignored_in_the_final_state_comparison():
    spec = WriteActionSpec(ignore_fields=("app.log.ts",))
    verdict = await verify_one(spec, _ctx(state=View({"app.log": [{"id": 1, "ts": 5}]}),
                                          expected=View({"app.log": [{"id": 1, "ts": 9}]})))
    assert verdict.passed


@pytest.mark.parametrize(("entry", "message"), [
    ("order.ts", r"'order\.ts' names no table of the state; tables: orders"),
    ("orders.tz", r"'orders\.tz' names no column of table 'orders'; its columns: id, ts"),
    ("ts", r"'ts' is not 'table\.column'"),
])
async def test_a_misspelt_ignore_fields_entry_is_an_error_naming_what_is_known(entry, message):
    spec = WriteActionSpec(ignore_fields=(entry,))
    state = View({"orders": [{"id": 1, "ts": 5}]})
    with pytest.raises(VerifierError, match=message):
        await verify_one(spec, _ctx(state=state, expected=state))


def test_columns_vouch_for_empty_tables_and_columns_the_env_left_out():
    snapshot = {"emails": [{"id": 1}], "events": []}
    columns = {"emails": ("id", "body"), "events": ("id", "title")}
    assert drop_fields(snapshot, ("emails.body", "events.title"), columns=columns) == snapshot
    with pytest.raises(VerifierError, match="its columns: id, title"):
        drop_fields(snapshot, ("events.titel",), columns=columns)


# --- nested argument matchers ----------------------------------------------------------------------------

def test_nested_dicts_leave_other_keys_free_unless_exact():
    actual = {"address": {"city": "Oslo", "zip": "0150"}, "items": [{"sku": "a", "qty": 1}]}
    assert args_match({"address": {"city": "oslo"}}, actual)
    assert args_match({"items": [{"sku": "a"}]}, actual)
    assert not args_match({"address": {"$exact": {"city": "Oslo"}}}, actual)
    assert args_match({"address": {"$exact": {"city": "Oslo", "zip": "0150"}}}, actual)
    assert not args_match({"address": {"city": "Bergen"}}, actual)


def test_exact_is_checked_when_the_spec_is_built():
    with pytest.raises(ValueError, match=r"\$exact must be an object"):
        check_matchers({"a": {"$exact": [1]}})
    with pytest.raises(ValueError):
        ExpectedWrite(tool="t", args={"a": {"$exact": 3}})


def test_mismatches_name_the_argument_expected_and_got():
    actual = {"order_id": "o1", "amount": 13.0, "address": {"city": "Oslo"}, "items": [{"qty": 2}]}
    lines = mismatches({"order_id": "o1", "amount": 12.5, "address": {"city": "Bergen"}, "items": [{"qty": 1}],
                        "reason": "damaged"}, actual)
    assert lines == ["amount: expected 12.5, got 13.0", "address.city: expected 'Bergen', got 'Oslo'",
                     "items[0].qty: expected 1, got 2", "reason: expected 'damaged', missing"]


async def test_a_missing_write_reports_the_argument_that_differed():
    spec = WriteActionSpec(expected=(ExpectedWrite(tool="refund", args={"order_id": "o1", "amount": 12.5}),),
                           compare_final_state=False)
    calls = [_write(0, "email", to="x"), _write(1, "refund", order_id="o1", amount=13.0)]
    verdict = await verify_one(spec, _ctx(calls))
    detail = next(c.detail for c in verdict.criteria if c.name == "expected_writes")
    assert detail == "missing: refund (call #1: amount: expected 12.5, got 13.0)"
    assert verdict.evidence["mismatches"] == [{"tool": "refund", "call": 1,
                                               "differences": ["amount: expected 12.5, got 13.0"]}]
    none = await verify_one(spec, _ctx([_write(0, "email", to="x")]))
    assert next(c.detail for c in none.criteria if c.name == "expected_writes") == \
        "missing: refund (no successful refund call)"


# --- compare_final_state without an expected state -------------------------------------------------------

async def test_compare_final_state_without_an_expected_state_fails_saying_so():
    spec = WriteActionSpec(expected=(ExpectedWrite(tool="refund"),))
    verdict = await verify_one(spec, _ctx([_write(0, "refund")], state=View({"t": []})))
    final = next(c for c in verdict.criteria if c.name == "final_state")
    assert not verdict.passed and not final.passed
    assert "no expected state" in final.detail and "compare_final_state: false" in final.detail
    opted_out = spec.model_copy(update={"compare_final_state": False})
    assert (await verify_one(opted_out, _ctx([_write(0, "refund")], state=View({"t": []})))).passed


# --- incremental comparison: views that say which tables changed ------------------------------------------

class ChangedView(View):
    """A view that names the tables it changed and refuses to read any other."""

    def __init__(self, tables, changed):
        super().__init__(tables, columns={t: tuple(rows[0]) if rows else () for t, rows in tables.items()})
        self.changed, self.read = changed, set()

    def changed_tables(self):
        return self.changed

    def snapshot(self, tables=None):
        wanted = set(self.tables) if tables is None else set(tables)
        self.read |= wanted
        return {t: rows for t, rows in self.tables.items() if t in wanted}


def test_diff_views_reads_only_changed_tables_and_gives_the_whole_diff():
    base = {"a": [{"id": 1, "v": 1}], "b": [{"id": 2, "v": 2}], "c": [{"id": 3, "v": 3}]}
    actual = ChangedView({**base, "a": [], "c": [{"id": 3, "v": 3}, {"id": 4, "v": 4}]}, frozenset({"a", "c"}))
    expected = ChangedView({**base, "b": [{"id": 2, "v": 9}]}, frozenset({"b"}))
    diff = diff_views(actual, expected)
    assert diff == diff_states(actual.tables, expected.tables) and set(diff) == {"a", "b", "c"}
    assert actual.read == expected.read == {"a", "b", "c"}

    unchanged = ChangedView(base, frozenset())
    assert diff_views(unchanged, ChangedView(base, frozenset())) == {} and unchanged.read == set()


def test_diff_views_reads_everything_when_a_view_cannot_say():
    base = {"a": [{"id": 1}], "b": [{"id": 2}]}
    actual, expected = ChangedView({"a": [{"id": 1}], "b": []}, None), ChangedView(base, frozenset())
    assert diff_views(actual, expected) == {"b": {"unexpected": [], "missing": [{"id": 2}]}}
    assert actual.read == {"a", "b"}
    plain = View({"a": [{"id": 1}], "b": []})  # no changed_tables(): the whole store, as before
    assert diff_views(plain, ChangedView(base, frozenset())) == {"b": {"unexpected": [], "missing": [{"id": 2}]}}


def test_diff_views_checks_ignore_fields_against_every_table_even_unread_ones():
    base = {"a": [{"id": 1, "v": 1}], "b": [{"id": 2, "w": 2}]}
    actual, expected = ChangedView(base, frozenset()), ChangedView(base, frozenset())
    assert diff_views(actual, expected, ("b.w",)) == {}
    with pytest.raises(VerifierError, match=r"'b\.nope' names no column of table 'b'"):
        diff_views(actual, expected, ("b.nope",))


def test_dropping_fields_a_table_no_longer_holds_keeps_its_sorted_rows():
    rows = sort_rows("a", [{"id": 2}, {"id": 1}])
    once = drop_fields({"a": [{"id": 2, "v": 0}, {"id": 1, "v": 9}]}, ("a.v",), columns={"a": ("id", "v")})
    assert once == {"a": rows}
    again = drop_fields(once, ("a.v",), columns={"a": ("id", "v")})  # the cached expected state, re-dropped
    assert again["a"] is once["a"]


def test_fields_a_view_leaves_out_are_checked_but_not_searched_for():
    from envgym.verify.state import drop_fields

    rows = {"t": [{"a": 1, "b": 2}]}
    assert drop_fields(rows, ["t.b"], left_out=["t.b"]) == rows  # named left out: the rows are not searched
    assert drop_fields(rows, ["t.b"]) == {"t": [{"a": 1}]}
    with pytest.raises(VerifierError, match="names no column"):
        drop_fields(rows, ["t.c"], columns={"t": ("a", "b")}, left_out=["t.c"])
