"""The index layer: the only owner of the DuckDB file, one part per concept.

``Index`` opens the file (``store``) and composes its parts, which share its connection:
``writes`` (what a sync stores), ``keyword`` (postings and BM25), ``vectors``
(embeddings and the vector matrix), ``reads`` (notes, chunks, links, listings) and
``sessions`` (session notes and transcript records). ``filters`` turns
``model.Filters`` into SQL.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from markvault.config import Settings
from markvault.index.keyword import KeywordIndex
from markvault.index.reads import NoteReads
from markvault.index.store import IndexUnusable, Store
from markvault.index.vectors import VectorIndex

if TYPE_CHECKING:
    from markvault.index.extracts import ExtractStore
    from markvault.index.sessions import SessionQueries
    from markvault.index.writes import NoteWrites

__all__ = ["Index", "IndexUnusable"]


class Index:
    """An open index. Create with ``Index.open``; close when done."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.reads = NoteReads(store)
        self.keyword = KeywordIndex(store, self.reads)
        self.vectors = VectorIndex(store)

    # The write path and the session tables are loaded (with pyarrow, which they build
    # their tables with) by the first call that needs them: a search needs neither.
    @cached_property
    def writes(self) -> NoteWrites:
        from markvault.index.writes import NoteWrites

        return NoteWrites(self.store, self.keyword, self.vectors, self.reads)

    @cached_property
    def extracts(self) -> ExtractStore:
        """Attachments' extracted text (loaded by the calls that need it)."""
        from markvault.index.extracts import ExtractStore

        return ExtractStore(self.store)

    @cached_property
    def sessions(self) -> SessionQueries:
        from markvault.index.sessions import SessionQueries

        return SessionQueries(self.store)

    @classmethod
    def open(
        cls, settings: Settings, *, write: bool, chunk_fingerprint: str, discard: str | None = None
    ) -> Index:
        """Open the index; with ``write``, create or rebuild it when unusable (see
        ``Store.open``), and rebuild its keyword index when a large change left it so.

        Raises:
            IndexUnusable: read-only open of an index that is missing or must be rebuilt.
            IndexBusyError: another process holds the file for longer than we wait.
        """

        def ready(store: Store) -> None:
            if not store.writable:
                return
            keyword = KeywordIndex(store, NoteReads(store))
            if store.meta().get("fts_dirty") == "1":
                keyword.rebuild()
            elif not keyword.terms_indexed():  # an index from before the term index
                keyword.index_terms()

        return cls(
            Store.open(
                settings,
                write=write,
                chunk_fingerprint=chunk_fingerprint,
                ready=ready,
                discard=discard,
            )
        )

    @property
    def writable(self) -> bool:
        return self.store.writable

    @property
    def notices(self) -> list[str]:
        """What opening or writing found worth telling (a rebuild, a new model)."""
        return self.store.notices

    def meta(self) -> dict[str, str]:
        return self.store.meta()

    def close(self) -> None:
        self.store.close()
