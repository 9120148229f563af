"""An answer that hedges (quotes everything back, lists every candidate) fails whatever it contains."""

from envgym.verify.answer import MAX_ANSWER_CHARS, answer_matches
from envgym.verify.spec import AnswerSpec


def test_a_long_answer_that_contains_the_expected_text_fails():
    spec = AnswerSpec(kind="contains", expected="shipped")
    assert answer_matches(spec, "Your order has shipped.")[0]
    ok, detail = answer_matches(spec, "shipped " + "x" * MAX_ANSWER_CHARS)
    assert not ok and "hedged" in detail


def test_a_numeric_answer_listing_every_candidate_fails():
    spec = AnswerSpec(kind="numeric", expected=12)
    assert answer_matches(spec, "You have 12 unread emails (3 from Ana, 2 today).")[0]
    ok, detail = answer_matches(spec, " ".join(str(n) for n in range(40)))
    assert not ok and "40 different numbers" in detail
