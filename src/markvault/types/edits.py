"""One change to a note's text, as the faces ask for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Op = Literal[
    "append",
    "prepend",
    "replace_section",
    "insert_before",
    "insert_after",
    "replace_text",
    "set_key",
    "remove_key",
]
OPS: tuple[str, ...] = Op.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Edit:
    """One change to a note's text (applied by ``edit.apply_edit``)."""

    op: Op
    text: str = ""  # content to add, or the replacement
    heading: str | None = None  # for section operations: "Heading" or "## Heading"
    find: str | None = None  # for replace_text
    count: int = 1  # expected occurrences for replace_text
    key: str | None = None  # for set_key / remove_key
    value: Any = None  # for set_key
