"""A collection's documents written out as a vault of Markdown notes.

Each document becomes ``docs/<id>.md`` with frontmatter ``id`` (the document id, so
hits map straight back to the judgments), ``title``, and ``authors``/``source`` when
the collection has them (kept as metadata, not searched), and its text as the body.

SMART text is hard-wrapped, and a line indented by four spaces would be a Markdown
code block; so the body is reflowed: lines are joined, and a line that starts with
whitespace starts a new paragraph (that is how Cranfield marks paragraphs). Nothing
else changes, so keyword tokens are those of the original text.

Files are only rewritten when their bytes differ: a kept ``--workdir`` vault then
reindexes as "unchanged" and its vectors are reused across runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from .smart import Document

_BLOCK_START = re.compile(r"^(#|>|[-+*] |\d+[.)] |```|~~~)")


def reflow(text: str) -> str:
    """Hard-wrapped SMART text as Markdown paragraphs (see the module docstring)."""
    paragraphs: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not paragraphs or line[:1].isspace():
            paragraphs.append([])
        paragraphs[-1].append(line.strip())
    out = []
    for words in paragraphs:
        para = " ".join(words)
        # A paragraph that happens to start like a heading, list or fence stays text.
        out.append("\\" + para if _BLOCK_START.match(para) else para)
    return "\n\n".join(out)


def note_text(doc: Document, title: bool = True) -> str:
    """The Markdown note for one document. JSON strings are valid YAML scalars.

    ``title=False`` leaves the title out (markvault then titles the note by its file
    name), for the experiment that measures how much the repeated title weighs.
    """
    front = [f"id: {json.dumps(doc.doc_id)}"]
    if title:
        front.append(f"title: {json.dumps(doc.title)}")
    if doc.authors:
        front.append(f"authors: {json.dumps(doc.authors)}")
    if doc.source:
        front.append(f"source: {json.dumps(doc.source)}")
    body = reflow(doc.text)
    return "---\n" + "\n".join(front) + "\n---\n\n" + (body + "\n" if body else "")


def searchable_text(doc: Document) -> str:
    """What the reference BM25 indexes: the note's title and body, each once."""
    return doc.title + "\n" + reflow(doc.text)


def note_path(doc_id: str) -> str:
    safe = re.sub(r"[^\w.-]", "_", doc_id)
    return f"docs/{safe}.md"


def collection_files(documents: Iterable[Document], titles: bool = True) -> dict[str, str]:
    """{vault-relative path: note text} for a collection's documents."""
    return {note_path(d.doc_id): note_text(d, titles) for d in documents}


def write_vault(vault_dir: Path, files: dict[str, str]) -> int:
    """Make ``vault_dir`` hold exactly ``files`` ({relative path: text}) as its notes.

    Files whose bytes are already right are left alone (see the module docstring);
    other ``.md`` files are removed. Returns the number of files written.
    """
    wanted = {vault_dir / rel: text.encode("utf-8") for rel, text in files.items()}
    vault_dir.mkdir(parents=True, exist_ok=True)
    for stale in vault_dir.rglob("*.md"):
        if stale not in wanted:
            stale.unlink()
    written = 0
    for path, data in wanted.items():
        if path.exists() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written += 1
    return written
