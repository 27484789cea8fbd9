"""Call graph queries (trace_calls, impact) on a small real repository: cycles, depth, bounds, direction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import knowcode
from knowcode.analysis import call_graph
from knowcode.engine import KnowCode
from knowcode.models import CallTrace, GraphNode, TraceDirection
from tests.conftest import write_tree

FAN_IN = 250  # callers of `hub`: more than MAX_NODES

GRAPH_REPO = {
    "graph/__init__.py": "",
    # a -> b -> c -> a, and two functions that call each other
    "graph/cycle.py": (
        "def a():\n    return b()\n\n\n"
        "def b():\n    return c()\n\n\n"
        "def c():\n    return a()\n\n\n"
        "def ping():\n    return pong()\n\n\n"
        "def pong():\n    return ping()\n"
    ),
    # d1 -> d2 -> ... -> d8
    "graph/chain.py": "".join(f"def d{i}():\n    return d{i + 1}()\n\n\n" for i in range(1, 8))
    + "def d8():\n    return 0\n",
    "graph/fan.py": "def hub():\n    return 1\n\n\n"
    + "".join(f"def f{i}():\n    return hub()\n\n\n" for i in range(FAN_IN)),
    "graph/shapes.py": (
        "class Shape:\n    def area(self):\n        return 0\n\n\n"
        "class Square(Shape):\n    def area(self):\n        return measure(self)\n\n\n"
        "def measure(shape):\n    return 4\n"
    ),
    "graph/user.py": (
        "from .shapes import Square\n\n\n"
        "def make():\n    return Square()\n\n\n"
        "def report():\n    return make()\n"
    ),
    "other/cycle.py": "def a():\n    return 1\n",  # a second `a`: the bare name is ambiguous
}


@pytest.fixture(scope="module")
def kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    root = write_tree(tmp_path_factory.mktemp("graph") / "repo", GRAPH_REPO)
    engine = knowcode.open(root, store=root.parent / "store")
    engine.index()
    yield engine
    engine.close()


def names(nodes: tuple[GraphNode, ...]) -> dict[str, tuple[int, str]]:
    """qualified name -> (depth, via)."""
    return {n.qualified_name: (n.depth, n.via) for n in nodes}


def edge_names(trace: CallTrace) -> set[tuple[str, str]]:
    by_id = {n.id: n.qualified_name for n in trace.nodes}
    return {(by_id[e.source_id], by_id[e.target_id]) for e in trace.edges}


# --- limits -----------------------------------------------------------------------------------------


def test_limits_are_pinned() -> None:
    assert call_graph.MAX_DEPTH == 5  # issue 6: depth <= 5
    assert call_graph.MAX_NODES == 200
    assert call_graph.MAX_EDGES == 1000


@pytest.mark.parametrize("depth", [0, -1, 6, 100])
def test_depth_outside_1_to_5_is_refused(kc: KnowCode, depth: int) -> None:
    with pytest.raises(ValueError, match="depth must be an integer from 1 to 5"):
        kc.trace_calls("graph.cycle.a", depth=depth)
    with pytest.raises(ValueError, match="depth must be"):
        kc.impact("graph.cycle.a", depth=depth)


def test_an_unknown_direction_lists_the_valid_ones(kc: KnowCode) -> None:
    with pytest.raises(ValueError, match="callers, callees, both"):
        kc.trace_calls("graph.cycle.a", direction="up")


# --- targets ----------------------------------------------------------------------------------------


def test_a_target_is_an_id_a_qualified_name_a_unique_name_or_a_path_line(kc: KnowCode) -> None:
    by_name = kc.trace_calls("measure", depth=1).root
    assert by_name.qualified_name == "graph.shapes.measure"
    assert kc.trace_calls(by_name.id, depth=1).root == by_name
    assert kc.trace_calls("graph.shapes.measure", depth=1).root == by_name
    assert kc.trace_calls("graph/shapes.py:12", depth=1).root == by_name  # inside measure's body
    assert kc.trace_calls("graph/shapes.py:7", depth=1).root.qualified_name == "graph.shapes.Square.area"
    assert kc.trace_calls("graph/shapes.py", depth=1).root.qualified_name == "graph.shapes"
    absolute = kc.root / "graph" / "shapes.py"
    assert kc.trace_calls(f"{absolute}:12", depth=1).root == by_name


def test_an_ambiguous_name_lists_the_candidates(kc: KnowCode) -> None:
    with pytest.raises(ValueError, match="ambiguous") as caught:
        kc.trace_calls("a")
    assert "graph.cycle.a" in str(caught.value) and "other.cycle.a" in str(caught.value)


@pytest.mark.parametrize("target, message", [
    ("no_such_function", "no entity named"),
    ("", "empty"),
    ("../outside.py:1", "leaves the repository"),
    ("/etc/passwd", "outside the repository"),
    ("graph/missing.py:3", "not an indexed file"),
])
def test_bad_targets_are_refused_with_a_message(kc: KnowCode, target: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        kc.trace_calls(target)


def test_a_symlink_out_of_the_root_is_refused(kc: KnowCode, tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"x.py": "def x():\n    return 1\n"})
    link = kc.root / "link_out"
    link.symlink_to(outside, target_is_directory=True)
    try:
        with pytest.raises(ValueError, match="outside the repository"):
            kc.impact("link_out/x.py:1")
    finally:
        link.unlink()


# --- trace_calls ------------------------------------------------------------------------------------


def test_a_cycle_visits_each_entity_once(kc: KnowCode) -> None:
    trace = kc.trace_calls("graph.cycle.a", direction="callees", depth=5)
    assert [n.qualified_name for n in trace.nodes] == ["graph.cycle.a", "graph.cycle.b", "graph.cycle.c"]
    assert names(trace.nodes)["graph.cycle.c"] == (2, "callee")
    assert edge_names(trace) == {("graph.cycle.a", "graph.cycle.b"), ("graph.cycle.b", "graph.cycle.c"),
                                     ("graph.cycle.c", "graph.cycle.a")}  # the edge that closes the cycle
    assert not trace.truncated


def test_depth_limits_the_walk(kc: KnowCode) -> None:
    two = kc.trace_calls("graph.chain.d1", direction="callees", depth=2)
    assert names(two.nodes) == {"graph.chain.d1": (0, ""), "graph.chain.d2": (1, "callee"),
                                "graph.chain.d3": (2, "callee")}
    five = kc.trace_calls("graph.chain.d1", direction="callees", depth=5)
    assert [n.qualified_name for n in five.nodes][-1] == "graph.chain.d6"
    assert len(five.nodes) == 6 and len(five.edges) == 5


@pytest.mark.parametrize("direction, expected", [
    ("callers", {"graph.chain.d3": (1, "caller"), "graph.chain.d2": (2, "caller")}),
    ("callees", {"graph.chain.d5": (1, "callee"), "graph.chain.d6": (2, "callee")}),
    ("both", {"graph.chain.d3": (1, "caller"), "graph.chain.d2": (2, "caller"),
              "graph.chain.d5": (1, "callee"), "graph.chain.d6": (2, "callee")}),
])
def test_direction_picks_the_walk(kc: KnowCode, direction: str, expected: dict[str, tuple[int, str]]) -> None:
    trace = kc.trace_calls("graph.chain.d4", direction=direction, depth=2)
    assert trace.direction is TraceDirection(direction)
    assert trace.nodes[0] == trace.root and trace.root.depth == 0
    assert names(trace.nodes[1:]) == expected


def test_mutual_recursion_is_reached_both_ways(kc: KnowCode) -> None:
    trace = kc.trace_calls("graph.cycle.ping", direction="both", depth=3)
    assert names(trace.nodes[1:]) == {"graph.cycle.pong": (1, "both")}
    assert edge_names(trace) == {("graph.cycle.ping", "graph.cycle.pong"),
                                     ("graph.cycle.pong", "graph.cycle.ping")}


def test_an_entity_with_no_calls_has_only_its_root(kc: KnowCode) -> None:
    trace = kc.trace_calls("graph.chain.d8", direction="callees", depth=3)
    assert trace.nodes == (trace.root,) and trace.edges == ()


def test_results_are_bounded_and_say_so(kc: KnowCode) -> None:
    trace = kc.trace_calls("graph.fan.hub", direction="callers", depth=1)
    assert len(trace.nodes) == call_graph.MAX_NODES  # the root and MAX_NODES - 1 of the 250 callers
    assert trace.truncated
    assert {e.target_id for e in trace.edges} == {trace.root.id}
    node_ids = {n.id for n in trace.nodes}
    assert all(e.source_id in node_ids for e in trace.edges)  # no edge to a node that was cut


def test_the_edge_bound_truncates_too(kc: KnowCode, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(call_graph, "MAX_EDGES", 3)
    trace = kc.trace_calls("graph.chain.d1", direction="callees", depth=5)
    assert len(trace.edges) == 3 and trace.truncated


# --- impact -----------------------------------------------------------------------------------------


def test_impact_follows_inherits_calls_and_imports(kc: KnowCode) -> None:
    report = kc.impact("graph.shapes.Shape", depth=3)
    assert names(report.direct) == {"graph.shapes.Square": (1, "inherits")}
    transitive = names(report.transitive)
    assert transitive["graph.user.make"] == (2, "calls")  # make() constructs the subclass
    assert transitive["graph.user"] == (2, "imports")  # the module imports the subclass
    assert transitive["graph.user.report"] == (3, "calls")
    assert report.affected_files == ("graph/shapes.py", "graph/user.py")
    assert not report.truncated


def test_impact_depth_1_is_the_direct_dependents(kc: KnowCode) -> None:
    report = kc.impact("graph.shapes.Square", depth=1)
    assert names(report.direct) == {"graph.user": (1, "imports"), "graph.user.make": (1, "calls")}
    assert report.transitive == ()


def test_impact_of_a_module_counts_the_dependents_of_its_members(kc: KnowCode) -> None:
    report = kc.impact("graph.shapes", depth=1)
    direct = names(report.direct)
    assert direct == {"graph.user": (1, "imports"), "graph.user.make": (1, "calls")}
    assert "graph.shapes.Square" not in direct  # a relationship inside the target is not a dependent


def test_impact_is_cycle_safe(kc: KnowCode) -> None:
    report = kc.impact("graph.cycle.a", depth=5)
    assert names(report.direct) == {"graph.cycle.c": (1, "calls")}
    assert names(report.transitive) == {"graph.cycle.b": (2, "calls")}  # and no way back to a


def test_impact_is_bounded(kc: KnowCode) -> None:
    report = kc.impact("graph.fan.hub", depth=2)
    assert len(report.direct) == call_graph.MAX_NODES - 1 and report.truncated
