"""Pseudo-relevance feedback for long questions: the terms of the sparse leg's first hits that the
question does not use, added to its BM25 query.

A question says "how is the session cookie signed"; the code says `SecureCookieSessionInterface`,
`get_signing_serializer`, `salt`. The few chunks BM25 ranks first for the question's own words are
usually about its subject, and the answer's other functions share their vocabulary rather than the
question's. So the first hits' terms are weighted by how much of each chunk they make up, by how well
that chunk matched and by their rarity, and the best few join the query at a fraction of its weight:
the relevance model of RM3 (Lavrenko & Croft, SIGIR 2001; Abdul-Jaleel et al., TREC 2004), with idf in
place of a stop list (identifiers such as `self` and `return` are everywhere in code).

The constants were measured on bench/questions (span-level NDCG@10, 0.601 without feedback) and the
file-level benchmark (0.869), the sets they were tuned on; bench/issues is the held-out check (README).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from knowcode.retrieval.sparse import bm25_idf

# First hits read: span-level NDCG@10 1: 0.622, 2: 0.622, 3: 0.628, 5: 0.620, 10: 0.609.
FEEDBACK_DOCUMENTS = 3
# Terms added: 5: 0.624, 10: 0.628, 15: 0.617, 20: 0.622.
FEEDBACK_TERMS = 10
# The added terms' weight, as a share of the question's (each added term weighs at most this times
# the question's token count over FEEDBACK_TERMS): 0.3: 0.617, 0.4: 0.620, 0.6: 0.628, 0.8: 0.623,
# 1.0: 0.617; the file-level benchmark 0.868-0.869 throughout (its queries are short: see the share).
DEFAULT_FEEDBACK_WEIGHT = 0.6
# A term in fewer live chunks than this adds nothing but the feedback chunk itself.
MIN_DOCUMENT_FREQUENCY = 2


def expansion_terms(query_tokens: Sequence[str], feedback: Sequence[tuple[str, float]],
                    document_frequency: Callable[[str], int], documents: int, *, weight: float,
                    terms: int = FEEDBACK_TERMS) -> dict[str, float]:
    """The terms to add to a query and the weight of each (a term's BM25 score counts that many times).

    A term's relevance is ``sum over feedback chunks of (score / best score) x tf / chunk length``,
    times its idf; the best `terms` get ``weight x len(query_tokens) / terms x relevance / best
    relevance``, so the expansion's weight grows with the question's, as a share of it.

    :param query_tokens: the query through the index's tokenizer.
    :param feedback: the first hits, best first: each chunk's tokens (space-joined, as stored) and
        its BM25 score.
    :param document_frequency: how many live chunks hold a term.
    :param documents: how many live chunks there are.
    :param weight: the expansion's share of the query's weight; 0 adds nothing.
    :param terms: how many terms to add at most.
    :return: term -> weight, empty when there is nothing to add.
    """
    if weight <= 0 or not feedback or not query_tokens or feedback[0][1] <= 0:
        return {}
    best = feedback[0][1]
    relevance: dict[str, float] = {}
    for tokens, score in feedback:
        words = tokens.split()
        share = score / best / max(1, len(words))
        for word in words:
            relevance[word] = relevance.get(word, 0.0) + share
    asked = set(query_tokens)
    weighted = []
    for word, value in relevance.items():
        if word in asked:
            continue
        frequency = document_frequency(word)
        if frequency >= MIN_DOCUMENT_FREQUENCY:
            weighted.append((value * bm25_idf(frequency, documents), word))
    weighted.sort(key=lambda pair: (-pair[0], pair[1]))
    chosen = weighted[:terms]
    if not chosen:
        return {}
    scale = weight * len(query_tokens) / len(chosen) / chosen[0][0]
    return {word: value * scale for value, word in chosen}
