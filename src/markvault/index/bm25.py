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
length (``chunks.note_len``), ``N``, ``df`` and ``avgdl`` count notes. That finds evidence a
note spreads over its sections, such as a conversation whose every turn is a chunk,
where the best chunk alone has a name and little else. But length normalization then
buries the one section of a long note that answers the query under short notes that
share a few of its words. So each chunk is also scored on its own, and the two are
combined as in passage retrieval (Callan, SIGIR 1994: document and best-passage
evidence together beat either): a chunk's score is

    NOTE_WEIGHT * note / best note  +  (1 - NOTE_WEIGHT) * chunk / best chunk

(times the best note score, to keep BM25's scale), so a note ranks by its best chunk's
score and shows that chunk. Measured per set in bench/eval/RESULTS.md: notes alone
lost 0.10 nDCG@10 on long notes, chunks alone 0.06 on conversations.

**What the person said counts on its own.** In a session's transcript the user's turns
(``chunks.user_turn``: sessions/turns.py) are where people state their own facts, plans
and preferences; the assistant's long answers share the query's words with every other
session on the topic. A note the person wrote by hand (one with no user turn anywhere:
not a transcript) is their own words throughout. So when the candidates hold a user
turn, a note's score is raised by a share of itself, the more as its best chunk of the
person's words (``persons_words``) matches the query:

    * (1 + USER_TURN_WEIGHT * that chunk's BM25 / the best such chunk's)

Candidates without a user turn (a vault without imported sessions, or a query that
matches none of what people said in them) keep their scores exactly. A share of the
note's own score, not of the top hit's (as time_signal.boost): a session that matches
little elsewhere cannot pass a note that matches well. Measured on LongMemEval, whose
gold is mostly what the user said, and on a vault of hand-written notes and sessions on
the same topics, where counting only the user turns had buried the notes
(bench/eval/RESULTS.md).

In two steps, so that a query costs little more than scoring chunks: the best
``NOTE_POOL`` chunks by their own BM25 (``scored_sql``, through filters and checks), then
their notes as wholes from those chunks' postings (``pool_sql``, ``note_scores``), then
both combined (``rerank``), keeping at most ``CHUNKS_PER_NOTE`` chunks of a note so that
one with hundreds of matching chunks does not crowd the others out of a limited fetch.
A process's first search reads the first two steps' postings in one statement
(``top_pool_sql``): the scores and the pool's postings from one read of the terms'.

The postings table (``keyword.py``) holds one row per (term, chunk) with the chunk's
length, sorted by term; ``kw_stats`` the chunks' count and total length.

A process that searches again scores in numpy instead (``postings_sql``, ``top_chunks``,
``pool_rows``): its query terms' postings are read once, a term at a time (an equality
on the term-sorted table reads a few row groups; ``IN`` over several terms scanned more),
and both steps are computed from those arrays with the same formula in the same order,
so scores differ from the SQL's only by the order of a sum's terms (tests compare both).
That halves the postings stage of a warm query (bench/bench_query.py), but importing
numpy costs more than a one-shot search takes, so a process's first search stays in SQL.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from markvault.search.query_cost import term_reads

if TYPE_CHECKING:
    import numpy as np

CHUNKS_PER_NOTE = 3
NOTE_WEIGHT = 0.5
NOTE_POOL = 200  # chunks ranked on their own, whose notes are then scored as wholes
USER_TURN_WEIGHT = 0.5


def _weight(df: str, n: str) -> str:
    """A term's IDF times its query frequency ``q.qtf``."""
    return f"q.qtf * ln(({n} - {df} + 0.5) / ({df} + 0.5) + 1)"


def _term(weight: str, tf: str, dl: str, avgdl: str, k1: float, b: float) -> str:
    """One term's BM25 contribution, given its ``_weight``. ``dl`` is made a double before
    ``b`` multiplies it: a decimal literal times an integer is decimal arithmetic and a
    cast per posting (~1 ms of a first search on big), for the same double (``b`` = 0.75:
    the product is exact either way)."""
    return (
        f"{weight} * {tf} * ({k1} + 1) / ({tf} + {k1} * (1 - {b} + {b} * {dl}::DOUBLE / {avgdl}))"
    )


def _query(found: Mapping[str, tuple[int, int, int]], terms: Sequence[str]) -> str:
    """``VALUES`` rows (term id, chunks with it, query term frequency)."""
    qtf = Counter(terms)
    return ", ".join(f"({v[0]}, {v[1]}, {qtf[term] or 1})" for term, v in found.items())


