"""Note writes and templates: create from a kind's template, edit, move, delete to the
trash and restore; knowledge points and stored documents. Every change to an existing
note names the hash it was read with, and the index is refreshed before returning."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markvault.attachments.formats import Extracted, format_of
from markvault.core.common import chunk_ref
from markvault.core.gate import CredentialGate, GatedWrite, unsecret
from markvault.errors import ConflictError, RefusedError, UsageError
from markvault.files.document_sources import DocumentSources
from markvault.files.vault_files import check_hash, content_hash, safe_file_name
from markvault.git.repo import check_writable
from markvault.identity import note_uri
from markvault.markdown.edit import apply_edit
from markvault.markdown.frontmatter import fill_template, load_frontmatter, split_frontmatter
from markvault.markdown.parse import FOLDER_KINDS, parse_note
from markvault.markdown.template_text import place_content
from markvault.resources import read_template
from markvault.types import ATTACHMENT_KIND, KINDS
from markvault.types.edits import Edit

if TYPE_CHECKING:
    from markvault.answers.writing import (
        BrokenLink,
        NoteCreated,
        NoteDeleted,
        NoteEdited,
        NoteMoved,
        NoteRestored,
        WriteWarnings,
    )
    from markvault.core.lifecycle import IndexKeeper
    from markvault.core.reading import NoteReader
    from markvault.index import Index

KIND_FOLDERS = {kind: folder for folder, kind in FOLDER_KINDS.items()}


class NoteWriter:
    """Creates and changes notes: the files first, then the index."""

    def __init__(self, keeper: IndexKeeper, notes: NoteReader, gate: CredentialGate) -> None:
        self.keeper = keeper
        self.notes = notes
        self.gate = gate
        # The gate of a write under way that makes its note through ``new_note`` (a
        # knowledge point, retried under other names): it reports its findings once.
        self._write_under_way: GatedWrite | None = None

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
    ) -> NoteCreated:
        """Create a note from ``templates/<kind>.md``, with ``content`` appended and then
        ``edits`` applied, in one write; never overwrites. Its title, topic, project and
        tags pass the credential gate before the file is named, its text before it is
        written (by the gate of the write under way, if one began it). Returns path, id,
        uri, hash, title, and what the gate redacted.

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
        gate = self._write_under_way or self.gate.write("")
        found_before = len(gate.redacted)  # a retry under another name reports once
        # The note's name in findings, refusals and the allowlist: with every credential
        # replaced, so that no message ever shows one (allowed ones included).
        gate.note = _note_path(kind, *map(unsecret, (title, topic or "", project or "")))
        title = gate.name(title, "title")
        topic = gate.name(" ".join((topic or "").split()), "topic")
        project = gate.name(" ".join((project or "").split()), "project")
        tag_list = [t.strip().lstrip("#") for t in tags if t.strip().lstrip("#")]
        now = dt.datetime.now().astimezone().replace(microsecond=0)
        note_id = f"{kind[0]}-{now:%Y%m%d-%H%M%S}-{os.urandom(2).hex()}"
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
        if content.strip():  # in the body, where a person would write it
            text = place_content(text, content)
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
        warned: list[str] = []
        if self.keeper.has_index():
            warned = self.keeper.refresh_written(
                [path.relative_to(self.keeper.settings.vault_dir).as_posix()]
            )
        return {**_written(rel, text), **gate.report(), **_warnings(warned)}

    def edit_note(self, ref: str, edits: Sequence[Edit], expected_hash: str) -> NoteEdited:
        """Apply ``edits`` to a note whose current content hash is ``expected_hash``.

        Only the bytes concerned change; the index is updated before returning.

        Raises:
            NotFoundError: no such note.
            ConflictError: the hash is not current, or a replace_text count differs.
            RefusedError: conflict markers, unsafe path, unreadable file, git operation.
            UsageError: a malformed edit.
        """
        index, row = self._row_to_change(ref, expected_hash)
        rel, uri = row["path"], self.notes.cite(index, row["id"], row["path"])
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
        warned = self.keeper.refresh_written([row["file"]])
        return {
            "path": rel,
            "hash": new_hash,
            "changed": True,
            "uri": uri,
            **gate.report(),
            **_warnings(warned),
        }

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
            uri = self.notes.cite(index, row["id"], row["path"])
            return {"path": target, "moved": False, "hash": row["hash"], "uri": uri}
        linking = sorted({link["source"] for link in index.reads.links_of(row["path"])[1]})
        self.keeper.files.move(row["file"], target, expected_hash)
        warned = self.keeper.refresh_written([row["file"], target])
        broken: list[BrokenLink] = [
            {"source": source, "line": link["line"], "target": link["target"]}
            for source in linking
            for link in self.keeper.reader().reads.links_of(source)[0]
            if link["target_path"] is None and link["target"]
        ]
        index = self.keeper.reader()
        moved = index.reads.find_notes("path", target)
        note_id = moved[0]["id"] if moved else target
        return {
            "path": target,
            "from": row["path"],
            "moved": True,
            "id": note_id,
            "uri": self.notes.cite(index, note_id, target),
            "hash": expected_hash,
            "broken_links": broken,
            **gate.report(),
            **_warnings(warned),
        }

    def delete_note(self, ref: str, expected_hash: str) -> NoteDeleted:
        """Move a note into the vault's ``.trash/`` folder, from where it can be restored.

        Raises:
            ConflictError: stale hash. RefusedError, NotFoundError: as for edits.
        """
        _, row = self._row_to_change(ref, expected_hash)
        trash_path = self.keeper.files.trash(row["file"], expected_hash)
        warned = self.keeper.refresh_written([row["file"]])
        return {
            "path": row["path"],
            "trash_path": trash_path,
            "restore": f"restore_note(trash_path={trash_path!r})",
            **_warnings(warned),
        }

    def restore_note(self, trash_path: str, to: str | None = None) -> NoteRestored:
        """Bring a note back from the trash to where it was, or to ``to`` (a name that
        passes the credential gate)."""
        gate = self.gate.write(unsecret(to or trash_path))
        if to:
            to = gate.name(to, "file name")
        restored = self.keeper.files.restore(trash_path, to)
        warned = self.keeper.refresh_written([restored])
        index = self.keeper.reader()
        row = index.reads.find_notes("path", restored)
        note_id = row[0]["id"] if row else restored
        return {
            "path": restored,
            "id": note_id,
            "uri": self.notes.cite(index, note_id, restored),
            "hash": row[0]["hash"] if row else None,
            **gate.report(),
            **_warnings(warned),
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
        row = self.notes.note_row(index, ref)
        if row["kind"] == ATTACHMENT_KIND:
            raise RefusedError(
                f"{row['path']} is an attachment: its text is read from the file, which "
                "markvault never changes.",
                "Edit, move or delete the file itself (its text follows), or store a "
                "Markdown copy with store_document(as_markdown=true).",
            )
        return index, row

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
        self._write_under_way = gate
        try:
            for attempt in range(1, 50):
                name = base if attempt == 1 else f"{base} ({attempt})"
                try:
                    return self.new_note(
                        "knowledge", name, topic=topic, tags=tag_list, content=content
                    )
                except ConflictError:
                    continue
        finally:
            self._write_under_way = None
        raise ConflictError(f"Too many knowledge points titled {base!r}.", "Pass a title.")

    def store_document(
        self,
        source: str | Path,
        topic: str | None = None,
        title: str | None = None,
        *,
        by_person: bool = False,
        allow_hidden: bool = False,
        as_markdown: bool = False,
    ) -> NoteCreated:
        """Copy a Markdown, text or JSON file into ``documents/``: for an agent only from
        the allowed folders, for a person (``by_person``) from any ordinary path
        (document_sources.py). A PDF, Office file, HTML page or EPUB is copied as it
        is and its text indexed (attachment_sync.py), or with ``as_markdown`` stored
        as a Markdown note of its text.

        Raises:
            RefusedError: not an allowed file, not text, no text could be read from it,
                or (kept as it is) it holds a credential, which a binary file cannot
                have redacted.
            NotFoundError: no such file. ConflictError: a document with that title exists.
        """
        full = DocumentSources.of(self.keeper.settings).check(
            source, by_person=by_person, allow_hidden=allow_hidden
        )
        fmt = format_of(full.name)
        if fmt is not None:
            digest, extracted = self._read_document(full, fmt, as_markdown)
            if not as_markdown:
                return self._store_original(full, digest, extracted, topic, title)
            body, found_title = pages_markdown(extracted), None
        else:
            text = self.keeper.files.read_external(full, self.keeper.max_note_bytes)
            body, found_title = _document_body(full, text)
            digest = content_hash(text.encode("utf-8"))
        name = (title or found_title or full.stem).strip()
        edits = [
            Edit("set_key", key="source", value=str(full)),
            Edit("replace_section", heading="Source", text=f"`{full}` (content hash {digest})"),
            Edit("replace_section", heading="Contents", text=body),
        ]
        if topic:
            edits.append(Edit("set_key", key="topic", value=topic))
        return self.new_note("document", name, topic=topic, edits=edits)

    def _read_document(self, full: Path, fmt: str, as_markdown: bool) -> tuple[str, Extracted]:
        """(content hash, text) of a document to store, read within the attachments'
        budget in a worker; a refusal when there is nothing to store.

        Raises:
            RefusedError: the file cannot be read, or has no text to convert.
        """
        from markvault.attachments.extract import extract_file

        try:
            digest, extracted = extract_file(str(full), fmt, self.keeper.settings.attachments)
        except OSError as exc:
            raise RefusedError(f"Cannot read {full}: {exc}", "Check the file.") from None
        if extracted.status == "failed" or (as_markdown and not extracted.pages):
            raise RefusedError(
                f"{full.name}: {extracted.reason}; nothing was stored.",
                "Store a readable copy (a PDF with a text layer, an unlocked file).",
            )
        return digest, extracted

    def _store_original(
        self, full: Path, digest: str, extracted: Extracted, topic: str | None, title: str | None
    ) -> NoteCreated:
        """Copy a PDF or Office file into ``documents/`` unchanged; its text is indexed
        by the sync (the extraction just made is kept for it, by content hash). Its
        text passes the credential gate: a credential in it refuses the copy, since a
        binary file cannot be redacted."""
        gate = self.gate.write("")
        name = gate.name((title or full.stem).strip(), "title")
        topic = gate.name(" ".join((topic or "").split()), "topic")
        rel = _note_path("document", name, topic, None)[: -len(".md")] + full.suffix.lower()
        gate.note = rel
        text = "\n\n".join(page[2] for page in extracted.pages)
        if gate.text(text) != text:
            from markvault.credentials.finding import describe

            raise RefusedError(
                f"Refused: {full.name} holds a credential ({describe(gate.redacted)}), and "
                "a stored file is kept as it is, so it cannot be redacted; nothing was stored.",
                "Store it with as_markdown (its text, redacted, as a note), or remove the "
                "credential from the file first.",
            )
        self.keeper.files.create_attachment(rel, full.read_bytes())
        self.keeper.open_index(write=True).extracts.keep([(digest, extracted, extracted.seconds)])
        self.keeper.refresh(paths=[rel])
        return {
            "path": rel,
            "id": rel,
            "uri": note_uri(rel),
            "hash": digest,
            "title": rel.rsplit("/", 1)[-1],
            "format": extracted.format,
            "extraction": extracted.status,
            "pages": extracted.total_pages,
            "problem": extracted.reason,
        }

    def _template(self, kind: str) -> str:
        return read_template(self.keeper.settings.vault_dir, kind)


def _warnings(warned: list[str]) -> WriteWarnings:
    """A written note's answer's ``warnings``: what became of the index after the file
    landed (rebuilt, or to be updated at the next sync); nothing when all went well."""
    return {"warnings": warned} if warned else {}


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


def pages_markdown(extracted: Extracted) -> str:
    """An attachment's text as a Markdown body: a section per page (slide, sheet)."""
    return "\n\n".join(f"### {label}\n\n{text}" for _, label, text in extracted.pages)


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
