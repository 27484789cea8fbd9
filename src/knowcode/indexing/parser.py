"""Tree-sitter parsing: one file's text into entities, unresolved references and split points.

The per-language knowledge lives in the query of each :class:`LanguageSpec`; this module only
applies the capture conventions documented in :mod:`knowcode.indexing.languages.base`.
"""

from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

from knowcode.indexing.entity_ids import module_name, stable_id
from knowcode.indexing.languages.base import LanguageSpec
from knowcode.models import Entity, EntityKind, RelationKind, Relationship
from knowcode.storage.store import RelationshipRow, relationship_of_row

MAX_SIGNATURE_CHARS = 300  # long enough for a multi-line parameter list, short enough for a summary
MAX_DOCSTRING_CHARS = 2000  # a docstring beyond this is a tutorial; the source still has it all
MAX_RECEIVER_CHARS = 80  # a longer dotted receiver is a chain, not a name worth resolving through
_QUOTE_CHARS = "\"'`<>"
_STRING_DELIMITERS = re.compile(r"""^[rRbBuUfF]*("{3}|'{3}|"|')|("{3}|'{3}|"|')$""")
# Extensions dropped from path-like imports (`"./util.js"`, `"lib/io.h"`) so they name a module.
_SOURCE_EXTENSIONS = frozenset({"js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "h", "hh", "hpp",
                                "py", "rb", "php", "lua", "zig", "sh"})
_BODY_SUFFIXES = ("body", "block")
_DECORATOR_TYPES = frozenset({"decorator", "annotation", "attribute_item"})
# Kinds whose documenting comments stay out of their chunk: a type's or a constant's comment describes
# the API it shapes, in the words of every file that uses it; in redux's types/*.ts those comments,
# chunked with their types, outranked the functions that do the work (bench/annotations redux NDCG@10
# 0.895 -> 0.853; functions' and classes' comments alone: 0.895, span-level express 0.693 -> 0.727).
_SHAPE_KINDS = frozenset({EntityKind.TYPE, EntityKind.INTERFACE, EntityKind.VARIABLE})
# Blank lines a ``/**`` doc block may stand above the definition it documents (express and many Node
# projects leave one; more than one is a section comment).
DOC_BLOCK_GAP_LINES = 1
# JSDoc / TSDoc tags of a block that documents its file, not the definition below it.
_FILE_DOC_TAG = re.compile(rb"@(?:file|fileoverview|overview|module|license|packageDocumentation)\b")
_DOTTED_NAME = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")
_CONTAINS, _IMPORTS, _CALLS, _INHERITS = (kind.value for kind in (
    RelationKind.CONTAINS, RelationKind.IMPORTS, RelationKind.CALLS, RelationKind.INHERITS))
# The capture names of the conventions (languages/base.py) looked up once per capture of a match,
# instead of a prefix test and a split each: a cold run of abseil reads ~120k matches.
_DEFINITION_PREFIX = "definition."
_DEFINITION_KINDS = {f"{_DEFINITION_PREFIX}{kind.value}": kind for kind in EntityKind}
_REFERENCE_KINDS = {f"reference.{kind}": kind for kind in ("import", "call", "inherits")}


# The slowest a parse may go before it is abandoned: tree-sitter parses ~5-14 MB/s (abseil's C++, pydantic's
# Python), but its error recovery is superlinear on some inputs (a Lua file of 300 KB of punctuation runs
# took 106 s). A hundredth of the usual speed, with a floor for small files: the scanner's 1 MiB cap gets
# ~10 s, that Lua file 3 s.
PARSE_BYTES_PER_SECOND_MIN = 100_000
PARSE_SECONDS_MIN = 1.0
_READ_BYTES = 1 << 16  # what tree-sitter is handed per read


class ParseTimeout(Exception):
    """A parse slower than PARSE_BYTES_PER_SECOND_MIN was abandoned."""


@dataclass(frozen=True, slots=True)
class ParsedSource:
    """What one file yields before cross-file resolution.

    `split_lines` maps an entity id to the first lines of its top-level statements, the places where
    the chunker may cut a body too large for one chunk; `lead_lines` maps an entity id to the first
    line of the comments that document it, when they stand above it (they belong in its chunk). The
    references are kept as the store's rows, which is what an indexing run writes: building a frozen
    Relationship for each and then its row cost ~2 us a reference (abseil has 118k).
    """

    entities: tuple[Entity, ...]
    reference_rows: tuple[RelationshipRow, ...]
    split_lines: dict[str, tuple[int, ...]]
    lead_lines: dict[str, int]

    @property
    def references(self) -> tuple[Relationship, ...]:
        """The references as relationships, in the order of their rows."""
        return tuple(map(relationship_of_row, self.reference_rows))


