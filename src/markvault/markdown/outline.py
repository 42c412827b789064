"""Markdown body -> its top-level blocks and the source of its inline runs. Pure, no I/O.

``parse.py`` needs little of a Markdown parse: each top-level block with its lines (and a
heading's level and text), and the source of each paragraph, heading and table cell with
its first line, which it searches for tags and links. pulldown-cmark (``pyromark``, in
Rust) finds these several times faster than markdown-it-py's block parser, which stays
the reference: ``outline_reference`` reads the same ``Outline`` from markdown-it-py, and
tests/test_parse_outline.py and ``bench/profile_index.py --alternatives`` hold the two
equal. Two things differ by design and no tag or link pattern can see them: a run is the
raw source, so a line inside a list keeps its indent where markdown-it strips it, and runs
without a tag's or link's marker are left out on both sides. Where the two parsers could
disagree (see ``_Doubt``), the note is read by markdown-it-py: about 1-2% of notes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

import pyromark

from markvault.types.notes import Block, Section

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

    from markvault.markdown.memo import Recent


class _NoDebug:
    """A logger that drops debug lines without asking the logging module."""

    def debug(self, *args: object) -> None:
        pass


@cache
def _markdown_it() -> MarkdownIt:
    """markdown-it-py, imported when first needed (a block quote, a table, the reference)."""
    from markdown_it import MarkdownIt

    # markdown-it's block rules log a debug line each time one is tried (about ten
    # million calls on a 90 MB vault, a tenth of its block parse): markvault shows none.
    for name, module in list(sys.modules.items()):
        if name.startswith("markdown_it.rules_block.") and hasattr(module, "LOGGER"):
            vars(module)["LOGGER"] = _NoDebug()
    # Block structure only: inline parsing is left to the tag and link patterns.
    return MarkdownIt("commonmark", {"html": True}).enable("table").disable("inline")


_OPTIONS = pyromark.Options.ENABLE_TABLES
_NEWLINES = re.compile(r"\r\n?")
# Events whose ranges are inline source (the rest open or close blocks).
_INLINE = frozenset(
    ("Emphasis", "Strong", "Strikethrough", "Link", "Image", "Superscript", "Subscript")
)
_TEXT = frozenset(("Text", "Code", "InlineHtml", "InlineMath", "FootnoteReference"))
# Any of these bytes may start a tag or a link (see ``_marked``).
_MARKER = re.compile(rb"#|\]\(|\[\[")
_LEVELS = {"H1": 1, "H2": 2, "H3": 3, "H4": 4, "H5": 5, "H6": 6}
_VERBATIM = frozenset(("CodeBlock", "HtmlBlock", "MetadataBlock"))
# Inside these markdown-it's content is not the raw source: it strips a quote's ">" and
# splits a table's rows into cells.
_STRIPPED = frozenset(("BlockQuote", "Table"))


class Outline(NamedTuple):
    # Each top-level block, its lines offset by the ``body_line`` given (1-based in the
    # note when that is the body's first line, 0-based in the body when it is 0)
    blocks: list[Block]
    # (source, first line, inside a heading) of each paragraph, heading and table cell
    # that holds a tag's or a link's marker (see ``_marked``); lines offset likewise
    inlines: list[tuple[str, int, bool]]
    # the headings among ``blocks``, each built once with the block
    sections: list[Section]


def outline(
    body: str, body_line: int = 0, recent: Recent[tuple[str, int], Outline] | None = None
) -> Outline:
    """The body's outline through pulldown-cmark, equal to ``outline_reference``'s.
    ``recent``: outlines by (body, body_line), found there or kept there."""
    if recent is not None:
        shape = recent.find((body, body_line))
        if shape is None:
            shape = outline(body, body_line)
            recent.keep((body, body_line), shape, len(body))
        return shape
    # markdown-it's normalisation, so that lines and sources are the ones it would see
    src = _NEWLINES.sub("\n", body) if "\r" in body else body
    if "\0" in src:
        src = src.replace("\0", "\ufffd")
    if ("]:" in src and _DEFINITION.search(src)) or ("|" in src and _table_row(src)):
        return outline_reference(src, body_line)  # see _Doubt
    try:
        return _Walk(src, body_line).run()
    except (_Doubt, UnicodeEncodeError):  # a lone surrogate (text from a client) has no UTF-8
        return outline_reference(src, body_line)


class _Doubt(Exception):
    """markdown-it-py reads the note: pulldown-cmark may split it into other blocks (link
    reference definitions, empty list items, tables), or markdown-it's content is not the
    raw source (block quotes strip their ``>``, tables split cells at ``|``)."""


class _Walk:
    """One pass over pulldown-cmark's events (byte ranges) building an ``Outline``.

    ``run`` is the hot loop of a cold index (about 50 events per note): it keeps its state
    in locals, tests the commonest event (text) first and only notes down each top-level
    block and inline run, which ``blocks`` and ``inlines`` then read in loops of their own."""

    def __init__(self, src: str, body_line: int = 0) -> None:
        self.src = src
        self.data = src.encode()
        self.ascii = len(self.data) == len(src)
        self.body_line = body_line

    def run(self) -> Outline:
        tops: list[tuple[str, Any, int, int]] = []  # (name, End value, first byte, end)
        runs: list[tuple[int, int, bool]] = []  # (first byte, end, inside a heading)
        # The ranges of the current inline run's first and last events.
        first: Any = None
        last: Any = None
        depth = 1  # how many blocks are open, the document included
        verbatim = False  # inside a code or HTML block: its text is no inline source
        fresh = False  # the last event opened a list item
        heading = False  # inside a heading
        events: Iterable[tuple[Any, Any]] = pyromark.events_with_range(
            self.src, options=_OPTIONS, merge_text=True
        )
        for ev, r in events:
            if "Text" in ev:  # {"Text": ...}: the commonest; no str event holds "Text"
                if verbatim:
                    continue
            elif type(ev) is str:  # SoftBreak, HardBreak (inline) or Rule (a block)
                if ev == "Rule":
                    if depth == 1:
                        tops.append(("Rule", None, r["start"], r["end"]))
                    continue
            # A block's start and end both close the inline run before them.
            elif "Start" in ev or "End" in ev:
                opens = "Start" in ev
                value = ev["Start"] if opens else ev["End"]
                name = value if type(value) is str else next(iter(value))
                if name not in _INLINE:
                    if first is not None:
                        runs.append((first["start"], last["end"], heading))
                        first = None
                    if opens:
                        if name in _STRIPPED:
                            raise _Doubt
                        depth += 1
                        fresh = name == "Item"
                        heading = heading or name == "Heading"
                        verbatim = name in _VERBATIM
                        continue
                    if fresh and name == "Item":
                        raise _Doubt  # markdown-it ends a list at an empty item its own way
                    # A block's parent is never a code or HTML block, nor a heading.
                    fresh = verbatim = heading = False
                    depth -= 1
                    if depth == 1:
                        # a block's end event has its start event's range
                        tops.append((name, value, r["start"], r["end"]))
                    continue
            elif verbatim or next(iter(ev)) not in _TEXT:
                continue  # block HTML, code, task markers: no inline source
            if first is None:
                first = r
                fresh = False
            last = r  # an inline container's end event closes after its text
        sections: list[Section] = []
        return Outline(self.blocks(tops, sections), self.inlines(runs), sections)

    def inlines(self, runs: list[tuple[int, int, bool]]) -> list[tuple[str, int, bool]]:
        """The source of each run that holds a tag's or a link's marker, with its line."""
        data, src, count, marked = self.data, self.src, self.data.count, _MARKER.search
        ascii = self.ascii
        out = []
        pos, line = 0, self.body_line  # byte ``pos`` is on ``line`` (runs come in order)
        for start, end, in_heading in runs:
            if start and data[start - 1] == 0x5C:  # an escape's backslash: "\#"
                start -= 1
            if marked(data, start, end) is not None:
                line += count(b"\n", pos, start) if start >= pos else -count(b"\n", start, pos)
                pos = start
                out.append(
                    (src[start:end] if ascii else data[start:end].decode(), line, in_heading)
                )
        return out

    def blocks(self, tops: list[tuple[str, Any, int, int]], sections: list[Section]) -> list[Block]:
        """Each top-level block's kind and lines (and a heading's level and text), each
        heading also added to ``sections``: built once, with the note's line numbers."""
        data = self.data
        count, find, rfind = data.count, data.find, data.rfind
        make: Any = tuple.__new__  # the named tuples' own constructor less a Python call
        out: list[Block] = []
        add, add_section = out.append, sections.append
        line = self.body_line  # byte ``pos`` is on ``line`` (blocks come in order)
        pos = 0
        previous, after = line - 1, 0  # the last line of the block before, the next line's start
        for name, value, start, end in tops:
            line += count(b"\n", pos, start) if start >= pos else -count(b"\n", start, pos)
            first = line
            line += count(b"\n", start, end)
            pos, last = end, line
            # A range may end past the next line's indent; markdown-it's map does not.
            if end and data[end - 1] == 10 and last > first:  # the usual: it ends with a "\n"
                last, following = last - 1, end
            else:
                last_at = rfind(b"\n", 0, end) + 1
                if last > first and not data[last_at:end].strip(b" \t"):
                    last, last_at = last - 1, rfind(b"\n", 0, last_at - 1) + 1
                following = find(b"\n", last_at) + 1
            if (
                first > previous + 1
                and start - after > 1  # more than the one blank line's "\n"
                and data[after:start].strip(b" \t\n")  # what lies before the block's line
                and data[after : rfind(b"\n", 0, start) + 1].strip(b" \t\n")
            ):
                raise _Doubt  # lines between blocks that pulldown-cmark skipped
            previous, after = last, following
            if name == "Heading":
                level = _LEVELS[value["Heading"]]
                if last > first:
                    text = self.setext(start, end, last < line)
                else:
                    text = self.atx(start, end)
                add(make(Block, ("heading", first, last, level, text)))
                add_section(make(Section, (level, text, first)))
            else:
                add(make(Block, ("code" if name == "CodeBlock" else "text", first, last, 0, "")))
        return out

    def setext(self, start: int, end: int, dropped: bool) -> str:
        """A setext heading's text as markdown-it's lheading rule reads it: the lines above
        its underline (the range's last line, ``dropped`` if it ends on the line after)."""
        data = self.data
        first_at = data.rfind(b"\n", 0, start) + 1
        last_at = data.rfind(b"\n", 0, end) + 1
        if dropped:
            last_at = data.rfind(b"\n", 0, last_at - 1) + 1
        return data[first_at : last_at - 1].decode().strip()

    def atx(self, start: int, end: int) -> str:
        """An ATX heading's text as markdown-it's heading rule reads it: its line without
        its runs of #s. The range starts at the first "#" and ends after the line."""
        if self.data[end - 1] == 10:
            end -= 1
        rest = self.src[start:end] if self.ascii else self.data[start:end].decode()
        rest = rest.lstrip("#")
        if not rest.rstrip(" \t").endswith("#"):
            return rest.strip()
        end = len(rest.rstrip(" \t"))
        before = len(rest[:end].rstrip("#"))  # before a closing run of #s
        if before > 0 and rest[before - 1] in " \t":
            end = before
        return rest[:end].strip()


