"""Text -> search tokens, the same way for notes and for queries.

DuckDB's fts tokenizer keeps only a-z by default, so markvault tokenizes in
Python and hands the fts extension space-separated tokens (its own tokenizer is
then told to split on whitespace only). Rules:

- NFKC, case folding, and Latin and Greek accents removed (``café`` = ``cafe``), ё = е;
- words are runs of letters, digits and marks in any script (``snake_case`` -> two words);
- Han, Kana and Hangul runs become overlapping character bigrams (``机器学习`` ->
  ``机器 器学 学习``), the usual segmentation for CJK without a dictionary;
- Snowball stemming for Latin words (English rules) and Cyrillic words (Russian rules).

Changing any rule changes ``TOKENIZER_VERSION``, which rebuilds the index.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections.abc import Iterator

import Stemmer

TOKENIZER_VERSION = "1"

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー"
# What the segments pattern (``_Unicode``) finds in normalized ASCII text (lower case,
# no marks, no CJK) are the runs of [a-z0-9]: every other byte becomes a space and
# str.split cuts there, several times faster than a pattern's findall (most notes are
# ASCII).
_ASCII_WORD_CHARS = (string.ascii_lowercase + string.digits).encode()
_ASCII_NOT_WORD = bytes(c if c in _ASCII_WORD_CHARS else 32 for c in range(256))
# The same for ASCII text before its normalization, which for ASCII is lower case only
# (NFKC leaves it as it is): upper case letters become lower case ones here too.
_ASCII_FOLDED_WORDS = bytes(
    c + 32 if 65 <= c <= 90 else c if c in _ASCII_WORD_CHARS else 32 for c in range(256)
)
# The word pattern's matches in a line of ASCII (not normalized): no ASCII mark.
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


class _Unicode:
    """The patterns for text beyond ASCII, compiled on first use (``_unicode()``):
    importing ``regex`` costs a new process ~7 ms, which a search whose query and
    snippets are ASCII never needs."""

    def __init__(self) -> None:
        import regex

        # One pass finds CJK runs (group 1) and words of every other script (group 2;
        # marks stay with their letter), as findall's pairs (no match object per word).
        self.segments = regex.compile(
            rf"([{_CJK}]+)|([\p{{L}}\p{{N}}\p{{M}}--[{_CJK}]]+)", regex.V1
        )
        self.cjk_char = regex.compile(rf"[{_CJK}]")
        self.word = regex.compile(r"[\p{L}\p{N}\p{M}]+")
        self.cyrillic = regex.compile(r"[\p{Cyrillic}]+")
        # Accents are dropped except on Cyrillic letters, where the mark makes another
        # letter (й is not и); ё is folded to е separately, as Russian writers usually do.
        self.accents = regex.compile(r"(?<!\p{Cyrillic})[\u0300-\u036f]")
        self.letter = regex.compile(r"\p{L}")
        self.latin_letter = regex.compile(r"\p{Latin}")


@functools.cache
def _unicode() -> _Unicode:
    return _Unicode()


def _patterns_loaded() -> bool:
    """Whether this process has the Unicode patterns: until then, text they are not
    needed for is read without them (``_plain_words``, ``word_spans``)."""
    return _unicode.cache_info().currsize > 0


_english = Stemmer.Stemmer("english")
_russian = Stemmer.Stemmer("russian")


class _StemCache(dict[str, str]):
    """word -> token, filled on first sight: a vault has a few ten thousand distinct
    words among millions, and a lookup through ``map(cache.__getitem__, words)`` runs
    without a Python call per known word."""

    def __missing__(self, word: str) -> str:
        if word.isascii():
            stem = str(_english.stemWord(word)) if word.isalpha() else word
        elif _unicode().cyrillic.fullmatch(word):
            stem = str(_russian.stemWord(word))
        else:
            stem = word
        if len(self) < 500_000:
            self[word] = stem
        return stem


_stems = _StemCache()
_stem = _stems.__getitem__


def normalize(text: str) -> str:
    """Fold case, width and Latin/Greek accents; keep everything else."""
    return _unaccent(unicodedata.normalize("NFKC", text).casefold())


def _unaccent(text: str) -> str:
    """``normalize`` past NFKC and case folding."""
    if text.isascii():
        return text
    stripped = _unicode().accents.sub("", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFC", stripped).replace("ё", "е")


def tokenize(text: str) -> list[str]:
    """All search tokens of ``text``, in order (duplicates kept: they are term frequency)."""
    if text.isascii():  # most text: normalized and split in one translate
        data = text.encode("ascii").translate(_ASCII_FOLDED_WORDS)
        return list(map(_stem, data.decode("ascii").split()))
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        return list(map(_stem, _ascii_words(text)))
    beyond = set(_NON_ASCII.findall(text))
    if _ascii_words_only(beyond):
        return list(map(_stem, _ascii_words(text)))
    if not _patterns_loaded():
        plain = _plain_words(text, beyond)
        if plain is not None:
            return plain
    text = _unaccent(text)
    if text.isascii():  # "café" is "cafe" now
        return list(map(_stem, _ascii_words(text)))
    patterns = _unicode()
    if patterns.cjk_char.search(text) is None:  # then segments' words are word's
        return list(map(_stem, patterns.word.findall(text)))
    out: list[str] = []
    for cjk, word in patterns.segments.findall(text):
        if word:
            out.append(_stem(word))
        else:
            out.extend(_cjk_grams(cjk))
    return out


def chunk_words(title: str, context: str, text: str) -> list[str]:
    """A chunk's search tokens: its note's title and heading path are searchable with
    every chunk. The one rule of what a chunk holds, for the workers that count a
    first build's postings, the edits and rebuilds that count them again, and the
    searches that check a phrase or a required word in a candidate's tokens."""
    return tokenize(f"{title} {context}\n{text}")