@cache
def _compiled(spec: LanguageSpec) -> tuple[Parser, Query]:
    language = Language(spec.grammar())
    return Parser(language), Query(language, spec.query)


@dataclass(slots=True)
class _Definition:
    node: Node  # the outermost wrapper: gives the span and the leading comment
    core: Node  # the definition itself: gives the signature, docstring and body
    kind: EntityKind
    name: str
    receiver: str
    start: int  # the wrapper's byte span, read once: nesting and enclosing compare them often
    end: int
    last_line: int  # 1-based, inclusive: the span's last line
    parent: _Definition | None = None
    entity: Entity | None = None
    clause_lines: list[int] = field(default_factory=list)  # later clauses' first lines (LanguageSpec.clauses)


def _text(node: Node) -> str:
    text = node.text  # a new bytes copy on every read
    return text.decode("utf-8", "replace") if text is not None else ""


def _end_line(node: Node) -> int:
    """1-based inclusive last line; a node ending at column 0 ends on the line before."""
    row, column = node.end_point
    return max(node.start_point[0] + 1, row + 1 if column else row)


def _outermost(node: Node, spec: LanguageSpec) -> Node:
    # Node.parent walks down from the root each time it is read (tree-sitter keeps no parent links)
    parent = node.parent
    while parent is not None and parent.type in spec.wrapper_types:
        node, parent = parent, parent.parent
    return node


def _body(core: Node, spec: LanguageSpec) -> Node | None:
    """The definition's body: its body field, else a child named like a body (Kotlin has no field)."""
    body = core.child_by_field_name(spec.body_field)
    if body is None:
        body = next((c for c in core.named_children if c.type.endswith(_BODY_SUFFIXES)), None)
    return body


def _signature(core: Node, body: Node | None, spec: LanguageSpec, source: bytes) -> str:
    """The definition's header, up to its body (else its first line), whitespace collapsed.

    The header is sliced from the source: the node's own text would copy its whole span (a
    namespace's is most of its file) to keep its first line.
    """
    start, stop = core.start_byte, core.end_byte
    if body is not None:
        end = body.start_byte
    else:
        newline = source.find(b"\n", start, stop)
        end = stop if newline < 0 else newline
    for child in core.children:  # a comment between the header and the body is not signature
        if child.type in spec.comment_types and child.start_byte < end:
            end = child.start_byte
            break
    head = source[start:max(start, min(end, stop))]
    text = " ".join(head.decode("utf-8", "replace").split()).rstrip("{:=; ")
    return text[:MAX_SIGNATURE_CHARS]


def _clean_comment(text: str) -> str:
    lines = []
    for line in text.splitlines():
        stripped = line.strip().lstrip("/*#-;!%").rstrip("*/").strip()
        if stripped:
            lines.append(stripped)
    return "\n".join(lines)


def _top(definition: _Definition, spec: LanguageSpec) -> Node:
    """The definition's first node: the first of the nodes right above it that belong to it
    (LanguageSpec.prefix_types, with no blank line between; one that names something, a type
    signature, names it), else its own node."""
    top = definition.node
    sibling = top.prev_sibling if spec.prefix_types else None
    while (sibling is not None and sibling.type in spec.prefix_types
           and sibling.end_point[0] + 1 >= top.start_point[0]):
        named = sibling.child_by_field_name("name")
        if named is not None and _text(named) != definition.name:
            break
        top, sibling = sibling, sibling.prev_sibling
    return top