def scored_sql(
    found: Mapping[str, tuple[int, int, int]],
    terms: Sequence[str],
    k1: float,
    b: float,
    *,
    condition: str = "",
    postings: str | None = None,
) -> str:
    """SQL yielding ``(chunk_id, score)``, the chunk's own BM25, for chunks holding any
    of ``found``'s terms and meeting ``condition``.

    ``found``: term -> (term id, chunks with it, notes with it) for the query terms the
    index knows; ``terms``: the query's ranking terms with their repeats; ``condition``:
    SQL over ``chunk_id`` (``query.presence_sql``); ``postings``: SQL yielding their
    ``(termid, chunk_id, tf, dl)``, when read already (``top_pool_sql``).
    """
    where = f"WHERE {condition}" if condition else ""
    # Each term's weight is computed once, beside the query terms, not on each of its
    # postings (hundreds of thousands for a common word): the same expression in the
    # same order, so the same doubles, at ~0.65x the cost of scoring a query.
    chunk = _term("q.w", "p.tf", "p.dl", "q.avgdl", k1, b)
    return f"""
        SELECT * FROM (
            SELECT p.chunk_id, sum({chunk}) AS score
            FROM ({postings or _term_postings(found, "termid, chunk_id, tf, dl")}) p JOIN (
                SELECT q.termid, {_weight("q.df", "st.n")} AS w, st.avgdl
                FROM (VALUES {_query(found, terms)}) q(termid, df, qtf),
                     (SELECT n, total / greatest(n, 1) AS avgdl FROM kw_stats) st
            ) q USING (termid)
            GROUP BY p.chunk_id
        ) {where}
    """


def _term_postings(found: Mapping[str, tuple[int, int, int]], columns: str) -> str:
    """SQL yielding ``columns`` of the postings of ``found``'s terms
    (``query_cost.term_reads``: an equality per term for a few, one ``IN`` for many)."""
    return term_reads((v[0] for v in found.values()), columns)


def top_pool_sql(
    found: Mapping[str, tuple[int, int, int]],
    terms: Sequence[str],
    params: tuple[float, float, int],
    condition: str = "",
) -> str:
    """``scored_sql``'s best ``limit`` chunks and what ``pool_sql`` would then read, in
    one statement that reads the query terms' postings once (a process's first search
    pays DuckDB's first read of them, and planning a statement costs it ~1-2 ms):
    rows ``(kind, a, b, c)``, read by ``split_top_pool``. ``params``: (k1, b, limit)."""
    k1, b, limit = params
    postings = _term_postings(found, "termid, chunk_id, tf, dl")
    scored = scored_sql(found, terms, k1, b, condition=condition, postings="SELECT * FROM p")
    return f"""
        WITH p AS MATERIALIZED ({postings}),
        s AS MATERIALIZED (
            SELECT chunk_id, score FROM ({scored})
            ORDER BY score DESC, chunk_id LIMIT {int(limit)}
        )
        SELECT 0, chunk_id, score, NULL FROM s
        UNION ALL SELECT 1, chunk_id, termid, tf FROM p SEMI JOIN s USING (chunk_id)
        UNION ALL SELECT 2, (SELECT count(*) FROM notes), NULL, total FROM kw_stats
    """


def split_top_pool(
    found: Mapping[str, tuple[int, int, int]], rows: Sequence[tuple[Any, ...]]
) -> tuple[list[tuple[int, float]], tuple[list[tuple[int, int, int]], int, int]]:
    """``top_pool_sql``'s rows as (the chunks and scores best first, as ``ORDER BY score
    DESC, chunk_id`` gives them; (their postings ``(chunk_id, termid, tf)`` a term at a
    time in ``found``'s order, as ``pool_sql`` gives them, the note count, the chunks'
    total length))."""
    ranked = [(int(r[1]), float(r[2])) for r in rows if r[0] == 0]
    ranked.sort(key=lambda r: (-r[1], r[0]))
    at = {v[0]: i for i, v in enumerate(found.values())}
    postings = [(int(r[1]), int(r[2]), int(r[3])) for r in rows if r[0] == 1]
    postings.sort(key=lambda r: (at[r[1]], r[0]))
    stats = [r for r in rows if r[0] == 2]
    notes, total = (int(stats[0][1]), int(stats[0][3])) if stats else (0, 0)
    return ranked, (postings, notes, total)


