"""PLAIN DATA: what the writes answer (new, edit, move, delete, restore), with the
credential gate's report that each write's answer ends with."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

# ---- credentials (every write) ------------------------------------------------------


class RedactedFinding(TypedDict):
    """Where a credential was found (and redacted), never what it was."""

    kind: str
    rule: str
    line: int
    column: int
    where: str
    fingerprint: str


class WriteWarnings(TypedDict, total=False):
    """What a write's answer says when its file landed but the index did not follow."""

    warnings: list[str]


class CredentialReport(TypedDict, total=False):
    """What a write carries when the credential gate redacted something (else nothing)."""

    credentials: str
    redacted: list[RedactedFinding]


class WriteReport(CredentialReport, WriteWarnings):
    """What each write's answer ends with: what the credential gate redacted, and what
    became of the index after the file landed. A write's answer is the note's facts
    (``WrittenNote``, ``EditedNote``, ...), then this: a TypedDict's keys come base by
    base, so the report's keys stay last."""


# ---- writing ------------------------------------------------------------------------


class WrittenNote(TypedDict):
    """The note a write made (``NoteCreated``)."""

    path: str
    id: str
    uri: str
    hash: str
    title: str
    # store_document of an attachment kept as it is (PDF, Office, ...): what its text gave
    format: NotRequired[str]
    extraction: NotRequired[str]
    pages: NotRequired[int]
    problem: NotRequired[str | None]


class NoteCreated(WrittenNote, WriteReport):
    """``new_note``, ``learn_knowledge``, ``store_document``: the note just written, and
    the write's report."""


class EditedNote(TypedDict):
    """The note an edit changed: its new hash (its old one when nothing changed)."""

    path: str
    hash: str
    changed: bool
    uri: str


class NoteEdited(EditedNote, WriteReport):
    """``edit_note``: the note's new hash, and the write's report."""


class BrokenLink(TypedDict):
    """A link elsewhere that a move left pointing nowhere."""

    source: str
    line: int
    target: str


# Where a moved note is now (``moved`` False: it was there already, and only path,
# moved, hash and uri are given). Written as a call: "from" is a Python keyword.
MovedNote = TypedDict(
    "MovedNote",
    {
        "path": str,
        "from": NotRequired[str],
        "moved": bool,
        "id": NotRequired[str],
        "uri": str,
        "hash": str,
        "broken_links": NotRequired[list[BrokenLink]],
    },
)


class NoteMoved(MovedNote, WriteReport):
    """``move_note``: where the note is now, and the write's report (its ``warnings``:
    the file moved; what became of the index)."""


class NoteDeleted(TypedDict):
    """``delete_note``: where the note went in the trash, and how to bring it back."""

    path: str
    trash_path: str
    restore: str
    warnings: NotRequired[list[str]]  # the file moved; what became of the index after it


class RestoredNote(TypedDict):
    """The note a restore brought back from the trash (``NoteRestored``)."""

    path: str
    id: str
    uri: str
    hash: str | None


class NoteRestored(RestoredNote, WriteReport):
    """``restore_note``: the note back from the trash, and the write's report."""


class TrashItem(TypedDict):
    """A note in the trash."""

    trash_path: str
    restores_to: str
    deleted: str
    bytes: int
