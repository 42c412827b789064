"""Note writes and templates: create from a kind's template, edit, move, delete to the
trash and restore; knowledge points and stored documents. Every change to an existing
note names the hash it was read with, and the index is refreshed before returning."""

from __future__ import annotations

import datetime as dt
import re
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from markvault.answers import (
    BrokenLink,
    NoteCreated,
    NoteDeleted,
    NoteEdited,
    NoteMoved,
    NoteRestored,
)
from markvault.core.common import chunk_ref
from markvault.core.gate import CredentialGate, GatedWrite, unsecret
from markvault.core.lifecycle import IndexKeeper
from markvault.core.reading import NoteReader
from markvault.errors import ConflictError, UsageError
from markvault.files.document_sources import DocumentSources
from markvault.files.vault_files import check_hash, content_hash, safe_file_name
from markvault.git.repo import check_writable
from markvault.index import Index
from markvault.markdown.edit import apply_edit
from markvault.markdown.frontmatter import fill_template, load_frontmatter, split_frontmatter
from markvault.markdown.parse import FOLDER_KINDS, parse_note
from markvault.resources import read_template
from markvault.search.searcher import note_uri
from markvault.types import KINDS, Edit

KIND_FOLDERS = {kind: folder for folder, kind in FOLDER_KINDS.items()}


