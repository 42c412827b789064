"""Keyword search: our own postings, kept up to date edit by edit, and BM25 over them.

Chunks are tokenized in Python (``text.chunk_words``) and their terms counted where they
are read (``sync.note_terms``); only those counts are stored: ``rebuild`` sorts them into
postings and a vocabulary in SQL, and BM25 is
computed over only the query terms' postings (in SQL, or in numpy in a process that
searches again: bm25.py), which is about three times faster than ``match_bm25``'s full
scan. Edits update postings, document frequencies and
collection statistics in place (``remove_postings``, ``add_postings``); a large change
is faster rebuilt.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from markvault.index import bm25
from markvault.index.filters import filters_sql, sql_string
from markvault.index.posting_rows import (
    StagedPostings,
    counted_rows,
    insert_rows,
    record_postings,
    split_rows,
)
from markvault.index.reads import NoteReads
from markvault.index.store import Store
from markvault.search.query_cost import MAX_TERMS, strongest
from markvault.types.search import Filters

if TYPE_CHECKING:  # a search never writes: it need not import the rows module
    from markvault.index.rows import NoteRows

# Changes up to this many chunks (or this share of all) update the keyword index in
# place; larger ones rebuild it. Appended rows are re-sorted past these limits.
KW_DELTA_MIN = 5_000
KW_DELTA_SHARE = 0.2
KW_COMPACT_MIN_ROWS = 200_000
KW_REBUILD_SLICE = 15_000  # chunks whose tokens a rebuild groups at a time
# An edit of up to this many chunks moves its postings as SQL literals, a larger one as
# Arrow tables (importing pyarrow costs ~0.25 s; the literals ~2-5 µs a row).
KW_LITERAL_CHUNKS = 500
KW_COMPACT_SHARE = 0.1
# Up to this many chunks of expired or superseded notes are dropped from results after
# ranking; more, and the ranking query joins each candidate with its note instead.
EXPIRED_INLINE_MAX = 20_000
VOCAB_INDEX = "vocab_term"
LOOKUP_LITERALS = 64  # query terms looked up in the vocabulary with IN; more, with a join
BM25_K1 = 1.2
BM25_B = 0.75


class KeywordIndex:
    """The postings, vocabulary and collection statistics, and BM25 over them."""

    def __init__(self, store: Store, reads: NoteReads) -> None:
        self.store = store
        self.con = store.con
        self.reads = reads
        self.arrays: bool | None = None  # score in numpy (True) or SQL; None: _use_arrays
        self._searched = False
        self._stats_at: tuple[int, tuple[int, int, int]] | None = None
        self._gone: tuple[tuple[int, ...], Any] | None = None  # expired ids as an array
        # The last search's vocabulary look-ups (term -> ids or None), per write: its
        # ranking terms, its conditions' words and a relaxed retry ask for the same.
        self._looked_up: tuple[int, dict[str, tuple[int, int, int] | None]] = (-1, {})
        self._staged: StagedPostings | None = None  # a first build's postings (``stage``)

    def rebuild(self) -> None:
        """Rebuild the keyword index: from the postings staged while a first build wrote
        its chunks (``stage``) when they cover every chunk, else from the chunks' token
        strings; afterwards edits update it in place (``add_postings``)."""
        staged, self._staged = self._staged, None
        with self.store.transaction():
            # The chunks' total length: the sum of their dl, which is the sum of all tf.
            total = (
                "(SELECT coalesce(sum(dl), 0) FROM (SELECT any_value(dl) AS dl FROM postings "
                "GROUP BY chunk_id))"
            )
            if staged is None or not staged.covers(self.con):
                self._postings_from_tokens()
            else:
                staged.write_postings(self.con, self.index_terms)
                total = f"{staged.tokens}::HUGEINT"  # summed as staged: no scan of postings
            for table in ("kw_stage", "kw_all", "kw_terms", "kw_notes"):
                self.con.execute(f"DROP TABLE IF EXISTS {table}")
            # Every chunk counts as a document, also one without a single token.
            self.con.execute(
                "CREATE OR REPLACE TABLE kw_stats AS SELECT "
                f"(SELECT count(*) FROM chunks) AS n, {total} AS total"
            )
            self.store.set_meta(fts_dirty="0", kw_appended="0")
        self.store.forget_tables()

    def stage(self, records: Sequence[NoteRows], chunk_ids: Sequence[int], dropped: int) -> None:
        """Keep the postings the workers counted for ``records`` (whose chunks were just
        inserted as ``chunk_ids``, ``dropped`` chunks deleted) for the coming rebuild.
        Staging starts when these are the only chunks (a first build) and stops for
        good at any deletion or any record not counted: the staged rows must then be
        exactly the chunks table's when the rebuild comes (``StagedPostings.covers``)."""
        if dropped or any(r.term_counts is None for r in records):
            self._staged = None
            return
        if not records:
            return
        if self._staged is not None and not self._staged.covers(self.con, len(chunk_ids)):
            self._staged = None  # a write was rolled back since: its rows are gone
            return
        if self._staged is None:
            row = self.con.execute("SELECT count(*) FROM chunks").fetchone()
            if not chunk_ids or (row[0] if row else 0) != len(chunk_ids):
                return
            self._staged = StagedPostings(self.con)
        self._staged.add(self.con, records, chunk_ids)

    def _postings_from_tokens(self) -> None:
        """Postings and vocabulary counted from the chunks' text (``text.chunk_words``)
        and grouped in SQL, when no first build staged them (a large change to a built
        index, an interrupted build)."""
        # The chunks are tokenized a slice at a time (the slice's text in memory, not
        # the vault's), each row with its note's number for the note frequencies.
        row = self.con.execute("SELECT count(*), min(id), max(id) FROM chunks").fetchone()
        count, low, high = (int(row[0]), row[1], row[2]) if row and row[0] else (0, 0, 0)
        step = (high - low) // max(1, -(-count // KW_REBUILD_SLICE)) + 1
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE kw_notes AS SELECT id AS chunk_id, "
            "dense_rank() OVER (ORDER BY path)::INTEGER AS note FROM chunks"
        )
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE kw_all "
            "(chunk_id BIGINT, note INTEGER, term VARCHAR, tf INTEGER)"
        )
        for first in range(low, high + 1, step):
            rows = self.con.execute(
                """SELECT c.id, k.note, n.title, c.context, c.text
                FROM chunks c JOIN kw_notes k ON k.chunk_id = c.id
                     JOIN notes n ON n.path = c.path
                WHERE c.id >= ? AND c.id < ?""",
                [first, first + step],
            ).fetchall()
            if rows:  # none in a new index: its rebuild at open then imports no pyarrow
                insert_rows(self.con, "kw_all", counted_rows(rows))
        # df counts chunks, ndf notes (bm25.py scores both).
        self.con.execute(
            """CREATE OR REPLACE TEMP TABLE kw_terms AS
            SELECT term, sum(n)::INTEGER AS df, count(*)::INTEGER AS ndf
            FROM (SELECT term, count(*) AS n FROM kw_all GROUP BY term, note)
            GROUP BY term"""
        )
        # The term dictionary and one row per (term, chunk) with the chunk's length,
        # both sorted by term so that a query reads only its terms' row groups.
        self.con.execute(
            """CREATE OR REPLACE TABLE vocab AS
            SELECT term, (row_number() OVER (ORDER BY term))::INTEGER AS termid, df, ndf
            FROM kw_terms ORDER BY term"""
        )
        self.index_terms()
        self.con.execute(
            """CREATE OR REPLACE TABLE postings AS
            SELECT v.termid, k.chunk_id, k.tf, s.dl
            FROM kw_all k JOIN vocab v USING (term) JOIN (
                SELECT chunk_id, sum(tf)::INTEGER AS dl FROM kw_all GROUP BY chunk_id
            ) s USING (chunk_id)
            ORDER BY v.termid, k.chunk_id"""
        )

    def index_terms(self) -> None:
        """Index the vocabulary by term: a query's terms are then found in a fraction of a
        millisecond, where a scan of the compressed term column takes milliseconds."""
        self.con.execute(f"CREATE INDEX IF NOT EXISTS {VOCAB_INDEX} ON vocab (term)")

    def terms_indexed(self) -> bool:
        """Whether the vocabulary has its term index (an index built before it had none)."""
        if not self.store.has_table("vocab"):
            return True
        row = self.con.execute(
            f"SELECT count(*) FROM duckdb_indexes() WHERE index_name = '{VOCAB_INDEX}'"
        ).fetchone()
        return bool(row and row[0])

    def delta_fits(self, changed_chunks: int) -> bool:
        """Whether a change is small enough to apply to the keyword index in place; a
        large one (a first build, a big checkout) is faster rebuilt."""
        if not self.store.has_table("kw_stats") or self.store.meta().get("fts_dirty") == "1":
            return False
        row = self.con.execute("SELECT n FROM kw_stats").fetchone()
        total = int(row[0]) if row else 0
        return changed_chunks <= max(KW_DELTA_MIN, KW_DELTA_SHARE * total)

    def remove_postings(self, chunk_ids: Sequence[int]) -> int:
        """Take chunks out of the postings, before they are deleted, and return how many:
        the vocabulary and collection statistics follow in the ``add_postings`` that is
        given that number, next in the same transaction (with the chunks put back, maybe
        none): one net update of each instead of two (an edit takes a note's chunks out
        and puts them back, and most of its terms' counts end where they were)."""
        self._staged = None  # staged rows no longer match the chunks
        if not chunk_ids:
            return 0
        # The chunks' terms are the postings rows the delete returns: postings are sorted
        # by term, so finding a chunk's rows there scans the whole table (~45 ms at 8.4M
        # rows), once. A note's rows go back in as text, not Arrow: importing pyarrow
        # and numpy costs a one-note edit more than its writes (store.rows).
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE kw_old "
            "(chunk_id BIGINT, path VARCHAR, term VARCHAR, tf INTEGER)"
        )
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE kw_gone (chunk_id BIGINT, termid INTEGER, tf INTEGER)"
        )
        wanted = ", ".join(str(int(i)) for i in chunk_ids)
        delete = f"DELETE FROM postings WHERE chunk_id IN ({wanted}) RETURNING chunk_id, termid, tf"
        if len(chunk_ids) > KW_LITERAL_CHUNKS:
            insert_rows(self.con, "kw_gone", self.con.execute(delete).to_arrow_table())
        elif rows := self.con.execute(delete).fetchall():
            columns = dict(zip(("chunk_id", "termid", "tf"), zip(*rows, strict=True), strict=True))
            self.con.execute(f"INSERT INTO kw_gone BY NAME {split_rows(columns)}")
        self.con.execute(
            f"""INSERT INTO kw_old SELECT g.chunk_id, c.path, v.term, g.tf
            FROM kw_gone g JOIN vocab v USING (termid)
                 JOIN (SELECT id, path FROM chunks WHERE id IN ({wanted})) c
                 ON c.id = g.chunk_id"""
        )
        self.con.execute("DROP TABLE kw_gone")
        return len(chunk_ids)

    def add_postings(
        self, records: Sequence[NoteRows], chunk_ids: Sequence[int], removed: int = 0
    ) -> None:
        """Put the chunks of ``records``, just inserted as ``chunk_ids``, into the keyword
        index, from the term counts their worker made (``NoteRows.term_counts``, as a
        first build's), and update document frequencies and the collection statistics
        by what this and the ``remove_postings`` before it took out (``removed``: what it
        returned) and put in."""
        self._staged = None  # staged rows no longer match the chunks
        if not chunk_ids and not removed:
            return
        if any(r.term_counts is None for r in records):  # not counted: rebuild at the end
            self.store.set_meta(fts_dirty="1")
            return
        if not removed:  # none taken out: nothing to subtract
            self.con.execute(
                "CREATE OR REPLACE TEMP TABLE kw_old "
                "(chunk_id BIGINT, path VARCHAR, term VARCHAR, tf INTEGER)"
            )
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE kw_new "
            "(chunk_id BIGINT, path VARCHAR, term VARCHAR, tf INTEGER)"
        )
        postings = record_postings(records, chunk_ids)
        if len(chunk_ids) > KW_LITERAL_CHUNKS:
            insert_rows(self.con, "kw_new", postings)
        elif postings["chunk_id"]:
            self.con.execute(f"INSERT INTO kw_new BY NAME {split_rows(postings)}")
        if chunk_ids:
            wanted = ", ".join(str(int(i)) for i in chunk_ids)
            self.con.execute(
                f"""UPDATE kw_new SET path = c.path
                FROM (SELECT id, path FROM chunks WHERE id IN ({wanted})) c
                WHERE c.id = kw_new.chunk_id"""
            )
        self._apply_delta(len(chunk_ids), removed)

    def _apply_delta(self, added: int, removed: int) -> None:
        """Apply ``kw_new`` (the postings of ``added`` chunks put in) and ``kw_old`` (of
        ``removed`` chunks taken out) to the vocabulary, the postings and the statistics."""
        self.con.execute(
            """INSERT INTO vocab
            SELECT term, (SELECT coalesce(max(termid), 0) FROM vocab)
                         + row_number() OVER (ORDER BY term), 0, 0
            FROM (SELECT DISTINCT term FROM kw_new) WHERE term NOT IN (SELECT term FROM vocab)"""
        )
        # df counts chunks, ndf notes; whole notes are taken out and put back, so a
        # term's ndf moves by the notes that had it and the notes that have it now.
        self.con.execute(
            """UPDATE vocab SET df = vocab.df + d.n, ndf = vocab.ndf + d.notes
            FROM (SELECT term, sum(n) AS n, sum(notes) AS notes FROM (
                    SELECT term, count(*) AS n, count(DISTINCT path) AS notes
                    FROM kw_new GROUP BY term
                    UNION ALL
                    SELECT term, -count(*), -count(DISTINCT path) FROM kw_old GROUP BY term)
                  GROUP BY term HAVING sum(n) <> 0 OR sum(notes) <> 0) d
            WHERE vocab.term = d.term"""
        )
        if added:
            self.con.execute(
                """INSERT INTO postings
                SELECT v.termid, k.chunk_id, k.tf, s.dl::INTEGER
                FROM kw_new k JOIN vocab v USING (term)
                     JOIN (SELECT chunk_id, sum(tf) AS dl FROM kw_new GROUP BY chunk_id) s
                     USING (chunk_id)
                ORDER BY v.termid, k.chunk_id"""
            )
        row = self.con.execute(
            "SELECT (SELECT count(*) FROM kw_new), (SELECT coalesce(sum(tf), 0) FROM kw_new), "
            "(SELECT coalesce(sum(tf), 0) FROM kw_old)"
        ).fetchone()
        rows, tokens = (int(row[0]), int(row[1]) - int(row[2])) if row else (0, 0)
        self.con.execute(f"UPDATE kw_stats SET n = n + {added - removed}, total = total + {tokens}")
        if removed:
            self.con.execute("DELETE FROM vocab WHERE df <= 0")
        self.con.execute("DROP TABLE kw_new")
        self.con.execute("DROP TABLE kw_old")
        if rows:
            appended = int(self.store.meta().get("kw_appended") or 0) + rows
            self.store.set_meta(kw_appended=str(appended))

    def needs_compaction(self) -> bool:
        """Rows added in place land unsorted at the end of postings, where no query can
        skip them; once there are many, the table is re-sorted."""
        appended = int(self.store.meta().get("kw_appended") or 0)
        if appended == 0 or not self.store.has_table("postings"):
            return False
        row = self.con.execute("SELECT count(*) FROM postings").fetchone()
        return appended > max(KW_COMPACT_MIN_ROWS, KW_COMPACT_SHARE * (row[0] if row else 0))

    def compact(self) -> None:
        """Re-sort postings and vocabulary by term (same content, faster queries)."""
        with self.store.transaction():
            self.con.execute(
                "CREATE OR REPLACE TABLE postings AS SELECT * FROM postings "
                "ORDER BY termid, chunk_id"
            )
            self.con.execute("CREATE OR REPLACE TABLE vocab AS SELECT * FROM vocab ORDER BY term")
            self.index_terms()
            self.store.set_meta(kw_appended="0")

    def dirty(self) -> bool:
        return self.store.meta().get("fts_dirty") == "1"

    def term_ids(self, terms: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        """term -> (term id, chunks with it, notes with it) for the terms the index knows."""
        if not terms:
            return {}
        # The terms go in as SQL literals, not parameters: DuckDB's Python client tries to
        # import pandas for every parameter, which costs ~0.4 ms each when it is not
        # installed (35 ms for a 40-word query); literals also let it prune the sorted
        # vocabulary's row groups. The vocabulary and the postings appear and vanish
        # together (``rebuild``), so an index with no vocabulary has no keyword index yet.
        at, known = self._looked_up
        if at != self.store.changes or len(known) > 4096:
            known = {}
            self._looked_up = (self.store.changes, known)
        unique = [t for t in dict.fromkeys(terms) if t not in known]
        if unique:
            known.update(dict.fromkeys(unique))
            known.update(self._look_up(unique))
        return {t: v for t in dict.fromkeys(terms) if (v := known[t]) is not None}

    def _look_up(self, unique: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        literals = ", ".join(sql_string(t) for t in unique)
        where = (
            f"WHERE term IN ({literals})"
            if len(unique) <= LOOKUP_LITERALS
            # A pasted page's hundreds of terms: a hash join, ~20x faster than IN's tests.
            else f"SEMI JOIN (SELECT unnest([{literals}]) AS term) q USING (term)"
        )
        rows = self.store.rows_if_table("vocab", f"SELECT term, termid, df, ndf FROM vocab {where}")
        return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows or ()}

    def bm25(
        self,
        terms: Sequence[str],
        filters: Filters,
        limit: int,
        condition: str = "",
        verify: Callable[[str], bool] | None = None,
        per_note: bool = False,
        chunk_scores: dict[int, float] | None = None,
        chunk_notes: dict[int, str] | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, BM25 score) best first, for chunks containing any of ``terms``.

        ``condition`` is SQL over ``chunk_id`` (see ``query.presence_sql``); ``verify``,
        if given, is checked on each candidate's tokens, best first, until ``limit`` pass.
        ``per_note``: the score combines the chunk's note's and its own (bm25.py);
        ``chunk_scores``, if given, receives each returned chunk's own BM25, and
        ``chunk_notes`` the note path of each chunk whose note was scored (``per_note``),
        which the hits then need not read again.
        """
        found = self.term_ids(terms)
        if not found:
            return []
        if len(found) > MAX_TERMS:  # a long query ranks by the terms that carry it
            found = strongest(found, terms, self._stats()[0])
        # With a check still to come, over-fetch: most candidates usually pass.
        fetch = limit if verify is None else max(limit * 20, 1000)
        if per_note:  # a pool of chunks whose notes are then scored as wholes
            fetch = max(fetch, bm25.NOTE_POOL)
        ranked, postings = self._ranked(found, terms, filters, fetch, condition, pool=per_note)
        if chunk_scores is not None:
            chunk_scores.update(ranked)
        if per_note and ranked:
            pool = self._pool(found, [c for c, _ in ranked], postings)
            if chunk_notes is not None:
                chunk_notes.update((row[0], row[3]) for row in pool)
            notes = bm25.note_scores(found, terms, pool, BM25_K1, BM25_B)
            ranked = bm25.rerank(ranked, notes, bm25.persons_words(pool, self.reads.transcripts))
        if verify is None:
            return ranked[:limit]
        kept: list[tuple[int, float]] = []
        for start in range(0, len(ranked), 200):
            batch = ranked[start : start + 200]
            tokens = self.chunk_tokens([cid for cid, _ in batch])
            kept += [(cid, sc) for cid, sc in batch if verify(tokens.get(cid, ""))]
            if len(kept) >= limit:
                break
        return kept[:limit]

    def _ranked(
        self,
        found: dict[str, tuple[int, int, int]],
        terms: Sequence[str],
        filters: Filters,
        fetch: int,
        condition: str,
        *,
        pool: bool,
    ) -> tuple[list[tuple[int, float]], Any]:
        """The ``fetch`` best chunks by their own BM25, and the query terms' postings as
        arrays when they were scored in numpy (bm25.py), or the pool's postings when SQL
        read them with the scores (``pool``: the notes are scored next), else None."""
        expired = (
            self.reads.expired_chunk_ids()
            if filters.is_empty() and not filters.include_expired
            else ()
        )
        # numpy drops any number of expired chunks; SQL joins with the notes past a few.
        if filters.is_empty() and self._use_arrays():
            postings = self.con.execute(bm25.postings_sql(found, condition)).fetchnumpy()
            stats = self._stats()
            params = (BM25_K1, BM25_B, fetch, self._sorted_array(expired))
            return bm25.top_chunks(found, terms, postings, stats[:2], params), postings
        if filters.is_empty() and len(expired) <= EXPIRED_INLINE_MAX:
            if pool:
                top = functools.partial(self._top_pool, found, terms, condition)
            else:
                top = functools.partial(self._top, found, terms, condition)
            return _top_without(top, fetch, expired)
        scored = bm25.scored_sql(found, terms, BM25_K1, BM25_B, condition=condition)
        where, params_sql = filters_sql(filters)
        sql = f"""
            SELECT s.chunk_id, s.score FROM ({scored}) s
            JOIN chunks c ON c.id = s.chunk_id JOIN notes n ON n.path = c.path
            WHERE {where} ORDER BY s.score DESC, s.chunk_id LIMIT ?
        """
        rows = self.con.execute(sql, [*params_sql, fetch]).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows], None

    def _pool(
        self, found: dict[str, tuple[int, int, int]], chunk_ids: list[int], postings: Any
    ) -> list[Any]:
        """``bm25.pool_sql``'s rows for ``chunk_ids``: from the postings already read
        when there are some, else from SQL."""
        if postings is None:
            return self.con.execute(bm25.pool_sql(found, chunk_ids)).fetchall()
        if isinstance(postings, tuple):  # read with the scores (bm25.top_pool_sql)
            rows, notes, total = postings
            wanted = set(chunk_ids)
            at = self.reads.read_chunk_notes(chunk_ids)
            return [
                (cid, termid, tf, path, note_len, notes, total, user_turn)
                for cid, termid, tf in rows
                if cid in wanted and cid in at
                for path, note_len, user_turn in (at[cid],)
            ]
        _, total, notes = self._stats()
        return bm25.pool_rows(
            postings, chunk_ids, self.reads.chunk_notes(chunk_ids), (notes, total)
        )

    def _use_arrays(self) -> bool:
        """Whether to score in numpy: when a test says so (``arrays``), else when numpy is
        loaded already or this process searched before (it will search again)."""
        searched, self._searched = self._searched, True
        if self.arrays is not None:
            return self.arrays
        return searched or "numpy" in sys.modules

    def _sorted_array(self, ids: tuple[int, ...]) -> Any:
        """``ids`` (sorted) as a numpy array, made again only when the tuple changes:
        the expired chunks are tens of thousands in a large vault."""
        import numpy as np

        if self._gone is None or self._gone[0] is not ids:
            self._gone = (ids, np.asarray(ids, dtype=np.int64))
        return self._gone[1]

    def _stats(self) -> tuple[int, int, int]:
        """(chunks, their total length, notes), read once per write to the index."""
        if self._stats_at is None or self._stats_at[0] != self.store.changes:
            row = self.con.execute(
                "SELECT n, total, (SELECT count(*) FROM notes) FROM kw_stats"
            ).fetchone()
            counts = (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)
            self._stats_at = (self.store.changes, counts)
        return self._stats_at[1]

    def _top(
        self, found: dict[str, tuple[int, int, int]], terms: Sequence[str], condition: str, n: int
    ) -> tuple[list[tuple[int, float]], None]:
        """The ``n`` best chunks by their own BM25, best first."""
        scored = bm25.scored_sql(found, terms, BM25_K1, BM25_B, condition=condition)
        sql = f"SELECT chunk_id, score FROM ({scored}) ORDER BY score DESC, chunk_id LIMIT {n}"
        return [(int(r[0]), float(r[1])) for r in self.con.execute(sql).fetchall()], None

    def _top_pool(
        self, found: dict[str, tuple[int, int, int]], terms: Sequence[str], condition: str, n: int
    ) -> tuple[list[tuple[int, float]], Any]:
        """The ``n`` best chunks and their postings (the pool's), in one statement."""
        sql = bm25.top_pool_sql(found, terms, (BM25_K1, BM25_B, n), condition)
        return bm25.split_top_pool(found, self.con.execute(sql).fetchall())

    def chunk_tokens(self, ids: Sequence[int]) -> dict[int, str]:
        """The search tokens of each chunk id, space-separated: made again from the
        chunk's text by the rule that made its postings (``text.chunk_words``)."""
        from markvault.markdown.tokens import chunk_words

        if not ids:
            return {}
        wanted = ", ".join(str(int(i)) for i in ids)
        # The chunks first (by their id index), then their notes' titles: a plain join
        # planned a scan of the chunks, 5-10x slower for 200 ids on big.
        rows = self.con.execute(
            f"""WITH c AS MATERIALIZED (
                SELECT id, path, context, text FROM chunks WHERE id IN ({wanted}))
            SELECT c.id, n.title, c.context, c.text FROM c JOIN notes n ON n.path = c.path"""
        ).fetchall()
        return {int(r[0]): " ".join(chunk_words(r[1], r[2], r[3])) for r in rows}

    def terms_with_prefix(self, prefix: str, limit: int = 64) -> list[str]:
        """The most frequent indexed terms that start with ``prefix``."""
        if not prefix or not self.store.has_table("vocab"):
            return []
        # A range on the sorted vocabulary, which DuckDB can prune; starts_with cannot.
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self.con.execute(
            "SELECT term FROM vocab WHERE term >= ? AND term < ? ORDER BY df DESC, term LIMIT ?",
            [prefix, upper, limit],
        ).fetchall()
        return [r[0] for r in rows]


def _top_without(
    top: Callable[[int], tuple[list[tuple[int, float]], Any]],
    fetch: int,
    expired: Sequence[int],
) -> tuple[list[tuple[int, float]], Any]:
    """The ``fetch`` best of ``top(n)`` (the ``n`` best chunks, best first, and what
    else it read) leaving out ``expired`` chunks: asks for a few more than needed,
    and for all it could need only when those were not enough."""
    if len(expired) == 0:
        return top(int(fetch))
    gone = set(expired)
    for extra in (min(len(expired), max(fetch, 100)), len(expired)):
        rows, more = top(int(fetch + extra))
        kept = [r for r in rows if r[0] not in gone]
        if len(kept) >= fetch or len(rows) < fetch + extra:
            return kept[:fetch], more
    return kept[:fetch], more
