"""serve_load.py's wrk requests: the same requests, in the same order, as a Python client sends."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from serve_load import CONTEXT_MAX_TOKENS, QUERIES, _wrk_arguments


def test_wrk_requests_alternate_search_and_context_over_every_query() -> None:
    arguments = _wrk_arguments()
    pairs = list(zip(arguments[::2], arguments[1::2], strict=True))
    assert [method for method, _ in pairs] == ["GET", "POST"] * len(QUERIES)
    for (_, path), (_, body), query in zip(pairs[::2], pairs[1::2], QUERIES, strict=True):
        url = urlsplit(path)
        assert url.path == "/api/v1/search"
        assert parse_qs(url.query) == {"q": [query], "limit": ["10"]}
        assert json.loads(body) == {"query": query, "max_tokens": CONTEXT_MAX_TOKENS}
