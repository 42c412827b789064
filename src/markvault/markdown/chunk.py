"""ParsedNote -> chunks sized for the embedding model, split along headings.

all-MiniLM-L6-v2 reads at most 256 word pieces; text past that is invisible to
its vector. Chunks therefore hold at most ``ChunkParams.max_pieces`` pieces by a
cheap, conservative estimate (no tokenizer import on the keyword path). A chunk
never crosses a heading and never splits a code fence: an oversized fence stays
whole (keyword search still sees all of it). A change to the chunks it makes from the
same text bumps ``fingerprint.CHUNKER_VERSION``.
"""

from __future__ import annotations

import hashlib
import re

from markvault.config import ChunkParams
from markvault.types.notes import Chunk, ParsedNote, embed_input

# The standard library's engine: several times faster than `regex` for these classes.
_WORDS_AND_MARKS = re.compile(r"\w+|[^\w\s]")
# An ASCII word of 7+ letters, with its letters 8-11 captured when it has 11+: one pass
# counts both (a run of [A-Za-z0-9] has no word boundary inside, so matches only start
# where a word does).
_LONG_ASCII = re.compile(r"\b[A-Za-z0-9]{7}([A-Za-z0-9]{4})?")
_NON_ASCII_LETTER = re.compile(r"[^\x00-\x7f\s\u2000-\u206f\u3000-\u303f\uff00-\uff0f]")
# White space as the `regex` package's \s (Unicode White_Space), which these splits used
# before; the standard library's \s also matches \x1c-\x1f. The standard engine is
# several times faster at these lookbehinds.
_SPACE = r"[^\S\x1c-\x1f]"
_SENTENCE_END = re.compile(rf"(?<=[.!?。！？；;]){_SPACE}+|(?<=[。！？])")
_AFTER_SPACE = re.compile(rf"(?<={_SPACE})")


def estimate_pieces(text: str) -> int:
    """Estimate of BERT word pieces in ``text`` (checked against the real tokenizer in tests).

    One piece per word and per punctuation mark; English words of 7+ letters one more,
    11+ letters another; every non-ASCII character one more (CJK is a piece per
    character, Cyrillic close to one per letter, accented Latin splits a word up).
    Counted without a string per word, as this runs on every block: ASCII text (most of
    it) with bytes.count on its character classes, other text with regular expressions.
    """
    return _ascii_pieces(text) if text.isascii() else _pattern_pieces(text)


def _pattern_pieces(text: str) -> int:
    """``estimate_pieces`` of any text, by the patterns above."""
    longs = _LONG_ASCII.findall(text)  # "" for 7-10 letters, the 4 letters for 11+
    pieces = len(_WORDS_AND_MARKS.findall(text)) + 2 * len(longs) - longs.count("")
    return pieces + len(_NON_ASCII_LETTER.findall(text))


def _ascii_tables() -> tuple[bytes, bytes]:
    """For ASCII text, as the patterns above see it: a bytes.translate table from a
    character to its class ("a" letter or digit, "_" the other word character, " "
    anything else), and the characters that are not marks (word characters and white
    space, which for ``\\s`` includes \\x1c-\\x1f)."""
    classes = bytearray(range(256))
    not_marks = bytearray()
    for code in range(128):
        char = chr(code)
        word = re.match(r"\w", char) is not None
        classes[code] = ord("a" if char.isalnum() else "_" if word else " ")
        if word or re.match(r"\s", char):
            not_marks.append(code)
    return bytes(classes), bytes(not_marks)


_ASCII_CLASSES, _ASCII_NOT_MARKS = _ascii_tables()


def _ascii_pieces(text: str) -> int:
    """``estimate_pieces`` of ASCII text, counted with bytes.translate and bytes.count:
    the same figure as the patterns, without a string object per match."""
    data = text.encode("ascii")
    # A word starts after a non-word character (the space put in front stands for the
    # start); a long word is one whose first 7 (or 11) characters are letters or digits.
    cls = b" " + data.translate(_ASCII_CLASSES)
    words = cls.count(b" a") + cls.count(b" _")
    longs = cls.count(b" aaaaaaa") + cls.count(b" aaaaaaaaaaa")
    return len(data.translate(None, _ASCII_NOT_MARKS)) + words + longs


class _PieceCache(dict[str, int]):
    """text -> ``estimate_pieces(text)``, filled on first sight: the notes of one
    collection repeat blocks, headings and words (a reference's "## Parameters" and
    option tables, the words of markup, the same page in several versions of a
    document set), often far apart, and a hit through ``cache[text]`` costs no Python
    call. It keeps texts of up to 1,024 characters, 16 M characters in all (about 32 MB
    of ASCII text, twice that of CJK text; one worker reading half of the big corpus
    fills 13 M, and at 8 M it estimated a quarter more texts); then it keeps what it
    has."""

    chars = 0

    def __missing__(self, text: str) -> int:
        pieces = estimate_pieces(text)
        if len(text) <= 1024 and self.chars < 16_000_000:
            self.chars += len(text)
            self[text] = pieces
        return pieces

    def clear(self) -> None:
        super().clear()
        self.chars = 0


_known = _PieceCache()


def forget_pieces() -> None:
    """Empty the estimates kept for the texts seen so far: a sync ends with it in a
    long-lived process (a server, `vault watch`), which would otherwise keep up to 16 M
    characters of its edits' lines and words for as long as it runs. A worker keeps its
    own until its sync ends with it."""
    _known.clear()