class NoteWriter:
    """Creates and changes notes: the files first, then the index."""

    def __init__(self, keeper: IndexKeeper, notes: NoteReader, gate: CredentialGate) -> None:
        self.keeper = keeper
        self.notes = notes
        self.gate = gate

    def new_note(
        self,
        kind: str,
        title: str,
        *,
        topic: str | None = None,
        tags: Iterable[str] = (),
        project: str | None = None,
        content: str = "",
        edits: Sequence[Edit] = (),
        gate: GatedWrite | None = None,
    ) -> NoteCreated:
        """Create a note from ``templates/<kind>.md``, with ``content`` appended and then
        ``edits`` applied, in one write; never overwrites. Its title, topic, project and
        tags pass the credential gate before the file is named, its text before it is
        written (``gate``: one this write already began). Returns path, id, uri, hash,
        title, and what the gate redacted.

        Raises:
            UsageError: unknown kind, empty title, or a knowledge note without a topic.
            ConfigError: no template for the kind.
            ConflictError: a note with that file name exists.
            CredentialRefused: a credential, and the vault's setting is to refuse.
        """
        kind = kind.lower()
        if kind not in KINDS:
            raise UsageError(f"Unknown kind {kind!r}.", f"Use one of: {', '.join(KINDS)}.")
        if not title.strip():
            raise UsageError("The title is empty.", 'Example: vault new note "Why we chose DuckDB"')
        if kind == "knowledge" and not (topic and topic.strip()):
            raise UsageError("Knowledge notes need a topic.", "Add --topic TOPIC.")
        template = self._template(kind)
        gate = gate or self.gate.write("")
        found_before = len(gate.redacted)  # a retry under another name reports once
        # The note's name in findings, refusals and the allowlist: with every credential
        # replaced, so that no message ever shows one (allowed ones included).
        gate.note = _note_path(kind, *map(unsecret, (title, topic or "", project or "")))
        title = gate.name(title, "title")
        topic = gate.name(" ".join((topic or "").split()), "topic")
        project = gate.name(" ".join((project or "").split()), "project")
        tag_list = [t.strip().lstrip("#") for t in tags if t.strip().lstrip("#")]
        now = dt.datetime.now().astimezone().replace(microsecond=0)
        note_id = f"{kind[0]}-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
        values: dict[str, Any] = {
            "id": note_id,
            "title": " ".join(title.split()),  # one line: it is also the H1
            "kind": kind,
            "created": now.isoformat(),
            "date": now.date().isoformat(),
            "topic": topic,
            "project": project,
            "tags": gate.names(tag_list, "tags"),
        }
        text = fill_template(template, values)
        if content.strip():
            text = apply_edit(text, Edit("append", content))
        for edit in gate.edits(edits):
            text = apply_edit(text, edit)
        rel = _note_path(kind, title, topic, project)
        if len(text) <= self.keeper.max_note_bytes:  # a larger one is refused unread
            text = gate.text(text)
        try:
            path = self.keeper.files.create(rel, text)
        except ConflictError:
            del gate.redacted[found_before:]
            raise
        if self.keeper.settings.db_path.exists():
            self.keeper.refresh(paths=[path.relative_to(self.keeper.settings.vault_dir).as_posix()])
        return {**_written(rel, text), **gate.report()}

    def edit_note(self, ref: str, edits: Sequence[Edit], expected_hash: str) -> NoteEdited:
        """Apply ``edits`` to a note whose current content hash is ``expected_hash``.

        Only the bytes concerned change; the index is updated before returning.

        Raises:
            NotFoundError: no such note.
            ConflictError: the hash is not current, or a replace_text count differs.
            RefusedError: conflict markers, unsafe path, unreadable file, git operation.
            UsageError: a malformed edit.
        """
        _, row = self._row_to_change(ref, expected_hash)
        rel, uri = row["path"], note_uri(row["id"])
        data, text = self.keeper.files.read(row["file"], self.keeper.max_note_bytes)
        check_hash(rel, content_hash(data), expected_hash)
        check_writable(text, rel)
        gate = self.gate.write(rel)
        new_text = text
        for edit in gate.edits(edits):
            new_text = apply_edit(new_text, edit, rel)
        new_text = gate.text(new_text, text)
        if new_text == text:
            return {"path": rel, "hash": expected_hash, "changed": False, "uri": uri}
        new_hash = self.keeper.files.replace(row["file"], new_text, expected_hash)
        self.keeper.refresh(paths=[row["file"]])
        return {"path": rel, "hash": new_hash, "changed": True, "uri": uri, **gate.report()}

    def move_note(self, ref: str, to: str, expected_hash: str) -> NoteMoved:
        """Move or rename a note (``to``: a vault-relative path, or a folder ending in
        "/"); never overwrites. Links that pointed at it and no longer resolve are listed.

        Raises:
            ConflictError: stale hash, or a note already at ``to``.
            RefusedError: unsafe paths, a git operation in progress.
            NotFoundError: no such note.
        """
        index, row = self._row_to_change(ref, expected_hash)
        gate = self.gate.write(row["path"])
        target = gate.name(to.strip(), "file name")
        if target.endswith("/"):
            target += row["path"].rsplit("/", 1)[-1]
        elif not target.lower().endswith(".md"):
            target += ".md"
        if target == row["path"]:
            return {"path": target, "moved": False, "hash": row["hash"], "uri": note_uri(row["id"])}
        linking = sorted({link["source"] for link in index.reads.links_of(row["path"])[1]})
        self.keeper.files.move(row["file"], target, expected_hash)
        self.keeper.refresh(paths=[row["file"], target])
        broken: list[BrokenLink] = [
            {"source": source, "line": link["line"], "target": link["target"]}
            for source in linking
            for link in self.keeper.reader().reads.links_of(source)[0]
            if link["target_path"] is None and link["target"]
        ]
        moved = self.keeper.reader().reads.find_notes("path", target)
        note_id = moved[0]["id"] if moved else target
        return {
            "path": target,
            "from": row["path"],
            "moved": True,
            "id": note_id,
            "uri": note_uri(note_id),
            "hash": expected_hash,
            "broken_links": broken,
            **gate.report(),
        }

    def delete_note(self, ref: str, expected_hash: str) -> NoteDeleted:
        """Move a note into the vault's ``.trash/`` folder, from where it can be restored.

        Raises:
            ConflictError: stale hash. RefusedError, NotFoundError: as for edits.
        """
        _, row = self._row_to_change(ref, expected_hash)
        trash_path = self.keeper.files.trash(row["file"], expected_hash)
        self.keeper.refresh(paths=[row["file"]])
        return {
            "path": row["path"],
            "trash_path": trash_path,
            "restore": f"restore_note(trash_path={trash_path!r})",
        }

    def restore_note(self, trash_path: str, to: str | None = None) -> NoteRestored:
        """Bring a note back from the trash to where it was, or to ``to`` (a name that
        passes the credential gate)."""
        gate = self.gate.write(unsecret(to or trash_path))
        if to:
            to = gate.name(to, "file name")
        restored = self.keeper.files.restore(trash_path, to)
        self.keeper.refresh(paths=[restored])
        row = self.keeper.reader().reads.find_notes("path", restored)
        note_id = row[0]["id"] if row else restored
        return {
            "path": restored,
            "id": note_id,
            "uri": note_uri(note_id),
            "hash": row[0]["hash"] if row else None,
            **gate.report(),
        }

    def _row_to_change(self, ref: str, expected_hash: str) -> tuple[Index, dict[str, Any]]:
        if not expected_hash:
            raise UsageError(
                "Changing a note needs its current hash.",
                "Read it first (vault get REF --json) and pass the hash it returns.",
            )
        if chunk_ref(ref.strip()) is not None:
            raise UsageError("Change a note, not a chunk.", "Pass the note's id or path.")
        index = self.keeper.reader()
        return index, self.notes.note_row(index, ref)

    def learn_knowledge(
        self, topic: str, content: str, tags: Iterable[str] = (), title: str | None = None
    ) -> NoteCreated:
        """Write a knowledge point as a note under ``knowledge/<topic>/``; the title is
        the content's first line unless given, made unique with a number."""
        if not content.strip():
            raise UsageError("The knowledge point is empty.", "Pass the content to remember.")
        gate = self.gate.write("")
        if title is None:  # the first line, redacted before it is shortened
            first = _first_line(content)
            gate.note = _note_path("knowledge", unsecret(_shortened(first)), topic, None)
            title = _shortened(gate.name(first, "title"))
        base = title.strip()
        tag_list = list(tags)
        for attempt in range(1, 50):
            name = base if attempt == 1 else f"{base} ({attempt})"
            try:
                return self.new_note(
                    "knowledge", name, topic=topic, tags=tag_list, content=content, gate=gate
                )
            except ConflictError:
                continue
        raise ConflictError(f"Too many knowledge points titled {base!r}.", "Pass a title.")

    def store_document(
        self,
        source: str | Path,
        topic: str | None = None,
        title: str | None = None,
        *,
        by_person: bool = False,
        allow_hidden: bool = False,
    ) -> NoteCreated:
        """Copy a Markdown, text or JSON file into ``documents/``: for an agent only from
        the allowed folders, for a person (``by_person``) from any ordinary path
        (document_sources.py).

        Raises:
            RefusedError: not an allowed file, or not text.
            NotFoundError: no such file. ConflictError: a document with that title exists.
        """
        full = DocumentSources.of(self.keeper.settings).check(
            source, by_person=by_person, allow_hidden=allow_hidden
        )
        text = self.keeper.files.read_external(full, self.keeper.max_note_bytes)
        body, found_title = _document_body(full, text)
        name = (title or found_title or full.stem).strip()
        digest = content_hash(text.encode("utf-8"))
        edits = [
            Edit("set_key", key="source", value=str(full)),
            Edit("replace_section", heading="Source", text=f"`{full}` (content hash {digest})"),
            Edit("replace_section", heading="Contents", text=body),
        ]
        if topic:
            edits.append(Edit("set_key", key="topic", value=topic))
        return self.new_note("document", name, topic=topic, edits=edits)

    def _template(self, kind: str) -> str:
        return read_template(self.keeper.settings.vault_dir, kind)


