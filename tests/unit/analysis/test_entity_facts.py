"""gather_facts reads only the names a bundle shows, with their totals: the same bundles as full lists.

The reference below is the earlier implementation (every caller, callee and member read, then named
and de-duplicated in Python); the store's counted queries must agree with it name for name.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import knowcode
from knowcode.analysis.context_synthesizer import TASK_TEMPLATES
from knowcode.analysis.entity_facts import EntityFacts, _member_line, _trimmed, gather_facts
from knowcode.analysis.packing import pack
from knowcode.analysis.sections import MAX_CALLEES, MAX_CALLERS, MAX_CHILDREN
from knowcode.analysis.token_counter import default_counter
from knowcode.models import Entity, HitSource, SearchHit
from knowcode.retrieval.completeness import hit_for
from knowcode.storage.store import _ADDED_INDEXES, DATABASE_NAME, NAMES_INDEX, Store
from tests.conftest import write_tree

CALLEES = 14  # distinct functions `busy` calls: more than MAX_CALLEES
METHODS = 20  # members of `Big`: more than MAX_CHILDREN

REPO = {
    "hub/__init__.py": "",
    "hub/core.py": (
        "def hub():\n    return 1\n\n\n"
        + "".join(f"def leaf{i}():\n    return {i}\n\n\n" for i in range(CALLEES))
        # leaf3 and leaf1 on one line (their order there is the call order), leaf0 again later
        + "def busy():\n    leaf3(); leaf1()\n"
        + "".join(f"    leaf{i}()\n" for i in range(CALLEES))
        + "    return leaf0()\n\n\n"
        + "class Big:\n"
        + "".join(f"    def m{i:02}(self):\n        return hub()\n\n" for i in range(METHODS))
    ),
    # callers in several files, one calling twice; b.py sorts before c.py whatever the line numbers
    "hub/c.py": "from .core import hub\n\n\n" + "".join(
        f"def c{i}():\n    hub()\n    return hub()\n\n\n" for i in range(6)),
    "hub/b.py": "from .core import hub\n\n\n" + "".join(
        f"def b{i}():\n    return hub()\n\n\n" for i in range(8)),
    # one qualified name, two definitions: listed once, counted once
    "hub/twin.py": ("from .core import hub\n\nif hub():\n    def twin():\n        return hub()\n"
                    "else:\n    def twin():\n        return hub() + 1\n"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    root = write_tree(tmp_path_factory.mktemp("facts") / "repo", REPO)
    engine = knowcode.open(root, store=root.parent / "store")
    engine.index()
    opened = engine.open_store()
    yield opened
    opened.close()
    engine.close()


def reference_facts(store: Store, hits: Sequence[SearchHit]) -> list[EntityFacts]:
    """The earlier gather_facts: complete lists, counts their lengths."""
    ids = [hit.entity_id for hit in hits]
    callers: dict[str, list[str]] = {}
    for callee, caller in store.callers(ids):
        callers.setdefault(callee, []).append(caller)
    callees: dict[str, list[str]] = {}
    for caller, callee in store.callees(ids):
        callees.setdefault(caller, []).append(callee)
    children: dict[str, list[Entity]] = {}
    for child in store.children(ids):
        if child.parent_id is not None:
            children.setdefault(child.parent_id, []).append(child)
    related = {i for group in (*callers.values(), *callees.values()) for i in group} | set(ids)
    entities = {e.id: e for e in store.entities_by_id(related)}

    def names(found: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(entities[i].qualified_name for i in found if i in entities))

    facts = []
    for hit in hits:
        owner = entities.get(hit.entity_id)
        start, end = (owner.start_line, owner.end_line) if owner else (hit.start_line, hit.end_line)
        source, source_start, source_end = _trimmed(hit, start, end)
        up, down = names(callers.get(hit.entity_id, [])), names(callees.get(hit.entity_id, []))
        members = tuple(_member_line(c) for c in children.get(hit.entity_id, []))
        facts.append(EntityFacts(hit, owner.language if owner else "", start, end, source, source_start,
                                 source_end, up, down, members, len(up), len(down), len(members)))
    return facts


def hits(store: Store) -> list[SearchHit]:
    """A hit on every entity of the repository, modules included."""
    entities = sorted(store.entities(), key=lambda e: (e.path, e.start_line, e.id))
    chunks = {c.entity_id: c for c in store.chunks_of_entities(entities)}
    return [hit_for(e, [chunks[e.id]] if e.id in chunks else [], 1.0, HitSource.HYBRID) for e in entities]


def by_name(facts: list[EntityFacts], name: str) -> EntityFacts:
    [found] = [f for f in facts if f.hit.qualified_name == name]
    return found


def test_the_lists_are_the_reference_cut_at_the_caps_and_the_counts_are_whole(store: Store) -> None:
    every = hits(store)
    expected = reference_facts(store, every)
    found = gather_facts(store, every, max_callers=MAX_CALLERS, max_callees=MAX_CALLEES,
                         max_children=MAX_CHILDREN)
    for mine, theirs in zip(found, expected, strict=True):
        assert mine.callers == theirs.callers[:MAX_CALLERS]
        assert mine.callees == theirs.callees[:MAX_CALLEES]
        assert mine.children == theirs.children[:MAX_CHILDREN]
        assert (mine.caller_count, mine.callee_count, mine.child_count) == \
            (theirs.caller_count, theirs.callee_count, theirs.child_count)
        assert (mine.language, mine.entity_start, mine.entity_end, mine.source) == \
            (theirs.language, theirs.entity_start, theirs.entity_end, theirs.source)
    # the fixture reaches past every cap, and the order rules are the reference's
    hub = by_name(found, "hub.core.hub")
    assert hub.caller_count == METHODS + 8 + 6 + 2 > MAX_CALLERS  # twin once, and twin.py's module
    assert hub.callers[:2] == ("hub.b.b0", "hub.b.b1")  # by path, then line
    busy = by_name(found, "hub.core.busy")
    assert busy.callee_count == CALLEES
    assert busy.callees[:3] == ("hub.core.leaf3", "hub.core.leaf1", "hub.core.leaf0")
    assert by_name(found, "hub.core.Big").child_count == METHODS


def test_with_no_caps_the_lists_are_the_reference(store: Store) -> None:
    every = hits(store)
    unbounded = 10_000
    found = gather_facts(store, every, max_callers=unbounded, max_callees=unbounded, max_children=unbounded)
    assert found == reference_facts(store, every)


@pytest.mark.parametrize("max_tokens", [300, 2000, 20_000])
def test_bundles_are_byte_identical_to_the_reference(store: Store, max_tokens: int) -> None:
    every = hits(store)
    found = gather_facts(store, every, max_callers=MAX_CALLERS, max_callees=MAX_CALLEES,
                         max_children=MAX_CHILDREN)
    expected = reference_facts(store, every)
    counter = default_counter()
    for template in TASK_TEMPLATES.values():
        for start in range(0, len(every), 4):  # bundles of four entities, as a context request holds
            mine = pack(found[start:start + 4], template, include_source=True, max_tokens=max_tokens,
                        per_entity_budget=max_tokens, counter=counter)
            theirs = pack(expected[start:start + 4], template, include_source=True, max_tokens=max_tokens,
                          per_entity_budget=max_tokens, counter=counter)
            assert mine == theirs


@pytest.mark.parametrize("limit", [0, 1, 2, MAX_CALLERS, 10_000])
def test_caller_names_at_any_limit_are_the_reference_cut_there(store: Store, limit: int) -> None:
    every = hits(store)
    expected = reference_facts(store, every)
    found = store.caller_names([hit.entity_id for hit in every], limit)
    want = {f.hit.entity_id: (list(f.callers[:limit]), f.caller_count) for f in expected if f.caller_count}
    assert found == want


def test_a_store_without_the_added_indexes_reads_the_same_and_a_writer_adds_them(
        store: Store, tmp_path: Path) -> None:
    every = [hit.entity_id for hit in hits(store)]
    expected = store.caller_names(every, MAX_CALLERS)
    copy = tmp_path / "store"
    copy.mkdir()
    store.connection.execute("VACUUM INTO ?", (str(copy / DATABASE_NAME),))
    older = Store.open(copy, create=False)
    for name in _ADDED_INDEXES:
        older.connection.execute(f"DROP INDEX {name}")
    assert older.caller_names(every, MAX_CALLERS) == expected  # a reader never writes: no index made
    older.close()
    reader = Store.open(copy, create=False)
    assert not _index_names(reader) & set(_ADDED_INDEXES)
    reader.close()
    Store.open(copy).close()  # what an indexing run opens
    upgraded = Store.open(copy, create=False)
    assert _index_names(upgraded) >= set(_ADDED_INDEXES)
    assert upgraded.caller_names(every, MAX_CALLERS) == expected
    # the first callers come straight from the covering indexes, in order: no sort, no table rows
    plan = str(upgraded.connection.execute(
        "EXPLAIN QUERY PLAN SELECT e.qualified_name FROM relationships AS r JOIN entities AS e "
        f"INDEXED BY {NAMES_INDEX} ON e.id = r.source_id WHERE r.target_id = ? AND r.kind = 'calls' "
        "ORDER BY r.path, r.line, r.source_id", ("x",)).fetchall())
    assert "COVERING INDEX relationships_callers" in plan and f"COVERING INDEX {NAMES_INDEX}" in plan
    assert "TEMP B-TREE" not in plan
    upgraded.close()


def _index_names(store: Store) -> set[str]:
    return {row[0] for row in store.connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


def test_caller_totals_counted_before_are_used_and_new_ones_recorded(store: Store) -> None:
    every = [hit.entity_id for hit in hits(store)]
    counted: dict[str, int] = {}
    fresh = store.caller_names(every, MAX_CALLERS, counted)
    assert fresh == store.caller_names(every, MAX_CALLERS)
    assert counted and counted == {i: total for i, (_, total) in fresh.items() if total >= MAX_CALLERS}
    assert store.caller_names(every, MAX_CALLERS, counted) == fresh
    [hub] = counted
    counted[hub] = 999  # what it reports is what it was given
    assert store.caller_names(every, MAX_CALLERS, counted)[hub] == (fresh[hub][0], 999)
