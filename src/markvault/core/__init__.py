"""The core: what the facade's calls do, in the process that owns the index.

The faces call the facade (``vault.Vault``), which routes each call to the process that
owns the index; there ``Core`` hands it to the part it concerns. ``index/`` owns the
DuckDB file and ``files.py`` reads and writes the vault's files.

Each part is made (and its module imported) the first time a call needs it: a
short-lived `vault search` loads the index layer and the search, never the writers, the
session pipeline or the link graph.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from markvault.config import Settings
from markvault.core.gate import CredentialGate
from markvault.embed.embedder import Embedder

if TYPE_CHECKING:
    from markvault.core.context import ContextViews
    from markvault.core.freshness import Freshness, LookAhead
    from markvault.core.git_sync import GitSync
    from markvault.core.host_turns import HostTurns
    from markvault.core.lifecycle import IndexKeeper
    from markvault.core.reading import NoteReader
    from markvault.core.session_import import SessionImporter
    from markvault.core.session_notes import SessionNotes
    from markvault.core.writing import NoteWriter
    from markvault.files.find_walk import FindWalk


class Core:
    """One vault's work, a part per concept, sharing one ``IndexKeeper``."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        look: LookAhead | None = None,
        walk: FindWalk | None = None,
        turns: HostTurns | None = None,
    ) -> None:
        """``embedder`` lets several vaults share one loaded model (its name must match);
        ``look``: a look at the disk already under way for the first call's freshness
        check (``freshness.look_ahead``); ``walk``: GNU find's walk of the vault already
        under way for the first call's sync (a one-shot `vault reindex`); ``turns``: what the
        host that runs its calls lends it (``host_turns.py``; none: a core on its own)."""
        # Imported here, not with the package: the freshness look can start before the
        # index layer (DuckDB) loads, and runs beside that import (shared.py).
        from markvault.core.lifecycle import IndexKeeper

        self.keeper: IndexKeeper = IndexKeeper(settings, embedder, walk, turns)
        self._look = look
        # The credential policy every write passes. Made now, not on first use: it
        # stamps the settings file as ``settings`` read it, so a later change is seen.
        self.gate = CredentialGate(settings)

    @cached_property
    def notes(self) -> NoteReader:
        """Note reads, search and paging."""
        from markvault.core.reading import NoteReader

        return NoteReader(self.keeper)

    @cached_property
    def writer(self) -> NoteWriter:
        """Note writes and templates."""
        from markvault.core.writing import NoteWriter

        return NoteWriter(self.keeper, self.notes, self.gate)

    @cached_property
    def context(self) -> ContextViews:
        """Context and the link graph."""
        from markvault.core.context import ContextViews

        return ContextViews(self.keeper, self.notes)

    @cached_property
    def importer(self) -> SessionImporter:
        """The session import pipeline."""
        from markvault.core.session_import import SessionImporter

        return SessionImporter(self.keeper, self.gate)

    @cached_property
    def sessions(self) -> SessionNotes:
        """Session notes once imported."""
        from markvault.core.session_notes import SessionNotes

        return SessionNotes(self.keeper, self.notes, self.gate)

    @cached_property
    def fresh(self) -> Freshness:
        """Small changes on disk synced before a call."""
        from markvault.core.freshness import Freshness

        look, self._look = self._look, None
        return Freshness(self.keeper, look)

    @cached_property
    def git(self) -> GitSync:
        """`vault sync`: commit, pull, push, then index what arrived."""
        from markvault.core.git_sync import GitSync

        return GitSync(self.keeper)

    @property
    def settings(self) -> Settings:
        return self.keeper.settings

    def close(self) -> None:
        self.keeper.close()
