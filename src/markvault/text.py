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

import unicodedata
from collections.abc import Iterator
from functools import lru_cache

import regex
import Stemmer

TOKENIZER_VERSION = "1"

_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_CJK_RUN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー]+")
_LATIN = regex.compile(r"[a-z]+")
_CYRILLIC = regex.compile(r"[\p{Cyrillic}]+")
# Accents are dropped except on Cyrillic letters, where the mark makes another letter
# (й is not и); ё is folded to е separately, as Russian writers usually do.
_ACCENTS = regex.compile(r"(?<!\p{Cyrillic})[\u0300-\u036f]")

_english = Stemmer.Stemmer("english")
_russian = Stemmer.Stemmer("russian")


def normalize(text: str) -> str:
    """Fold case, width and Latin/Greek accents; keep everything else."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        return text
    stripped = _ACCENTS.sub("", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFC", stripped).replace("ё", "е")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    if _LATIN.fullmatch(word):
        return str(_english.stemWord(word))
    if _CYRILLIC.fullmatch(word):
        return str(_russian.stemWord(word))
    return word


def _word_tokens(word: str) -> Iterator[str]:
    """Tokens of one normalized word: stemmed, or CJK bigrams."""
    pos = 0
    for run in _CJK_RUN.finditer(word):
        if run.start() > pos:
            yield _stem(word[pos : run.start()])
        cjk = run.group()
        if len(cjk) == 1:
            yield cjk
        else:
            for i in range(len(cjk) - 1):
                yield cjk[i : i + 2]
        pos = run.end()
    if pos < len(word):
        yield _stem(word[pos:])


def tokenize(text: str) -> list[str]:
    """All search tokens of ``text``, in order (duplicates kept: they are term frequency)."""
    out: list[str] = []
    for match in _WORD.finditer(normalize(text)):
        out.extend(_word_tokens(match.group()))
    return out


def prefix_token(word: str) -> str:
    """The form a ``prefix*`` query term is matched in: normalized, never stemmed."""
    tokens = [m.group() for m in _WORD.finditer(normalize(word))]
    return tokens[0] if len(tokens) == 1 else ""


def word_spans(line: str) -> Iterator[tuple[int, int, list[str]]]:
    """(start, end, tokens) of each word in an unnormalized line, for highlighting."""
    for match in _WORD.finditer(line):
        yield match.start(), match.end(), tokenize(match.group())


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None
