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

if TYPE_CHECKING:
    from markvault.core.context import ContextViews
    from markvault.core.freshness import Freshness
    from markvault.core.git_sync import GitSync
    from markvault.core.lifecycle import IndexKeeper
    from markvault.core.reading import NoteReader
    from markvault.core.runtime_context import RuntimeContext
    from markvault.core.session_import import SessionImporter
    from markvault.core.session_notes import SessionNotes
    from markvault.core.writing import NoteWriter


class Core:
    """One vault's work, a part per concept, sharing one ``IndexKeeper``."""

    def __init__(self, context: RuntimeContext) -> None:
        """``context``: what it runs with (``runtime_context.py``); a look at the disk
        there is the first call's freshness check, a walk of the vault its sync."""
        # Imported here, not with the package: the freshness look can start before the
        # index layer (DuckDB) loads, and runs beside that import (shared_host.py).
        from markvault.core.lifecycle import IndexKeeper

        self.keeper: IndexKeeper = IndexKeeper(context)
        self._look = context.look
        # The credential policy every write passes. Made now, not on first use: it
        # stamps the settings file as ``settings`` read it, so a later change is seen.
        self.gate = CredentialGate(context.settings)

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

        return ContextViews(self.notes)

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
