"""BM25 over markvault's postings: the scoring SQL for one query.

Textbook BM25 as Lucene computes it:

    score(d) = sum over query terms t of
        qtf(t) * ln(1 + (N - df + 0.5) / (df + 0.5))
        * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

``qtf`` is how often the query repeats the term: a long request that names "parallel"
three times is mostly about parallelism (Lucene sums repeated clauses the same way;
Robertson's k3 factor with a large k3). Leaving it out cost 0.06 nDCG@10 on CACM's
long queries (bench/eval/RESULTS.md).

**A note is ranked by its own evidence and its best passage's.** Search ranks notes,
so each note is scored as one BM25 document: ``tf`` sums over its chunks, ``dl`` is its
length (``notes.kw_len``), ``N``, ``df`` and ``avgdl`` count notes. That finds evidence a
note spreads over its sections, such as a conversation whose every turn is a chunk,
where the best chunk alone has a name and little else. But length normalization then
buries the one section of a long note that answers the query under short notes that
share a few of its words. So each chunk is also scored on its own, and the two are
combined as in passage retrieval (Callan, SIGIR 1994: document and best-passage
evidence together beat either): a chunk's score is

    NOTE_WEIGHT * note / best note  +  (1 - NOTE_WEIGHT) * chunk / best chunk

(times the best note score, to keep BM25's scale), so a note ranks by its best chunk's
score and shows that chunk. Measured per set in bench/eval/RESULTS.md: notes alone
lost 0.10 nDCG@10 on long notes, chunks alone 0.08 on conversations. The query yields
at most ``CHUNKS_PER_NOTE`` chunks per note, so a note with hundreds of matching chunks
does not crowd others out of a limited fetch.

The postings table (``index.py``) holds one row per (term, chunk) with the chunk's
length, sorted by term; ``kw_stats`` the chunks' count and total length.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

CHUNKS_PER_NOTE = 3
NOTE_WEIGHT = 0.5


def _term(df: str, n: str, tf: str, dl: str, avgdl: str, k1: float, b: float) -> str:
    """One term's BM25 contribution, weighted by its query frequency ``q.qtf``."""
    return (
        f"q.qtf * ln(({n} - {df} + 0.5) / ({df} + 0.5) + 1) * {tf} * ({k1} + 1) "
        f"/ ({tf} + {k1} * (1 - {b} + {b} * {dl} / {avgdl}))"
    )


def scored_sql(
    found: Mapping[str, tuple[int, int]],
    terms: Sequence[str],
    k1: float,
    b: float,
    *,
    per_note: bool = False,
    condition: str = "",
) -> str:
    """SQL yielding ``(chunk_id, score, chunk_score)`` for chunks holding any of ``found``.

    ``found``: term -> (term id, chunk document frequency) for the query terms the index
    knows; ``terms``: the query's ranking terms with their repeats; ``condition``: SQL
    over ``chunk_id`` a chunk must meet (``query.presence_sql``). ``score`` is the
    chunk's own BM25, or with ``per_note`` combined with its note's (module docstring).
    """
    qtf = Counter(terms)
    # Term ids go into the SQL as literals (they are integers from our own table) so
    # that DuckDB prunes the term-sorted postings by their row groups' min/max.
    ids = ", ".join(str(t) for t, _ in found.values())
    values = ", ".join(f"({t}, {df}, {qtf[term] or 1})" for term, (t, df) in found.items())
    where = f"WHERE {condition}" if condition else ""
    chunk = _term("q.df", "st.n", "p.tf", "p.dl", "st.avgdl", k1, b)
    if not per_note:
        return f"""
            SELECT * FROM (
                SELECT p.chunk_id, sum({chunk}) AS score, sum({chunk}) AS chunk_score
                FROM postings p JOIN (VALUES {values}) q(termid, df, qtf) USING (termid),
                     (SELECT n, total / greatest(n, 1) AS avgdl FROM kw_stats) st
                WHERE p.termid IN ({ids})
                GROUP BY p.chunk_id
            ) {where}
        """
    note = _term("d.df", "st.notes", "t.tf", "n.kw_len", "st.note_avgdl", k1, b)
    return f"""
        WITH q(termid, df, qtf) AS (VALUES {values}),
        st AS (
            SELECT n, total / greatest(n, 1) AS avgdl, notes,
                   total / greatest(notes, 1) AS note_avgdl
            FROM kw_stats, (SELECT count(*) AS notes FROM notes)
        ),
        hits AS (
            SELECT p.chunk_id, p.termid, p.tf, p.dl, c.path
            FROM postings p JOIN chunks c ON c.id = p.chunk_id
            WHERE p.termid IN ({ids})
        ),
        note_tf AS (SELECT path, termid, sum(tf) AS tf FROM hits GROUP BY path, termid),
        note_df AS (SELECT termid, count(*) AS df FROM note_tf GROUP BY termid),
        note_score AS (
            SELECT t.path, sum({note}) AS score
            FROM note_tf t JOIN note_df d USING (termid) JOIN q USING (termid)
                 JOIN notes n USING (path), st
            GROUP BY t.path
        ),
        chunk_score AS (
            SELECT p.chunk_id, any_value(p.path) AS path, sum({chunk}) AS chunk_score
            FROM hits p JOIN q USING (termid), st
            GROUP BY p.chunk_id
        )
        SELECT c.chunk_id, c.chunk_score,
               {NOTE_WEIGHT} * s.score + (1 - {NOTE_WEIGHT}) * c.chunk_score
                   * max(s.score) OVER () / max(c.chunk_score) OVER () AS score
        FROM (SELECT * FROM chunk_score {where}) c JOIN note_score s USING (path)
        QUALIFY row_number() OVER (PARTITION BY c.path ORDER BY c.chunk_score DESC, c.chunk_id)
            <= {CHUNKS_PER_NOTE}
    """
