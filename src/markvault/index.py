"""The only owner of the DuckDB file: schema, writes, and every query.

The index is derived data. Whatever is wrong with it (missing, another schema
version, another chunking fingerprint, a corrupt or truncated file) is answered
by rebuilding it from the vault, with a notice, never by a crash or a migration.

Keyword search: chunks are tokenized in Python (see ``text.py``) and stored as
space-separated tokens; the fts extension builds its postings tables from them
(``create_fts_index``) and BM25 is computed in SQL over only the query terms'
postings, which is about three times faster than ``match_bm25``'s full scan.

Vector search: exact cosine over a float32 matrix held in the process; at vault
sizes (tens of thousands of chunks) a matrix-vector product takes milliseconds,
needs no HNSW index on disk (which crash recovery can break) and no query
vector bound as a list parameter.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from . import bm25
from .chunk import embed_input
from .config import Settings
from .errors import IndexBusyError, MarkvaultError, UsageError
from .model import Chunk, ParsedNote

SCHEMA_VERSION = "8"
FTS_SCHEMA = "fts_main_chunks"
# Changes up to this many chunks (or this share of all) update the keyword index in
# place; larger ones rebuild it. Appended rows are re-sorted past these limits.
KW_DELTA_MIN = 5_000
KW_DELTA_SHARE = 0.2
KW_COMPACT_MIN_ROWS = 200_000
KW_COMPACT_SHARE = 0.1
# Up to this many chunks of expired or superseded notes are dropped from results after
# ranking; more, and the ranking query joins each candidate with its note instead.
EXPIRED_INLINE_MAX = 20_000
BM25_K1 = 1.2
BM25_B = 0.75
LOCK_WAIT_SECONDS = 10.0


class IndexUnusable(Exception):
    """The file is missing, corrupt or from another schema: it must be rebuilt."""


@dataclass(frozen=True)
class NoteRecord:
    """One note ready to be stored: parsed note, its chunks and file facts."""

    note: ParsedNote
    chunks: list[Chunk]
    chunk_tokens: list[str]  # fts text per chunk
    file: str  # the path as on disk (may differ from note.path in Unicode form)
    hash: str
    mtime_ns: int
    size: int


# Search scopes (``Filters.scope``): parts of session notes, told apart by the heading
# path every chunk carries. "sessions" is note-level; the others pick chunks, so their
# SQL needs ``chunks c`` joined (see ``Filters.notes_only``).
SCOPE_SQL: dict[str, str] = {
    "sessions": "",
    # The transcript's "### hh:mm User" turns ("### YYYY-MM-DD hh:mm User" on a later
    # day, "### User" without a time), as sessions.render_transcript writes them.
    "prompts": (
        "list_contains(c.heading_path, 'Transcript') AND regexp_matches("
        "c.heading_path[-1], '^(\\d{4}-\\d{2}-\\d{2} )?(\\d{2}:\\d{2} )?User$')"
    ),
    # "### Decisions" of a summary, or "## Decisions" of a hand-written session note.
    "decisions": "lower(c.heading_path[-1]) = 'decisions'",
    "outcomes": "lower(c.heading_path[-1]) = 'outcomes'",
    "open_items": "lower(c.heading_path[-1]) = 'open items'",
}
SCOPES = tuple(SCOPE_SQL)


@dataclass
class Filters:
    """Which notes a search may return. Empty fields do not filter."""

    kinds: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # each must be present; "a" matches "a/b"
    topics: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    path_glob: str | None = None
    since: str | None = None
    until: str | None = None
    meta: dict[str, str] = field(default_factory=dict)  # any frontmatter key = value
    concepts: list[str] = field(default_factory=list)  # each must be present
    files: list[str] = field(default_factory=list)  # referenced code paths: any matches
    # Notes past their `valid_until`, or superseded, are left out unless asked for.
    include_expired: bool = False
    # One of SCOPES: session notes only, or only their prompts, decisions, outcomes or
    # open items (a condition on chunks, not notes).
    scope: str | None = None

    def is_empty(self) -> bool:
        """True when nothing but the validity rule filters (the index checks that one)."""
        return not (
            self.scope
            or self.kinds
            or self.types
            or self.tags
            or self.topics
            or self.projects
            or self.path_glob
            or self.since
            or self.until
            or self.meta
            or self.concepts
            or self.files
        )

    def notes_only(self) -> Filters:
        """These filters without the chunk-level part of ``scope``, for queries over
        ``notes n`` alone (listings, timelines): a scope then keeps its session notes."""
        if self.scope is None or not SCOPE_SQL.get(self.scope):
            return self
        return dataclasses.replace(self, scope="sessions")

    def check(self) -> None:
        """Raises UsageError for an unknown scope or a date that is not ISO 8601."""
        if self.scope is not None and self.scope not in SCOPE_SQL:
            raise UsageError(f"Unknown scope {self.scope!r}.", f"Use one of: {', '.join(SCOPES)}.")
        for name, value in (("since", self.since), ("until", self.until)):
            if value is None:
                continue
            try:
                dt.datetime.fromisoformat(value)
            except ValueError:
                raise UsageError(
                    f"{name} {value!r} is not a date.", "Use ISO dates, e.g. 2026-01-31."
                ) from None

    def sql(self) -> tuple[str, list[Any]]:
        """A WHERE condition over ``notes n`` and its parameters; a chunk-level ``scope``
        (prompts, decisions, ...) also needs ``chunks c`` joined on the note's path."""
        parts: list[str] = ["TRUE"]
        params: list[Any] = []
        if self.scope is not None:
            self.check()
            parts.append("lower(n.kind) = 'session'")
            if SCOPE_SQL[self.scope]:
                parts.append(f"({SCOPE_SQL[self.scope]})")
        for column, values in (
            ("kind", self.kinds),
            ("type", self.types),
            ("topic", self.topics),
            ("project", self.projects),
        ):
            if values:
                parts.append(f"lower(n.{column}) IN (SELECT unnest(?))")
                params.append([v.lower() for v in values])
        for tag in self.tags:
            tag = tag.lower().lstrip("#")
            parts.append("len(list_filter(n.tags_lc, t -> t = ? OR starts_with(t, ?))) > 0")
            params += [tag, tag + "/"]
        if self.path_glob:
            parts.append("n.path GLOB ?")
            params.append(self.path_glob)
        if self.since:
            parts.append("n.date >= ?")
            params.append(self.since)
        if self.until:
            # A bare date includes that whole day.
            parts.append("n.date <= ?")
            params.append(self.until + ("T99" if len(self.until) == 10 else ""))
        for key, value in self.meta.items():
            # The value equals a scalar, or is one item of a list.
            parts.append(
                "(json_extract_string(n.metadata, ?) = ? OR "
                "list_contains(json_extract_string(n.metadata, ?), ?))"
            )
            path = "$." + json.dumps(key)
            params += [path, value, path + "[*]", value]
        for concept in self.concepts:
            parts.append("list_contains(list_transform(n.concepts, c -> lower(c)), ?)")
            params.append(concept.lower())
        if self.files:
            # A referenced path matches exactly, by its tail ("x.py" for "src/x.py"), or
            # as a glob ("src/*.py").
            ors = []
            for pattern in self.files:
                pattern = pattern.strip().lstrip("./")
                ors.append(
                    "len(list_filter(n.files, f -> f = ? OR ends_with(f, ?) OR f GLOB ?)) > 0"
                )
                params += [pattern, "/" + pattern, pattern]
            parts.append("(" + " OR ".join(ors) + ")")
        if not self.include_expired:
            parts.append(CURRENT_SQL)
            params.append(dt.date.today().isoformat())
        return " AND ".join(parts), params