def _leading_comments(top: Node, spec: LanguageSpec) -> list[Node]:
    """The comments that document the definition whose first node is `top` (see _top), first first:
    the run of comments directly above it (decorators between them and it skipped), with no blank
    line between; a doc block (``/**``) that is the last of them may stand one blank line above, as
    in express's and many Node projects' style, unless it documents the file."""
    node = top
    expected_row = node.start_point[0]
    sibling = node.prev_sibling  # read once: tree-sitter finds a node's siblings through its parent
    while sibling is None and (parent := node.parent) is not None:
        node = parent  # first in a body (Ruby): the comment is the body's previous sibling
        sibling = node.prev_sibling
    while sibling is not None and sibling.type in _DECORATOR_TYPES:
        sibling = sibling.prev_sibling  # JS/TS member decorators sit between comment and method
    comments: list[Node] = []
    while sibling is not None and sibling.type in spec.comment_types:
        # blank lines between the comment and what follows it (a line comment may end on the next row)
        gap = max(0, expected_row - sibling.end_point[0] - 1)
        if gap > (0 if comments else DOC_BLOCK_GAP_LINES) or (gap and not _is_doc_block(sibling)):
            break
        comments.append(sibling)
        expected_row = sibling.start_point[0]
        sibling = sibling.prev_sibling
    return comments[::-1]


def _is_doc_block(comment: Node) -> bool:
    """A ``/** ... */`` documentation block (JSDoc, Javadoc, KDoc, PHPDoc) about a definition, not
    about its file."""
    text = comment.text or b""
    return text.startswith(b"/**") and not _FILE_DOC_TAG.search(text)


def _lead_line(comments: list[Node]) -> int | None:
    """The first line of a definition's documenting comments that holds nothing else: a comment
    trailing code on its line (``x = 1  // note``) leaves that line to the code."""
    for comment in comments:
        before = comment.prev_sibling
        if before is None or before.end_point[0] < comment.start_point[0] or before.end_point[1] == 0:
            return comment.start_point[0] + 1
    return None


def _body_docstring(body: Node | None) -> str:
    """The docstring of a Python-style body: its first statement (comments are none) when that is a
    string."""
    first = next((c for c in body.named_children if c.type != "comment"), None) if body is not None else None
    if first is not None and first.type == "expression_statement" and first.named_children:
        literal = first.named_children[0]
        if literal.type == "string":
            return _STRING_DELIMITERS.sub("", _text(literal)).strip()[:MAX_DOCSTRING_CHARS]
    return ""


def _docstring(definition: _Definition, spec: LanguageSpec, comments: list[Node]) -> str:
    if spec.docstring_in_body:
        docstring = _body_docstring(definition.core.child_by_field_name(spec.body_field))
        if docstring:
            return docstring
    return _clean_comment("\n".join(map(_text, comments)))[:MAX_DOCSTRING_CHARS]


def _statement_starts(body: Node) -> tuple[int, ...]:
    children = body.named_children  # a new list of new nodes on every read
    while len(children) == 1 and (inner := children[0].named_children):
        children = inner  # Go's block holds one statement_list, Swift's one statements
    return tuple(sorted({child.start_point[0] + 1 for child in children}))


def _closing_line(lines: list[bytes], core: Node) -> int | None:
    """The 1-based line of the `}` that closes a definition written on `core`'s first line: the first
    later line that starts with `}` at that line's indentation. None when the definition's contents are
    not indented deeper (a C++ `namespace` block usually is not: its first function's `}` is no end)."""
    row = core.start_point[0]
    first = lines[row]
    indent = first[:len(first) - len(first.lstrip())]
    body = next((line for line in lines[row + 1:] if line.strip()), b"")
    if len(body) - len(body.lstrip()) <= len(indent):
        return None
    for number in range(row + 1, len(lines)):
        line = lines[number]
        if line.startswith(indent) and line[len(indent):].startswith(b"}"):
            return number + 1
    return None


def _erroneous_end(node: Node, core: Node, lines: list[bytes]) -> tuple[int, int] | None:
    """(end byte, last line) of a definition whose node holds a parse error, when it runs past its
    closing brace: an unknown macro before a C++ constructor made fmt's 18-line `struct size_padding`
    swallow the next 1,800 lines and every definition in them. It then ends at the `}` at its first
    line's indentation; None when there is no such earlier line."""
    closing = _closing_line(lines, core)
    if closing is None or closing >= _end_line(node):
        return None
    return sum(len(line) + 1 for line in lines[:closing]) - 1, closing