def chunk_note(note: ParsedNote, lines: list[str], params: ChunkParams) -> list[Chunk]:
    """Chunks of ``note``; ``lines`` are the file's lines (index 0 is line 1).

    One loop over the blocks with the open chunk in locals (a quarter million chunks
    and a million blocks in a large collection: a method call and attribute writes per
    block cost more than the rest of the work on it)."""
    known = _known  # cache[text]: no Python call for a text seen before
    count = len(lines)
    title = note.title
    # Pieces a chunk may hold: the heading context is read by the model too.
    title_pieces = known[title]
    budget = params.max_pieces - title_pieces
    head = _Head(title, note.frontmatter_title, budget - 1)
    path, context = head.path, head.context
    chunks: list[Chunk] = []
    parts: list[str] = []  # the open chunk's texts, from line first to last
    first = last = pieces = 0
    bare = True  # the open chunk has no block but headings
    for kind, start, end, level, heading in note.blocks:
        if start == end and start <= count:
            text = lines[start - 1].rstrip()
        else:
            text = "\n".join(lines[start - 1 : end]).rstrip()
        if kind == "heading":
            if not bare:
                chunks.append(_chunk(len(chunks), path, first, last, parts, context))
                parts, pieces, bare = [], 0, True
            budget = head.enter(level, heading, known)
            path, context = head.path, head.context
            if not parts:
                first = start
            last = end
            parts.append(text)
            pieces += known[text]
            continue
        size = known[text]
        if pieces + size > budget and not bare:
            chunks.append(_chunk(len(chunks), path, first, last, parts, context))
            parts, pieces, bare = [], 0, True
        if size <= budget or kind == "code":
            bare = False
            if not parts:
                first = start
            last = end
            parts.append(text)
            pieces += size
            if size > budget:  # an oversized code fence stays whole, in a chunk of its own
                chunks.append(_chunk(len(chunks), path, first, last, parts, context))
                parts, pieces, bare = [], 0, True
            continue
        # A long text block: by lines, then long lines by sentences, then words.
        for line_no, piece, size in _split_block(lines, start, end, budget):
            if pieces + size > budget and not bare:
                chunks.append(_chunk(len(chunks), path, first, last, parts, context))
                parts, pieces, bare = [], 0, True
            bare = False
            if not parts:
                first = line_no
            last = line_no
            parts.append(piece)
            pieces += size
    if parts:
        chunks.append(_chunk(len(chunks), path, first, last, parts, context))
    if not chunks:
        chunks.append(_chunk(0, path, note.body_line, note.body_line, [title], context))
    return chunks


def _chunk(
    seq: int, path: tuple[str, ...], first: int, last: int, parts: list[str], context: str
) -> Chunk:
    text = "\n".join(filter(None, parts)).strip("\n")
    embed_text = embed_input(context, text)
    digest = hashlib.blake2b(embed_text.encode("utf-8"), digest_size=16).hexdigest()
    # Positional: a quarter million chunks in a large vault, keywords cost a third more.
    return Chunk(seq, path, first, last, text, context, digest)


class _Head:
    """The open headings of a note, each with its level, its path of headings and that
    path's pieces: headings nest, so the stack's levels only increase."""

    def __init__(self, title: str, own_title: bool, limit: int) -> None:
        self.title = title
        self.own_title = own_title
        self.limit = limit  # the budget of a chunk under a path of no pieces
        self.stack: list[tuple[int, tuple[str, ...], int]] = []
        self.path: tuple[str, ...] = ()
        self.context = title if own_title else ""

    def enter(self, level: int, heading: str, known: dict[str, int]) -> int:
        """Open ``heading``; returns the pieces a chunk under it may hold. Estimates add
        up across white space, so the context "title > h1 > h2" is the sum of its
        parts' and the marks' (" > " is one), and a heading's estimate is made once for
        all the headings below it."""
        stack = self.stack
        while stack and stack[-1][0] >= level:
            stack.pop()
        if stack:
            _, path, cost = stack[-1]
            path, cost = (*path, heading), cost + 1 + known[heading]
        else:
            path, cost = (heading,), known[heading]
        stack.append((level, path, cost))
        self.path = path
        title = self.title
        if self.own_title and path[0] != title:
            self.context = " > ".join((title, *path))
        else:
            self.context = " > ".join(path)
        return self.limit - cost


def _split_block(lines: list[str], start: int, end: int, budget: int) -> list[tuple[int, str, int]]:
    """(line, piece, its estimated size) of a text block too long for a chunk: its
    lines, long lines split by sentences, then by words, each within ``budget``."""
    out: list[tuple[int, str, int]] = []
    for line_no in range(start, end + 1):
        line = lines[line_no - 1] if line_no <= len(lines) else ""
        out += ((line_no, piece, size) for piece, size in _split_line(line, budget))
    return out


def _split_line(line: str, limit: int) -> list[tuple[str, int]]:
    """(piece, its estimated size) of ``line``, each piece within ``limit``."""
    size = _known[line]
    if size <= limit:
        return [(line, size)]
    out: list[tuple[str, int]] = []
    sentences = _SENTENCE_END.split(line)
    for sentence in sentences:
        if len(sentences) > 1:
            size = estimate_pieces(sentence)
        if size <= limit:
            out.append((sentence, size))
            continue
        # Every word but the last ends in whitespace, so no estimated piece spans two
        # words and their estimates add up: a running sum, not a re-count per word.
        words: list[str] = []
        size = 0
        for word in _AFTER_SPACE.split(sentence):
            words.append(word)
            size += _known[word]
            if size >= limit - 8:
                out.append(("".join(words), size))
                words, size = [], 0
        if words:
            out.append(("".join(words), size))
    return [(s, n) for s, n in out if s.strip()]