def _note_path(kind: str, title: str, topic: str | None, project: str | None) -> str:
    """Where a new note of ``kind`` goes: its kind's folder (and topic's or project's
    folder), named after its title."""
    folder = KIND_FOLDERS[kind]
    if kind in ("knowledge", "document") and topic and topic.strip():
        folder += "/" + safe_file_name(" ".join(topic.split()))[:-3]
    elif kind == "session" and project and project.strip():
        folder += "/" + safe_file_name(" ".join(project.split()))[:-3]
    return f"{folder}/{safe_file_name(title)}"


def _written(rel: str, text: str) -> NoteCreated:
    """Path, id, URI, hash and title of a note just written, as the index will read it."""
    note = parse_note(rel, text)
    return {
        "path": rel,
        "id": note.id,
        "uri": note_uri(note.id),
        "hash": content_hash(text.encode("utf-8")),
        "title": note.title,
    }


def _first_line(content: str) -> str:
    """A knowledge point's first line, without Markdown marks. Underscores inside a word
    stay (``ghp_...``, ``API_KEY``): the credential gate must see a token whole."""
    for line in content.splitlines():
        line = re.sub(r"^[#>*\-\s]+|[*`]+|(?<!\w)_+|_+(?!\w)", "", line).strip()
        if line:
            return line
    return "Knowledge point"


def _shortened(title: str, limit: int = 80) -> str:
    """At most ~``limit`` characters of whole words."""
    return title if len(title) <= limit else title[:limit].rsplit(" ", 1)[0] + "…"


def _document_body(path: Path, text: str) -> tuple[str, str | None]:
    """(Markdown body, title found in it) of a stored file."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        fence = "`" * max(3, _longest_run(text, "`") + 1)
        return f"{fence}json\n{text.rstrip()}\n{fence}", None
    if suffix == ".txt":
        return text.rstrip(), None
    fm_text, body, _ = split_frontmatter(text)
    meta, _problem = load_frontmatter(fm_text or "")
    title = meta.get("title")
    heading = re.search(r"^# (.+)$", body, re.MULTILINE)
    return body.strip(), str(title) if title else heading.group(1).strip() if heading else None


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max((len(r) for r in runs), default=0)
