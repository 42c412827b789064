"""An attachment read by page: its extracted text from the index, a page range at a
time, cut to the caller's size limit at a page boundary, saying which pages come next
(as a long note is cut at a line: core/reading.py)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from markvault.errors import UsageError
from markvault.types import ATTACHMENT_KIND

if TYPE_CHECKING:
    from markvault.answers.reading import AttachmentChunk, AttachmentPage
    from markvault.index import Index

__all__ = ["ATTACHMENT_KIND", "attachment_view", "page_range"]

MAX_LISTED = 200
_PAGE_REF = re.compile(r"#page=(\d+)(?:[-:](\d+))?$")


def page_range(ref: str) -> tuple[int, int] | None:
    """The pages a reference names with ``#page=N`` or ``#page=A-B`` (as an
    attachment's hits cite it), or None."""
    found = _PAGE_REF.search(ref.strip())
    if found is None:
        return None
    first = int(found.group(1))
    return first, int(found.group(2) or first)


def attachment_view(
    index: Index, row: dict[str, Any], pages: tuple[int, int] | None, max_chars: int
) -> AttachmentPage:
    """What ``get`` returns of an attachment (its index row ``row``): pages ``pages``
    (all by default) of its text, within ``max_chars``.

    Raises:
        UsageError: a page range that is not one.
    """
    from markvault.identity import note_uri
    from markvault.search.searcher import chunk_uri

    facts = index.extracts.facts(row["hash"]) or {}
    last = int(facts.get("last_page", 0))
    start, end = pages or (1, max(last, 1))
    if start < 1 or end < start:
        raise UsageError(
            f"Bad page range {start}:{end}.", "Ask for pages A:B with 1 <= A <= B (#page=A-B)."
        )
    end = min(end, last)
    shown: list[str] = []
    size = 0
    shown_last = start - 1
    cut = None
    for number, label, text in index.extracts.pages(row["hash"], start, end):
        block = f"## {label}\n\n{text}\n"
        if shown and size + len(block) > max_chars:
            break
        if len(block) > max_chars:  # one page longer than the limit: cut, and said
            block, cut = block[:max_chars], number
        shown.append(block)
        size += len(block)
        shown_last = number
        if cut:
            break
    chunks = index.reads.chunks_of(row["path"])
    uri = note_uri(row["id"])
    listed: list[AttachmentChunk] = [
        {
            "chunk_id": c["id"],
            "heading_path": c["heading_path"],
            "page": c["start_line"],
            "uri": chunk_uri(c["id"]),
        }
        for c in chunks
        if pages is None or start <= c["start_line"] <= end
    ]
    view: AttachmentPage = {
        "id": row["id"],
        "path": row["path"],
        "title": row["title"],
        "kind": row["kind"],
        "type": row["type"],
        "metadata": json.loads(row["metadata"] or "{}"),
        "hash": row["hash"],
        "uri": uri + (f"#page={start}" if pages else ""),
        "extraction": {
            "status": facts.get("status", "unknown"),
            "reason": facts.get("reason"),
            "format": facts.get("format", row["type"]),
        },
        "pages": [start, shown_last],  # [A, A - 1]: nothing to show
        "total_pages": facts.get("total_pages", 0),
        # Pages are what paging counts here: a client that pages notes by lines pages
        # an attachment the same way.
        "lines": [start, shown_last],
        "text": "\n".join(shown),
        "next_pages": f"{shown_last + 1}:{end}" if shown and shown_last < end else None,
        "chunks": listed[:MAX_LISTED],
        "backlinks": index.reads.links_of(row["path"])[1][:MAX_LISTED],
        "problems": row["problems"],
        "next_lines": None,
    }
    view["next_lines"] = view["next_pages"]
    if cut is not None:
        view["warning"] = (
            f"page {cut} is longer than max_chars and was cut; read its chunks (chunk_id)"
        )
    return view
