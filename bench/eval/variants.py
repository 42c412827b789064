"""Mechanical query variants for deep search.

In use, deep search gets its variants from the calling model (keyword rewrites,
paraphrases, a hypothetical answer). A benchmark cannot call a model, so the harness
derives a few variants by rule. They are deterministic and use nothing but the
query itself (no judgments, no documents), so they cannot leak relevance; they are
weaker than a model's rewrites, so deep's figures here are a floor, not a ceiling.

For a question such as "what similarity laws must be obeyed when constructing
aeroelastic models of heated high speed aircraft":

1. ``lex:`` the content words: stopwords and question words removed (bm25s's
   179-word English list ``STOPWORDS_EN_PLUS``, which includes what/how/why/...):
   "similarity laws must obeyed constructing aeroelastic models heated high speed
   aircraft";
2. ``lex:`` the title-like phrase: the longest run of consecutive content words
   (ties: the first), "heated high speed aircraft" here; left out when it is a
   single word or the same as variant 1;
3. ``vec:`` the question as a statement: leading question words dropped ("what",
   "are", "the", "there", "any", ...), "similarity laws must be obeyed when
   constructing aeroelastic models of heated high speed aircraft". It stands in for
   a paraphrase; left out when it equals the query.
"""

from __future__ import annotations

import re

from bm25s.stopwords import STOPWORDS_EN_PLUS

_WORD = re.compile(r"[\w'-]+")
# Words the first variant also drops: modal verbs and filler that bm25s's list lacks.
_EXTRA_STOPWORDS = "must may might could would shall also available anyone etc"
STOPWORDS = frozenset(STOPWORDS_EN_PLUS) | frozenset(_EXTRA_STOPWORDS.split())
# The words a question opens with, dropped from its start by ``as_statement``.
_FRAME_WORDS = (
    "what which how why when where who whom whose is are was were do does did can could "
    "has have had should would will there any anyone the a an some been be being"
)
QUESTION_FRAME = frozenset(_FRAME_WORDS.split())


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w.lower() not in STOPWORDS]


def longest_content_run(text: str) -> list[str]:
    """The longest stretch of consecutive content words (the first on a tie)."""
    best: list[str] = []
    run: list[str] = []
    for w in words(text):
        if w.lower() in STOPWORDS:
            run = []
            continue
        run.append(w)
        if len(run) > len(best):
            best = list(run)
    return best


def as_statement(text: str) -> str:
    """The question with its leading question words dropped."""
    ws = words(text)
    start = 0
    while start < len(ws) - 1 and ws[start].lower() in QUESTION_FRAME:
        start += 1
    return " ".join(ws[start:])


def variants(text: str) -> list[str]:
    """Deep-search variants of ``text`` in markvault's ``kind: text`` form."""
    out: list[str] = []
    content = content_words(text)
    if content:
        out.append("lex: " + " ".join(content))
    phrase = longest_content_run(text)
    if len(phrase) > 1 and phrase != content:
        out.append("lex: " + " ".join(phrase))
    statement = as_statement(text)
    if statement and statement != " ".join(words(text)):
        out.append("vec: " + statement)
    return out
