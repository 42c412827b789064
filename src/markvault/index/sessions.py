"""Queries over session notes: Claude Code's session id and times live in their
frontmatter, which the notes table keeps as JSON in ``metadata``; and the record of
which transcript became which note (``session_sources``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from markvault.index.store import Store, dict_rows

if TYPE_CHECKING:
    from markvault.answers.sessions import ProjectEntry
    from markvault.types.sessions import SessionQuery

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


class SessionQueries:
    """Session notes by id, listings with summaries, projects, transcript records."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.con = store.con
        self._summarized: tuple[Any, frozenset[str]] | None = None

    def notes_by_id(self) -> dict[str, dict[str, Any]]:
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

    def by_prefix(self, prefix: str, limit: int = 2) -> list[dict[str, Any]]:
        """Notes whose ``session_id`` starts with ``prefix`` (ids are shown cut to 8)."""
        return list(
            dict_rows(
                self.con.execute(
                    "SELECT * FROM notes WHERE starts_with("
                    "json_extract_string(metadata, '$.session_id'), ?) ORDER BY path LIMIT ?",
                    [prefix, limit],
                )
            )
        )

    def listing(self, query: SessionQuery) -> tuple[int, list[dict[str, Any]]]:
        """(total, page) of session notes, newest first, with whether each has a summary.

        ``since``/``until`` keep sessions active in that range (ended on or after
        ``since``, started on or before ``until``; a bare date includes its whole day).
        """
        project, cwd, since, until = query.project, query.cwd, query.since, query.until
        has_summary = query.has_summary
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
                [*params, query.limit, query.offset],
            )
            return (int(count[0]) if count else 0), list(dict_rows(rows))

    def summarized_paths(self) -> frozenset[str]:
        """Paths of the notes with a summary (see SUMMARY_CHUNK_SQL), cached until the
        chunks change."""
        key = self.con.execute(
            "SELECT count(*), max(id), (SELECT value FROM meta WHERE key = 'last_sync') FROM chunks"
        ).fetchone()
        if self._summarized is not None and self._summarized[0] == key:
            return self._summarized[1]
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

    def sources(self) -> dict[str, dict[str, Any]]:
        """Transcript path -> what the last import saw of it and wrote (see
        ``record_sources``); empty when nothing was recorded in this index."""
        if not self.store.has_table("session_sources"):
            return {}
        rows = dict_rows(
            self.con.execute(
                "SELECT source, size, mtime, renderer, session_id, path, hash FROM session_sources"
            )
        )
        return {row["source"]: row for row in rows}

    def record_sources(self, rows: Sequence[dict[str, Any]]) -> None:
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
        with self.store.transaction():
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

    def projects(self) -> list[ProjectEntry]:
        """Projects with their session and other note counts, the working folders their
        sessions ran in, and when each was last active; most recently active first."""
        with self._summarized_table():
            found: list[Any] = list(
                dict_rows(
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
        return found
