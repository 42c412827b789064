"""Note reads and paging: search, a note or chunk by reference, several at once within
one budget, topics and the trash. A long note comes back cut at a line, saying which
lines to ask for next (a client cuts a tool result above ~25k tokens)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from markvault.attachments.view import ATTACHMENT_KIND, attachment_view, page_range
from markvault.core.common import chunk_ref
from markvault.core.lifecycle import IndexKeeper
from markvault.errors import MarkvaultError, NotFoundError, UsageError
from markvault.files.vault_files import content_hash
from markvault.identity import citation_key, note_uri, path_forms, ref_key
from markvault.index import Index
from markvault.search.searcher import Searcher, chunk_uri
from markvault.types import MAX_GET_NOTES, MAX_PAGE_CHARS, MIN_PAGE_CHARS, PAGE_CHARS
from markvault.types.progress import Progress
from markvault.types.search import Filters, SearchRequest, SearchResult

if TYPE_CHECKING:
    from markvault.answers.reading import (
        AttachmentPage,
        ChunkOmitted,
        ChunkView,
        Completions,
        NoteBrief,
        NotesPage,
        NoteView,
        RefError,
        TopicCount,
    )
    from markvault.answers.search import SearchError, SearchJSON
    from markvault.answers.writing import TrashItem

MAX_LISTED = 200  # links, backlinks and chunks listed with a note


class NoteReader:
    """Reads notes and chunks through the index; the text comes from the files."""

    def __init__(self, keeper: IndexKeeper) -> None:
        self.keeper = keeper

    def search(self, request: SearchRequest, *, progress: Progress | None = None) -> SearchResult:
        """See ``Searcher.search``; builds a keyword index first when there is none."""
        index = self.keeper.reader(progress)
        result = Searcher(
            index, self.keeper.settings.model, self.keeper.embedder, self.keeper.model_wait
        ).search(request)
        result.warnings[:0] = self.keeper.take_notices()
        return result

    def search_batch(
        self, queries: Iterable[tuple[str | None, str]], request: SearchRequest
    ) -> list[SearchJSON | SearchError]:
        """One JSON-ready result per (id, query), each searched as ``request`` says (its
        own query aside); a bad query gives an error entry."""
        results: list[SearchJSON | SearchError] = []
        for qid, text in queries:
            result: SearchJSON | SearchError
            try:
                found = self.search(request.with_query(text)).to_json()
                result = found if qid is None else {"id": qid, **found}
            except MarkvaultError as exc:
                error: SearchError = {"query": text, "error": str(exc)}
                result = error if qid is None else {"id": qid, **error}
            results.append(result)
        return results

    def get(
        self, ref: str, lines: tuple[int, int] | None = None, max_chars: int = PAGE_CHARS
    ) -> NoteView | ChunkView | AttachmentPage:
        """A note (by id, path or ``vault://note/`` URI) or a chunk (``#12``, ``vault://chunk/12``).

        A note longer than ``max_chars`` comes back cut at a line boundary, with
        ``next_lines`` saying which lines to ask for next.

        Raises:
            NotFoundError: nothing matches ``ref``.
            UsageError: ``lines`` or ``max_chars`` is not valid.
        """
        self._check_page(max_chars)
        index = self.keeper.reader()
        chunk_id = chunk_ref(ref.strip())
        if chunk_id is not None:
            return self._get_chunk(index, chunk_id)
        row = self.note_row(index, ref)
        if row["kind"] == ATTACHMENT_KIND:  # its text is the index's, by page
            return attachment_view(index, row, page_range(ref) or lines, max_chars)
        return self._note_view(index, row, lines, max_chars)

    def note(
        self, ref: str, lines: tuple[int, int] | None = None, max_chars: int = PAGE_CHARS
    ) -> NoteView:
        """A note (by id, path or ``vault://note/`` URI) in pages, as ``get`` gives it."""
        self._check_page(max_chars)
        index = self.keeper.reader()
        return self._note_view(index, self.note_row(index, ref), lines, max_chars)

    def _check_page(self, max_chars: int) -> None:
        if not MIN_PAGE_CHARS <= max_chars <= self.keeper.max_note_bytes:
            raise UsageError(
                f"max_chars must be {MIN_PAGE_CHARS:,}..{self.keeper.max_note_bytes:,}.",
                "Read long notes page by page with lines.",
            )

    def get_many(
        self,
        refs: Sequence[str] = (),
        pattern: str | None = None,
        max_chars: int = PAGE_CHARS,
    ) -> NotesPage:
        """Several notes at once, by refs or a path glob, sharing one ``max_chars`` budget:
        notes past the budget come back without text (read them with ``get``)."""
        index = self.keeper.reader()
        targets: list[str] = list(refs)
        if pattern:
            rows = index.reads.notes_matching_glob(pattern, MAX_GET_NOTES + 1)
            targets += [r["path"] for r in rows]
        if not targets:
            raise UsageError("Nothing to read.", "Pass refs, or a path pattern like 'notes/*'.")
        if len(targets) > MAX_GET_NOTES:
            raise UsageError(
                f"{len(targets)} notes asked for; at most {MAX_GET_NOTES} at once.",
                "Narrow the pattern, or search first.",
            )
        budget = max_chars
        notes: list[
            NoteView | ChunkView | AttachmentPage | NoteBrief | ChunkOmitted | RefError
        ] = []
        for ref in targets:
            view: NoteView | ChunkView | AttachmentPage | NoteBrief | ChunkOmitted | RefError
            try:
                if budget < MIN_PAGE_CHARS:
                    view = self._brief(index, ref)
                else:
                    page = self.get(ref, max_chars=min(budget, MAX_PAGE_CHARS))
                    budget -= len(page["text"])
                    view = page
            except MarkvaultError as exc:
                view = {"ref": ref, "error": str(exc)}
            notes.append(view)
        return {"notes": notes, "count": len(notes), "budget_left": max(budget, 0)}

    def _brief(self, index: Index, ref: str) -> NoteBrief | ChunkOmitted:
        if chunk_ref(ref.strip()) is not None:
            return {"ref": ref, "text": None, "omitted": "over the size budget; read it alone"}
        row = self.note_row(index, ref)
        return {
            "id": row["id"],
            "path": row["path"],
            "title": row["title"],
            "uri": self.cite(index, row["id"], row["path"]),
            "hash": row["hash"],
            "text": None,
            "omitted": "over the size budget; read it alone",
        }

    def note_row(self, index: Index, ref: str) -> dict[str, Any]:
        """The index row of the note ``ref`` names (path, id or ``vault://note/`` URI):
        a path first, so that no id ever stands for another note (``identity``).

        Raises:
            NotFoundError: no note by that path or id.
            UsageError: an id several notes share, and no path.
        """
        ref = ref.strip()
        if page_range(ref) is not None:  # an attachment's page, as its hits cite it
            ref = ref.rsplit("#", 1)[0]
        key = ref_key(ref)
        for form in path_forms(key):
            if rows := index.reads.find_notes("path", form):
                return rows[0]
        rows = index.reads.find_notes("id", key)
        if len(rows) > 1:
            raise UsageError(
                f"The id {key!r} is shared by {', '.join(r['path'] for r in rows)}.",
                "Name the note by its path; give each note an id of its own.",
            )
        rows = rows or [r for form in path_forms(key) for r in self._casefold(index, form)]
        if not rows:
            raise NotFoundError(
                f"No note with id or path {key!r}.",
                "Use an id, a vault-relative path, #CHUNK or a vault:// URI from search results.",
            )
        return rows[0]

    @staticmethod
    def _casefold(index: Index, path: str) -> list[dict[str, Any]]:
        return index.reads.find_notes("path", path, casefold=True)

    def cite(self, index: Index, note_id: str, path: str) -> str:
        """The citation URI of one note: by its id when that id names it, else its path."""
        if note_id == path:
            return note_uri(path)  # a path names its note: nothing to ask
        return note_uri(citation_key(note_id, path, index.reads.unsound_paths()))

    def _note_view(
        self,
        index: Index,
        row: dict[str, Any],
        lines: tuple[int, int] | None,
        max_chars: int = PAGE_CHARS,
    ) -> NoteView:
        data, text = self.keeper.files.read(row["file"], self.keeper.max_note_bytes)
        all_lines = text.splitlines()
        start, end = 1, len(all_lines)
        if lines:
            start, end = lines
            if start < 1 or end < start:
                raise UsageError(
                    f"Bad line range {start}:{end}.", "Use --lines A:B with 1 <= A <= B."
                )
            end = min(end, len(all_lines))
        wanted_end = end
        shown, end, cut_line = _page(all_lines, start, end, max_chars)
        out_links, in_links = index.reads.links_of(row["path"])
        current = content_hash(data)
        view: NoteView = {
            "id": row["id"],
            "path": row["path"],
            "title": row["title"],
            "kind": row["kind"],
            "type": row["type"],
            "tags": row["tags"],
            "metadata": json.loads(row["metadata"] or "{}"),
            "hash": current,
            "stale": current != row["hash"],
            "uri": self.cite(index, row["id"], row["path"]),
            "lines": [start, end],
            "total_lines": len(all_lines),
            "text": shown,
            "next_lines": f"{end + 1}:{wanted_end}" if end < wanted_end else None,
            "chunks": [
                {
                    "chunk_id": c["id"],
                    "heading_path": c["heading_path"],
                    "lines": [c["start_line"], c["end_line"]],
                    "uri": chunk_uri(c["id"]),
                }
                for c in index.reads.chunks_of(row["path"])[:MAX_LISTED]
            ],
            "links": out_links[:MAX_LISTED],
            "backlinks": in_links[:MAX_LISTED],
            "link_counts": {"links": len(out_links), "backlinks": len(in_links)},
            "problems": row["problems"],
        }
        if cut_line:
            view["warning"] = f"line {end} is longer than a page and was cut"
        return view

    def _get_chunk(self, index: Index, chunk_id: int) -> ChunkView:
        row = index.reads.chunk_details([chunk_id]).get(chunk_id)
        if row is None:
            raise NotFoundError(
                f"No chunk #{chunk_id}.",
                "Chunk ids change when their text changes: search again for a fresh one.",
            )
        view: ChunkView = {
            "chunk_id": chunk_id,
            "uri": chunk_uri(chunk_id),
            "id": row["note_id"],
            "path": row["path"],
            "title": row["title"],
            "kind": row["kind"],
            "heading_path": row["heading_path"],
            "lines": [row["start_line"], row["end_line"]],
            "text": row["text"],
            "hash": row["hash"],
            "note_uri": self.cite(index, row["note_id"], row["path"]),
        }
        if row["kind"] == ATTACHMENT_KIND and row["start_line"]:  # lines are its pages
            view["page"] = row["start_line"]
            view["note_uri"] += f"#page={row['start_line']}"
        return view

    def trash(self) -> list[TrashItem]:
        """What the trash holds, newest first."""
        return self.keeper.files.trash_listing()

    def topics(self) -> list[TopicCount]:
        """Knowledge and document topics with their counts."""
        return self.keeper.reader().reads.topics()

    def complete(self, what: str, prefix: str, limit: int = 100) -> Completions:
        """Completions of a ``note``, ``topic``, ``project`` or ``session`` argument
        that start with ``prefix``: ``{"values": [...] (best first), "total": n}``."""
        values, total = self.keeper.reader().reads.completions(what, prefix, limit)
        return {"values": values, "total": total}

    def topic_points(self, topic: str, max_chars: int = PAGE_CHARS) -> NotesPage:
        """A topic's knowledge points, newest first, their text within ``max_chars``."""
        filters = Filters(kinds=["knowledge"], topics=[topic], include_expired=True)
        briefs = self.keeper.reader().reads.note_briefs(filters)
        if not briefs:
            raise NotFoundError(
                f"No knowledge points on topic {topic!r}.", "List the topics to see which exist."
            )
        briefs.sort(key=lambda b: b["date"] or "", reverse=True)
        return self.get_many([b["path"] for b in briefs[:MAX_GET_NOTES]], max_chars=max_chars)


def _page(lines: list[str], start: int, end: int, max_chars: int) -> tuple[str, int, bool]:
    """(text, last line shown, whether that line was cut) of lines ``start``..``end``,
    stopping at the line that would take the text past ``max_chars``."""
    shown: list[str] = []
    size = 0
    last = start - 1
    for number in range(start, end + 1):
        line = lines[number - 1]
        if size + len(line) + 1 > max_chars:
            if not shown:  # one line longer than a page: cut it rather than loop forever
                return line[:max_chars], number, True
            break
        shown.append(line)
        size += len(line) + 1
        last = number
    return "\n".join(shown), last, False