# Which session notes have a summary: a chunk under "Summary" (or a "Decisions",
# "Outcomes" or "Open items" section) with text beyond headings and HTML comments (a new
# note's placeholder). An index-side stand-in for sessions.has_summary, which reads the
# file. In two steps: the heading test reads no chunk text, the text test only theirs.
SUMMARY_CHUNK_SQL = (
    "(list_contains(c.heading_path, 'Summary') "
    "OR lower(c.heading_path[-1]) IN ('decisions', 'outcomes', 'open items')) "
    "AND NOT list_contains(c.heading_path, 'Transcript')"
)
SUMMARY_TEXT_SQL = (
    "trim(regexp_replace(regexp_replace(c.text, '<!--[\\s\\S]*?(-->|$)', '', 'g'), "
    "'(?m)^ {0,3}#{1,6}(\\s.*)?$', '', 'g'), ' ' || chr(9) || chr(10) || chr(13)) <> ''"
)

# A note is current unless its `valid_until` date has passed or it was superseded.
CURRENT_SQL = (
    "NOT ((coalesce(n.valid_until, '') >= '0' AND n.valid_until < ?) "
    "OR coalesce(n.superseded_by, '') <> '' OR lower(coalesce(n.status, '')) = 'superseded')"
)


_SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE notes (
    path VARCHAR, file VARCHAR, id VARCHAR, title VARCHAR, kind VARCHAR, type VARCHAR,
    tags VARCHAR[], tags_lc VARCHAR[], aliases VARCHAR[], topic VARCHAR, project VARCHAR,
    status VARCHAR, created VARCHAR, updated VARCHAR, valid_until VARCHAR,
    superseded_by VARCHAR, source VARCHAR, files VARCHAR[], concepts VARCHAR[],
    metadata JSON, problems VARCHAR[], hash VARCHAR, mtime_ns BIGINT, size BIGINT,
    date VARCHAR, indexed_at TIMESTAMP
);
CREATE TABLE chunks (
    id BIGINT, path VARCHAR, seq INTEGER, heading_path VARCHAR[], start_line INTEGER,
    end_line INTEGER, text VARCHAR, context VARCHAR, hash VARCHAR, fts_text VARCHAR,
    note_len INTEGER
);
CREATE TABLE links (
    source VARCHAR, target VARCHAR, heading VARCHAR, block VARCHAR, alias VARCHAR,
    embed BOOLEAN, style VARCHAR, line INTEGER, target_path VARCHAR
);
CREATE TABLE skipped (path VARCHAR, reason VARCHAR, mtime_ns BIGINT, size BIGINT);
CREATE SEQUENCE chunk_ids START 1;
-- Point lookups of hits and of a note's chunks; a scan would read every chunk's text.
CREATE INDEX chunks_id ON chunks (id);
CREATE INDEX chunks_path ON chunks (path);
CREATE INDEX notes_path ON notes (path);
"""

_NOTE_COLUMNS = [
    "path",
    "file",
    "id",
    "title",
    "kind",
    "type",
    "tags",
    "tags_lc",
    "aliases",
    "topic",
    "project",
    "status",
    "created",
    "updated",
    "valid_until",
    "superseded_by",
    "source",
    "files",
    "concepts",
    "metadata",
    "problems",
    "hash",
    "mtime_ns",
    "size",
    "date",
]


class Index:
    """An open index. Create with ``Index.open``; close when done."""

    def __init__(self, con: duckdb.DuckDBPyConnection, settings: Settings, writable: bool):
        self.con = con
        self.settings = settings
        self.writable = writable
        self.notices: list[str] = []
        self._matrix: tuple[str, np.ndarray, np.ndarray] | None = None
        self._counts: tuple[str, int, int] | None = None  # cached embedding_counts
        self._tables: dict[str, bool] = {}  # cached _has_table answers
        self._expired: tuple[str, np.ndarray] | None = None  # (day, chunks not current)

    # ---- opening -----------------------------------------------------------------

    @classmethod
    def open(cls, settings: Settings, *, write: bool, chunk_fingerprint: str) -> Index:
        """Open the index; with ``write``, create or rebuild it when unusable.

        Raises:
            IndexUnusable: read-only open of an index that is missing or must be rebuilt.
            IndexBusyError: another process holds the file for longer than we wait.
        """
        path = settings.db_path
        notices: list[str] = []
        existed = path.exists()
        if not existed:
            if not write:
                raise IndexUnusable("no index yet")
            settings.index_dir.mkdir(parents=True, exist_ok=True)
        con: duckdb.DuckDBPyConnection | None = None
        try:
            con = _connect(path, settings, read_only=not write)
            index = cls(con, settings, write)
            if existed:
                index._check(chunk_fingerprint)
            else:
                index._create(chunk_fingerprint)
        except (IndexUnusable, duckdb.Error) as exc:
            if isinstance(exc, duckdb.Error) and _is_lock_error(exc):
                raise IndexBusyError(
                    f"The index {path} is in use by another markvault process.",
                    "Wait for it to finish (or stop it) and try again.",
                ) from exc
            # Closed before anything else opens the file: DuckDB refuses a second
            # connection with other settings while this one lives.
            if con is not None:
                with contextlib.suppress(Exception):
                    con.close()
            if not write:
                raise IndexUnusable(str(exc)) from exc
            notices.append(f"Rebuilding the index from the vault: {_first_line(exc)}")
            old = path.with_name(path.name + ".old")
            _remove_db(old)
            if path.exists():
                path.replace(old)
            _remove_db(path)
            try:
                con = _connect(path, settings, read_only=False)
            except duckdb.Error as again:
                raise MarkvaultError(
                    f"Cannot create the index {path}: {_first_line(again)}",
                    "Check that folder's permissions and free space, or pass --index DIR.",
                ) from again
            index = cls(con, settings, True)
            index._create(chunk_fingerprint)
            kept = index._adopt_embeddings(old)
            if kept:
                notices.append(f"Kept {kept} vectors of unchanged text from the old index.")
            _remove_db(old)
        index.notices.extend(notices)
        return index

    def _check(self, chunk_fingerprint: str) -> None:
        try:
            meta = dict(self.con.execute("SELECT key, value FROM meta").fetchall())
        except duckdb.CatalogException as exc:
            raise IndexUnusable("the index has no meta table") from exc
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise IndexUnusable(
                f"schema version {meta.get('schema_version')} is not {SCHEMA_VERSION}"
            )
        if meta.get("chunk_fingerprint") != chunk_fingerprint:
            raise IndexUnusable("chunking or tokenizer settings changed")
        if self.writable and meta.get("fts_dirty") == "1":
            self.rebuild_keyword_index()

    def _create(self, chunk_fingerprint: str) -> None:
        self.con.execute("BEGIN")
        self.con.execute(_SCHEMA)
        self._set_meta(schema_version=SCHEMA_VERSION, chunk_fingerprint=chunk_fingerprint)
        self.con.execute("COMMIT")
        self.rebuild_keyword_index()

    def _adopt_embeddings(self, old: Path) -> int:
        """Copy vectors from a replaced index file, if it can still be read.

        Vectors are keyed by the hash of the text the model read, so they stay valid
        across schema and chunking changes; re-embedding a vault takes hours.
        """
        if not old.exists():
            return 0
        try:
            quoted = str(old).replace("'", "''")
            self.con.execute(f"ATTACH '{quoted}' AS old_index (READ_ONLY)")
        except duckdb.Error:
            return 0
        try:
            meta = dict(self.con.execute("SELECT key, value FROM old_index.meta").fetchall())
            dim, model = meta.get("embedding_dim"), meta.get("model")
            if not dim or not model:
                return 0
            with self._transaction():
                self.con.execute(
                    f"CREATE TABLE embeddings AS SELECT hash, model, vec::FLOAT[{int(dim)}] "
                    "AS vec FROM old_index.embeddings"
                )
                self._set_meta(embedding_dim=dim, model=model)
            row = self.con.execute("SELECT count(*) FROM embeddings").fetchone()
            return int(row[0]) if row else 0
        except duckdb.Error:
            return 0
        finally:
            with contextlib.suppress(duckdb.Error):
                self.con.execute("DETACH old_index")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- meta --------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        return dict(self.con.execute("SELECT key, value FROM meta").fetchall())

    def _set_meta(self, **values: str) -> None:
        for key, value in values.items():
            self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])

    # ---- writes ------------------------------------------------------------------

    def file_states(self) -> dict[str, tuple[str, int, int, str]]:
        """path -> (file on disk, mtime_ns, size, hash) of every indexed note."""
        rows = self.con.execute("SELECT path, file, mtime_ns, size, hash FROM notes").fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def skipped_states(self) -> dict[str, tuple[int, int, str]]:
        rows = self.con.execute("SELECT path, mtime_ns, size, reason FROM skipped").fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def touch(self, stats: Iterable[tuple[str, str, int, int]]) -> None:
        """Record new (file, mtime, size) for notes whose bytes did not change."""
        rows = list(stats)
        if not rows:
            return
        table = pa.table(
            {
                "path": [r[0] for r in rows],
                "file": [r[1] for r in rows],
                "mtime_ns": pa.array([r[2] for r in rows], pa.int64()),
                "size": pa.array([r[3] for r in rows], pa.int64()),
            }
        )
        with self._transaction():
            self.con.register("touched", table)
            self.con.execute(
                "UPDATE notes SET file = t.file, mtime_ns = t.mtime_ns, size = t.size "
                "FROM touched t WHERE notes.path = t.path"
            )
            self.con.unregister("touched")

    def apply(
        self,
        records: Sequence[NoteRecord],
        removed: Sequence[str],
        skipped: Sequence[tuple[str, str, int, int]] = (),
    ) -> None:
        """Replace the given notes, remove others, and record skipped files, atomically.

        Chunk ids are kept for chunks whose text is unchanged, also across renames,
        so that ``#id`` citations survive edits elsewhere in a note.
        """
        paths = [r.note.path for r in records]
        gone = sorted({*paths, *removed, *(s[0] for s in skipped)})
        with self._transaction():
            old: dict[str, list[int]] = {}
            # Paths go in as a registered Arrow table: binding a long Python list as a
            # parameter costs DuckDB an import attempt per element.
            self.con.register("gone", pa.table({"path": pa.array(gone, pa.string())}))
            old_ids: list[int] = []
            for cid, chash in self.con.execute(
                "SELECT id, hash FROM chunks WHERE path IN (SELECT path FROM gone) ORDER BY id"
            ).fetchall():
                old.setdefault(chash, []).append(cid)
                old_ids.append(cid)
            new_count = sum(len(r.chunks) for r in records)
            incremental = self._keyword_delta_fits(len(old_ids) + new_count)
            if incremental:
                self._remove_postings(old_ids)
            for table, column in (
                ("notes", "path"),
                ("chunks", "path"),
                ("links", "source"),
                ("skipped", "path"),
            ):
                self.con.execute(f"DELETE FROM {table} WHERE {column} IN (SELECT path FROM gone)")
            self.con.unregister("gone")
            new_ids = self._insert(records, old) if records else []
            if incremental:
                self._add_postings(new_ids)
            if skipped:
                self._insert_table(
                    "skipped",
                    pa.table(
                        {
                            "path": [s[0] for s in skipped],
                            "reason": [s[1] for s in skipped],
                            "mtime_ns": pa.array([s[2] for s in skipped], pa.int64()),
                            "size": pa.array([s[3] for s in skipped], pa.int64()),
                        }
                    ),
                )
            if (old_ids or new_ids) and not incremental:
                self._set_meta(fts_dirty="1")
            self._set_meta(last_sync=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        self._matrix = None
        self._counts = None

    def _insert(self, records: Sequence[NoteRecord], old: dict[str, list[int]]) -> list[int]:
        """Insert notes, chunks and links; returns the chunk ids inserted."""
        n_chunks = sum(len(r.chunks) for r in records)
        fresh = iter(
            r[0]
            for r in self.con.execute(
                "SELECT nextval('chunk_ids') FROM range(?)", [n_chunks]
            ).fetchall()
        )
        notes: dict[str, list[Any]] = {c: [] for c in _NOTE_COLUMNS}
        chunks: dict[str, list[Any]] = {
            c: []
            for c in [
                "id",
                "path",
                "seq",
                "heading_path",
                "start_line",
                "end_line",
                "text",
                "context",
                "hash",
                "fts_text",
                "note_len",
            ]
        }
        links: dict[str, list[Any]] = {
            c: []
            for c in ["source", "target", "heading", "block", "alias", "embed", "style", "line"]
        }
        for rec in records:
            note, f = rec.note, rec.note.fields
            row = {
                "path": note.path,
                "file": rec.file,
                "id": note.id,
                "title": note.title,
                "kind": note.kind,
                "type": note.type,
                "tags": list(note.tags),
                "tags_lc": [t.lower() for t in note.tags],
                "aliases": list(note.aliases),
                "topic": f.get("topic"),
                "project": f.get("project"),
                "status": f.get("status"),
                "created": f.get("created"),
                "updated": f.get("updated"),
                "valid_until": f.get("valid_until"),
                "superseded_by": f.get("superseded_by"),
                "source": f.get("source"),
                "files": f.get("files", []),
                "concepts": f.get("concepts", []),
                "metadata": json.dumps(note.metadata, ensure_ascii=False),
                "problems": list(note.problems),
                "hash": rec.hash,
                "mtime_ns": rec.mtime_ns,
                "size": rec.size,
                "date": f.get("updated")
                or f.get("created")
                or time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(rec.mtime_ns / 1e9)),
            }
            for column in _NOTE_COLUMNS:
                notes[column].append(row[column])
            # Search tokens in all its chunks: the note's length for BM25 (bm25.py).
            note_len = sum(t.count(" ") + 1 for t in rec.chunk_tokens if t)
            for chunk, tokens in zip(rec.chunks, rec.chunk_tokens, strict=True):
                reuse = old.get(chunk.hash)
                chunks["id"].append(reuse.pop(0) if reuse else next(fresh))
                chunks["path"].append(note.path)
                chunks["seq"].append(chunk.seq)
                chunks["heading_path"].append(list(chunk.heading_path))
                chunks["start_line"].append(chunk.start_line)
                chunks["end_line"].append(chunk.end_line)
                chunks["text"].append(chunk.text)
                chunks["context"].append(chunk.context)
                chunks["hash"].append(chunk.hash)
                chunks["fts_text"].append(tokens)
                chunks["note_len"].append(note_len)
            for link in note.links:
                links["source"].append(note.path)
                links["target"].append(link.target)
                links["heading"].append(link.heading)
                links["block"].append(link.block)
                links["alias"].append(link.alias)
                links["embed"].append(link.embed)
                links["style"].append(link.style)
                links["line"].append(link.line)
        self._insert_table("notes", pa.table(notes), extra="now()")
        self._insert_table("chunks", pa.table(chunks))
        self._insert_table("links", pa.table(links), extra="NULL")
        return list(chunks["id"])

    def _insert_table(self, name: str, table: pa.Table, extra: str | None = None) -> None:
        self.con.register("incoming", table)
        columns = ", ".join(table.column_names)
        select = columns + (f", {extra}" if extra else "")
        self.con.execute(f"INSERT INTO {name} SELECT {select} FROM incoming")
        self.con.unregister("incoming")

    def rebuild_keyword_index(self) -> None:
        """Rebuild the keyword index from the chunks' token strings with the fts
        extension; afterwards edits update it in place (``_add_postings``)."""
        _load_extension(self.con, self.settings, "fts")
        # Our tokens are final: split on whitespace only, no stemming, no folding.
        self.con.execute(
            "PRAGMA create_fts_index('chunks', 'id', 'fts_text', stemmer='none', "
            "stopwords='none', ignore='\\s+', strip_accents=0, lower=0, overwrite=1)"
        )
        # fts keeps one row per token occurrence in document order, and cannot change in
        # place. Our copy has one row per (term, chunk) with the chunk's length, sorted
        # by term so that a query reads only its terms' row groups, and is kept up to
        # date edit by edit.
        with self._transaction():
            self.con.execute(
                f"""CREATE OR REPLACE TABLE postings AS
                SELECT t.termid::INTEGER AS termid, d.name AS chunk_id,
                       count(*)::INTEGER AS tf, any_value(d.len)::INTEGER AS dl
                FROM {FTS_SCHEMA}.terms t JOIN {FTS_SCHEMA}.docs d USING (docid)
                GROUP BY t.termid, d.name ORDER BY t.termid, d.name"""
            )
            # The term dictionary, sorted by term for the same row-group pruning; df
            # counts chunks, ndf notes (bm25.py scores both).
            self.con.execute(
                f"""CREATE OR REPLACE TABLE vocab AS
                SELECT d.term, d.termid::INTEGER AS termid, d.df::INTEGER AS df,
                       coalesce(n.ndf, 0)::INTEGER AS ndf
                FROM {FTS_SCHEMA}.dict d LEFT JOIN (
                    SELECT p.termid, count(DISTINCT c.path) AS ndf
                    FROM postings p JOIN chunks c ON c.id = p.chunk_id GROUP BY p.termid
                ) n ON n.termid = d.termid
                ORDER BY d.term"""
            )
            # Every chunk counts as a document, also one without a single token.
            self.con.execute(
                "CREATE OR REPLACE TABLE kw_stats AS SELECT "
                "(SELECT count(*) FROM chunks) AS n, "
                "(SELECT coalesce(sum(dl), 0) FROM (SELECT any_value(dl) AS dl FROM postings "
                "GROUP BY chunk_id)) AS total"
            )
            self._set_meta(fts_dirty="0", kw_appended="0")
        self.con.execute("PRAGMA drop_fts_index('chunks')")  # derived; only takes space
        self._tables.clear()
        self._counts = None

    def _keyword_delta_fits(self, changed_chunks: int) -> bool:
        """Whether a change is small enough to apply to the keyword index in place; a
        large one (a first build, a big checkout) is faster rebuilt."""
        if not self._has_table("kw_stats") or self.meta().get("fts_dirty") == "1":
            return False
        row = self.con.execute("SELECT n FROM kw_stats").fetchone()
        total = int(row[0]) if row else 0
        return changed_chunks <= max(KW_DELTA_MIN, KW_DELTA_SHARE * total)

    def _remove_postings(self, chunk_ids: Sequence[int]) -> None:
        """Take chunks out of the keyword index: postings, document frequencies and the
        collection statistics BM25 reads."""
        if not chunk_ids:
            return
        wanted = ", ".join(str(int(i)) for i in chunk_ids)
        # Whole notes are taken out (and put back): ndf drops by the notes per term.
        self.con.execute(
            f"""UPDATE vocab SET df = vocab.df - d.n, ndf = vocab.ndf - d.notes
            FROM (SELECT p.termid, count(*) AS n, count(DISTINCT c.path) AS notes
                  FROM postings p JOIN chunks c ON c.id = p.chunk_id
                  WHERE p.chunk_id IN ({wanted}) GROUP BY p.termid) d
            WHERE vocab.termid = d.termid"""
        )
        self.con.execute(
            f"""UPDATE kw_stats SET n = n - {len(chunk_ids)}, total = total - (
                SELECT coalesce(sum(dl), 0) FROM (SELECT any_value(dl) AS dl FROM postings
                WHERE chunk_id IN ({wanted}) GROUP BY chunk_id))"""
        )
        self.con.execute(f"DELETE FROM postings WHERE chunk_id IN ({wanted})")
        self.con.execute("DELETE FROM vocab WHERE df <= 0")

    def _add_postings(self, chunk_ids: Sequence[int]) -> None:
        """Put freshly inserted chunks into the keyword index, tokenized exactly as the
        full rebuild tokenizes them (whitespace-separated tokens of ``fts_text``)."""
        if not chunk_ids:
            return
        wanted = ", ".join(str(int(i)) for i in chunk_ids)
        self.con.execute(
            f"""CREATE OR REPLACE TEMP TABLE kw_new AS
            SELECT chunk_id, term, count(*)::INTEGER AS tf FROM (
                SELECT id AS chunk_id, unnest(string_split_regex(fts_text, '\\s+')) AS term
                FROM chunks WHERE id IN ({wanted}))
            WHERE term <> '' GROUP BY chunk_id, term"""
        )
        self.con.execute(
            """INSERT INTO vocab
            SELECT term, (SELECT coalesce(max(termid), 0) FROM vocab)
                         + row_number() OVER (ORDER BY term), 0, 0
            FROM (SELECT DISTINCT term FROM kw_new) WHERE term NOT IN (SELECT term FROM vocab)"""
        )
        self.con.execute(
            """UPDATE vocab SET df = vocab.df + d.n, ndf = vocab.ndf + d.notes
            FROM (SELECT k.term, count(*) AS n, count(DISTINCT c.path) AS notes
                  FROM kw_new k JOIN chunks c ON c.id = k.chunk_id GROUP BY k.term) d
            WHERE vocab.term = d.term"""
        )
        self.con.execute(
            """INSERT INTO postings
            SELECT v.termid, k.chunk_id, k.tf, s.dl::INTEGER
            FROM kw_new k JOIN vocab v USING (term)
                 JOIN (SELECT chunk_id, sum(tf) AS dl FROM kw_new GROUP BY chunk_id) s
                 USING (chunk_id)
            ORDER BY v.termid, k.chunk_id"""
        )
        row = self.con.execute("SELECT count(*), coalesce(sum(tf), 0) FROM kw_new").fetchone()
        rows, tokens = (int(row[0]), int(row[1])) if row else (0, 0)
        self.con.execute(f"UPDATE kw_stats SET n = n + {len(chunk_ids)}, total = total + {tokens}")
        self.con.execute("DROP TABLE kw_new")
        appended = int(self.meta().get("kw_appended") or 0) + rows
        self._set_meta(kw_appended=str(appended))

    def keyword_index_needs_compaction(self) -> bool:
        """Rows added in place land unsorted at the end of postings, where no query can
        skip them; once there are many, the table is re-sorted."""
        appended = int(self.meta().get("kw_appended") or 0)
        if appended == 0 or not self._has_table("postings"):
            return False
        row = self.con.execute("SELECT count(*) FROM postings").fetchone()
        return appended > max(KW_COMPACT_MIN_ROWS, KW_COMPACT_SHARE * (row[0] if row else 0))

    def compact_keyword_index(self) -> None:
        """Re-sort postings and vocabulary by term (same content, faster queries)."""
        with self._transaction():
            self.con.execute(
                "CREATE OR REPLACE TABLE postings AS SELECT * FROM postings "
                "ORDER BY termid, chunk_id"
            )
            self.con.execute("CREATE OR REPLACE TABLE vocab AS SELECT * FROM vocab ORDER BY term")
            self._set_meta(kw_appended="0")

    def keyword_index_dirty(self) -> bool:
        return self.meta().get("fts_dirty") == "1"

    def note_link_keys(self) -> list[tuple[str, list[str]]]:
        """(path, aliases) of every note, for link resolution."""
        return [
            (r[0], list(r[1] or []))
            for r in self.con.execute("SELECT path, aliases FROM notes").fetchall()
        ]

    def links_to_resolve(self, sources: Sequence[str] | None) -> list[tuple[int, str, str, str]]:
        """(rowid, source, target, style) of links, all or those of ``sources``."""
        sql = "SELECT rowid, source, target, style FROM links"
        if sources is None:
            return self.con.execute(sql).fetchall()
        return self.con.execute(
            sql + " WHERE source IN (SELECT unnest(?))", [list(sources)]
        ).fetchall()

    def set_link_targets(self, resolved: Sequence[tuple[int, str | None]]) -> None:
        if not resolved:
            return
        table = pa.table(
            {
                "rid": pa.array([r[0] for r in resolved], pa.int64()),
                "tp": pa.array([r[1] for r in resolved], pa.string()),
            }
        )
        with self._transaction():
            self.con.register("resolved", table)
            self.con.execute(
                "UPDATE links SET target_path = r.tp FROM resolved r WHERE links.rowid = r.rid"
            )
            self.con.unregister("resolved")

    # ---- embeddings --------------------------------------------------------------

    def ensure_embedding_table(self, model: str, dim: int) -> None:
        """Create the embeddings table for ``dim``; a model of another size replaces it."""
        meta = self.meta()
        if meta.get("embedding_dim") == str(dim) and self._has_table("embeddings"):
            if meta.get("model") != model:
                self._set_meta(model=model)
            return
        with self._transaction():
            if self._has_table("embeddings"):
                self.notices.append(
                    f"Embedding model changed ({meta.get('model')} -> {model}): rebuilding vectors."
                )
            self.con.execute("DROP TABLE IF EXISTS embeddings")
            self.con.execute(
                f"CREATE TABLE embeddings (hash VARCHAR, model VARCHAR, vec FLOAT[{dim}])"
            )
            self._set_meta(embedding_dim=str(dim), model=model)
        self._counts = None

    def missing_embeddings(self, model: str) -> list[tuple[str, str]]:
        """(hash, embed text) of chunk contents that have no vector for ``model``."""
        if not self._has_table("embeddings"):
            return self._all_embed_inputs()
        return self._all_embed_inputs(
            "WHERE c.hash NOT IN (SELECT hash FROM embeddings WHERE model = ?)", [model]
        )

    def _all_embed_inputs(
        self, where: str = "", params: list[Any] | None = None
    ) -> list[tuple[str, str]]:
        rows = self.con.execute(
            "SELECT c.hash, any_value(c.context), any_value(c.text) FROM chunks c "
            f"{where} GROUP BY c.hash ORDER BY c.hash",
            params or [],
        ).fetchall()
        return [(r[0], embed_input(r[1], r[2])) for r in rows]

    def add_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        dim = vectors.shape[1]
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
        table = pa.table(
            {
                "hash": pa.array(list(hashes), pa.string()),
                "model": pa.array([model] * len(hashes), pa.string()),
                "vec": pa.FixedSizeListArray.from_arrays(flat, dim),
            }
        )
        with self._transaction():
            self._insert_table("embeddings", table)
        self._matrix = None
        self._counts = None

    def prune_embeddings(self) -> int:
        """Drop vectors no chunk uses any more, when they are a fifth of the table or more."""
        if not self._has_table("embeddings"):
            return 0
        unused, total = self.con.execute(
            "SELECT count(*) FILTER (WHERE hash NOT IN (SELECT hash FROM chunks)), count(*) "
            "FROM embeddings"
        ).fetchone() or (0, 0)
        if unused and unused * 5 >= total:
            with self._transaction():
                self.con.execute(
                    "DELETE FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)"
                )
            self._counts = None
            return int(unused)
        return 0

    def embedding_counts(self, model: str) -> tuple[int, int]:
        """(chunk contents with a vector for ``model``, all distinct chunk contents)."""
        if self._counts is None or self._counts[0] != model:
            self._counts = (model, *self._count_embeddings(model))
        return self._counts[1], self._counts[2]

    def _count_embeddings(self, model: str) -> tuple[int, int]:
        total = self.con.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()
        if not self._has_table("embeddings"):
            return 0, int(total[0]) if total else 0
        done = self.con.execute(
            "SELECT count(DISTINCT c.hash) FROM chunks c SEMI JOIN embeddings e "
            "ON e.hash = c.hash AND e.model = ?",
            [model],
        ).fetchone()
        return (int(done[0]) if done else 0), (int(total[0]) if total else 0)

    def vector_matrix(self, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, unit vectors) of every chunk that has a vector; cached."""
        if self._matrix is not None and self._matrix[0] == model:
            return self._matrix[1], self._matrix[2]
        if not self._has_table("embeddings"):
            return np.zeros(0, np.int64), np.zeros((0, 1), np.float32)
        table = self.con.execute(
            "SELECT c.id, e.vec FROM chunks c JOIN embeddings e ON e.hash = c.hash "
            "AND e.model = ? ORDER BY c.id",
            [model],
        ).to_arrow_table()
        ids = table.column("id").to_numpy().astype(np.int64)
        vec = table.column("vec").combine_chunks()
        dim = vec.type.list_size if len(vec) else 1
        matrix = vec.flatten().to_numpy().reshape(-1, dim).astype(np.float32, copy=False)
        self._matrix = (model, ids, matrix)
        return ids, matrix

    # ---- queries -----------------------------------------------------------------

    def term_ids(self, terms: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        """term -> (term id, chunks with it, notes with it) for the terms the index knows."""
        if not terms or not self._has_table("postings"):
            return {}
        unique = list(dict.fromkeys(terms))
        marks = ", ".join("?" * len(unique))
        rows = self.con.execute(
            f"SELECT term, termid, df, ndf FROM vocab WHERE term IN ({marks})", unique
        ).fetchall()
        return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows}

    def bm25(
        self,
        terms: Sequence[str],
        filters: Filters,
        limit: int,
        condition: str = "",
        verify: Callable[[str], bool] | None = None,
        per_note: bool = False,
        chunk_scores: dict[int, float] | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, BM25 score) best first, for chunks containing any of ``terms``.

        ``condition`` is SQL over ``chunk_id`` (see ``query.presence_sql``); ``verify``,
        if given, is checked on each candidate's tokens, best first, until ``limit`` pass.
        ``per_note``: the score combines the chunk's note's and its own (bm25.py);
        ``chunk_scores``, if given, receives each returned chunk's own BM25.
        """
        found = self.term_ids(terms)
        if not found:
            return []
        scored = bm25.scored_sql(found, terms, BM25_K1, BM25_B, condition=condition)
        # With a check still to come, over-fetch: most candidates usually pass.
        fetch = limit if verify is None else max(limit * 20, 1000)
        if per_note:  # a pool of chunks whose notes are then scored as wholes
            fetch = max(fetch, bm25.NOTE_POOL)
        expired = (
            self.expired_chunk_ids()
            if filters.is_empty() and not filters.include_expired
            else np.empty(0, np.int64)
        )
        if filters.is_empty() and len(expired) <= EXPIRED_INLINE_MAX:
            rows = self._top_without(scored, fetch, expired)
        else:
            where, params = filters.sql()
            sql = f"""
                SELECT s.chunk_id, s.score FROM ({scored}) s
                JOIN chunks c ON c.id = s.chunk_id JOIN notes n ON n.path = c.path
                WHERE {where} ORDER BY s.score DESC, s.chunk_id LIMIT ?
            """
            rows = self.con.execute(sql, [*params, fetch]).fetchall()
        ranked = [(int(r[0]), float(r[1])) for r in rows]
        if chunk_scores is not None:
            chunk_scores.update(ranked)
        if per_note and ranked:
            pool = self.con.execute(bm25.pool_sql(found, [c for c, _ in ranked])).fetchall()
            notes = bm25.note_scores(found, terms, pool, BM25_K1, BM25_B)
            ranked = bm25.rerank(ranked, notes)
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

    def _top_without(self, scored: str, fetch: int, expired: np.ndarray) -> list[Any]:
        """The ``fetch`` best of ``scored`` leaving out ``expired`` chunks: asks for a few
        more than needed, and for all it could need only when those were not enough."""
        sql = f"SELECT chunk_id, score FROM ({scored}) ORDER BY score DESC, chunk_id LIMIT ?"
        if len(expired) == 0:
            return self.con.execute(sql, [fetch]).fetchall()
        gone = set(expired.tolist())
        for extra in (min(len(expired), max(fetch, 100)), len(expired)):
            rows = self.con.execute(sql, [fetch + extra]).fetchall()
            kept = [r for r in rows if r[0] not in gone]
            if len(kept) >= fetch or len(rows) < fetch + extra:
                return kept[:fetch]
        return kept[:fetch]

    def chunk_tokens(self, ids: Sequence[int]) -> dict[int, str]:
        """The search tokens of each chunk id."""
        if not ids:
            return {}
        wanted = ", ".join(str(int(i)) for i in ids)
        rows = self.con.execute(
            f"SELECT id, fts_text FROM chunks WHERE id IN ({wanted})"
        ).fetchall()
        return {int(r[0]): r[1] for r in rows}

    def terms_with_prefix(self, prefix: str, limit: int = 64) -> list[str]:
        """The most frequent indexed terms that start with ``prefix``."""
        if not prefix or not self._has_table("vocab"):
            return []
        # A range on the sorted vocabulary, which DuckDB can prune; starts_with cannot.
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self.con.execute(
            "SELECT term FROM vocab WHERE term >= ? AND term < ? ORDER BY df DESC, term LIMIT ?",
            [prefix, upper, limit],
        ).fetchall()
        return [r[0] for r in rows]

    def filters_apply(self, filters: Filters) -> bool:
        """Whether ``filters`` can leave anything out (a join per query otherwise)."""
        return not filters.is_empty() or (
            not filters.include_expired and len(self.expired_chunk_ids()) > 0
        )

    def expired_chunk_ids(self) -> np.ndarray:
        """Sorted ids of the chunks of notes that are no longer current (past
        ``valid_until``, superseded): usually few, so searches drop them from their
        results instead of joining every candidate with its note."""
        today = dt.date.today().isoformat()
        if self._expired is None or self._expired[0] != today:
            rows = self.con.execute(
                f"SELECT c.id FROM chunks c JOIN notes n ON n.path = c.path "
                f"WHERE NOT {CURRENT_SQL} ORDER BY c.id",
                [today],
            ).fetchall()
            self._expired = (today, np.array([r[0] for r in rows], dtype=np.int64))
        return self._expired[1]

    def chunk_ids_matching(self, filters: Filters) -> np.ndarray:
        """Ids of the chunks of notes that pass ``filters``."""
        where, params = filters.sql()
        rows = self.con.execute(
            f"SELECT c.id FROM chunks c JOIN notes n ON n.path = c.path WHERE {where}", params
        ).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def note_dates(self, paths: Sequence[str]) -> dict[str, str | None]:
        """Each note's date (updated, else created, else its file's time) for ordering."""
        if not paths:
            return {}
        rows = self._query_paths(
            paths, "SELECT n.path, n.date FROM notes n JOIN wanted USING (path)"
        )
        return {r[0]: r[1] for r in rows}

    def _query_paths(self, paths: Sequence[str], sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` with the table ``wanted(path)`` holding ``paths`` (a bound list of
        thousands of strings is slow to bind)."""
        self.con.register("wanted", pa.table({"path": pa.array(list(paths), pa.string())}))
        try:
            return self.con.execute(sql).fetchall()
        finally:
            self.con.unregister("wanted")

    def chunk_paths(self, ids: Sequence[int]) -> dict[int, str]:
        """The note path of each chunk id (ids that no longer exist are left out)."""
        if not ids:
            return {}
        wanted = ", ".join(str(int(i)) for i in ids)
        rows = self.con.execute(f"SELECT id, path FROM chunks WHERE id IN ({wanted})").fetchall()
        return {int(r[0]): r[1] for r in rows}

    def chunk_details(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Everything a hit shows, for the given chunk ids."""
        if not ids:
            return {}
        # Integer literals (not a bound list) let DuckDB answer from the id index.
        wanted = ", ".join(str(int(i)) for i in ids)
        # Materialized first: otherwise the join with notes defeats the index lookup.
        cur = self.con.execute(
            f"WITH c AS MATERIALIZED (SELECT * FROM chunks WHERE id IN ({wanted})) "
            "SELECT c.id, c.path, c.seq, c.heading_path, c.start_line, c.end_line, c.text, "
            "n.id AS note_id, n.title, n.kind, n.type, n.hash, n.file, n.tags "
            "FROM c JOIN notes n ON n.path = c.path"
        )
        return {row["id"]: row for row in _dicts(cur)}

    def find_notes(self, column: str, value: str, casefold: bool = False) -> list[dict[str, Any]]:
        """Notes whose ``column`` (path, id or file) equals ``value``."""
        assert column in ("path", "id", "file")
        expr = f"lower({column}) = lower(?)" if casefold else f"{column} = ?"
        return list(
            _dicts(self.con.execute(f"SELECT * FROM notes WHERE {expr} ORDER BY path", [value]))
        )

    def chunks_of(self, path: str) -> list[dict[str, Any]]:
        return list(
            _dicts(
                self.con.execute(
                    "SELECT id, seq, heading_path, start_line, end_line, hash FROM chunks "
                    "WHERE path = ? ORDER BY seq",
                    [path],
                )
            )
        )

    def links_of(self, path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(outgoing, incoming) links of a note."""
        out = list(
            _dicts(
                self.con.execute(
                    "SELECT target, heading, block, alias, embed, style, line, target_path "
                    "FROM links WHERE source = ? ORDER BY line",
                    [path],
                )
            )
        )
        incoming = list(
            _dicts(
                self.con.execute(
                    "SELECT source, line, heading, block FROM links WHERE target_path = ? "
                    "ORDER BY source, line",
                    [path],
                )
            )
        )
        return out, incoming

    def note_briefs(self, filters: Filters | None = None) -> list[dict[str, Any]]:
        """What listings, timelines and the link graph need of each note that passes
        ``filters`` (all notes when None), ordered by path."""
        where, params = ("TRUE", []) if filters is None else filters.sql()
        return list(
            _dicts(
                self.con.execute(
                    "SELECT n.path, n.id, n.title, n.kind, n.type, n.topic, n.project, "
                    "n.tags, n.created, n.updated, n.date, n.mtime_ns, n.hash, n.valid_until, "
                    "n.superseded_by, json_extract_string(n.metadata, '$.session_id') "
                    f"AS session_id FROM notes n WHERE {where} ORDER BY n.path",
                    params,
                )
            )
        )

    def link_edges(self) -> list[tuple[str, str]]:
        """(source path, target path) of every resolved link between two notes."""
        rows = self.con.execute(
            "SELECT source, target_path FROM links WHERE target_path IS NOT NULL "
            "AND target_path <> source"
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def unresolved_links(self, limit: int) -> tuple[int, list[dict[str, Any]]]:
        """(count, first ``limit``) links whose target is no note."""
        row = self.con.execute(
            "SELECT count(*) FROM links WHERE target_path IS NULL AND target <> ''"
        ).fetchone()
        rows = _dicts(
            self.con.execute(
                "SELECT source, target, line FROM links WHERE target_path IS NULL "
                "AND target <> '' ORDER BY source, line LIMIT ?",
                [limit],
            )
        )
        return (int(row[0]) if row else 0), list(rows)

    def notes_matching_glob(self, pattern: str, limit: int) -> list[dict[str, Any]]:
        """Notes whose path matches the glob ``pattern``, by path."""
        return list(
            _dicts(
                self.con.execute(
                    "SELECT * FROM notes WHERE path GLOB ? ORDER BY path LIMIT ?",
                    [pattern, limit],
                )
            )
        )

    def topics(self) -> list[dict[str, Any]]:
        """Topics of knowledge points and documents, with counts and last change."""
        return list(
            _dicts(
                self.con.execute(
                    "SELECT topic, count(*) FILTER (WHERE kind = 'knowledge') AS knowledge, "
                    "count(*) FILTER (WHERE kind = 'document') AS documents, "
                    "max(date) AS last_changed FROM notes "
                    "WHERE coalesce(topic, '') <> '' AND kind IN ('knowledge', 'document') "
                    "GROUP BY topic ORDER BY count(*) DESC, topic"
                )
            )
        )

    def stats(self) -> dict[str, Any]:
        one = self.con.execute(
            "SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM chunks), "
            "(SELECT count(*) FROM links), "
            "(SELECT count(*) FROM links WHERE target_path IS NULL), "
            "(SELECT count(*) FROM skipped)"
        ).fetchone() or (0, 0, 0, 0, 0)

        def counts(column: str) -> dict[str, int]:
            rows = self.con.execute(
                f"SELECT coalesce({column}, '(none)') k, count(*) FROM notes GROUP BY k "
                "ORDER BY count(*) DESC, k"
            ).fetchall()
            return {r[0]: int(r[1]) for r in rows}

        return {
            "notes": int(one[0]),
            "chunks": int(one[1]),
            "links": int(one[2]),
            "unresolved_links": int(one[3]),
            "skipped_files": int(one[4]),
            "by_kind": counts("kind"),
            "by_type": counts("type"),
            "by_topic": counts("topic"),
            "by_project": counts("project"),
        }

    def problems(self) -> list[dict[str, str]]:
        rows = self.con.execute(
            "SELECT path, unnest(problems) FROM notes WHERE len(problems) > 0 "
            "UNION ALL SELECT path, reason FROM skipped ORDER BY 1"
        ).fetchall()
        return [{"path": r[0], "problem": r[1]} for r in rows]

    # ---- sessions ----------------------------------------------------------------
    # Session notes carry Claude Code's session id and times in their frontmatter,
    # which the notes table keeps as JSON in ``metadata``.

    def session_notes(self) -> dict[str, dict[str, Any]]:
        """session_id -> {path, file, id, hash} of every note that has a ``session_id``
        (the first by path when several claim the same id)."""
        rows = self.con.execute(
            "SELECT json_extract_string(metadata, '$.session_id') AS sid, path, file, id, hash "
            "FROM notes WHERE sid IS NOT NULL AND sid <> '' ORDER BY path"
        ).fetchall()
        found: dict[str, dict[str, Any]] = {}
        for sid, path, file, note_id, digest in rows:
            found.setdefault(sid, {"path": path, "file": file, "id": note_id, "hash": digest})
        return found

    def sessions_by_prefix(self, prefix: str, limit: int = 2) -> list[dict[str, Any]]:
        """Notes whose ``session_id`` starts with ``prefix`` (ids are shown cut to 8)."""
        return list(
            _dicts(
                self.con.execute(
                    "SELECT * FROM notes WHERE starts_with("
                    "json_extract_string(metadata, '$.session_id'), ?) ORDER BY path LIMIT ?",
                    [prefix, limit],
                )
            )
        )

    def list_sessions(
        self,
        *,
        project: str | None = None,
        cwd: str | None = None,
        has_summary: bool | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> tuple[int, list[dict[str, Any]]]:
        """(total, page) of session notes, newest first, with whether each has a summary.

        ``since``/``until`` keep sessions active in that range (ended on or after
        ``since``, started on or before ``until``; a bare date includes its whole day).
        """
        where = ["lower(n.kind) = 'session'"]
        params: list[Any] = []
        if project:
            where.append("lower(n.project) = lower(?)")
            params.append(project)
        if cwd:
            where.append("rtrim(json_extract_string(n.metadata, '$.cwd'), '/') = ?")
            params.append(cwd.rstrip("/") or cwd)
        if since:
            where.append("coalesce(s.ended, s.started, n.date) >= ?")
            params.append(since)
        if until:
            where.append("coalesce(s.started, s.ended, n.date) <= ?")
            params.append(until + ("T99" if len(until) == 10 else ""))
        if has_summary is not None:
            where.append(
                f"{'' if has_summary else 'NOT '}(n.path IN (SELECT path FROM summarized))"
            )
        base = f"""
            WITH s AS (
                SELECT path, json_extract_string(metadata, '$.session_id') AS session_id,
                       json_extract_string(metadata, '$.started') AS started,
                       json_extract_string(metadata, '$.ended') AS ended,
                       json_extract_string(metadata, '$.cwd') AS cwd,
                       json_extract_string(metadata, '$.git_branch') AS git_branch,
                       json_extract_string(metadata, '$.turns') AS turns
                FROM notes)
            SELECT n.path, n.id, n.title, n.project, n.tags, n.hash, n.created, n.date,
                   s.session_id, s.started, s.ended, s.cwd, s.git_branch, s.turns,
                   n.path IN (SELECT path FROM summarized) AS has_summary
            FROM notes n JOIN s USING (path)
            WHERE {" AND ".join(where)}
        """
        with self._summarized_table():
            count = self.con.execute(f"SELECT count(*) FROM ({base})", params).fetchone()
            rows = self.con.execute(
                f"SELECT * FROM ({base}) ORDER BY coalesce(started, created, date) DESC "
                "NULLS LAST, path LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
            return (int(count[0]) if count else 0), list(_dicts(rows))

    def summarized_paths(self) -> frozenset[str]:
        """Paths of the notes with a summary (see SUMMARY_CHUNK_SQL), cached until the
        chunks change."""
        key = self.con.execute(
            "SELECT count(*), max(id), (SELECT value FROM meta WHERE key = 'last_sync') FROM chunks"
        ).fetchone()
        cached: tuple[Any, frozenset[str]] | None = getattr(self, "_summarized", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        ids = [
            r[0]
            for r in self.con.execute(
                f"SELECT c.id FROM chunks c WHERE {SUMMARY_CHUNK_SQL}"
            ).fetchall()
        ]
        paths: set[str] = set()
        for start in range(0, len(ids), 1000):
            # Integer literals: looked up through the id index, no scan of chunk texts.
            wanted = ", ".join(str(int(i)) for i in ids[start : start + 1000])
            rows = self.con.execute(
                f"WITH c AS MATERIALIZED (SELECT path, text FROM chunks WHERE id IN ({wanted})) "
                f"SELECT DISTINCT c.path FROM c WHERE {SUMMARY_TEXT_SQL}"
            ).fetchall()
            paths.update(r[0] for r in rows)
        self._summarized = (key, frozenset(paths))
        return self._summarized[1]

    @contextlib.contextmanager
    def _summarized_table(self) -> Iterator[None]:
        """The table ``summarized(path)`` of summarised notes, for the query inside."""
        paths = sorted(self.summarized_paths())
        self.con.register("summarized", pa.table({"path": pa.array(paths, pa.string())}))
        try:
            yield
        finally:
            self.con.unregister("summarized")

    def session_sources(self) -> dict[str, dict[str, Any]]:
        """Transcript path -> what the last import saw of it and wrote (see
        ``record_session_sources``); empty when nothing was recorded in this index."""
        if not self._has_table("session_sources"):
            return {}
        rows = _dicts(
            self.con.execute(
                "SELECT source, size, mtime, renderer, session_id, path, hash FROM session_sources"
            )
        )
        return {row["source"]: row for row in rows}

    def record_session_sources(self, rows: Sequence[dict[str, Any]]) -> None:
        """Remember, per transcript, its size and mtime, the renderer and the note it
        became with that note's hash: a later import skips a transcript when all of
        them still hold, without reading it. Derived data, so it lives here and a
        rebuilt index simply reads every transcript once more."""
        if not rows:
            return
        columns = ["source", "size", "mtime", "renderer", "session_id", "path", "hash"]
        table = pa.table(
            {
                "source": pa.array([r["source"] for r in rows], pa.string()),
                "size": pa.array([r["size"] for r in rows], pa.int64()),
                "mtime": pa.array([r["mtime"] for r in rows], pa.float64()),
                **{c: pa.array([r[c] for r in rows], pa.string()) for c in columns[3:]},
            }
        )
        with self._transaction():
            self.con.execute(
                "CREATE TABLE IF NOT EXISTS session_sources (source VARCHAR, size BIGINT, "
                "mtime DOUBLE, renderer VARCHAR, session_id VARCHAR, path VARCHAR, hash VARCHAR)"
            )
            self.con.register("recorded", table)
            self.con.execute(
                "DELETE FROM session_sources WHERE source IN (SELECT source FROM recorded)"
            )
            self.con.execute(
                f"INSERT INTO session_sources SELECT {', '.join(columns)} FROM recorded"
            )
            self.con.unregister("recorded")

    def project_overview(self) -> list[dict[str, Any]]:
        """Projects with their session and other note counts, the working folders their
        sessions ran in, and when each was last active; most recently active first."""
        with self._summarized_table():
            return list(
                _dicts(
                    self.con.execute(
                        """
                        SELECT n.project,
                            count(*) FILTER (WHERE lower(n.kind) = 'session') AS sessions,
                            count(*) FILTER (WHERE lower(n.kind) <> 'session') AS notes,
                            count(*) FILTER (WHERE lower(n.kind) = 'session'
                                AND n.path IN (SELECT path FROM summarized)) AS summarized,
                            max(coalesce(json_extract_string(n.metadata, '$.ended'), n.date))
                                AS last_active,
                            list_sort(list_distinct(
                                list(json_extract_string(n.metadata, '$.cwd')) FILTER (
                                    WHERE json_extract_string(n.metadata, '$.cwd') IS NOT NULL
                                ))) AS cwds
                        FROM notes n WHERE coalesce(n.project, '') <> ''
                        GROUP BY n.project ORDER BY last_active DESC, n.project
                        """
                    )
                )
            )

    # ---- helpers -----------------------------------------------------------------

    def _has_table(self, name: str, schema: str = "main") -> bool:
        # Asked on every query; tables only appear or vanish in our own writes.
        key = f"{schema}.{name}"
        if key not in self._tables:
            self._tables[key] = self._query_has_table(name, schema)
        return self._tables[key]

    def _query_has_table(self, name: str, schema: str) -> bool:
        row = self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? "
            "AND table_name = ?",
            [schema, name],
        ).fetchone()
        return bool(row and row[0])

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        if not self.writable:
            raise MarkvaultError("internal: write on a read-only index")
        self.con.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        finally:
            self._tables.clear()
            self._expired = None
        self.con.execute("COMMIT")


def _dicts(cur: duckdb.DuckDBPyConnection) -> Iterator[dict[str, Any]]:
    names = [d[0] for d in cur.description or []]
    for row in cur.fetchall():
        yield dict(zip(names, row, strict=True))


def _connect(path: Path, settings: Settings, read_only: bool) -> duckdb.DuckDBPyConnection:
    settings.extension_dir.mkdir(parents=True, exist_ok=True)
    config: dict[str, str | bool | int | float | list[str]] = {
        "extension_directory": str(settings.extension_dir),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    }
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only, config=config)
            # DuckDB draws a progress bar on stdout for long statements: that would
            # corrupt the MCP server's JSON-RPC stream and scripts' JSON.
            con.execute("SET enable_progress_bar = false")
            return con
        except duckdb.Error as exc:
            if not _is_lock_error(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)  # another process holds the lock; it is released on its exit
            delay = min(delay * 2, 0.5)


def _load_extension(con: duckdb.DuckDBPyConnection, settings: Settings, name: str) -> None:
    try:
        con.execute(f"LOAD {name}")
    except duckdb.Error:
        from duckdb_extensions import import_extension  # copies the packaged file only

        import_extension(name, con=con)
        con.execute(f"LOAD {name}")


def _is_lock_error(exc: BaseException) -> bool:
    return "lock" in str(exc).lower()


def _remove_db(path: Path) -> None:
    for p in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