def _collect_definitions(matches: list[tuple[int, dict[str, list[Node]]]],
                         spec: LanguageSpec, source: bytes) -> list[_Definition]:
    seen: set[tuple[int, int]] = set()
    definitions: list[_Definition] = []
    kinds = _DEFINITION_KINDS
    lines: list[bytes] = []
    for _, captures in matches:
        named = captures.get("name")
        for capture, nodes in captures.items():
            kind = kinds.get(capture)
            if kind is None:
                if capture.startswith(_DEFINITION_PREFIX):  # a kind no EntityKind names: the query is wrong
                    EntityKind(capture[len(_DEFINITION_PREFIX):])  # raises ValueError, naming it
                continue
            core = nodes[0]
            # A pattern may leave the name to the node's `name` field: tree-sitter analyses every
            # pattern with a child against the whole parse table when the query is compiled, and a
            # child under a large rule (Swift's function_declaration) cost ~0.2 s a process.
            name = named[0] if named else core.child_by_field_name("name")
            span = (core.start_byte, core.end_byte)
            if name is None or span in seen:
                continue
            seen.add(span)
            receiver = captures.get("receiver")
            node = _outermost(core, spec)
            end, last_line = node.end_byte, _end_line(node)
            if node.has_error:  # rare: the source's lines are split only then
                lines = lines or source.split(b"\n")
                end, last_line = _erroneous_end(node, core, lines) or (end, last_line)
            definitions.append(_Definition(
                node=node, core=core, kind=kind, name=_text(name),
                receiver=_text(receiver[0]) if receiver else "", start=node.start_byte, end=end,
                last_line=last_line))
    definitions.sort(key=lambda d: (d.start, -d.end))
    stack: list[_Definition] = []
    for definition in definitions:
        while stack and stack[-1].end < definition.end:
            stack.pop()
        definition.parent = stack[-1] if stack else None
        stack.append(definition)
    return _merged_clauses(definitions) if spec.clauses else definitions


def _merged_clauses(definitions: list[_Definition]) -> list[_Definition]:
    """The definitions (in source order, parents set) with each run of consecutive clauses of one
    function in one scope as its first clause, spanning to the end of the last; what a later clause
    held is re-parented to the first."""
    kept: list[_Definition] = []
    last_in_scope: dict[int, _Definition] = {}  # id(scope) -> the last definition kept directly in it
    merged_into: dict[int, _Definition] = {}  # id(a later clause) -> its first clause
    for definition in definitions:
        parent = definition.parent
        if parent is not None and id(parent) in merged_into:
            parent = definition.parent = merged_into[id(parent)]
        previous = last_in_scope.get(id(parent))
        if (previous is not None and previous.name == definition.name and previous.kind is definition.kind
                and previous.receiver == definition.receiver):
            previous.end, previous.last_line = definition.end, definition.last_line
            previous.clause_lines.append(definition.core.start_point[0] + 1)
            merged_into[id(definition)] = previous
            continue
        last_in_scope[id(parent)] = definition
        kept.append(definition)
    return kept


def _own_name(name: str) -> str:
    """A definition's own name: the last part of a dotted one (Elixir's `defmodule Ecto.Changeset`, a
    C# or TypeScript `namespace A.B`), which is what a symbol query and a call through it name; the
    qualified name keeps the whole."""
    return name.rpartition(".")[2] if "." in name and _DOTTED_NAME.match(name) else name


def _through_receiver(definition: _Definition) -> bool:
    node: _Definition | None = definition
    while node is not None:
        if node.receiver:
            return True
        node = node.parent
    return False


def _parse(parser: Parser, source: bytes) -> Tree:
    """The source's tree, or ParseTimeout when parsing it takes longer than its size allows.

    tree-sitter reports progress only while it reads through a callback, so the source is handed over in
    slices; a tree read that way reads every node's text through the callback again (parse_source took
    twice as long on pydantic), so it is parsed once more from the bytes, reusing every node of the
    first tree (both parses together cost what one from the bytes does)."""
    budget = max(PARSE_SECONDS_MIN, len(source) / PARSE_BYTES_PER_SECOND_MIN)
    deadline = time.monotonic() + budget
    try:
        tree = parser.parse(lambda offset, _: source[offset:offset + _READ_BYTES],
                            progress_callback=lambda *_: time.monotonic() > deadline)
    except ValueError as err:  # "Parsing failed": the callback cancelled it
        raise ParseTimeout(f"parsing took over {budget:.1f} s") from err
    except SystemError as err:
        # Ctrl-C or SIGTERM (raised like it by the CLI) arriving while tree-sitter calls back comes out
        # wrapped in a SystemError: re-raised as itself, so the run stops rather than report the file
        # as unparsable and go on.
        if isinstance(err.__cause__, BaseException) and not isinstance(err.__cause__, Exception):
            raise err.__cause__ from None
        raise
    return parser.parse(source, old_tree=tree)


