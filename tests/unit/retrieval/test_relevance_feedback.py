"""Pseudo-relevance feedback: which terms a long question's first hits add to its BM25 query."""

from __future__ import annotations

import math

import pytest

from knowcode.retrieval.relevance_feedback import FEEDBACK_TERMS, MIN_DOCUMENT_FREQUENCY, expansion_terms
from knowcode.retrieval.sparse import bm25_idf

FREQUENCY = {"session": 40, "cookie": 12, "sign": 5, "serial": 4, "salt": 3, "self": 900, "only": 1}


def terms(query: list[str], feedback: list[tuple[str, float]], weight: float = 0.6) -> dict[str, float]:
    return expansion_terms(query, feedback, lambda word: FREQUENCY.get(word, 0), 1000, weight=weight)


def test_the_first_hits_rarer_words_are_added_and_the_question_s_are_not() -> None:
    added = terms(["session", "cookie"], [("session cookie sign serial self self", 9.0),
                                          ("cookie salt serial self", 6.0)])
    assert set(added) == {"sign", "serial", "salt", "self"}
    # serial is in both hits, sign and salt in one each; self is everywhere, so it weighs least
    assert added["serial"] == max(added.values())
    assert added["self"] == min(added.values())


def test_the_best_term_weighs_the_share_of_the_question_s_weight() -> None:
    query = ["session", "cookie", "salt"]
    added = terms(query, [("sign serial", 2.0)], weight=0.5)
    assert max(added.values()) == pytest.approx(0.5 * len(query) / len(added))
    # sign and serial occur once each in the one hit: they differ by idf alone
    assert added["sign"] / added["serial"] == pytest.approx(bm25_idf(5, 1000) / bm25_idf(4, 1000))


def test_a_weaker_hit_counts_for_less() -> None:
    added = terms(["session"], [("sign", 8.0), ("serial", 2.0)])
    relevance_sign, relevance_serial = 1.0 * bm25_idf(5, 1000), 0.25 * bm25_idf(4, 1000)
    assert added["serial"] / added["sign"] == pytest.approx(relevance_serial / relevance_sign)


def test_shares_are_per_token_of_each_hit() -> None:
    short = terms(["session"], [("sign", 1.0)])
    long = terms(["session"], [("sign cookie cookie cookie", 1.0)])
    assert short["sign"] == pytest.approx(0.6)  # the only term: it gets the whole share
    assert set(long) == {"sign", "cookie"}
    assert long["sign"] / long["cookie"] == pytest.approx(bm25_idf(5, 1000) / (3 * bm25_idf(12, 1000)))


def test_at_most_the_given_number_of_terms() -> None:
    words = [f"w{i}" for i in range(FEEDBACK_TERMS * 2)]
    frequency = {word: 2 + i for i, word in enumerate(words)}
    added = expansion_terms(["q"], [(" ".join(words), 1.0)], frequency.__getitem__, 1000, weight=1.0)
    assert len(added) == FEEDBACK_TERMS
    assert set(added) == set(words[:FEEDBACK_TERMS])  # the rarest
    assert len(expansion_terms(["q"], [(" ".join(words), 1.0)], frequency.__getitem__, 1000, weight=1.0,
                               terms=3)) == 3


def test_a_term_only_the_hit_itself_holds_adds_nothing() -> None:
    assert FREQUENCY["only"] < MIN_DOCUMENT_FREQUENCY
    assert terms(["session"], [("only", 1.0)]) == {}


@pytest.mark.parametrize(("query", "feedback", "weight"), [
    ([], [("sign", 1.0)], 0.6),  # no question
    (["session"], [], 0.6),  # no hits
    (["session"], [("sign", 1.0)], 0.0),  # switched off
    (["session"], [("sign", 0.0)], 0.6),  # nothing matched
    (["session"], [("session session", 1.0)], 0.6),  # the hits hold only the question's words
])
def test_nothing_to_add(query: list[str], feedback: list[tuple[str, float]], weight: float) -> None:
    assert terms(query, feedback, weight) == {}


def test_equal_relevance_is_ordered_by_term() -> None:
    frequency = {"b": 7, "a": 7, "c": 7}
    added = expansion_terms(["q"], [("c b a", 1.0)], frequency.__getitem__, 100, weight=1.0, terms=2)
    assert list(added) == ["a", "b"]
    assert all(math.isfinite(value) for value in added.values())
