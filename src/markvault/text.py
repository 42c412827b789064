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

import string
import unicodedata
from collections.abc import Iterator

import regex
import Stemmer

TOKENIZER_VERSION = "1"

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー"
# One pass finds CJK runs (group 1) and words of every other script (group 2; marks stay
# with their letter), as findall's pairs (no match object per word).
_SEGMENTS = regex.compile(rf"([{_CJK}]+)|([\p{{L}}\p{{N}}\p{{M}}--[{_CJK}]]+)", regex.V1)
_CJK_CHAR = regex.compile(rf"[{_CJK}]")
_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
# What _SEGMENTS finds in normalized ASCII text (lower case, no marks, no CJK) are the
# runs of [a-z0-9]: every other byte becomes a space and str.split cuts there, several
# times faster than a pattern's findall (most notes are ASCII).
_ASCII_WORD_CHARS = (string.ascii_lowercase + string.digits).encode()
_ASCII_NOT_WORD = bytes(c if c in _ASCII_WORD_CHARS else 32 for c in range(256))
_CYRILLIC = regex.compile(r"[\p{Cyrillic}]+")
# Accents are dropped except on Cyrillic letters, where the mark makes another letter
# (й is not и); ё is folded to е separately, as Russian writers usually do.
_ACCENTS = regex.compile(r"(?<!\p{Cyrillic})[\u0300-\u036f]")

_english = Stemmer.Stemmer("english")
_russian = Stemmer.Stemmer("russian")


class _StemCache(dict[str, str]):
    """word -> token, filled on first sight: a vault has a few ten thousand distinct
    words among millions, and a lookup through ``map(cache.__getitem__, words)`` runs
    without a Python call per known word."""

    def __missing__(self, word: str) -> str:
        if word.isascii():
            stem = str(_english.stemWord(word)) if word.isalpha() else word
        elif _CYRILLIC.fullmatch(word):
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
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        return text
    stripped = _ACCENTS.sub("", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFC", stripped).replace("ё", "е")


def tokenize(text: str) -> list[str]:
    """All search tokens of ``text``, in order (duplicates kept: they are term frequency)."""
    text = normalize(text)
    if text.isascii():
        words = text.encode("ascii").translate(_ASCII_NOT_WORD).decode("ascii").split()
        return list(map(_stem, words))
    if _CJK_CHAR.search(text) is None:  # then _SEGMENTS' words are _WORD's
        return list(map(_stem, _WORD.findall(text)))
    out: list[str] = []
    for cjk, word in _SEGMENTS.findall(text):
        if word:
            out.append(_stem(word))
        else:
            out.extend(_cjk_grams(cjk))
    return out


def _cjk_grams(run: str) -> list[str]:
    """The tokens of a run of CJK characters: its overlapping bigrams (a lone character
    is its own token)."""
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def word_tokens(text: str) -> list[tuple[str, str]]:
    """(word, token) for each search token of ``text``: the normalized word before
    stemming beside the token ``tokenize`` makes of it (a CJK bigram is both). For
    queries, whose words are looked up in stop word lists."""
    out: list[tuple[str, str]] = []
    for cjk, word in _SEGMENTS.findall(normalize(text)):
        if word:
            out.append((word, _stem(word)))
        else:
            out.extend((g, g) for g in _cjk_grams(cjk))
    return out


def prefix_token(word: str) -> str:
    """The form a ``prefix*`` query term is matched in: normalized, never stemmed."""
    tokens = [m.group() for m in _WORD.finditer(normalize(word))]
    return tokens[0] if len(tokens) == 1 else ""


def word_spans(line: str) -> Iterator[tuple[int, int, list[str]]]:
    """(start, end, tokens) of each word in an unnormalized line, for highlighting."""
    for match in _WORD.finditer(line):
        yield match.start(), match.end(), tokenize(match.group())


_LETTER = regex.compile(r"\p{L}")
_LATIN_LETTER = regex.compile(r"\p{Latin}")


def latin_share(text: str) -> float:
    """The share of letters in ``text`` that are Latin script (1.0 when it has none)."""
    letters = len(_LETTER.findall(text))
    return len(_LATIN_LETTER.findall(text)) / letters if letters else 1.0
