"""The facade both faces call: every call a vault answers, typed and declared once.

The CLI and the MCP server hold a ``Vault`` and format what it returns. Each method is
declared ``@reads`` or ``@writes`` (``calls.py``) and runs where the index is owned: in
this process when it owns the index, else in the owner process, which runs the same
method (``shared.SharedHost``). Its body hands the call to the core (``core/``), which
decides when to open, build or refresh the index; ``index/`` owns the DuckDB file and
``files.py`` reads and writes the vault's files.

What is not a call (background work, watching, who owns the index) is on ``vault.host``.
The faces get their vault from ``shared.connect``; tests, benchmarks and scripts that
share the index with nobody from ``host.open_local``. This module imports only light
modules: a command that talks to a running owner never loads the index layer or the
model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markvault.answers.context import LinkPath, RecentNotes, Related, Timeline, VaultMap
from markvault.answers.reading import (
    AttachmentPage,
    ChunkView,
    Completions,
    NotesPage,
    NoteView,
    TopicCount,
)
from markvault.answers.search import SearchError, SearchJSON
from markvault.answers.sessions import (
    SessionList,
    SessionMatches,
    SessionPage,
    SessionProjects,
    SummarySaved,
)
from markvault.answers.status import IndexStatus, PendingCounts, Status
from markvault.answers.sync import SyncAnswer
from markvault.answers.writing import (
    NoteCreated,
    NoteDeleted,
    NoteEdited,
    NoteMoved,
    NoteRestored,
    TrashItem,
)
from markvault.calls import Host, declared_calls, reads, writes
from markvault.config import Settings
from markvault.errors import UsageError
from markvault.types import (
    PAGE_CHARS,
    Edit,
    Filters,
    Progress,
    ReindexReport,
    SearchRequest,
    SearchResult,
    SessionImportReport,
    SessionQuery,
)

if TYPE_CHECKING:
    from markvault.core import Core
    from markvault.sessions.session_summary import SessionSummary


class Vault:
    """One vault: its notes, their index, and the calls both faces make."""

    def __init__(self, host: Host) -> None:
        self.host = host

    @property
    def settings(self) -> Settings:
        return self.host.settings

    @property
    def _core(self) -> Core:
        return self.host.core()

    def close(self) -> None:
        self.host.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def status(self) -> Status:
        """Index health (``index_status``), plus which process owns the index as this
        process sees it: the one call whose answer depends on who asks."""
        return {**self.index_status(), "owner": self.host.owner_info()}

    # ---- the index -----------------------------------------------------------------

    @writes
    def reindex(
        self,
        *,
        full: bool = False,
        vectors: bool = True,
        progress: Progress | None = None,
        paths: Iterable[str] | None = None,
        embed_limit: int | None = None,
    ) -> ReindexReport:
        """Bring the index in step with the files (``full``: rebuild it from nothing)."""
        return self._core.keeper.reindex(
            full=full, vectors=vectors, progress=progress, paths=paths, embed_limit=embed_limit
        )

    @writes
    def refresh(
        self, progress: Progress | None = None, paths: Iterable[str] | None = None
    ) -> ReindexReport:
        """Bring the index up to date after a change to the files (``paths``: hints)."""
        return self._core.keeper.refresh(progress, paths)

    @writes
    def sync(
        self,
        *,
        message: str | None = None,
        push: bool = True,
        dry_run: bool = False,
        pull: str | None = None,
        interactive: bool = False,
    ) -> SyncAnswer:
        """Commit the vault's changes, pull the upstream's, push, and index what arrived
        (``gitsync.SyncReport.to_json`` and ``index``: the index's report, or None). A
        conflict is reported in ``conflicts``, not raised. ``pull``: "merge" or "rebase"
        (None: the vault's ``[sync] pull``); ``interactive``: git may prompt on this
        terminal for a password (only where the call runs in the caller's process)."""
        return self._core.git.sync(
            message=message, push=push, dry_run=dry_run, pull=pull, interactive=interactive
        )

    @reads
    def index_status(self) -> IndexStatus:
        """Notes, chunks, vectors, pending files, problems and the watcher's state."""
        return self._core.keeper.status()

    @reads
    def pending(self) -> PendingCounts:
        """Files new, changed or deleted since the last sync."""
        return self._core.keeper.pending()

    # ---- reading -------------------------------------------------------------------

    @reads
    def search(self, request: SearchRequest, *, progress: Progress | None = None) -> SearchResult:
        """Keyword, vector, hybrid or deep search; the best chunk of each note."""
        return self._core.notes.search(request, progress)

    @reads
    def search_batch(
        self, queries: Iterable[tuple[str | None, str]], request: SearchRequest
    ) -> list[SearchJSON | SearchError]:
        """One JSON-ready result per (id, query), each searched as ``request`` says (its
        own query aside); a bad query gives an error entry."""
        return list(self._core.notes.search_batch(queries, request))

    @reads
    def get(
        self, ref: str, lines: tuple[int, int] | None = None, max_chars: int = PAGE_CHARS
    ) -> NoteView | ChunkView | AttachmentPage:
        """A note (id, path, URI) in pages, or a chunk (#12)."""
        return self._core.notes.get(ref, lines, max_chars)

    @reads
    def get_many(
        self, refs: Sequence[str] = (), pattern: str | None = None, max_chars: int = PAGE_CHARS
    ) -> NotesPage:
        """Several notes at once, by refs or a path glob, within one budget."""
        return self._core.notes.get_many(refs, pattern, max_chars)

    @reads
    def trash(self) -> list[TrashItem]:
        """What the trash holds, newest first."""
        return self._core.notes.trash()

    @reads
    def topics(self) -> list[TopicCount]:
        """Knowledge and document topics with their counts."""
        return self._core.notes.topics()

    @reads
    def complete(self, what: str, prefix: str, limit: int = 100) -> Completions:
        """Values of a ``note``, ``topic``, ``project`` or ``session`` argument that start
        with ``prefix``: ``{"values": [...] (best first), "total": n}``."""
        return self._core.notes.complete(what, prefix, limit)

    @reads
    def topic_points(self, topic: str, max_chars: int = PAGE_CHARS) -> NotesPage:
        """A topic's knowledge points, newest first."""
        return self._core.notes.topic_points(topic, max_chars)

    # ---- writing -------------------------------------------------------------------

    @writes
    def new_note(
        self,
        kind: str,
        title: str,
        *,
        topic: str | None = None,
        tags: Iterable[str] = (),
        project: str | None = None,
        content: str = "",
        edits: Sequence[Edit] = (),
    ) -> NoteCreated:
        """Create a note from its kind's template; never overwrites. Its path, id, URI,
        hash and title, and what the credential gate redacted."""
        return self._core.writer.new_note(
            kind, title, topic=topic, tags=tags, project=project, content=content, edits=edits
        )

    @writes
    def edit_note(self, ref: str, edits: Sequence[Edit], expected_hash: str) -> NoteEdited:
        """Apply edits to a note whose content hash is still ``expected_hash``."""
        return self._core.writer.edit_note(ref, edits, expected_hash)

    @writes
    def move_note(self, ref: str, to: str, expected_hash: str) -> NoteMoved:
        """Move or rename a note; never overwrites."""
        return self._core.writer.move_note(ref, to, expected_hash)

    @writes
    def delete_note(self, ref: str, expected_hash: str) -> NoteDeleted:
        """Move a note into the vault's trash."""
        return self._core.writer.delete_note(ref, expected_hash)

    @writes
    def restore_note(self, trash_path: str, to: str | None = None) -> NoteRestored:
        """Bring a note back from the trash."""
        return self._core.writer.restore_note(trash_path, to)

    @writes
    def learn_knowledge(
        self, topic: str, content: str, tags: Iterable[str] = (), title: str | None = None
    ) -> NoteCreated:
        """Write a knowledge point under ``knowledge/<topic>/``."""
        return self._core.writer.learn_knowledge(topic, content, tags, title)

    @writes
    def store_document(
        self,
        source: str | Path,
        topic: str | None = None,
        title: str | None = None,
        *,
        by_person: bool = False,
        allow_hidden: bool = False,
        as_markdown: bool = False,
    ) -> NoteCreated:
        """Copy a Markdown, text or JSON file into ``documents/``: an agent's only from
        the allowed folders, a person's (``by_person``) from any ordinary path. A PDF or
        Office file is kept as it is and its text indexed, or with ``as_markdown``
        stored as a Markdown note of its text."""
        return self._core.writer.store_document(
            source,
            topic,
            title,
            by_person=by_person,
            allow_hidden=allow_hidden,
            as_markdown=as_markdown,
        )

    # ---- context -------------------------------------------------------------------

    @reads
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
        """Notes created or changed in a time frame, newest first."""
        return self._core.context.recent(
            since=since, until=until, days=days, filters=filters, limit=limit, offset=offset
        )

    @reads
    def timeline(
        self,
        anchor: str | None = None,
        *,
        query: str | None = None,
        before: int = 5,
        after: int = 5,
        filters: Filters | None = None,
    ) -> Timeline:
        """Notes in time order around a note, a session, a time or a query's best match."""
        return self._core.context.timeline(
            anchor, query=query, before=before, after=after, filters=filters
        )

    @reads
    def related(self, ref: str, depth: int = 1, limit: int = 50) -> Related:
        """Notes linked to or from ``ref``, up to ``depth`` links away."""
        return self._core.context.related(ref, depth, limit)

    @reads
    def link_path(self, source: str, target: str) -> LinkPath:
        """The shortest chain of links from one note to another."""
        return self._core.context.link_path(source, target)

    @reads
    def vault_map(self, depth: int | None = None, top: int = 10) -> VaultMap:
        """Folders, the links between them, the most linked notes, orphans, broken links."""
        return self._core.context.vault_map(depth, top)

    # ---- sessions ------------------------------------------------------------------

    @writes
    def import_sessions(
        self,
        source: str | Path | None = None,
        *,
        project: str | Path | None = None,
        since: str | None = None,
        progress: Progress | None = None,
        home: Path | None = None,
    ) -> SessionImportReport:
        """Import Claude Code transcripts as session notes (incremental, idempotent)."""
        return self._core.importer.import_sessions(
            source, project=project, since=since, progress=progress, home=home
        )

    @reads
    def list_sessions(self, query: SessionQuery) -> SessionList:
        """Session notes, newest first."""
        return self._core.sessions.list_sessions(query)

    @reads
    def session_projects(self) -> SessionProjects:
        """Projects with their sessions, other notes and last activity."""
        return self._core.sessions.session_projects()

    @reads
    def read_session(
        self,
        ref: str,
        *,
        lines: tuple[int, int] | None = None,
        query: str | None = None,
        max_chars: int = PAGE_CHARS,
        max_matches: int = 50,
    ) -> SessionPage | SessionMatches:
        """A session note in pages with its summary, or the lines matching ``query``."""
        return self._core.sessions.read_session(
            ref, lines=lines, query=query, max_chars=max_chars, max_matches=max_matches
        )

    @writes
    def save_session_summary(
        self, ref: str, summary: SessionSummary | Mapping[str, Any], expected_hash: str
    ) -> SummarySaved:
        """Write a session's structured summary into its note."""
        return self._core.sessions.save_session_summary(ref, summary, expected_hash)


# The owner's dispatch table: every declared call, by name.
CALLS = declared_calls(Vault)


def parse_lines(value: str | None) -> tuple[int, int] | None:
    """ "A:B", "A:" (to the end), ":B" or "A" (one line) as a 1-based range, for both faces.

    Raises:
        UsageError: anything else.
    """
    if not value:
        return None
    start, sep, end = value.strip().partition(":")
    try:
        a = int(start) if start else 1
        b = int(end) if end else 10**9
    except ValueError:
        raise UsageError(
            f"Bad line range {value!r}.", 'Give lines as "A:B", "A:" or ":B", e.g. "10:40".'
        ) from None
    return (a, b) if sep else (a, a)
