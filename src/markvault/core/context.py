"""Context and the link graph: what changed lately, notes in time order around an
anchor (sessions bring their decisions along), what links to what, and the vault's
shape."""

from __future__ import annotations

import datetime as dt
import posixpath
from collections.abc import Iterable
from typing import Any

from markvault.answers.context import (
    LinkPath,
    ListedNote,
    RecentNotes,
    Related,
    Timeline,
    TimelineNote,
    VaultMap,
)
from markvault.core.common import check_page, epoch, moment
from markvault.core.link_graph import LinkGraph
from markvault.core.reading import NoteReader
from markvault.errors import MarkvaultError, NotFoundError, UsageError
from markvault.identity import note_uri, recite
from markvault.sessions.session_summary import read_summary
from markvault.types.search import Filters, SearchRequest


class ContextViews:
    """Listings of notes around a time, a note or a query, and the link graph's views."""

    def __init__(self, notes: NoteReader) -> None:
        self.notes = notes
        self.keeper = notes.keeper  # the index they read

    def recent(
        self,
        *,
        since: str | None = None,
        until: str | None = None,
        days: float | None = None,
        filters: Filters | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> RecentNotes:
        """Notes created or changed (file modified) in a time frame, newest first.

        ``days`` counts back from now when ``since`` is not given (default 7).
        """
        check_page(limit, offset)
        now = dt.datetime.now().astimezone()
        start = moment(since, "since") if since else now - dt.timedelta(days=days or 7)
        end = moment(until, "until", end_of_day=True) if until else now
        assert start is not None and end is not None
        events = []
        listed = (filters or Filters(include_expired=True)).notes_only()
        for brief in self.keeper.reader().reads.note_briefs(listed):
            changed = dt.datetime.fromtimestamp(brief["mtime_ns"] / 1e9).astimezone()
            created = moment(brief["created"])
            in_range = [
                (when, what)
                for when, what in ((created, "created"), (changed, "changed"))
                if when is not None and start <= when <= end
            ]
            if in_range:
                when, what = max(in_range, key=lambda pair: pair[0])
                events.append((when, what, brief))
        events.sort(key=lambda e: (e[0], e[2]["path"]), reverse=True)
        return {
            "since": start.isoformat(timespec="seconds"),
            "until": end.isoformat(timespec="seconds"),
            "total": len(events),
            "notes": recite(
                [
                    {**_brief_view(b), "event": what, "at": when.isoformat(timespec="seconds")}
                    for when, what, b in events[offset : offset + limit]
                ],
                self.keeper.reader().reads.unsound_paths(),
            ),
        }

    def timeline(
        self,
        anchor: str | None = None,
        *,
        query: str | None = None,
        before: int = 5,
        after: int = 5,
        filters: Filters | None = None,
    ) -> Timeline:
        """Notes in time order around an anchor: a note (id, path, URI), a session id,
        an ISO time, or the best match of ``query``."""
        if (anchor is None) == (query is None):
            raise UsageError(
                "Give an anchor or a query (one of them).",
                'Example: anchor="2026-03-01" or query="duckdb lock error".',
            )
        if not (0 <= before <= 100 and 0 <= after <= 100):
            raise UsageError("before and after must be 0..100.")
        briefs = self.keeper.reader().reads.note_briefs(
            (filters or Filters(include_expired=True)).notes_only()
        )
        for b in briefs:
            b["_at"] = moment(b["created"]) or moment(b["date"]) or epoch()
        briefs.sort(key=lambda b: (b["_at"], b["path"]))
        how = "query" if query else "note"
        if query is not None:
            hits = self.notes.search(
                SearchRequest(query, filters=filters or Filters(), limit=1)
            ).hits
            if not hits:
                raise NotFoundError(f"Nothing matches {query!r}.", "Try other words.")
            anchor_path: str | None = hits[0].path
        else:
            assert anchor is not None
            anchor_path = self._anchor_path(anchor, briefs)
            how = "note" if anchor_path else "time"
        if anchor_path is not None:
            pos = next((i for i, b in enumerate(briefs) if b["path"] == anchor_path), None)
            if pos is None:
                raise NotFoundError(
                    f"{anchor_path} is left out by the filters.", "Loosen the filters."
                )
            centre: TimelineNote | None = _timeline_view(briefs[pos])
            lo, hi = pos, pos + 1
        else:
            assert anchor is not None
            at = moment(anchor, "anchor")
            lo = hi = next((i for i, b in enumerate(briefs) if b["_at"] >= at), len(briefs))
            centre = None
        shown_before = [_timeline_view(b) for b in briefs[max(0, lo - before) : lo]]
        shown_after = [_timeline_view(b) for b in briefs[hi : hi + after]]
        recite(
            [*shown_before, *([centre] if centre else []), *shown_after],
            self.keeper.reader().reads.unsound_paths(),
        )
        # Sessions bring their decisions, outcomes and open items into the timeline.
        self._session_summaries([*shown_before, *([centre] if centre else []), *shown_after])
        return {
            "anchor": {"by": how, "value": anchor or query, "note": centre},
            "before": shown_before,
            "after": shown_after,
        }

    def _anchor_path(self, anchor: str, briefs: list[dict[str, Any]]) -> str | None:
        """The note an anchor names (id, path, URI or session id), or None for a time."""
        text = anchor.strip()
        if any(b["path"] == text for b in briefs):
            return text  # a path names its own note before any id (identity.py)
        for b in briefs:
            if text in (b["session_id"], b["id"]):
                return str(b["path"])
        # A session id cut to 8 characters, as session file names and listings show it.
        started = [b for b in briefs if len(text) >= 8 and (b["session_id"] or "").startswith(text)]
        if len(started) == 1:
            return str(started[0]["path"])
        try:
            return str(self.notes.note_row(self.keeper.reader(), text)["path"])
        except NotFoundError:
            pass
        try:
            moment(text, "anchor")
        except UsageError:
            raise NotFoundError(
                f"No note, session or time {anchor!r}.",
                "Anchor on a note id or path, a session id, or an ISO time like 2026-03-01.",
            ) from None
        return None

    def _graph(self) -> tuple[LinkGraph, dict[str, ListedNote]]:
        """The link graph, and what a listing shows of each node (note or file)."""
        index = self.keeper.reader()
        briefs = {b["path"]: _brief_view(b) for b in index.reads.note_briefs()}
        recite(list(briefs.values()), index.reads.unsound_paths())
        files = index.reads.attachments()
        briefs.update({path: _file_view(path) for path in files})
        return LinkGraph(
            index.reads.link_edges(), (p for p in briefs if p not in files), files
        ), briefs

    def _node(self, ref: str) -> str:
        """The path of the note ``ref`` names, else of the file other than a note (an
        image, a PDF) it names: who embeds a picture is asked by the picture's name."""
        index = self.keeper.reader()
        try:
            return str(self.notes.note_row(index, ref)["path"])
        except NotFoundError:
            found = index.reads.find_attachment(ref)
            if found is None:
                raise
            return found

    def related(self, ref: str, depth: int = 1, limit: int = 50) -> Related:
        """Notes and files linked to or from ``ref`` (a note, or a file such as an image:
        the notes that embed it), up to ``depth`` links away, nearest first."""
        if not 1 <= depth <= 3:
            raise UsageError("depth must be 1..3.", "Use 1 for direct links and backlinks.")
        check_page(limit, 0)
        start = self._node(ref)
        graph, briefs = self._graph()
        found = graph.related(start, depth)
        return {
            "note": briefs[start],
            "total": len(found),
            "related": [{**briefs[f["path"]], **f} for f in found[:limit]],
        }

    def link_path(self, source: str, target: str) -> LinkPath:
        """The shortest chain of links (followed either way) from one note or file to
        another."""
        a, b = self._node(source), self._node(target)
        graph, briefs = self._graph()
        steps = graph.shortest_path(a, b)
        return {
            "from": a,
            "to": b,
            "connected": steps is not None,
            "hops": len(steps) - 1 if steps else None,
            "path": [{**briefs[s["path"]], **s} for s in steps or []],
        }

    def vault_map(self, depth: int | None = None, top: int = 10) -> VaultMap:
        """Folders with note and file counts and the links between them, the most linked
        notes and files, orphan notes and files, and broken links."""
        if not 1 <= top <= 100:
            raise UsageError("top must be 1..100.")
        graph, _ = self._graph()
        broken_count, broken = self.keeper.reader().reads.unresolved_links(top * 5)
        return {
            **graph.folders(depth),
            **graph.metrics(top),
            "broken_links": broken,
            "broken_link_count": broken_count,
        }

    def _session_summaries(self, views: Iterable[TimelineNote]) -> None:
        """Add each session note's decisions, outcomes and open items to its listing
        entry, so that a timeline shows them in time order beside the notes."""
        index = self.keeper.reader()
        for view in views:
            if (view["kind"] or "").lower() != "session":
                continue
            rows = index.reads.find_notes("path", view["path"])
            if not rows:
                continue
            try:
                _, text = self.keeper.files.read(rows[0]["file"], self.keeper.max_note_bytes)
            except MarkvaultError:
                continue
            summary = read_summary(text)
            if summary is None:
                continue
            if summary.decisions:
                view["decisions"] = list(summary.decisions)
            if summary.outcomes:
                view["outcomes"] = list(summary.outcomes)
            if summary.open_items:
                view["open_items"] = list(summary.open_items)


def _file_view(path: str) -> ListedNote:
    """What a listing shows of a file that is not a note (no id, no hash: it is not
    indexed, only linked to)."""
    return {
        "id": None,
        "path": path,
        "title": posixpath.basename(path),
        "kind": "file",
        "type": None,
        "project": None,
        "date": None,
        "uri": None,
        "hash": None,
    }


def _timeline_view(brief: dict[str, Any]) -> TimelineNote:
    """What a timeline shows of a note (a session's summary items are added later)."""
    return {**_brief_view(brief)}


def _brief_view(brief: dict[str, Any]) -> ListedNote:
    """What a listing shows of a note."""
    return ListedNote(
        id=brief["id"],
        path=brief["path"],
        title=brief["title"],
        kind=brief["kind"],
        type=brief["type"],
        project=brief["project"],
        date=brief["created"] or brief["date"],
        uri=note_uri(brief["id"]),
        hash=brief["hash"],
    )
