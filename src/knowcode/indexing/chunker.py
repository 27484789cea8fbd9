"""Cut a parsed file into retrieval chunks that follow its entities.

An entity that fits in one chunk is one chunk. A larger one is walked in line order: its own lines
(header, docstring, statements between children) and its small children are packed greedily into
chunks; a larger child gets a chunk of its own (or is chunked recursively when it does not fit),
and a run of own lines too large for one chunk is cut at statement starts. Every line of the file
lands in exactly one chunk, blank edges trimmed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from knowcode.indexing.entity_ids import stable_id
from knowcode.indexing.tokenizer import token_text
from knowcode.models import Chunk, Entity

# DESIGN.md: the dense and sparse legs were measured on ~1,500-character chunks; issue #3 asks for
# hits of 60 lines or fewer on average, so a chunk also stops at 50 lines.
TARGET_CHUNK_CHARS = 1500
TARGET_CHUNK_LINES = 50
# Children smaller than this (one-line getters, constants) are packed with their neighbours; larger
# ones keep a chunk of their own, so a hit names the function it is about.
PACK_BELOW_CHARS = 300


@dataclass(frozen=True, slots=True)
class _Item:
    start: int
    end: int
    entity: Entity | None  # a child entity, or None for the parent's own lines


class _Chunker:
    def __init__(self, path: str, lines: Sequence[str], entities: Sequence[Entity],
                 split_lines: dict[str, tuple[int, ...]], lead_lines: dict[str, int]) -> None:
        self.path = path
        self.lines = lines
        self.split_lines = split_lines
        self.lead_lines = lead_lines
        self.children: dict[str, list[Entity]] = {}
        for entity in entities:
            if entity.parent_id is not None:
                self.children.setdefault(entity.parent_id, []).append(entity)
        self.chunks: list[Chunk] = []
        # offsets[n]: characters (newlines included) before line n + 1
        self.offsets = [0, *accumulate(len(line) + 1 for line in lines)]

    def size(self, start: int, end: int) -> int:
        return self.offsets[end] - self.offsets[start - 1]

    def has_text(self, start: int, end: int) -> bool:
        return any(line.strip() for line in self.lines[start - 1:end])

    def fits(self, start: int, end: int) -> bool:
        return end - start < TARGET_CHUNK_LINES and self.size(start, end) <= TARGET_CHUNK_CHARS

    def emit(self, start: int, end: int, entity: Entity) -> None:
        while start <= end and not self.lines[start - 1].strip():
            start += 1
        while end >= start and not self.lines[end - 1].strip():
            end -= 1
        if start > end:
            return
        text = "\n".join(self.lines[start - 1:end])
        # The text is part of the id: an edit that keeps the lines still makes a new chunk, so
        # nothing derived from the old text (a vector) is ever reused for it.
        chunk_id = stable_id(self.path, str(start), str(end), entity.id, text)
        index_text = f"{self.path}\n{entity.qualified_name}\n{text}"
        self.chunks.append(Chunk(chunk_id, self.path, entity.id, start, end, text, index_text,
                                 token_text(index_text)))

    def items(self, entity: Entity) -> list[_Item]:
        """The entity's span as an ordered list of own-line runs and children, each child that fits one
        chunk with the comments that document it from their first line."""
        items: list[_Item] = []
        cursor = entity.start_line
        for child in sorted(self.children.get(entity.id, []), key=lambda e: e.start_line):
            if child.start_line < cursor:
                continue  # overlapping spans (rare grammar quirks) are covered by the earlier item
            lead = max(cursor, self.lead_lines.get(child.id, child.start_line))
            if not self.fits(lead, child.end_line):
                # Too long to share a chunk: split, the comment would be a chunk under the
                # definition's name without a line of its code (express's 40-line JSDoc examples).
                lead = child.start_line
            if lead > cursor:
                items.append(_Item(cursor, lead - 1, None))
            items.append(_Item(lead, min(child.end_line, entity.end_line), child))
            cursor = child.end_line + 1
        if cursor <= entity.end_line:
            items.append(_Item(cursor, entity.end_line, None))
        return items

    def chunk_entity(self, entity: Entity) -> None:
        if self.fits(entity.start_line, entity.end_line):
            self.emit(entity.start_line, entity.end_line, entity)
            return
        packed: list[_Item] = []
        for item in self.items(entity):
            if not self.fits(item.start, item.end):
                self.flush(packed, entity)
                packed = []
                if item.entity is not None:
                    self.chunk_entity(item.entity)
                else:
                    self.split_run(item.start, item.end, entity)
                continue
            if item.entity is not None and self.size(item.start, item.end) >= PACK_BELOW_CHARS:
                # A header-only run before it (`class X:`, a decorator comment) joins its chunk.
                if packed and all(i.entity is None for i in packed) and self.fits(packed[0].start, item.end):
                    self.emit(packed[0].start, item.end, item.entity)
                else:
                    self.flush(packed, entity)
                    self.emit(item.start, item.end, item.entity)
                packed = []
                continue
            if packed and not self.fits(packed[0].start, item.end):
                self.flush(packed, entity)
                packed = []
            packed.append(item)
        self.flush(packed, entity)

    def flush(self, packed: list[_Item], parent: Entity) -> None:
        if not packed:
            return
        substantive = [i for i in packed if i.entity is not None or self.has_text(i.start, i.end)]
        owner = substantive[0].entity if len(substantive) == 1 and substantive[0].entity else parent
        self.emit(packed[0].start, packed[-1].end, owner)

    def split_run(self, start: int, end: int, entity: Entity) -> None:
        """Cut a run of own lines at statement starts (or anywhere, failing those) into chunks."""
        cuts = [line for line in self.split_lines.get(entity.id, ()) if start < line <= end]
        piece_start = start
        while piece_start <= end:
            # The longest piece that fits (at least one line): at most TARGET_CHUNK_LINES lines, and
            # the last line whose end stays within TARGET_CHUNK_CHARS of the piece's start.
            last_fitting = bisect_right(self.offsets, self.offsets[piece_start - 1] + TARGET_CHUNK_CHARS) - 1
            piece_end = max(piece_start, min(end, piece_start + TARGET_CHUNK_LINES - 1, last_fitting))
            if piece_end < end:
                # Cut at the last statement start in the later half; an earlier one would leave a
                # stub (a lone signature line before a long docstring), so cut mid-statement instead.
                half = piece_start + (piece_end - piece_start) // 2
                usable = [c - 1 for c in cuts if half < c <= piece_end]
                if usable:
                    piece_end = usable[-1]
            self.emit(piece_start, piece_end, entity)
            piece_start = piece_end + 1


def chunk_file(path: str, text: str, entities: Sequence[Entity], split_lines: dict[str, tuple[int, ...]],
               lead_lines: dict[str, int]) -> list[Chunk]:
    """Chunk one parsed file; the first entity must be its module.

    :param path: root-relative path.
    :param text: the file's decoded text.
    :param entities: the file's entities, module first.
    :param split_lines: statement starts per entity id, where long runs may be cut.
    :param lead_lines: per entity id, the first line of the comments above it that document it: they
        go into its chunk, where its words are, rather than into the chunk of the lines before it.
    :return: chunks in line order.
    """
    lines = text.split("\n")  # the rows tree-sitter counts (splitlines() also splits on \f, \u2028, ...)
    chunker = _Chunker(path, lines, entities, split_lines, lead_lines)
    chunker.chunk_entity(entities[0])
    return sorted(chunker.chunks, key=lambda c: c.start_line)