def _ascii_words(text: str) -> list[str]:
    """The words of normalized ASCII ``text``: what the segments pattern finds there
    (or of text whose other characters all separate words: ``_ascii_words_only``)."""
    data = text.encode("ascii", "replace")  # "?" for the others, a space below
    return data.translate(_ASCII_NOT_WORD).decode("ascii").split()


@functools.cache
def _word_char(char: str) -> bool:
    """Whether the word pattern counts ``char`` in a word: a letter, digit or mark, which
    is its general category (L, N or M), known to ``unicodedata`` without importing
    ``regex`` (~15-35 ms in a new process). A character this Python's tables do not know
    yet (``Cn``) is asked of the pattern, whose tables may be newer (a test holds the two
    equal on every other one)."""
    category = unicodedata.category(char)
    if category == "Cn":
        return _unicode().word.match(char) is not None
    return category[0] in "LNM"


class _Separators(dict[str, bool]):
    """character -> whether it only separates words: neither a letter, digit or mark
    of any script (``_word_char``), nor changed by the normalization past NFKC and case
    folding."""

    def __missing__(self, char: str) -> bool:
        separates = (
            not _word_char(char)
            and unicodedata.combining(char) == 0
            and unicodedata.normalize("NFD", char) == char
        )
        self[char] = separates
        return separates


_separators = _Separators()
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _ascii_words_only(beyond: set[str]) -> bool:
    """Whether NFKC-folded text whose characters beyond ASCII are ``beyond`` has no word
    character but ASCII ones, and is already normalized: then its tokens are its ASCII
    words. Much text is ASCII but for a symbol, a dash or quotation marks ("®", "–",
    "’"), for which the patterns' path costs many times more."""
    return all(map(_separators.__getitem__, beyond))


# The variation selectors: marks that ask for a character's emoji or text picture
# ("🗂️" is U+1F5C2 and U+FE0F), common in note titles and headings.
_SELECTORS = frozenset(map(chr, range(0xFE00, 0xFE10)))
_ASCII_NOT_WORD_MAP = {c: " " for c in range(128) if c not in _ASCII_WORD_CHARS}
_LATIN_ACCENT = re.compile("[\u0300-\u036f]")


