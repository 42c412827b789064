"""The language of a query, from its function words, and what follows from it.

A query's language decides two things:

- which words are *function words* (stop words) that keyword ranking leaves out: a
  long question such as "what articles are there on the use of ..." would otherwise
  rank notes by "what", "are" and "the" as well as by its subject;
- whether the embedding model can read the query: the default model knows English
  only, and its vector for a Spanish sentence is noise that fusion would mix into
  good keyword results.

Detection counts the query's words that are on each language's stop word list
(Snowball's, ``stopwords.py``), the classic way to tell languages apart on short text.
It only names a language on clear evidence: at least ``MIN_EVIDENCE`` such words and
more than any other language has; otherwise the query's language is unknown and
English stop words are used (a word on no list is never dropped). Text mostly in
another script than Latin is told apart by script (``text.latin_share``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from markvault.config import DEFAULT_MODEL_NAMES
from markvault.markdown.tokens import latin_share
from markvault.search.stopwords import STOPWORDS

MIN_EVIDENCE = 2
DEFAULT_LANGUAGE = "en"
# Languages the packaged default model (all-MiniLM-L6-v2) was trained on.
DEFAULT_MODEL_LANGUAGES = frozenset({"en"})


@functools.cache
def stopwords(language: str) -> frozenset[str]:
    """The normalized stop words of ``language`` (empty for a language without a list)."""
    return frozenset(STOPWORDS.get(language, "").split())


@functools.cache
def _lists_of() -> dict[str, tuple[str, ...]]:
    """stop word -> the languages whose list has it: one look-up per query word (a
    pasted paragraph has hundreds), not one per word and language."""
    out: dict[str, tuple[str, ...]] = {}
    for language in STOPWORDS:
        for word in stopwords(language):
            out[word] = (*out.get(word, ()), language)
    return out


def detect(words: Iterable[str]) -> str | None:
    """The language of normalized ``words``, or None when their function words do not
    say clearly (too few, or as many for two languages)."""
    counts: dict[str, int] = {}
    lists = _lists_of()
    for word in words:
        for language in lists.get(word, ()):
            counts[language] = counts.get(language, 0) + 1
    if not counts:
        return None
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    best, hits = ranked[0]
    if hits < MIN_EVIDENCE:
        return None
    tied = [lang for lang, n in ranked if n == hits]
    if len(tied) > 1:
        # A tie that includes English is English (the default: short words such as
        # "i", "for", "over" are also Danish); a tie among Romance or Nordic languages
        # still says "not English".
        return DEFAULT_LANGUAGE if DEFAULT_LANGUAGE in tied else best
    return best


def query_stopwords(language: str | None) -> frozenset[str]:
    """The words a query in ``language`` (None: unknown) ranks without."""
    return stopwords(language or DEFAULT_LANGUAGE)


def model_reads(model: str, text: str, language: str | None) -> bool:
    """Whether ``model``'s vector of ``text`` (detected as ``language``) means anything.

    The packaged default reads English: not a text mostly in another script, nor one
    whose function words are clearly another language's. Any other configured model
    is taken to read every language (users configure one because it is multilingual).
    """
    if model not in DEFAULT_MODEL_NAMES:
        return True
    if latin_share(text) < 0.5:
        return False
    return language is None or language in DEFAULT_MODEL_LANGUAGES
