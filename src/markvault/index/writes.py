"""The write path: what a sync stores. Notes, chunks and links are replaced note by
note in one transaction, the keyword index is updated in the same transaction when the
change is small (``keyword.KeywordIndex``), and links are resolved afterwards.

Rows go in through ``Store.rows``: a few as SQL literals, many as an Arrow table, so
pyarrow is imported only by a large write (a first build, a big checkout), never by a
one-note sync or a command that only compares file states.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from markvault.index.keyword import KeywordIndex
from markvault.index.reads import NoteReads
from markvault.index.rows import CHUNK_COLUMNS, LINK_COLUMNS, NOTE_COLUMNS, NoteRows, row_tables
from markvault.index.store import Store
from markvault.index.vectors import VectorIndex

# The tables holding a note's rows, by the column naming the note; and the skipped files'.
_NOTE_ROWS = (("notes", "path"), ("chunks", "path"), ("links", "source"))
_SKIPPED_ROWS = (("skipped", "path"),)


class NoteWrites:
    """Stores synced notes: records, removals, skipped files, file facts, link targets."""

    def __init__(
        self, store: Store, keyword: KeywordIndex, vectors: VectorIndex, reads: NoteReads
    ) -> None:
        self.store = store
        self.con = store.con
        self.keyword = keyword
        self.vectors = vectors
        self.reads = reads

    def file_states(self) -> dict[str, tuple[str, int, int, str, int | None, int | None]]:
        """path -> (file on disk, mtime_ns, size, hash, ctime_ns, inode) of every indexed
        note (ctime ``racy.RACY_CTIME`` when it was recorded as racy); attachments, which
        their own sync keeps (``attachments/reconcile.py``), left out."""
        rows = self.con.execute(
            "SELECT path, file, mtime_ns, size, hash, ctime_ns, ino FROM notes "
            "WHERE kind IS DISTINCT FROM 'attachment'"
        ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows}

    def skipped_states(self) -> dict[str, tuple[int, int, str]]:
        rows = self.con.execute("SELECT path, mtime_ns, size, reason FROM skipped").fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def touch(self, stats: Iterable[tuple[str, str, int, int, int | None, int | None]]) -> None:
        """Record new (file, mtime, size, ctime, inode) for notes whose bytes did not
        change."""
        rows = list(stats)
        if not rows:
            return
        columns: dict[str, list[Any]] = {
            "path": [r[0] for r in rows],
            "file": [r[1] for r in rows],
            "mtime_ns": [r[2] for r in rows],
            "size": [r[3] for r in rows],
            "ctime_ns": [r[4] for r in rows],
            "ino": [r[5] for r in rows],
        }
        with self.store.transaction(), self.store.rows(columns, "t") as touched:
            self.con.execute(
                "UPDATE notes SET file = t.file, mtime_ns = t.mtime_ns, size = t.size, "
                f"ctime_ns = t.ctime_ns, ino = t.ino FROM {touched} WHERE notes.path = t.path"
            )

    def begin_batches(self, notes: int) -> None:
        """A sync is about to write about ``notes`` notes in several transactions.

        Links are marked unresolved until the sync resolves them at its end (an
        interrupted run leaves the next sync to resolve every link). When the whole
        change is too large for the keyword index's in-place update, the index is marked
        for one rebuild at the end: each batch alone would fit and be applied in place.
        """
        known, chunks = self.reads.note_and_chunk_counts()
        per_note = chunks / known if known else 1.0
        with self.store.transaction():
            self.store.set_meta(links_pending="1")
            if not self.keyword.delta_fits(int(notes * per_note)):
                self.store.set_meta(fts_dirty="1")

    def links_pending(self) -> bool:
        """Whether a sync wrote notes and stopped before resolving their links."""
        return self.store.meta().get("links_pending") == "1"

    def clear_links_pending(self) -> None:
        """The sync that wrote notes batch by batch has resolved their links."""
        with self.store.transaction():
            self.store.set_meta(links_pending="0")

    def apply(
        self,
        records: Sequence[NoteRows],
        removed: Sequence[str],
        skipped: Sequence[tuple[str, str, int, int]] = (),
        *,
        unindexed: bool = False,
    ) -> None:
        """Replace the given notes, remove others, and record skipped files, atomically.

        Chunk ids are kept for chunks whose text is unchanged, also across renames,
        so that ``#id`` citations survive edits elsewhere in a note. ``unindexed``: the
        caller knows that no path given is a note of the index (a first build's
        batches): its notes, chunks and links are not searched for them.
        """
        paths = [r.path for r in records]
        gone = sorted({*paths, *removed, *(s[0] for s in skipped)})
        with self.store.transaction(), self.store.rows({"path": gone}) as gone_rows:
            old: dict[str, list[int]] = {}
            in_gone = f"IN (SELECT path FROM {gone_rows})"
            old_ids: list[int] = []
            sql = f"SELECT id, hash FROM chunks WHERE path {in_gone} ORDER BY id"
            for cid, chash in [] if unindexed else self.con.execute(sql).fetchall():
                old.setdefault(chash, []).append(cid)
                old_ids.append(cid)
            new_count = sum(r.chunk_count for r in records)
            incremental = self.keyword.delta_fits(len(old_ids) + new_count)
            taken_out = self.keyword.remove_postings(old_ids) if incremental else 0
            for table, column in _SKIPPED_ROWS if unindexed else _NOTE_ROWS + _SKIPPED_ROWS:
                self.con.execute(f"DELETE FROM {table} WHERE {column} {in_gone}")
            new_ids = self._insert(records, old) if records else []
            if incremental:
                self.keyword.add_postings(records, new_ids, taken_out)
            else:
                self.keyword.stage(records, new_ids, len(old_ids))
            if skipped:
                self.store.insert_rows(
                    "skipped",
                    {
                        "path": [s[0] for s in skipped],
                        "reason": [s[1] for s in skipped],
                        "mtime_ns": [s[2] for s in skipped],
                        "size": [s[3] for s in skipped],
                    },
                )
            if (old_ids or new_ids) and not incremental:
                self.store.set_meta(fts_dirty="1")
            self.store.set_meta(last_sync=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        self.vectors.forget()
        self.reads.forget_names()

    def _insert(self, records: Sequence[NoteRows], old: dict[str, list[int]]) -> list[int]:
        """Insert notes, chunks and links; returns the chunk ids inserted: those of
        ``old`` (chunk hash -> ids of the chunks replaced) for unchanged text, else new."""
        if any(r.block is not None for r in records):  # a worker's rows: Arrow
            return self._insert_tables(*row_tables(records), old)
        rows = zip(*(r.note for r in records), strict=True)
        notes = {c: list(v) for c, v in zip(NOTE_COLUMNS, rows, strict=True)}
        chunks: dict[str, list[Any]] = {"id": []}
        for i, column in enumerate(CHUNK_COLUMNS):
            chunks[column] = list(chain.from_iterable(r.chunks[i] for r in records))
        links = {
            column: list(chain.from_iterable(r.links[i] for r in records))
            for i, column in enumerate(LINK_COLUMNS)
        }
        chunks["id"] = ids = self._chunk_ids(chunks["hash"], old)
        self.store.insert_rows("notes", notes, extra="now()")
        self.store.insert_rows("chunks", chunks)
        self.store.insert_rows("links", links, extra="NULL")
        return list(ids)

    def _insert_tables(
        self, notes: Any, chunks: Any, links: Any, old: dict[str, list[int]]
    ) -> list[int]:
        """``_insert`` of rows given as Arrow tables (``rows.row_tables``)."""
        import pyarrow as pa

        # The hashes only matter when ids are reused (not in a first build's writes).
        hashes = chunks.column("hash").to_pylist() if old else [""] * chunks.num_rows
        ids = self._chunk_ids(hashes, old)
        self.store.insert_table("notes", notes, extra="now()")
        self.store.insert_table("chunks", chunks.add_column(0, "id", pa.array(ids, pa.int64())))
        self.store.insert_table("links", links, extra="NULL")
        return ids

    def _chunk_ids(self, hashes: Sequence[str], old: dict[str, list[int]]) -> list[int]:
        """Ids for new chunks of these ``hashes``: those of ``old`` (chunk hash -> ids of
        the chunks replaced) for unchanged text, else new."""
        fresh = [
            r[0]
            for r in self.con.execute(
                "SELECT nextval('chunk_ids') FROM range(?)", [len(hashes)]
            ).fetchall()
        ]
        if not old:
            return fresh
        new = iter(fresh)
        return [(reuse.pop(0) if (reuse := old.get(h)) else next(new)) for h in hashes]

    def note_link_keys(self, paths: Sequence[str] | None = None) -> list[tuple[str, list[str]]]:
        """(path, aliases) of every note, or of the notes at ``paths``, for link
        resolution."""
        # Attachments are files, not notes, to links (their names resolve as files).
        sql = "SELECT path, aliases FROM notes WHERE kind IS DISTINCT FROM 'attachment'"
        if paths is None:
            return [(r[0], list(r[1] or [])) for r in self.con.execute(sql).fetchall()]
        if not paths:
            return []
        with self.store.rows({"path": sorted(set(paths))}, "p") as wanted:
            rows = self.con.execute(f"{sql} AND path IN (SELECT path FROM {wanted})")
            return [(r[0], list(r[1] or [])) for r in rows.fetchall()]

    def set_attachments(self, added: Iterable[str], removed: Iterable[str]) -> None:
        """Record files other than notes that appeared or went."""
        added, removed = sorted(set(added)), sorted(set(removed))
        if not added and not removed:
            return
        with self.store.transaction():
            if removed:
                with self.store.rows({"path": removed}) as gone:
                    self.con.execute(
                        f"DELETE FROM attachments WHERE path IN (SELECT path FROM {gone})"
                    )
            if added:
                self.store.insert_rows("attachments", {"path": added})

    def links_to_resolve(
        self,
        sources: Sequence[str] | None,
        names: Iterable[str] = (),
        targets: Iterable[str] = (),
    ) -> list[tuple[int, str, str, str]]:
        """(rowid, source, target, style) of links: all of them (``sources`` None), or
        those written in ``sources``, naming a file called one of ``names``
        (``links.link_name``) or pointing at one of ``targets``."""
        sql = "SELECT rowid, source, target, style FROM links"
        if sources is None:
            return self.con.execute(sql).fetchall()
        # Only the conditions that can hold: an edit that renames nothing asks for its
        # note's own links, which a scan of one column finds.
        wanted = {
            column: sorted(set(values))
            for column, values in (
                ("source", sources),
                ("target_name", names),
                ("target_path", targets),
            )
        }
        with contextlib.ExitStack() as stack:
            conditions = [
                f"{column} IN (SELECT v FROM "
                f"{stack.enter_context(self.store.rows({'v': values}, f'w{i}'))})"
                for i, (column, values) in enumerate(wanted.items())
                if values
            ]
            if not conditions:
                return []
            return self.con.execute(f"{sql} WHERE {' OR '.join(conditions)}").fetchall()

    def set_link_targets(self, resolved: Sequence[tuple[int, str | None]]) -> None:
        if not resolved:
            return
        columns: dict[str, list[Any]] = {
            "rid": [r[0] for r in resolved],
            "tp": [r[1] for r in resolved],
        }
        with self.store.transaction(), self.store.rows(columns, "r") as rows:
            self.con.execute(
                f"UPDATE links SET target_path = r.tp FROM {rows} WHERE links.rowid = r.rid"
            )
