"""What a long query costs: the terms that carry it, and how their postings are read.

People paste paragraphs, code and logs into search (up to ``search.MAX_QUERY_CHARS``).
Read and scored term by term, such a query cost time that grew with its length (on a
1,400-note collection: 75 ms for 4 words, 14.6 s for 218, 58 s for 342). Two rules
keep the keyword stage bounded by a short query's cost:

- **The terms that carry it.** BM25 ranks by the sum of the query terms' weights,
  each ``qtf * idf`` times a saturating factor below ``k1 + 1``: a term's weight bounds
  what it can add to any score (the bound MaxScore prunes with, Turtle and Flood,
  1995). So a query's strongest ``MAX_TERMS`` distinct terms by that bound decide its
  ranking, and the others - the frequent words a paragraph repeats, the rarest of which
  still come first - are left out, as Lucene's MoreLikeThis turns a whole document
  into a query of its 25 best terms by tf-idf. Below ``MAX_TERMS`` distinct terms
  (every query of the evaluation sets but one, bench/eval/RESULTS.md) nothing changes.
- **One read of the postings.** A term's postings are read with an equality on the
  term-sorted table (a few row groups each), which for a few terms beats one ``IN``
  over all of them (that reads every row group between the smallest and largest term
  id). Each such read costs a statement branch, though, and past ``UNION_TERMS`` terms
  one ``IN`` scan costs less than the branches (measured on Cranfield: 30 terms as
  branches about 9x one scan, 300 about 19x).

- **A bound on what is looked up.** Finding each term's weight is itself a read of the
  vocabulary; a 4,000-character paste of Chinese is ~4,000 distinct bigrams, and looking
  them all up took 3.7x a 4-word query's keyword stage. A query's ``MAX_LOOKUP`` distinct
  terms that it repeats most (ties: the first written) are looked up, the rest left
  out before, as Lucene's MoreLikeThis reads at most its first 5,000 tokens. No query
  short of a pasted page has that many (English prose: ~170 in 600 words).

Phrases, required and excluded words are never dropped (they decide what matches, not
only how it ranks); their presence is read the same way (``query.presence_sql``), up to
``query.MAX_SYNTAX`` of them: a query with more is pasted text, read as words.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

MAX_TERMS = 32  # distinct ranking terms of one query
MAX_LOOKUP = 1024  # distinct terms of one query looked up in the vocabulary
UNION_TERMS = 8  # up to this many terms, one equality read each; past it, one IN


def looked_up(terms: Sequence[str]) -> list[str]:
    """``terms`` (repeats kept) cut to the ``MAX_LOOKUP`` distinct terms repeated most
    (ties: the first written), in their order; ``terms`` itself below that."""
    counts = Counter(terms)  # in first-written order; most_common's sort keeps it for ties
    if len(counts) <= MAX_LOOKUP:
        return list(terms)
    keep = {t for t, _ in counts.most_common(MAX_LOOKUP)}
    return [t for t in terms if t in keep]


def strongest(
    found: Mapping[str, tuple[int, int, int]], terms: Sequence[str], chunks: int
) -> dict[str, tuple[int, int, int]]:
    """``found`` (term -> (term id, chunks with it, notes with it)) cut to the
    ``MAX_TERMS`` terms whose BM25 weight ``qtf * idf`` is highest (ties: the query's
    order), in ``found``'s order. ``terms``: the ranking terms with their repeats;
    ``chunks``: how many chunks the index holds (the IDF's N)."""
    if len(found) <= MAX_TERMS:
        return dict(found)
    qtf = Counter(terms)
    n = max(chunks, 1)

    def weight(item: tuple[int, tuple[str, tuple[int, int, int]]]) -> tuple[float, int]:
        at, (term, (_, df, _)) = item
        return (-(qtf[term] or 1) * math.log((n - df + 0.5) / (df + 0.5) + 1), at)

    ranked = sorted(enumerate(found.items()), key=weight)[:MAX_TERMS]
    keep = {term for _, (term, _) in ranked}
    return {term: v for term, v in found.items() if term in keep}


def term_reads(ids: Iterable[int], columns: str) -> str:
    """SQL yielding ``columns`` of the postings of the term ``ids``: one equality read
    per term up to ``UNION_TERMS`` terms, one ``IN`` read past it. Term ids are
    literals (integers from our own table) so that DuckDB prunes the term-sorted
    postings by their row groups' min/max."""
    listed = [int(i) for i in ids]
    if not listed:
        return f"SELECT {columns} FROM postings WHERE FALSE"
    if len(listed) <= UNION_TERMS:
        return " UNION ALL ".join(
            f"SELECT {columns} FROM postings WHERE termid = {i}" for i in listed
        )
    return f"SELECT {columns} FROM postings WHERE termid IN ({', '.join(map(str, listed))})"
