"""PLAIN DATA: what ``sync`` answers: the git report and what the index took in."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

# ---- sync ---------------------------------------------------------------------------

# A file in a sync's commit: "from" is the old path of a move.
SyncChange = TypedDict(
    "SyncChange",
    {
        "status": Literal["added", "edited", "moved", "deleted"],
        "path": str,
        "from": str | None,
        "note": bool,
    },
)


class IndexReport(TypedDict):
    """What a sync of the index did (``types.ReindexReport``)."""

    notes: int
    chunks: int
    added: int
    updated: int
    renamed: int
    removed: int
    unchanged: int
    embedded: int
    reused: int
    errors: list[dict[str, str]]
    warnings: list[dict[str, str]]
    notices: list[str]
    vectors: bool
    seconds: float


class SyncJSON(TypedDict):
    """A git sync's report (``git.sync.SyncReport``)."""

    vault: str
    branch: str
    upstream: str
    dry_run: bool
    finished: str | None
    commit: str | None
    message: str | None
    changes: list[SyncChange]
    pulled: int
    pushed: int
    ahead: int
    behind: int
    changed_paths: list[str]
    conflicts: list[str]
    notices: list[str]


class SyncAnswer(SyncJSON):
    """``sync``: the git report, and what the index took in (None: nothing to index)."""

    index: IndexReport | None