def parse_source(path: str, language: str, source: bytes, spec: LanguageSpec,
                 dotted_name: str | None = None) -> ParsedSource:
    """Parse one file into its module entity, nested definitions and unresolved references.

    :param path: root-relative path with `/` separators.
    :param language: the language name recorded on every entity.
    :param source: the file's bytes (valid UTF-8).
    :param spec: the language's parsing spec.
    :param dotted_name: the module's dotted name as the scanner chose it; default: from the path.
    :return: entities in source order (module first), references, and split lines per entity.
    """
    parser, query = _compiled(spec)
    tree = _parse(parser, source)
    matches = QueryCursor(query).matches(tree.root_node)
    name, dotted = module_name(path)
    dotted = dotted_name or dotted
    line_count = source.count(b"\n") + (0 if source.endswith(b"\n") else 1)
    root = tree.root_node
    module = Entity(id=stable_id(path, dotted, "0"), path=path, kind=EntityKind.MODULE, name=name,
                    qualified_name=dotted, parent_id=None, start_line=1, end_line=max(1, line_count),
                    signature="", docstring=_body_docstring(root) if spec.docstring_in_body else "",
                    language=language)
    entities = [module]
    references: list[RelationshipRow] = []
    split_lines: dict[str, tuple[int, ...]] = {module.id: _statement_starts(_body(root, spec) or root)}
    lead_lines: dict[str, int] = {}
    definitions = _collect_definitions(matches, spec, source)
    class_like = {d.name: d for d in definitions if d.kind.is_class_like}
    occurrences: dict[str, int] = {}
    # Receiver methods may precede their type in the file, so entities owned through a receiver
    # are built after every other one (the sort is stable, so source order holds within each group).
    for definition in sorted(definitions, key=_through_receiver):
        parent = definition.parent
        owner = class_like.get(definition.receiver) if definition.receiver else None
        if owner is not None and owner is not definition:
            parent = owner
        kind = definition.kind
        if kind is EntityKind.FUNCTION and (definition.receiver or (parent and parent.kind.is_class_like)):
            kind = EntityKind.METHOD
        scope = parent.entity.qualified_name if parent and parent.entity else dotted
        if definition.receiver and owner is None:
            # named where it is written: `inst._zod.parse = ...` inside zod's `$ZodObject = ...(inst =>
            # {...})` is `schemas.$ZodObject.inst._zod.parse`, the name that says which schema parses
            scope = f"{scope}.{definition.receiver}"
        qualified = f"{scope}.{definition.name}"
        occurrence = occurrences.get(qualified, 0)
        occurrences[qualified] = occurrence + 1
        parent_id = parent.entity.id if parent and parent.entity else module.id
        top = _top(definition, spec)
        comments = _leading_comments(top, spec)
        body = _body(definition.core, spec)
        definition.entity = Entity(
            id=stable_id(path, qualified, str(occurrence)), path=path, kind=kind,
            name=_own_name(definition.name), qualified_name=qualified, parent_id=parent_id,
            start_line=top.start_point[0] + 1, end_line=definition.last_line,
            signature=_signature(definition.core, body, spec, source),
            docstring=_docstring(definition, spec, comments), language=language)
        entities.append(definition.entity)
        lead = _lead_line(comments)
        if lead is not None and lead < definition.entity.start_line and kind not in _SHAPE_KINDS:
            lead_lines[definition.entity.id] = lead
        split_lines[definition.entity.id] = _statement_starts(body or definition.core)
        if definition.clause_lines:  # a function of many clauses is cut between them
            split_lines[definition.entity.id] = tuple(sorted({*split_lines[definition.entity.id],
                                                              *definition.clause_lines}))
        references.append((parent_id, _CONTAINS, qualified, definition.entity.id, path,
                           definition.entity.start_line, "", qualified.rpartition(".")[2]))
    entities.sort(key=lambda e: (e.start_line, -e.end_line))
    references.extend(_references(matches, definitions, module, spec, path, source))
    return ParsedSource(tuple(entities), tuple(references), split_lines, lead_lines)


def _enclosing(definitions: list[_Definition], starts: list[int], node: Node) -> _Definition | None:
    """The innermost definition whose span holds the node (definitions are properly nested)."""
    index = bisect.bisect_right(starts, node.start_byte) - 1
    candidate = definitions[index] if index >= 0 else None
    end = node.end_byte
    while candidate is not None and candidate.end < end:
        candidate = candidate.parent
    return candidate