def _is_latin_letter(char: str) -> bool:
    """A letter of Latin-1, Latin Extended-A or -B (the accented letters of Europe's
    languages): never Cyrillic, and its accents decompose into U+0300-U+036F."""
    return "\u00c0" <= char <= "\u024f" and unicodedata.category(char)[0] == "L"


def _plain_words(text: str, beyond: set[str]) -> list[str] | None:
    """The tokens of NFKC-folded ``text`` whose characters beyond ASCII (``beyond``) are
    separators, variation selectors, accented Latin letters and their accents (None for
    any other text): what the patterns' way makes of it, without them. Such text holds
    no Cyrillic letter, so every accent goes; a selector is a mark, so it stays in the
    word beside it; and a word left beyond ASCII (``ø``; ``ß`` is ``ss``) is its own token.

    Only while the patterns are not loaded (``tokenize``): importing them costs a new
    process 15-35 ms, which a search's snippets in English with emoji or in a European
    language then never pay; once loaded they are faster on long text (an index build's)."""
    others: list[str] = []
    strip = False
    for c in beyond:
        if c in _SELECTORS:
            continue
        if _is_latin_letter(c) or "\u0300" <= c <= "\u036f":
            strip = True
        elif _separators[c]:
            others.append(c)
        else:
            return None  # a letter of another script, CJK, a mark of its own
    if strip:
        stripped = _LATIN_ACCENT.sub("", unicodedata.normalize("NFD", text))
        text = unicodedata.normalize("NFC", stripped)
    table: dict[int, str] = dict(_ASCII_NOT_WORD_MAP)
    table.update((ord(c), " ") for c in others)
    return [_stem(w) if w.isascii() else w for w in text.translate(table).split()]


def _cjk_grams(run: str) -> list[str]:
    """The tokens of a run of CJK characters: its overlapping bigrams (a lone character
    is its own token)."""
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def word_tokens(text: str) -> list[tuple[str, str]]:
    """(word, token) for each search token of ``text``: the normalized word before
    stemming beside the token ``tokenize`` makes of it (a CJK bigram is both). For
    queries, whose words are looked up in stop word lists."""
    text = normalize(text)
    if text.isascii():
        return [(word, _stem(word)) for word in _ascii_words(text)]
    out: list[tuple[str, str]] = []
    for cjk, word in _unicode().segments.findall(text):
        if word:
            out.append((word, _stem(word)))
        else:
            out.extend((g, g) for g in _cjk_grams(cjk))
    return out


def prefix_token(word: str) -> str:
    """The form a ``prefix*`` query term is matched in: normalized, never stemmed."""
    text = normalize(word)
    tokens = _ascii_words(text) if text.isascii() else _unicode().word.findall(text)
    return tokens[0] if len(tokens) == 1 else ""


def word_spans(line: str) -> Iterator[tuple[int, int, list[str]]]:
    """(start, end, tokens) of each word in an unnormalized line, for highlighting."""
    if line.isascii():
        pattern = _ASCII_WORD
    elif _patterns_loaded():
        pattern = _unicode().word
    else:
        # Its matches by a pattern of this line's own word characters, in the standard
        # library's engine: a one-shot search's snippet never imports regex for them.
        chars = {c for c in _NON_ASCII.findall(line) if _word_char(c)}
        pattern = re.compile(f"[A-Za-z0-9{''.join(map(re.escape, sorted(chars)))}]+")
    for match in pattern.finditer(line):
        yield match.start(), match.end(), tokenize(match.group())


def latin_share(text: str) -> float:
    """The share of letters in ``text`` that are Latin script (1.0 when it has none)."""
    if text.isascii():  # every ASCII letter is Latin; no need for the Unicode patterns
        return 1.0
    patterns = _unicode()
    letters = len(patterns.letter.findall(text))
    return len(patterns.latin_letter.findall(text)) / letters if letters else 1.0
