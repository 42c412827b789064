"""BM25 over markvault's postings: the scoring SQL for one query.

Textbook BM25 as Lucene computes it, one chunk as one document:

    score(chunk) = sum over query terms t of
        qtf(t) * ln(1 + (N - df + 0.5) / (df + 0.5))
        * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

``qtf`` is how often the query repeats the term: a long request that names "parallel"
three times is mostly about parallelism (Lucene sums repeated clauses the same way;
Robertson's k3 factor with a large k3). Leaving it out cost 0.06 nDCG@10 on CACM's
long queries (bench/eval/RESULTS.md).

The postings table (``index.py``) holds one row per (term, chunk) with the chunk's
length, sorted by term, and ``kw_stats`` the collection's N and total length.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence


def scored_sql(
    found: Mapping[str, tuple[int, int]], terms: Sequence[str], k1: float, b: float
) -> str:
    """SQL yielding (chunk_id, score) for every chunk holding any of ``found``'s terms.

    ``found``: term -> (term id, document frequency) for the query terms the index
    knows; ``terms``: the query's ranking terms with their repeats.
    """
    qtf = Counter(terms)
    # Term ids go into the SQL as literals (they are integers from our own table) so
    # that DuckDB prunes the term-sorted postings by their row groups' min/max.
    ids = ", ".join(str(t) for t, _ in found.values())
    values = ", ".join(f"({t}, {df}, {qtf[term] or 1})" for term, (t, df) in found.items())
    return f"""
        SELECT p.chunk_id, sum(
            q.qtf * ln((st.n - q.df + 0.5) / (q.df + 0.5) + 1)
            * p.tf * ({k1} + 1)
            / (p.tf + {k1} * (1 - {b} + {b} * p.dl / st.avgdl))
        ) AS score
        FROM postings p JOIN (VALUES {values}) q(termid, df, qtf) USING (termid),
             (SELECT n, total / greatest(n, 1) AS avgdl FROM kw_stats) st
        WHERE p.termid IN ({ids})
        GROUP BY p.chunk_id
    """
