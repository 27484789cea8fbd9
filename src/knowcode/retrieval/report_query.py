"""An issue report's BM25 query: its title counts more than its body.

A report (a query of several lines) opens with a title that names the problem in one line ("Lag()
with DecimalField crashes on SQLite."), then pastes what its author had at hand: template headings,
settings, shell sessions, the tracebacks of the calling stack. Summed over hundreds of words, BM25
ranks the code of the pasted parts, and the title's few words decide little. Bug-localization work
weighs a report's summary apart from its description for that reason (BugLocator, Zhou et al., ICSE
2012; BLUiR, Saha et al., ASE 2013).

BM25 sums a term's score once per occurrence in the query, so the title repeated in front of the
report weighs more without any change to the scoring: every sparse leg (the embedded index, a search
backend) ranks the weighted text as it ranks any query. The dense leg keeps the report as written: a
repeated title moved none of bench/issues' figures through it.
"""

from __future__ import annotations

# A title is one short line: the first lines of bench/issues' 100 reports hold 2-21 words; a longer
# first line is the body's start (a report pasted without its title).
TITLE_MAX_WORDS = 25
# Further copies of the title in the BM25 query (its words count 1 + this many times). Measured on the
# even half of bench/issues (function Recall@10 / NDCG@10; none: 0.449 / 0.390): 1: 0.509 / 0.410,
# 2: 0.529 / 0.441, 4: 0.529 / 0.443, 8: 0.519 / 0.437; the odd half, held out: none 0.511 / 0.399,
# 4: 0.573 / 0.437. The questions and the file-level benchmark's queries are one line each: unchanged.
TITLE_REPEATS = 4


def report_title(query: str) -> str | None:
    """The title of an issue report: the first line of a query of several lines, when it holds at most
    TITLE_MAX_WORDS words; None for a one-line query or a report without a title line.

    :param query: the query as the user wrote it.
    """
    lines = [line.strip() for line in query.strip().splitlines() if line.strip()]
    if len(lines) < 2 or len(lines[0].split()) > TITLE_MAX_WORDS:
        return None
    return lines[0]


def weighted_report(query: str, repeats: int = TITLE_REPEATS) -> str:
    """The query for a sparse leg: a report with its title repeated `repeats` times in front, anything
    else as it is.

    :param query: the query as the user wrote it.
    :param repeats: further copies of the title (0: the query as it is).
    """
    title = report_title(query) if repeats > 0 else None
    return query if title is None else "\n".join([title] * repeats + [query])
