"""Reads of notes, chunks and links: lookups, listings, the link graph's edges, counts."""

from __future__ import annotations

import datetime as dt
import unicodedata
from collections import Counter
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from markvault.errors import UsageError
from markvault.identity import id_problem
from markvault.index.filters import current_sql, filters_sql, sql_string
from markvault.index.prefix_lookup import NameIndex, count_lookup
from markvault.index.store import Store, dict_rows
from markvault.search.time_signal import note_days
from markvault.types.search import Filters

if TYPE_CHECKING:
    import numpy as np

    from markvault.answers.context import UnresolvedLink
    from markvault.answers.reading import Backlink, OutLink, TopicCount
    from markvault.answers.status import IndexStats, NoteProblem

# What a hit shows of its note (``chunk_details``), in the order they are read. Only
# what is shown: each column costs a query time, a list column (tags) most.
_NOTE_DETAILS = ("note_id", "title", "kind", "type", "hash")
# Notes proper: attachments (files whose text is indexed) are counted apart.
_NOT_ATTACHMENT = "kind IS DISTINCT FROM 'attachment'"
# Up to this many notes, a process that searches again keeps them all (``_ChunkNotes``).
NOTE_DETAILS_KEPT = 20_000


class NoteReads:
    """What the index knows of notes, chunks and links, for everything but ranking."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.con = store.con
        # (day, store.changes, ids): chunks not current, until a day or a write passes
        self._expired: tuple[str, int, tuple[int, ...]] | None = None
        self._names: dict[str, NameIndex | Counter[str]] = {}  # completions, until notes change
        self._chunk_notes: tuple[int, _ChunkNotes] | None = None  # (store.changes, map)
        self._notes_asked = -1  # store.changes when chunk_notes was last asked
        self._unsound: tuple[int, frozenset[str]] | None = None  # (store.changes, paths)

    def forget_names(self) -> None:
        """Notes changed: the names kept for completions are stale."""
        self._names = {}

    def expired_chunk_ids(self) -> tuple[int, ...]:
        """Sorted ids of the chunks of notes that are no longer current (past
        ``valid_until``, superseded): usually few, so searches drop them from their
        results instead of joining every candidate with its note."""
        today = dt.date.today().isoformat()
        if self._expired is None or self._expired[:2] != (today, self.store.changes):
            # The notes first: usually none is expired, and then no chunk is read.
            gone = self.con.execute(
                f"SELECT n.path FROM notes n WHERE NOT {current_sql(today)}"
            ).fetchall()
            ids: tuple[int, ...] = ()
            if gone:
                paths = ", ".join(sql_string(r[0]) for r in gone)
                rows = self.con.execute(
                    f"SELECT id FROM chunks WHERE path IN ({paths}) ORDER BY id"
                ).fetchall()
                ids = tuple(int(r[0]) for r in rows)
            self._expired = (today, self.store.changes, ids)
        return self._expired[2]

    def chunk_ids_matching(self, filters: Filters) -> np.ndarray:
        """Ids of the chunks of notes that pass ``filters``."""
        import numpy as np  # the vector side's: a keyword search never loads numpy

        where, params = filters_sql(filters)
        rows = self.con.execute(
            f"SELECT c.id FROM chunks c JOIN notes n ON n.path = c.path WHERE {where}", params
        ).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def note_dates(self, paths: Sequence[str]) -> dict[str, str | None]:
        """Each note's date (updated, else created, else its file's time) for ordering."""
        if not paths:
            return {}
        rows = self._query_paths(
            paths, "SELECT n.path, n.date FROM notes n JOIN {wanted} USING (path)"
        )
        return {r[0]: r[1] for r in rows}

    def note_days(self, paths: Sequence[str]) -> dict[str, list[dt.date]]:
        """The days each note is dated (frontmatter ``date``, ``started``, ``created``,
        ``updated``; its file's time when it has none), for time words in a query."""
        if not paths:
            return {}
        rows = self._query_paths(
            paths,
            "SELECT n.path, json_extract_string(n.metadata, '$.date'), "
            "json_extract_string(n.metadata, '$.started'), n.created, n.updated, n.date "
            "FROM notes n JOIN {wanted} USING (path)",
        )
        out = {}
        for path, *values in rows:
            days = note_days(values[:-1])
            out[path] = days or note_days(values[-1:])
        return out

    def note_keys(self, paths: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        """Each indexed note's (id, topic): what a change to it is announced by."""
        if not paths:
            return {}
        rows = self._query_paths(
            paths, "SELECT n.path, n.id, n.topic FROM notes n JOIN {wanted} USING (path)"
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def _query_paths(self, paths: Sequence[str], sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` with ``{wanted}`` standing for a relation ``wanted(path)`` holding
        ``paths`` (``Store.rows``: a bound list of thousands of strings is slow to bind,
        and a few paths need no Arrow table)."""
        with self.store.rows({"path": list(paths)}, "wanted") as wanted:
            return self.con.execute(sql.format(wanted=wanted)).fetchall()

    def chunk_rows(self, ids: Sequence[int], columns: str) -> list[tuple[Any, ...]]:
        """``(id, *columns)`` of each chunk id (ids that no longer exist are left out)."""
        if not ids:
            return []
        wanted = ", ".join(str(int(i)) for i in ids)
        return self.con.execute(
            f"SELECT id, {columns} FROM chunks WHERE id IN ({wanted})"
        ).fetchall()

    def chunk_paths(self, ids: Sequence[int]) -> dict[int, str]:
        """The note path of each chunk id (ids that no longer exist are left out): from
        ``chunk_notes``'s arrays while they are current (a warm search asks twice per
        hybrid fusion, ~3 ms each in SQL), else read."""
        kept = self._chunk_notes
        if kept is not None and kept[0] == self.store.changes:
            return {cid: note[0] for cid, note in kept[1].lookup(ids).items()}
        return {int(r[0]): r[1] for r in self.chunk_rows(ids, "path")}

    def chunk_notes(self, ids: Sequence[int]) -> dict[int, tuple[str, int, bool]]:
        """The note path, the note's length and whether the chunk is a user's turn
        (``chunks.user_turn``) of each chunk id (ids that no longer exist are left
        out). A warm search (in numpy: keyword.py) asks for ~200 at a time, which an
        ``IN`` list cost DuckDB ~2-3 ms to plan and look up; so the second time it is
        asked with no write in between, every chunk's is read into arrays (~17 bytes a
        chunk; that search takes ~150 ms longer at 10k notes: bench/README.md), kept
        until the index changes."""
        changes = self.store.changes
        if self._chunk_notes is not None and self._chunk_notes[0] == changes:
            return self._chunk_notes[1].lookup(ids)
        if self._notes_asked != changes:  # a write may come before the next search
            self._notes_asked = changes
            return self.read_chunk_notes(ids)
        self._chunk_notes = (changes, _ChunkNotes(self.con))
        return self._chunk_notes[1].lookup(ids)

    def read_chunk_notes(self, ids: Sequence[int]) -> dict[int, tuple[str, int, bool]]:
        """``chunk_notes``'s answer read now, never kept (a one-shot search's)."""
        rows = self.chunk_rows(ids, "path, note_len, user_turn")
        return {int(r[0]): (r[1], int(r[2]), bool(r[3])) for r in rows}

    def transcripts(self, paths: Collection[str]) -> set[str]:
        """Which notes of ``paths`` are transcripts: hold a user's turn
        (``chunks.user_turn``) anywhere, not only among a search's candidates."""
        if not paths:
            return set()
        kept = self._chunk_notes
        if kept is not None and kept[0] == self.store.changes:
            return kept[1].transcripts.intersection(paths)
        listed = ", ".join(sql_string(p) for p in sorted(paths))
        rows = self.con.execute(
            f"SELECT DISTINCT path FROM chunks WHERE path IN ({listed}) AND user_turn"
        ).fetchall()
        return {r[0] for r in rows}

    def chunk_details(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Everything a hit shows, for the given chunk ids."""
        if not ids:
            return {}
        # Two lookups by key, chunks by id, then their notes by path: a join would read
        # every note. Keys go in as literals: DuckDB answers an IN list of constants from
        # the ART index (a bound list, or a join, scans the table).
        wanted = ", ".join(str(int(i)) for i in ids)
        chunks = self.con.execute(
            "SELECT id, path, heading_path, start_line, end_line, text FROM chunks "
            f"WHERE id IN ({wanted})"
        ).fetchall()
        if not chunks:
            return {}
        notes = self._note_details({r[1] for r in chunks})
        details: dict[int, dict[str, Any]] = {}
        for cid, path, heading_path, start, end, text in chunks:
            note = notes.get(path)
            if note is None:  # a chunk whose note is gone (never, within a transaction)
                continue
            details[cid] = {
                "id": cid,
                "path": path,
                "heading_path": heading_path,
                "start_line": start,
                "end_line": end,
                "text": text,
                **dict(zip(_NOTE_DETAILS, note, strict=True)),
            }
        return details

    def _note_details(self, paths: set[str]) -> dict[str, tuple[Any, ...]]:
        """What a hit shows of each note in ``paths`` (``_NOTE_DETAILS``): kept with the
        chunks' notes while those are current in a vault of up to ``NOTE_DETAILS_KEPT``
        notes, else read by key."""
        kept = self._chunk_notes
        if kept is not None and kept[0] == self.store.changes and kept[1].details is not None:
            shown = kept[1].details
            return {p: shown[p] for p in paths if p in shown}
        literals = ", ".join(sql_string(p) for p in paths)
        rows = self.con.execute(
            f"SELECT path, id, title, kind, type, hash FROM notes WHERE path IN ({literals})"
        ).fetchall()
        return {r[0]: r[1:] for r in rows}

    def find_notes(self, column: str, value: str, casefold: bool = False) -> list[dict[str, Any]]:
        """Notes whose ``column`` (path, id or file) equals ``value``."""
        assert column in ("path", "id", "file")
        expr = f"lower({column}) = lower(?)" if casefold else f"{column} = ?"
        return list(
            dict_rows(self.con.execute(f"SELECT * FROM notes WHERE {expr} ORDER BY path", [value]))
        )

    def chunks_of(self, path: str) -> list[dict[str, Any]]:
        return list(
            dict_rows(
                self.con.execute(
                    "SELECT id, seq, heading_path, start_line, end_line, hash FROM chunks "
                    "WHERE path = ? ORDER BY seq",
                    [path],
                )
            )
        )

    def links_of(self, path: str) -> tuple[list[OutLink], list[Backlink]]:
        """(outgoing, incoming) links of a note."""
        out: list[Any] = list(
            dict_rows(
                self.con.execute(
                    "SELECT target, heading, block, alias, embed, style, line, target_path "
                    "FROM links WHERE source = ? ORDER BY line",
                    [path],
                )
            )
        )
        incoming: list[Any] = list(
            dict_rows(
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
        where, params = ("TRUE", []) if filters is None else filters_sql(filters)
        return list(
            dict_rows(
                self.con.execute(
                    "SELECT n.path, n.id, n.title, n.kind, n.type, n.topic, n.project, "
                    "n.tags, n.created, n.updated, n.date, n.mtime_ns, n.hash, n.valid_until, "
                    "n.superseded_by, json_extract_string(n.metadata, '$.session_id') "
                    f"AS session_id FROM notes n WHERE {where} ORDER BY n.path",
                    params,
                )
            )
        )

    def attachments(self) -> set[str]:
        """Every file of the vault that is not a note (images, PDFs, ...), as the last
        sync saw it."""
        return {r[0] for r in self.con.execute("SELECT path FROM attachments").fetchall()}

    def racy_notes(self) -> int:
        """Notes recorded as racy (``racy.RACY_CTIME``): the next look must compare them."""
        row = self.con.execute("SELECT count(*) FROM notes WHERE ctime_ns = -1").fetchone()
        return int(row[0]) if row else 0

    def file_states_of(
        self, paths: Sequence[str]
    ) -> dict[str, tuple[int, int, int | None, int | None]]:
        """(mtime_ns, size, ctime_ns, inode) as last synced of the notes and skipped
        files among ``paths`` (NFC vault-relative; a skipped file has no ctime nor inode):
        what a freshness check compares with the disk (``racy.same_file``)."""
        rows = self._query_paths(
            sorted(set(paths)),
            "SELECT path, mtime_ns, size, ctime_ns, ino FROM notes "
            "WHERE path IN (SELECT path FROM {wanted}) "
            "UNION ALL SELECT path, mtime_ns, size, NULL, NULL FROM skipped "
            "WHERE path IN (SELECT path FROM {wanted})",
        )
        return {r[0]: (int(r[1]), int(r[2]), r[3], r[4]) for r in rows}

    def find_attachment(self, ref: str) -> str | None:
        """The file other than a note that ``ref`` names: its vault path, or the end of
        the path of only one file (case-insensitively)."""
        key = unicodedata.normalize("NFC", ref.strip().strip("/")).casefold()
        files = self.attachments()
        exact = [p for p in files if p.casefold() == key]
        ending = [p for p in files if p.casefold().endswith("/" + key)]
        found = exact or ending
        return found[0] if len(found) == 1 else None

    def link_edges(self) -> list[tuple[str, str]]:
        """(source path, target path) of every resolved link to another note or file."""
        rows = self.con.execute(
            "SELECT source, target_path FROM links WHERE target_path IS NOT NULL "
            "AND target_path <> source"
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def unresolved_links(self, limit: int) -> tuple[int, list[UnresolvedLink]]:
        """(count, first ``limit``) links whose target is no note."""
        row = self.con.execute(
            "SELECT count(*) FROM links WHERE target_path IS NULL AND target <> ''"
        ).fetchone()
        rows = dict_rows(
            self.con.execute(
                "SELECT source, target, line FROM links WHERE target_path IS NULL "
                "AND target <> '' ORDER BY source, line LIMIT ?",
                [limit],
            )
        )
        found: list[Any] = list(rows)
        return (int(row[0]) if row else 0), found

    def notes_matching_glob(self, pattern: str, limit: int) -> list[dict[str, Any]]:
        """Notes whose path matches the glob ``pattern``, by path."""
        return list(
            dict_rows(
                self.con.execute(
                    "SELECT * FROM notes WHERE path GLOB ? ORDER BY path LIMIT ?",
                    [pattern, limit],
                )
            )
        )

    def topics(self) -> list[TopicCount]:
        """Topics of knowledge points and documents, with counts and last change."""
        found: list[Any] = list(
            dict_rows(
                self.con.execute(
                    "SELECT topic, count(*) FILTER (WHERE kind = 'knowledge') AS knowledge, "
                    "count(*) FILTER (WHERE kind = 'document') AS documents, "
                    "max(date) AS last_changed FROM notes "
                    "WHERE coalesce(topic, '') <> '' AND kind IN ('knowledge', 'document') "
                    "GROUP BY topic ORDER BY count(*) DESC, topic"
                )
            )
        )
        return found

    def completions(self, what: str, prefix: str, limit: int) -> tuple[list[str], int]:
        """Values of a ``note``, ``topic``, ``project`` or ``session`` argument that start
        with ``prefix``, best first, and how many match in all (``prefix_lookup``).

        Notes give ids (their path when they have none), sessions their short session id
        (8 characters; the whole id where 8 are ambiguous), topics and projects names.
        Each kind's names are read on first use and kept until notes change.
        """
        if what not in self._names:
            self._names[what] = self._read_names(what)
        found = self._names[what]
        if isinstance(found, NameIndex):
            return found.lookup(prefix, limit)
        return count_lookup(found, prefix, limit)

    def _read_names(self, what: str) -> NameIndex | Counter[str]:
        if what in ("topic", "project"):
            rows = self.con.execute(
                f"SELECT {what}, count(*) FROM notes WHERE coalesce({what}, '') <> '' "
                f"GROUP BY {what}"
            ).fetchall()
            return Counter({name: count for name, count in rows})
        if what == "note":
            sql = (
                "SELECT coalesce(id, path) AS k, coalesce(title, ''), coalesce(date, '') FROM notes"
            )
        elif what == "session":
            sql = (
                "SELECT json_extract_string(metadata, '$.session_id') AS k, coalesce(title, ''), "
                "coalesce(date, '') FROM notes WHERE kind = 'session' AND coalesce(k, '') <> ''"
            )
        else:
            raise UsageError(
                f"Nothing to complete for {what!r}.", "Use note, topic, project or session."
            )
        # Arrow to Python lists: a quarter of fetchall's time for 10k rows.
        table = self.con.execute(sql).to_arrow_table()
        keys, titles, dates = (column.to_pylist() for column in table.columns)
        values = keys
        if what == "session":  # the 8 characters read_session takes, where they are unique
            short = Counter(k[:8] for k in keys)
            values = [k[:8] if short[k[:8]] == 1 else k for k in keys]
        return NameIndex(values, keys, titles, dates)

    def note_and_chunk_counts(self) -> tuple[int, int]:
        """(notes, chunks): what a sync reports, without the rest of ``stats``."""
        row = self.con.execute(
            f"SELECT (SELECT count(*) FROM notes WHERE {_NOT_ATTACHMENT}), "
            "(SELECT count(*) FROM chunks)"
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def stats(self) -> IndexStats:
        one = self.con.execute(
            f"SELECT (SELECT count(*) FROM notes WHERE {_NOT_ATTACHMENT}), "
            "(SELECT count(*) FROM chunks), "
            "(SELECT count(*) FROM links), "
            "(SELECT count(*) FROM links WHERE target_path IS NULL), "
            "(SELECT count(*) FROM skipped), (SELECT count(*) FROM attachments), "
            "(SELECT count(*) FROM links WHERE target_path IN (SELECT path FROM attachments))"
        ).fetchone() or (0, 0, 0, 0, 0, 0, 0)

        def counts(column: str) -> dict[str, int]:
            rows = self.con.execute(
                f"SELECT coalesce({column}, '(none)') k, count(*) FROM notes "
                f"WHERE {_NOT_ATTACHMENT} GROUP BY k "
                "ORDER BY count(*) DESC, k"
            ).fetchall()
            return {r[0]: int(r[1]) for r in rows}

        return {
            "notes": int(one[0]),
            "chunks": int(one[1]),
            "links": int(one[2]),
            "links_to_notes": int(one[2]) - int(one[3]) - int(one[6]),
            "links_to_files": int(one[6]),
            "unresolved_links": int(one[3]),
            "files": int(one[5]),  # files that are not notes (attachments)
            "skipped_files": int(one[4]),
            "by_kind": counts("kind"),
            "by_type": counts("type"),
            "by_topic": counts("topic"),
            "by_project": counts("project"),
        }

    def problems(self) -> list[NoteProblem]:
        rows = self.con.execute(
            "SELECT path, unnest(problems) FROM notes WHERE len(problems) > 0 "
            "UNION ALL SELECT path, reason FROM skipped ORDER BY 1"
        ).fetchall()
        found: list[NoteProblem] = [{"path": r[0], "problem": r[1]} for r in rows]
        return sorted(found + self.identity_problems(), key=lambda p: p["path"])

    def unsound_paths(self) -> frozenset[str]:
        """The notes whose frontmatter id does not name them (``identity``): cited by
        their path. Kept until the index changes: a search asks for every page of hits,
        and a query each time cost more than the rest of a keyword search."""
        kept = self._unsound
        if kept is None or kept[0] != self.store.changes:
            rows = self.con.execute(_unsound_sql("a.id <> a.path")).fetchall()
            kept = self._unsound = (self.store.changes, frozenset(str(r[0]) for r in rows))
        return kept[1]

    def unsound_among(self, paths: Sequence[str]) -> frozenset[str]:
        """``unsound_paths`` restricted to ``paths`` (a page of hits): read from the kept
        set when this process has it, else asked for those notes alone (the whole set
        is a self-join of every note, ~8 ms on 6,600 notes, for a one-shot search)."""
        kept = self._unsound
        if kept is not None and kept[0] == self.store.changes:
            return kept[1] & frozenset(paths)
        if not paths:
            return frozenset()
        # Literals (``sql_string``'s rule): a bound list of strings costs a one-shot
        # search DuckDB's import of decimal and pandas' lookup.
        where = f"a.id <> a.path AND a.path IN ({', '.join(map(sql_string, paths))})"
        rows = self.con.execute(_unsound_sql(where)).fetchall()
        return frozenset(str(r[0]) for r in rows)

    def identity_problems(self) -> list[NoteProblem]:
        """Frontmatter ids that do not name their note (``identity``): another note's
        path, shared with another note, or written as a path. Equality joins only: an
        OR in the join would compare every note with every other."""
        rows = self.con.execute(
            "SELECT a.path, a.id, b.path, 0 FROM notes a JOIN notes b ON b.path = a.id "
            "WHERE a.id <> a.path "
            "UNION ALL SELECT a.path, a.id, b.path, 0 FROM notes a "
            "JOIN notes b ON b.path = a.id || '.md' AND b.path <> a.path WHERE a.id <> a.path "
            "UNION ALL SELECT a.path, a.id, b.path, 1 FROM notes a "
            "JOIN notes b ON b.id = a.id AND b.path <> a.path WHERE a.id <> a.path "
            "UNION ALL SELECT path, id, NULL, 2 FROM notes "
            "WHERE id <> path AND lower(id) LIKE '%.md' ORDER BY 1, 4, 3"
        ).fetchall()
        said: dict[str, str] = {}
        for path, note_id, other, what in rows:
            if path not in said:
                said[path] = id_problem(note_id, other, ("path", "id", "looks")[what])
        return [{"path": path, "problem": problem} for path, problem in said.items()]


class _ChunkNotes:
    """Every chunk's note (path, length) and whether it is a user's turn by chunk id, in
    sorted arrays (17 bytes a chunk and a path a note), and in a smaller vault what a hit
    shows of each note."""

    def __init__(self, con: Any) -> None:
        import numpy as np

        # Notes by row id: a join yields small integers, not a path string per chunk.
        rows = con.execute(
            "SELECT c.id, n.rowid AS note, c.note_len, c.user_turn "
            "FROM chunks c JOIN notes n ON n.path = c.path"
        ).fetchnumpy()
        order = np.argsort(rows["id"], kind="stable")
        self.ids = np.asarray(rows["id"], dtype=np.int64)[order]
        self.note = np.asarray(rows["note"], dtype=np.int32)[order]
        self.note_len = np.asarray(rows["note_len"], dtype=np.int32)[order]
        self.user_turn = np.asarray(rows["user_turn"], dtype=np.bool_)[order]
        notes = con.execute("SELECT rowid, path FROM notes").fetchall()
        self.paths: list[str] = [""] * (max((r[0] for r in notes), default=-1) + 1)
        for rowid, path in notes:
            self.paths[rowid] = path
        self.transcripts = {self.paths[n] for n in np.unique(self.note[self.user_turn]).tolist()}
        # What a hit shows of each note too, in a vault small enough: a lookup by key
        # costs a search ~1 ms; keeping them ~530 bytes a note (bench/README.md).
        self.details: dict[str, tuple[Any, ...]] | None = None
        if len(notes) <= NOTE_DETAILS_KEPT:
            shown = con.execute("SELECT path, id, title, kind, type, hash FROM notes").fetchall()
            self.details = {r[0]: r[1:] for r in shown}

    def lookup(self, ids: Sequence[int]) -> dict[int, tuple[str, int, bool]]:
        import numpy as np

        if not len(ids) or not len(self.ids):
            return {}
        wanted = np.asarray(ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.ids, wanted), len(self.ids) - 1)
        found = self.ids[at] == wanted
        at = at[found]
        paths = self.paths
        return {
            cid: (paths[note], length, user_turn)
            for cid, note, length, user_turn in zip(
                wanted[found].tolist(),
                self.note[at].tolist(),
                self.note_len[at].tolist(),
                self.user_turn[at].tolist(),
                strict=True,
            )
        }


def _unsound_sql(where: str) -> str:
    """The notes ``a`` (those ``where`` keeps) whose id names another note's path, with or
    without ".md", or is shared with another note: equality joins only, as an OR in the
    join would compare every note with every other."""
    return (
        f"SELECT a.path FROM notes a JOIN notes b ON b.path = a.id WHERE {where} "
        "UNION SELECT a.path FROM notes a JOIN notes b ON b.path = a.id || '.md' "
        f"AND b.path <> a.path WHERE {where} "
        "UNION SELECT a.path FROM notes a JOIN notes b ON b.id = a.id "
        f"AND b.path <> a.path WHERE {where}"
    )