def _normalise_module(text: str) -> str:
    """Write any module reference as a dotted path; leading dots keep Python's relative meaning.

    ``"./lib/util.js"`` -> ``.lib.util``; ``"../x"`` -> ``..x``; ``std::io`` -> ``std.io``.
    """
    stripped = text.strip().strip(_QUOTE_CHARS).lstrip("\\").replace("\\", "/")
    dots = ""
    if stripped.startswith(("./", "../")):
        dots = "."
        while stripped.startswith(("./", "../")):
            dots += "." if stripped.startswith("../") else ""
            stripped = stripped.split("/", 1)[1]
    stem, dot, extension = stripped.rpartition(".")
    if dot and extension.lower() in _SOURCE_EXTENSIONS:
        stripped = stem
    return dots + stripped.replace("::", ".").replace("/", ".")


def _from_file_module(target: str, owner: _Definition | None, spec: LanguageSpec) -> str:
    """A path written inside modules the file declares (Rust's `mod tests { use super::Foo; }`) as the
    file's own module writes it: each leading parent segment (LanguageSpec.parent_segment) that climbs
    one of those modules is taken off, and what it lands in is named from the file (`self.Foo`,
    `self.imp.make`); only the segments that climb out of the file are left for resolution."""
    if not spec.parent_segment or not target.startswith(spec.parent_segment + "."):
        return target
    declared: list[str] = []  # the modules declared in the file around the site, innermost first
    node = owner
    while node is not None:
        if node.kind is EntityKind.MODULE:
            declared.append(node.name)
        node = node.parent
    if not declared:
        return target
    parts = target.split(".")
    ups = 0
    while ups < len(parts) - 1 and parts[ups] == spec.parent_segment:
        ups += 1
    if ups > len(declared):
        return ".".join([spec.parent_segment] * (ups - len(declared)) + parts[ups:])
    return ".".join([spec.self_segment, *reversed(declared[ups:]), *parts[ups:]])


def _span_text(nodes: list[Node], source: bytes) -> str:
    """The source text from the first node to the last (a capture may hold a path's parts)."""
    return source[nodes[0].start_byte:nodes[-1].end_byte].decode("utf-8", "replace")


def _unresolved(source_id: str, kind: str, target: str, path: str, line: int,
                alias: str = "") -> RelationshipRow:
    """The row of a reference not resolved yet (as store.relationship_row writes a Relationship)."""
    return (source_id, kind, target, None, path, line, alias, target.rpartition(".")[2])


def _references(matches: list[tuple[int, dict[str, list[Node]]]], definitions: list[_Definition],
                module: Entity, spec: LanguageSpec, path: str, source: bytes) -> list[RelationshipRow]:
    starts = [d.start for d in definitions]
    found: list[RelationshipRow] = []
    kinds = _REFERENCE_KINDS
    for _, captures in matches:
        for capture, nodes in captures.items():
            kind = kinds.get(capture)
            if kind is None:  # not a reference, or a kind this parser does not read
                continue
            site = nodes[0]
            owner = _enclosing(definitions, starts, site)
            source_id = owner.entity.id if owner and owner.entity else module.id
            line = site.start_point[0] + 1
            if kind == "import" and "import.module" in captures:
                target = _normalise_module(_span_text(captures["import.module"], source))
                imported = captures.get("import.name")
                if imported:
                    separator = "" if target.endswith(".") else "."
                    target = f"{target}{separator}{_text(imported[0])}"
                alias = captures.get("import.alias")
                bound = _text(alias[0]) if alias else target.rsplit(".", 1)[-1]
                target = _from_file_module(target, owner, spec)
                found.append(_unresolved(module.id, _IMPORTS, target, path, line, bound))
            elif kind == "call" and "name" in captures:
                receiver = captures.get("receiver")
                target = _text(captures["name"][0])
                prefix = _normalise_module(_text(receiver[0])) if receiver else ""
                if len(prefix) <= MAX_RECEIVER_CHARS and _DOTTED_NAME.match(prefix):
                    target = _from_file_module(f"{prefix}.{target}", owner, spec)
                found.append(_unresolved(source_id, _CALLS, target, path, line))
            elif kind == "inherits":
                for base in captures.get("name", []):
                    base_name = _normalise_module(_text(base))
                    found.append(_unresolved(source_id, _INHERITS, base_name, path, line))
    return found
