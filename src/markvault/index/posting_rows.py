"""The rows of the keyword index's postings, as they are made: counted from chunks'
text (a rebuild), from the term counts the sync workers made (an edit), staged batch by
batch for a first build (``StagedPostings``), or written into SQL as literals (a small
edit), and appended to a table (``insert_rows``). ``keyword.KeywordIndex`` keeps the
tables and ranks over them.
"""

from __future__ import annotations

from array import array
from collections import _count_elements, defaultdict  # type: ignore[attr-defined]
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from markvault.index.filters import sql_string

if TYPE_CHECKING:  # a search never writes: it need not import the rows module
    from markvault.index.rows import NoteRows


def counted_rows(rows: Sequence[tuple[Any, ...]]) -> dict[str, list[Any]]:
    """``kw_all``'s columns for chunks given as (id, note number, title, context, text):
    each chunk's terms (``text.chunk_words``) and their counts."""
    from markvault.markdown.tokens import chunk_words

    out: dict[str, list[Any]] = {"chunk_id": [], "note": [], "term": [], "tf": []}
    for chunk_id, note, title, context, text in rows:
        found: dict[str, int] = {}
        _count_elements(found, chunk_words(title, context, text))
        found.pop("", None)  # as the workers count (sync.note_terms)
        out["chunk_id"] += [chunk_id] * len(found)
        out["note"] += [note] * len(found)
        out["term"] += found
        out["tf"] += found.values()
    return out


def record_postings(
    records: Sequence[NoteRows], chunk_ids: Sequence[int]
) -> dict[str, Sequence[Any]]:
    """(chunk_id, term, tf) of each posting of the chunks of ``records``, inserted as
    ``chunk_ids``, column by column, from the term counts their worker made
    (``sync.note_terms``: per note, each chunk's number of terms, then the term
    positions, then the counts)."""
    ids: list[int] = []
    terms: list[str] = []
    tfs: list[int] = []
    first = 0
    for record in records:
        counts = array("i")
        counts.frombytes(record.term_counts or b"")
        n = record.chunk_count
        pairs = (len(counts) - n) // 2
        for at, size in enumerate(counts[:n]):
            ids += [chunk_ids[first + at]] * size
        terms += map(record.terms.__getitem__, counts[n : n + pairs])
        tfs += counts[n + pairs :]
        first += n
    return {"chunk_id": ids, "term": terms, "tf": tfs}


# The SQL type of each column ``split_rows`` is given.
_SPLIT_TYPES = {"chunk_id": "BIGINT", "termid": "INTEGER", "term": "VARCHAR", "tf": "INTEGER"}


def split_rows(columns: Mapping[str, Sequence[Any]]) -> str:
    """SQL yielding ``columns``' rows (at least one) from one space-separated literal
    per column (a search term holds no space): the rows of a small edit in one short
    statement, without Arrow (see ``KeywordIndex.remove_postings``) or bound parameters
    (see ``KeywordIndex.term_ids``). DuckDB takes ~2-5 µs a row this way, so many go in as Arrow."""
    typed = ", ".join(f"{name}::{_SPLIT_TYPES[name]} AS {name}" for name in columns)
    split = ", ".join(
        f"unnest(string_split({sql_string(' '.join(map(str, values)))}, ' ')) AS {name}"
        for name, values in columns.items()
    )
    return f"SELECT {typed} FROM (SELECT {split})"


