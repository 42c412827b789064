"""The core: what the facade's calls do, in the process that owns the index.

The faces call the facade (``vault.Vault``), which routes each call to the process that
owns the index; there ``Core`` hands it to the part it concerns. ``index/`` owns the
DuckDB file and ``files.py`` reads and writes the vault's files.
"""

from __future__ import annotations

from ..config import Settings
from ..embed import Embedder
from .context import ContextViews
from .lifecycle import IndexKeeper
from .reading import NoteReader
from .session_import import SessionImporter
from .session_notes import SessionNotes
from .writing import NoteWriter


class Core:
    """One vault's work, a part per concept, sharing one ``IndexKeeper``."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        """``embedder`` lets several vaults share one loaded model (its name must match)."""
        self.keeper = IndexKeeper(settings, embedder)  # lifecycle and sync
        self.notes = NoteReader(self.keeper)  # note reads and paging
        self.writer = NoteWriter(self.keeper, self.notes)  # note writes and templates
        self.context = ContextViews(self.keeper, self.notes)  # context and the link graph
        self.importer = SessionImporter(self.keeper)  # the session import pipeline
        self.sessions = SessionNotes(self.keeper, self.notes)  # session notes once imported

    @property
    def settings(self) -> Settings:
        return self.keeper.settings

    def close(self) -> None:
        self.keeper.close()