def pool_sql(found: Mapping[str, tuple[int, int, int]], chunk_ids: Sequence[int]) -> str:
    """SQL yielding ``(chunk_id, termid, tf, path, note_len, notes, total, user_turn)``
    for the query terms in ``chunk_ids``: what ``note_scores`` needs to score their notes
    as wholes (the note count and the total length, for IDF and average length), and
    whether the chunk is a user's turn (``rerank``)."""
    pool = ", ".join(str(int(c)) for c in chunk_ids)
    # Both filtered on their own first: a join over all chunks would read every path.
    return f"""
        WITH c AS MATERIALIZED (
            SELECT id, path, note_len, user_turn FROM chunks WHERE id IN ({pool})
        ),
        p AS MATERIALIZED (
            SELECT chunk_id, termid, tf FROM ({_term_postings(found, "chunk_id, termid, tf")})
            WHERE chunk_id IN ({pool})
        )
        SELECT p.chunk_id, p.termid, p.tf, c.path, c.note_len,
               (SELECT count(*) FROM notes), (SELECT total FROM kw_stats), c.user_turn
        FROM p JOIN c ON c.id = p.chunk_id
    """


def note_scores(
    found: Mapping[str, tuple[int, int, int]],
    terms: Sequence[str],
    pool: Sequence[tuple[Any, ...]],
    k1: float,
    b: float,
) -> dict[int, tuple[str, float]]:
    """chunk id -> (note, the note's BM25 as a whole) for the chunks in ``pool`` (rows of
    ``pool_sql``). A note's term frequencies sum over its chunks in the pool: the best
    chunks of the query, so all of a note's matching chunks unless it has very many."""
    if not pool:
        return {}
    qtf = Counter(terms)
    by_id = {v[0]: (qtf[term] or 1, v[2]) for term, v in found.items()}
    notes, total = pool[0][5], pool[0][6]
    avgdl = total / max(notes, 1)
    tf: Counter[tuple[str, int]] = Counter()
    length: dict[str, int] = {}
    for _, termid, count, path, note_len, *_ in pool:
        tf[(path, termid)] += count
        length[path] = note_len
    score: dict[str, float] = {}
    for (path, termid), n in tf.items():
        weight, ndf = by_id[termid]
        idf = math.log((notes - ndf + 0.5) / (ndf + 0.5) + 1)
        norm = n + k1 * (1 - b + b * length[path] / avgdl)
        score[path] = score.get(path, 0.0) + weight * idf * n * (k1 + 1) / norm
    return {row[0]: (row[3], score[row[3]]) for row in pool}


def user_turns(pool: Sequence[tuple[Any, ...]]) -> set[int]:
    """The chunks of ``pool`` (rows of ``pool_sql``) that are a user's turn."""
    return {row[0] for row in pool if row[7]}


def persons_words(
    pool: Sequence[tuple[Any, ...]], transcripts: Callable[[set[str]], set[str]]
) -> set[int]:
    """The chunks of ``pool`` that are what the person said or wrote: its user turns and,
    when it holds one, every chunk of a note that is not a transcript (no user turn
    anywhere in it: ``transcripts`` says which of the notes it is asked about are), which
    the person wrote by hand. Only the notes without a user turn in ``pool`` are asked
    about, and only when it holds one."""
    user = user_turns(pool)
    if not user:
        return user
    said_in = {row[3] for row in pool if row[0] in user}  # transcripts, surely
    asked = {row[3] for row in pool} - said_in
    written = asked - transcripts(asked) if asked else set()
    return user | {row[0] for row in pool if row[3] in written}


def rerank(
    rows: Sequence[tuple[int, float]],
    notes: Mapping[int, tuple[str, float]],
    said: Collection[int] = (),
) -> list[tuple[int, float]]:
    """Chunks with their own BM25 (``rows``) scored with their note's too (``notes``, from
    ``note_scores``) and their note's best chunk of the person's own words (``said``,
    from ``persons_words``; see the module docstring), best first, at most
    ``CHUNKS_PER_NOTE`` of a note."""
    best_note = max((s for _, s in notes.values()), default=0.0)
    best_chunk = max((own for _, own in rows), default=0.0)
    scale = best_note / best_chunk if best_chunk > 0 else 0.0
    best_said_in: dict[str, float] = {}  # each note's best chunk of the person's words
    for cid, own in rows:
        if cid in said and cid in notes:
            path = notes[cid][0]
            best_said_in[path] = max(best_said_in.get(path, 0.0), own)
    best_said = max(best_said_in.values(), default=0.0)
    lift = USER_TURN_WEIGHT / best_said if best_said > 0 else 0.0
    combined = []
    for cid, own in rows:
        path, note = notes.get(cid, (f"#{cid}", 0.0))
        score = NOTE_WEIGHT * note + (1 - NOTE_WEIGHT) * own * scale
        if lift:
            score *= 1 + lift * best_said_in.get(path, 0.0)
        combined.append((score, own, cid, path))
    combined.sort(key=lambda r: (-r[0], -r[1], r[2]))
    shown: Counter[str] = Counter()
    out: list[tuple[int, float]] = []
    for score, _, cid, path in combined:
        shown[path] += 1
        if shown[path] <= CHUNKS_PER_NOTE:
            out.append((cid, score))
    return out


