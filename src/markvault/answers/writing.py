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
    """What a write carries when the credential gate redacted something (else nothing).
    Each write's answer ends with these two keys (declared in each: a base class's keys
    would come first)."""

    credentials: str
    redacted: list[RedactedFinding]


# ---- writing ------------------------------------------------------------------------


class NoteCreated(TypedDict):
    """``new_note``, ``learn_knowledge``, ``store_document``: the note just written."""

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
    credentials: NotRequired[str]  # what the credential gate redacted (CredentialReport)
    redacted: NotRequired[list[RedactedFinding]]
    warnings: NotRequired[list[str]]  # the file landed; what became of the index after it


class NoteEdited(TypedDict):
    """``edit_note``: the note's new hash (its old one when nothing changed)."""

    path: str
    hash: str
    changed: bool
    uri: str
    credentials: NotRequired[str]  # what the credential gate redacted (CredentialReport)
    redacted: NotRequired[list[RedactedFinding]]
    warnings: NotRequired[list[str]]  # the file landed; what became of the index after it


class BrokenLink(TypedDict):
    """A link elsewhere that a move left pointing nowhere."""

    source: str
    line: int
    target: str


# ``move_note``: where the note is now (``moved`` False: it was there already, and only
# path, moved, hash and uri are given). Written as a call: "from" is a Python keyword.
NoteMoved = TypedDict(
    "NoteMoved",
    {
        "path": str,
        "from": NotRequired[str],
        "moved": bool,
        "id": NotRequired[str],
        "uri": str,
        "hash": str,
        "broken_links": NotRequired[list[BrokenLink]],
        "credentials": NotRequired[str],
        "redacted": NotRequired[list[RedactedFinding]],
        "warnings": NotRequired[list[str]],  # the file moved; what became of the index
    },
)


class NoteDeleted(TypedDict):
    """``delete_note``: where the note went in the trash, and how to bring it back."""

    path: str
    trash_path: str
    restore: str
    warnings: NotRequired[list[str]]  # the file moved; what became of the index after it


class NoteRestored(TypedDict):
    """``restore_note``: the note back from the trash."""

    path: str
    id: str
    uri: str
    hash: str | None
    credentials: NotRequired[str]  # what the credential gate redacted (CredentialReport)
    redacted: NotRequired[list[RedactedFinding]]
    warnings: NotRequired[list[str]]  # the file landed; what became of the index after it


class TrashItem(TypedDict):
    """A note in the trash."""

    trash_path: str
    restores_to: str
    deleted: str
    bytes: int