class StagedPostings:
    """Postings of the chunks a first build wrote, as the workers counted them
    (``sync.note_terms``), with term ids of this process's own numbering: the rows go to
    a temporary table batch by batch (DuckDB spills it past its memory cap), the terms'
    document and note frequencies are summed here, and the rebuild then only renumbers
    the terms in sorted order and sorts the rows (``write_postings``). It gives the
    rows ``KeywordIndex._postings_from_tokens`` gives, in a fraction of the time."""

    def __init__(self, con: Any) -> None:
        self.term_ids: defaultdict[str, int] = defaultdict()
        self.term_ids.default_factory = self.term_ids.__len__
        self.df: Any = None  # per term id: chunks with the term
        self.ndf: Any = None  # notes with the term
        self.chunks = 0
        self.rows = 0
        self.tokens = 0  # the sum of the staged rows' tf
        con.execute(
            "CREATE OR REPLACE TEMP TABLE kw_stage "
            "(gid INTEGER, chunk_id BIGINT, tf INTEGER, dl INTEGER)"
        )

    def add(self, con: Any, records: Sequence[NoteRows], chunk_ids: Sequence[int]) -> None:
        import numpy as np
        import pyarrow as pa

        terms_in = chain.from_iterable(r.terms for r in records)
        # Each record's terms by this process's numbering (a new term: the next number).
        gids = np.fromiter(map(self.term_ids.__getitem__, terms_in), np.int32)
        ids = self.term_ids
        parts = [np.frombuffer(r.term_counts or b"", np.int32) for r in records]
        sizes = np.concatenate([p[: r.chunk_count] for p, r in zip(parts, records, strict=True)])
        pairs = [p[r.chunk_count :].reshape(2, -1) for p, r in zip(parts, records, strict=True)]
        local, tf = np.concatenate(pairs, axis=1) if pairs else np.zeros((2, 0), np.int32)
        firsts = np.cumsum([0, *(len(r.terms) for r in records)])[:-1]
        per_note = [p.shape[1] for p in pairs]
        chunk = np.repeat(np.arange(len(sizes)), sizes)
        term = gids[local + np.repeat(firsts, per_note)]
        dl = np.bincount(chunk, weights=tf, minlength=len(sizes)).astype(np.int32)
        self.df = _summed(self.df, np.bincount(term, minlength=len(ids)))
        self.ndf = _summed(self.ndf, np.bincount(gids, minlength=len(ids)))
        table = pa.table(
            {
                "gid": term,
                "chunk_id": np.asarray(chunk_ids, np.int64)[chunk],
                "tf": tf,
                "dl": dl[chunk],
            }
        )
        con.register("kw_incoming", table)
        try:
            con.execute("INSERT INTO kw_stage SELECT * FROM kw_incoming")
        finally:
            con.unregister("kw_incoming")
        self.chunks += len(chunk_ids)
        self.rows += len(term)
        self.tokens += int(tf.sum(dtype=np.int64))

    def covers(self, con: Any, adding: int = 0) -> bool:
        """Whether the staged rows are still exactly those of the chunks table but the
        ``adding`` chunks just inserted (nothing rolled back or written past ``stage``)."""
        row = con.execute(
            "SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM duckdb_tables() "
            "WHERE temporary AND table_name = 'kw_stage')"
        ).fetchone()
        if row is None or row[0] != self.chunks + adding or not row[1]:
            return False
        staged = con.execute("SELECT count(*) FROM kw_stage").fetchone()
        return staged is not None and staged[0] == self.rows

    def write_postings(self, con: Any, index_terms: Callable[[], None]) -> None:
        """The vocabulary (term ids in term order) and postings sorted by term id."""
        import numpy as np
        import pyarrow as pa

        n = len(self.term_ids)
        table = pa.table(
            {
                "gid": np.arange(n, dtype=np.int32),
                "term": pa.array(list(self.term_ids), pa.string()),
                "df": _sized(self.df, n).astype(np.int32),
                "ndf": _sized(self.ndf, n).astype(np.int32),
            }
        )
        con.register("kw_incoming", table)
        try:
            con.execute(
                """CREATE OR REPLACE TEMP TABLE kw_terms AS
                SELECT gid, term, (row_number() OVER (ORDER BY term))::INTEGER AS termid,
                       df, ndf
                FROM kw_incoming"""
            )
        finally:
            con.unregister("kw_incoming")
        con.execute(
            "CREATE OR REPLACE TABLE vocab AS SELECT term, termid, df, ndf FROM kw_terms "
            "ORDER BY term"
        )
        index_terms()
        con.execute(
            """CREATE OR REPLACE TABLE postings AS
            SELECT t.termid, s.chunk_id, s.tf, s.dl
            FROM kw_stage s JOIN kw_terms t USING (gid)
            ORDER BY t.termid, s.chunk_id"""
        )


def _summed(total: Any, more: Any) -> Any:
    """Per-term counts so far plus ``more`` (which may be longer: new terms)."""
    if total is None:
        return more
    if len(total) < len(more):
        total = _sized(total, len(more))
    total[: len(more)] += more
    return total


def _sized(counts: Any, n: int) -> Any:
    import numpy as np

    out = np.zeros(n, np.int64)
    if counts is not None:
        out[: len(counts)] = counts
    return out


def insert_rows(con: Any, table: str, rows: Any) -> None:
    """Append ``rows`` (an Arrow table, or columns as lists or Arrow arrays, named as
    ``table``'s) to ``table``."""
    import pyarrow as pa

    con.register("kw_incoming", rows if isinstance(rows, pa.Table) else pa.table(rows))
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM kw_incoming")
    finally:
        con.unregister("kw_incoming")
