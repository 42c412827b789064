"""What a sync or a rebuild of the index did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from markvault.answers.sync import IndexReport


@dataclass
class ReindexReport:
    notes: int = 0
    chunks: int = 0
    added: int = 0
    updated: int = 0
    renamed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    reused: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    vectors: bool = True
    seconds: float = 0.0
    # What the sync's second wave did with attachments' text (attachment_sync): files
    # indexed, read, reused by content hash, removed, not read, pending; pages; seconds.
    attachments: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> IndexReport:
        # Every field, in order (IndexReport declares them: keep the two in step).
        return cast("IndexReport", dict(self.__dict__, seconds=round(self.seconds, 3)))