def postings_sql(found: Mapping[str, tuple[int, int, int]], condition: str = "") -> str:
    """SQL yielding ``(termid, chunk_id, tf, dl)``: the postings of ``found``'s terms, of
    chunks meeting ``condition`` (as in ``scored_sql``)."""
    union = _term_postings(found, "termid, chunk_id, tf, dl")
    return f"SELECT * FROM ({union})" + (f" WHERE {condition}" if condition else "")


def top_chunks(
    found: Mapping[str, tuple[int, int, int]],
    terms: Sequence[str],
    rows: Mapping[str, np.ndarray],
    stats: tuple[int, int],
    params: tuple[float, float, int, Any],
) -> list[tuple[int, float]]:
    """``scored_sql``'s chunks ordered as ``ORDER BY score DESC, chunk_id`` and cut to
    ``limit``, from ``rows`` (``postings_sql`` fetched as arrays), without the chunks in
    ``excluded`` (sorted). ``stats``: the chunks' count and total length (``kw_stats``);
    ``params``: (k1, b, limit, excluded)."""
    import numpy as np

    k1, b, limit, excluded = params
    n, total = stats
    avgdl = total / max(n, 1)
    qtf = Counter(terms)
    weight = {
        v[0]: (qtf[term] or 1) * math.log((n - v[1] + 0.5) / (v[1] + 0.5) + 1)
        for term, v in found.items()
    }
    known = np.array(sorted(weight), dtype=np.int64)
    w = np.array([weight[t] for t in known.tolist()])[np.searchsorted(known, rows["termid"])]
    tf, dl = rows["tf"].astype(np.float64), rows["dl"]
    # The SQL's own order of operations, so each term's share is the same double.
    part = w * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    ids, scores = _sum_by_chunk(rows["chunk_id"], part, n)
    if len(excluded):  # sorted: a binary search each, not isin's sort of both
        at = np.minimum(np.searchsorted(excluded, ids), len(excluded) - 1)
        keep = np.asarray(excluded)[at] != ids
        ids, scores = ids[keep], scores[keep]
    if limit < len(ids):
        # Everything tied with the limit-th score stays, for chunk ids to break the tie.
        cut = np.partition(-scores, limit - 1)[limit - 1]
        keep = -scores <= cut
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:limit]
    return list(zip(ids[order].tolist(), scores[order].tolist(), strict=True))


def _sum_by_chunk(chunk: np.ndarray, part: np.ndarray, chunks: int) -> tuple[Any, Any]:
    """(chunk ids ascending, the sum of ``part`` over each one's rows), summed in row
    order. Ids are dense (chunks are numbered as they are stored), so a count per id
    up to the largest is cheap for many rows; for fewer than a tenth as many rows as
    ids (most queries' terms), ``np.unique``'s sort is cheaper (0.04 against 0.27 ms
    for 1,000 rows among 130k ids). Both sum each id's rows in row order."""
    import numpy as np

    if (
        len(chunk) == 0
        or chunk.min() < 0
        or chunk.max() > 16 * chunks + 100_000
        or len(chunk) * 10 < chunk.max()
    ):
        ids, at = np.unique(chunk, return_inverse=True)
        return ids, np.bincount(at, weights=part, minlength=len(ids))
    ids = np.flatnonzero(np.bincount(chunk))
    return ids, np.bincount(chunk, weights=part)[ids]


def pool_rows(
    rows: Mapping[str, np.ndarray],
    chunk_ids: Sequence[int],
    notes: Mapping[int, tuple[str, int, bool]],
    stats: tuple[int, int],
) -> list[tuple[Any, ...]]:
    """``pool_sql``'s rows from ``rows`` (``postings_sql`` as arrays): the postings of
    ``chunk_ids`` with each chunk's (path, note length, user turn) from ``notes``;
    ``stats``: the note count and the chunks' total length."""
    import numpy as np

    chunk = rows["chunk_id"]
    mine = np.isin(chunk, np.asarray(chunk_ids, dtype=chunk.dtype))
    out: list[tuple[Any, ...]] = []
    for cid, termid, tf in zip(
        chunk[mine].tolist(),
        rows["termid"][mine].tolist(),
        rows["tf"][mine].tolist(),
        strict=True,
    ):
        if cid in notes:
            path, note_len, user_turn = notes[cid]
            out.append((cid, termid, tf, path, note_len, stats[0], stats[1], user_turn))
    return out