def outline_reference(body: str, body_line: int = 0) -> Outline:
    """The outline from markdown-it-py's block parse: what ``outline`` is held to."""
    tokens = _markdown_it().parse(body)
    out = Outline([], [], [])
    in_heading = False
    for i, tok in enumerate(tokens):
        if tok.type == "inline":
            if tok.map and _marked(tok.content):
                out.inlines.append((tok.content, tok.map[0] + body_line, in_heading))
            continue
        in_heading = tok.type == "heading_open" or (in_heading and tok.type != "heading_close")
        if tok.level != 0 or not tok.map or tok.nesting == -1:
            continue
        start, end = tok.map[0] + body_line, tok.map[1] - 1 + body_line
        if tok.type == "heading_open":
            level, text = int(tok.tag[1]), tokens[i + 1].content.strip()
            out.blocks.append(Block("heading", start, end, level, text))
            out.sections.append(Section(level, text, start))
        else:
            kind = "code" if tok.type in ("fence", "code_block") else "text"
            out.blocks.append(Block(kind, start, end, 0, ""))
    return out


def _marked(text: str) -> bool:
    """Whether a tag or a link could be in ``text``: each needs one of these."""
    return "#" in text or "](" in text or "[[" in text


# A line that may be a link reference definition, and one that may be a table's delimiter
# row (markdown-it's rules, loosely: they only have to find every candidate).
_DEFINITION = re.compile(r"^ {0,3}\[[^\n]*\]:", re.M)
_DELIMITER_ROW = re.compile(r"\n[ \t>]*[-:|][-:| \t]*(?=\n|$)")


def _table_row(src: str) -> bool:
    """Whether a line may be a table's delimiter row: under a line with a ``|``."""
    for m in _DELIMITER_ROW.finditer(src):
        if "|" in src[src.rfind("\n", 0, m.start()) + 1 : m.start()]:
            return True
    return False
