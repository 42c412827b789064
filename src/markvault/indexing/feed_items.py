"""What the owner's change feed carries (change_feed.py): the notes a sync changed
(``NoteChange`` in a ``ChangeBatch``), or word that they cannot be listed, and the
owner's news as log lines (``OwnerEvent``). Paths and reasons only, never a note's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""The log levels of the MCP specification (syslog's), least severe first."""


@dataclass(frozen=True)
class NoteChange:
    """One note that changed in the index, as the owner's sync saw it.

    ``kind``: ``added``, ``changed``, ``moved`` (``old_*`` say where it was) or
    ``removed``. Paths are vault-relative; ``id`` is the note's id; ``topic`` its
    knowledge topic, if any.
    """

    kind: Literal["added", "changed", "moved", "removed"]
    path: str
    id: str | None = None
    topic: str | None = None
    old_path: str | None = None
    old_id: str | None = None
    old_topic: str | None = None


@dataclass(frozen=True)
class ChangeBatch:
    """The notes one sync changed, or (``lost`` set: why) word that they cannot be listed."""

    notes: tuple[NoteChange, ...] = ()
    lost: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "notes", tuple(self.notes))  # a list when decoded


@dataclass(frozen=True)
class OwnerEvent:
    """News from the owner for the people behind the clients: a log line.

    ``kind`` says what it is about (``skipped``, ``embedding``, ``sync_conflict``, ...),
    ``paths`` the notes concerned. Paths and reasons only, never a note's text.
    """

    level: Level
    kind: str
    message: str
    paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", tuple(self.paths))


FeedItem = ChangeBatch | OwnerEvent
