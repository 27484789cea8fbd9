"""An issue report's BM25 query: which line is its title, and how much more the title weighs."""

from __future__ import annotations

import pytest

from knowcode.retrieval.report_query import TITLE_MAX_WORDS, TITLE_REPEATS, report_title, weighted_report
from knowcode.retrieval.sparse import SparseIndex

BODY = ("Description: we upgraded last week and now the nightly job stops. Steps to reproduce: run the "
        "management command against the dev database with the production settings, then look at the log "
        "output of the worker; it shows the connection pool exhausted after a few minutes of retries")
TITLE = "Lag() with DecimalField crashes on SQLite"


@pytest.mark.parametrize(("query", "title"), [
    (f"{TITLE}\n{BODY}", TITLE),
    (f"\n\n  {TITLE}  \n\n{BODY}\n", TITLE),  # blank lines and indentation around it
    (f"{TITLE} {BODY}", None),  # one line: no title to tell apart
    (f"{BODY}\n{TITLE}", None),  # the first line is the body's: longer than a title
    (f"{TITLE}\nwhy does it crash?", TITLE),  # a short report has its title too
    (TITLE, None),  # a one-line question
])
def test_the_title_is_a_report_s_short_first_line(query: str, title: str | None) -> None:
    assert len(BODY.split()) > TITLE_MAX_WORDS
    assert report_title(query) == title


def test_a_report_s_title_is_repeated_in_front_and_anything_else_is_kept() -> None:
    report = f"{TITLE}\n{BODY}"
    assert weighted_report(report) == "\n".join([TITLE] * TITLE_REPEATS + [report])
    assert weighted_report("why does Lag() crash on SQLite?") == "why does Lag() crash on SQLite?"
    assert weighted_report(report, 0) == report


def test_bm25_ranks_the_title_s_code_over_the_body_s() -> None:
    # the body names the pool and the worker more often than the title names the window function
    index = SparseIndex.build(["window", "pool"] + [f"noise{i}" for i in range(20)],
                              ["lag decimalfield window sqlite cast", "connection pool worker retries log",
                               *(f"unrelated{i} words" for i in range(20))])
    report = f"{TITLE}\n{BODY} connection pool worker retries log"
    assert index.search(report, 1)[0][0] == "pool"
    assert index.search(weighted_report(report), 1)[0][0] == "window"
