"""The facade both faces call: one vault, its files, its index, its embedder.

Layers: the CLI and the MCP server compose a ``Vault`` and format what it
returns; ``Vault`` decides when to open, build or refresh the index; ``index``
owns the DuckDB file; ``files`` owns reading and writing vault files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import importlib.metadata
import json
import multiprocessing
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import sessions as sessions_module
from .chunk import fingerprint
from .config import ChunkParams, Settings
from .edit import Edit, apply_edit, check_writable
from .embed import Embedder
from .errors import (
    ConfigError,
    ConflictError,
    IndexBusyError,
    MarkvaultError,
    NotFoundError,
    UsageError,
)
from .files import FileStat, VaultFiles, check_hash, content_hash, safe_file_name
from .graph import LinkGraph
from .index import Filters, Index, IndexUnusable
from .model import KINDS, ReindexReport, SearchResult
from .parse import FOLDER_KINDS, load_frontmatter, split_frontmatter
from .search import Searcher, chunk_uri, note_uri
from .sessions import (
    Session,
    SessionSummary,
    TranscriptFile,
    note_path,
    read_summary,
    read_transcript,
    render_note,
    set_summary,
    transcripts_at,
)
from .sync import EMBED_GROUP, NoProgress, Progress, Syncer
from .text import tokenize

KIND_FOLDERS = {kind: folder for folder, kind in FOLDER_KINDS.items()}
# One read returns at most this many characters: Claude Code cuts tool results above
# ~25k tokens, and a character is at most about one token even in Chinese.
PAGE_CHARS = 20_000
MIN_PAGE_CHARS = 500
MAX_PAGE_CHARS = 80_000  # the most one MCP read may return
MAX_GET_NOTES = 50
MAX_LISTED = 200  # links, backlinks and chunks listed with a note
# A write or a watcher's sync embeds its new chunks at once when there are at most this
# many; more (a first build, a checkout) are left to the background backfill.
INLINE_EMBED_MAX = 256
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
# In frontmatter a placeholder may sit in quotes: "{{title}}".
# Values YAML reads back unchanged without quotes (no ": ", " #", flow or quote marks).
_PLAIN_YAML = re.compile(r"^[\w][\w.+/-]*(?:[ :T][\w.+/:-]+)*$")
# ... and that YAML would not read as a boolean, null or number.
_YAML_SPECIAL = re.compile(
    r"^(true|false|null|~|[-+]?[\d._]+(e[-+]?\d+)?|0x[0-9a-f]+|0o[0-7]+|[-+]?\.(inf|nan))$",
    re.IGNORECASE,
)
_YAML_PLACEHOLDER = re.compile(r"\"?\{\{\s*(\w+)\s*\}\}\"?")


def chunk_fingerprint(params: ChunkParams) -> str:
    """The part of the fingerprint that changes chunk text (the model is tracked apart)."""
    return fingerprint(params, model="")


class Vault:
    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        """``embedder`` lets several vaults share one loaded model (its name must match)."""
        self.settings = settings
        self.files = VaultFiles(settings.vault_dir, settings.index_dir, settings.max_note_bytes)
        self._index: Index | None = None
        self._embedder = embedder if embedder and embedder.name == settings.model else None
        # None: a search that needs the model loads it. A number: a server loading it in
        # the background answers from keywords after waiting that long.
        self.model_wait: float | None = None
        self.notices: list[str] = []
        # (stage, done, total) while a sync runs: other threads read it to say why the
        # index is busy (a tuple is replaced whole, so reading needs no lock).
        self.activity: tuple[str, int, int] | None = None

    @classmethod
    def open(
        cls,
        vault: str | Path | None = None,
        index: str | Path | None = None,
        model: str | None = None,
        embedder: Embedder | None = None,
    ) -> Vault:
        return cls(Settings.load(vault=vault, index=index, model=model), embedder)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- index lifecycle -----------------------------------------------------------

    def start_background(self) -> None:
        """For long-running servers: load the model in a background thread, so keyword
        searches are answered meanwhile."""
        self.embedder().start_loading()

    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.settings.model)
        return self._embedder

    def _open_index(self, write: bool) -> Index:
        if self._index is not None and (self._index.writable or not write):
            return self._index
        self.close()
        self._index = Index.open(
            self.settings, write=write, chunk_fingerprint=chunk_fingerprint(self.settings.chunk)
        )
        self.notices.extend(self._index.notices)
        self._index.notices.clear()
        return self._index

    def _reader(self, progress: Progress | None = None) -> Index:
        """An index to query; built first when there is none or it is unusable.

        Such a build is keyword-only: embedding a vault can take hours and belongs to
        `vault reindex`, not to the first search.
        """
        try:
            return self._open_index(write=False)
        except IndexUnusable as exc:
            if self.settings.db_path.exists():
                self.notices.append(f"The index must be rebuilt ({exc}); rebuilding.")
            else:
                self.notices.append("No index yet: building it from the vault.")
            report = self.reindex(vectors=False, progress=progress)
            self.notices = report.notices  # shown with the answer that needed the build
            assert self._index is not None
            return self._index

    def reindex(
        self,
        *,
        full: bool = False,
        vectors: bool = True,
        progress: Progress | None = None,
        paths: Iterable[str] | None = None,
        embed_limit: int | None = None,
    ) -> ReindexReport:
        """Bring the index in step with the files; ``full`` rebuilds it from nothing;
        ``paths`` limits the look to those files and folders (a watcher's hints);
        ``embed_limit``: leave vectors for later when more chunks than that lack one."""
        if full:
            self.close()
            for path in (self.settings.db_path, self.settings.db_path.with_suffix(".duckdb.wal")):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        index = self._open_index(write=True)
        self.files.remove_stale_temp_files()
        tracked = ActivityProgress(progress, self)
        try:
            report = Syncer(self.settings, index, self.files).run(
                vectors=vectors,
                embedder=self.embedder,
                progress=tracked,
                hints=paths,
                embed_limit=embed_limit,
            )
        finally:
            self.activity = None
        report.notices[:0] = self.notices
        self.notices = []
        return report

    # ---- reading -------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        filters: Filters | None = None,
        limit: int = 10,
        offset: int = 0,
        full_text: bool = False,
        variants: Sequence[str] = (),
        order: str = "relevance",
        min_score: float | None = None,
        progress: Progress | None = None,
    ) -> SearchResult:
        """See ``Searcher.search``; builds a keyword index first when there is none."""
        index = self._reader(progress)
        result = Searcher(index, self.settings.model, self.embedder, self.model_wait).search(
            query,
            mode=mode,
            filters=filters,
            limit=limit,
            offset=offset,
            full_text=full_text,
            variants=variants,
            order=order,
            min_score=min_score,
        )
        result.warnings[:0] = self.notices
        self.notices = []
        return result

    def search_batch(
        self, queries: Iterable[tuple[str | None, str]], **options: Any
    ) -> Iterator[dict[str, Any]]:
        """One JSON-ready result per (id, query); a bad query yields an error entry."""
        for qid, text in queries:
            try:
                result = self.search(text, **options).to_json()
            except MarkvaultError as exc:
                result = {"query": text, "error": str(exc)}
            if qid is not None:
                result = {"id": qid, **result}
            yield result

    def get(
        self, ref: str, lines: tuple[int, int] | None = None, max_chars: int = PAGE_CHARS
    ) -> dict[str, Any]:
        """A note (by id, path or ``vault://note/`` URI) or a chunk (``#12``, ``vault://chunk/12``).

        A note longer than ``max_chars`` comes back cut at a line boundary, with
        ``next_lines`` saying which lines to ask for next.

        Raises:
            NotFoundError: nothing matches ``ref``.
            UsageError: ``lines`` or ``max_chars`` is not valid.
        """
        if not MIN_PAGE_CHARS <= max_chars <= self.settings.max_note_bytes:
            raise UsageError(
                f"max_chars must be {MIN_PAGE_CHARS:,}..{self.settings.max_note_bytes:,}.",
                "Read long notes page by page with lines.",
            )
        index = self._reader()
        chunk_id = _chunk_ref(ref.strip())
        if chunk_id is not None:
            return self._get_chunk(index, chunk_id)
        return self._note_view(index, self._note_row(index, ref), lines, max_chars)

    def get_many(
        self,
        refs: Sequence[str] = (),
        pattern: str | None = None,
        max_chars: int = PAGE_CHARS,
    ) -> dict[str, Any]:
        """Several notes at once, by refs or a path glob, sharing one ``max_chars`` budget:
        notes past the budget come back without text (read them with ``get``)."""
        index = self._reader()
        targets: list[str] = list(refs)
        if pattern:
            rows = index.notes_matching_glob(pattern, MAX_GET_NOTES + 1)
            targets += [r["path"] for r in rows]
        if not targets:
            raise UsageError("Nothing to read.", "Pass refs, or a path pattern like 'notes/*'.")
        if len(targets) > MAX_GET_NOTES:
            raise UsageError(
                f"{len(targets)} notes asked for; at most {MAX_GET_NOTES} at once.",
                "Narrow the pattern, or search first.",
            )
        budget = max_chars
        notes: list[dict[str, Any]] = []
        for ref in targets:
            try:
                if budget < MIN_PAGE_CHARS:
                    view = self._brief(index, ref)
                else:
                    view = self.get(ref, max_chars=min(budget, MAX_PAGE_CHARS))
                    budget -= len(view.get("text") or "")
            except MarkvaultError as exc:
                view = {"ref": ref, "error": str(exc)}
            notes.append(view)
        return {"notes": notes, "count": len(notes), "budget_left": max(budget, 0)}

    def _brief(self, index: Index, ref: str) -> dict[str, Any]:
        if _chunk_ref(ref.strip()) is not None:
            return {"ref": ref, "text": None, "omitted": "over the size budget; read it alone"}
        row = self._note_row(index, ref)
        return {
            "id": row["id"],
            "path": row["path"],
            "title": row["title"],
            "uri": note_uri(row["id"]),
            "hash": row["hash"],
            "text": None,
            "omitted": "over the size budget; read it alone",
        }

    def _note_row(self, index: Index, ref: str) -> dict[str, Any]:
        """The index row of the note ``ref`` names (id, path or ``vault://note/`` URI)."""
        ref = ref.strip()
        if ref.startswith("vault://note/"):
            from urllib.parse import unquote

            ref = unquote(ref[len("vault://note/") :])
        rows = (
            index.find_notes("id", ref)
            or index.find_notes("path", ref)
            or index.find_notes("path", ref + ".md")
            or index.find_notes("path", ref, casefold=True)
            or index.find_notes("path", ref + ".md", casefold=True)
        )
        if not rows:
            raise NotFoundError(
                f"No note with id or path {ref!r}.",
                "Use an id, a vault-relative path, #CHUNK or a vault:// URI from search results.",
            )
        return rows[0]

    def _note_view(
        self,
        index: Index,
        row: dict[str, Any],
        lines: tuple[int, int] | None,
        max_chars: int = PAGE_CHARS,
    ) -> dict[str, Any]:
        data, text = self.files.read(row["file"], self.settings.max_note_bytes)
        all_lines = text.splitlines()
        start, end = 1, len(all_lines)
        if lines:
            start, end = lines
            if start < 1 or end < start:
                raise UsageError(
                    f"Bad line range {start}:{end}.", "Use --lines A:B with 1 <= A <= B."
                )
            end = min(end, len(all_lines))
        wanted_end = end
        shown, end, cut_line = _page(all_lines, start, end, max_chars)
        out_links, in_links = index.links_of(row["path"])
        current = content_hash(data)
        view: dict[str, Any] = {
            "id": row["id"],
            "path": row["path"],
            "title": row["title"],
            "kind": row["kind"],
            "type": row["type"],
            "tags": row["tags"],
            "metadata": json.loads(row["metadata"] or "{}"),
            "hash": current,
            "stale": current != row["hash"],
            "uri": note_uri(row["id"]),
            "lines": [start, end],
            "total_lines": len(all_lines),
            "text": shown,
            "next_lines": f"{end + 1}:{wanted_end}" if end < wanted_end else None,
            "chunks": [
                {
                    "chunk_id": c["id"],
                    "heading_path": c["heading_path"],
                    "lines": [c["start_line"], c["end_line"]],
                    "uri": chunk_uri(c["id"]),
                }
                for c in index.chunks_of(row["path"])
            ][:MAX_LISTED],
            "links": out_links[:MAX_LISTED],
            "backlinks": in_links[:MAX_LISTED],
            "link_counts": {"links": len(out_links), "backlinks": len(in_links)},
            "problems": row["problems"],
        }
        if cut_line:
            view["warning"] = f"line {end} is longer than a page and was cut"
        return view

    def _get_chunk(self, index: Index, chunk_id: int) -> dict[str, Any]:
        row = index.chunk_details([chunk_id]).get(chunk_id)
        if row is None:
            raise NotFoundError(
                f"No chunk #{chunk_id}.",
                "Chunk ids change when their text changes: search again for a fresh one.",
            )
        return {
            "chunk_id": chunk_id,
            "uri": chunk_uri(chunk_id),
            "id": row["note_id"],
            "path": row["path"],
            "title": row["title"],
            "kind": row["kind"],
            "heading_path": row["heading_path"],
            "lines": [row["start_line"], row["end_line"]],
            "text": row["text"],
            "hash": row["hash"],
            "note_uri": note_uri(row["note_id"]),
        }

    def status(self) -> dict[str, Any]:
        index = self._reader()
        meta = index.meta()
        done, total = index.embedding_counts(self.settings.model)
        db = self.settings.db_path
        wal = db.with_name(db.name + ".wal")
        return {
            "vault": str(self.settings.vault_dir),
            "index": str(db),
            "index_bytes": db.stat().st_size + (wal.stat().st_size if wal.exists() else 0),
            **index.stats(),
            "model": self.settings.model,
            "dimension": int(meta["embedding_dim"]) if meta.get("embedding_dim") else None,
            "vectors": {"embedded": done, "total": total, "ready": total > 0 and done == total},
            "fingerprint": fingerprint(self.settings.chunk, self.settings.model),
            "last_sync": meta.get("last_sync"),
            "pending": self.pending(),
            "problems": index.problems(),
            "notices": self.notices,
        }

    def pending(self) -> dict[str, int]:
        """Files new, changed or deleted since the last sync: a stat scan, nothing read."""
        index = self._reader()
        on_disk, _ = self.files.scan()
        known = index.file_states()
        skipped = index.skipped_states()
        changed = sum(
            1
            for path, st in on_disk.items()
            if path in known and known[path][:3] != (st.file, st.mtime_ns, st.size)
        )
        return {
            "new": sum(1 for p in on_disk if p not in known and p not in skipped),
            "changed": changed,
            "deleted": sum(1 for p in known if p not in on_disk),
        }

    # ---- writing -------------------------------------------------------------------

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
    ) -> Path:
        """Create a note from ``templates/<kind>.md``, with ``content`` appended and then
        ``edits`` applied, in one write; never overwrites.

        Raises:
            UsageError: unknown kind, empty title, or a knowledge note without a topic.
            ConfigError: no template for the kind.
            ConflictError: a note with that file name exists.
        """
        kind = kind.lower()
        if kind not in KINDS:
            raise UsageError(f"Unknown kind {kind!r}.", f"Use one of: {', '.join(KINDS)}.")
        if not title.strip():
            raise UsageError("The title is empty.", 'Example: vault new note "Why we chose DuckDB"')
        if kind == "knowledge" and not (topic and topic.strip()):
            raise UsageError("Knowledge notes need a topic.", "Add --topic TOPIC.")
        template = self._template(kind)
        now = dt.datetime.now().astimezone().replace(microsecond=0)
        note_id = f"{kind[0]}-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
        tag_list = [t.strip().lstrip("#") for t in tags if t.strip().lstrip("#")]
        values: dict[str, Any] = {
            "id": note_id,
            "title": " ".join(title.split()),  # one line: it is also the H1
            "kind": kind,
            "created": now.isoformat(),
            "date": now.date().isoformat(),
            "topic": " ".join((topic or "").split()),
            "project": " ".join((project or "").split()),
            "tags": tag_list,
        }
        text = fill_template(template, values)
        if content.strip():
            text = apply_edit(text, Edit("append", content))
        for edit in edits:
            text = apply_edit(text, edit)
        folder = KIND_FOLDERS[kind]
        if kind in ("knowledge", "document") and values["topic"]:
            folder += "/" + safe_file_name(values["topic"])[:-3]
        elif kind == "session" and values["project"]:
            folder += "/" + safe_file_name(values["project"])[:-3]
        path = self.files.create(f"{folder}/{safe_file_name(title)}", text)
        if self.settings.db_path.exists():
            self.refresh(paths=[path.relative_to(self.settings.vault_dir).as_posix()])
        return path

    def edit_note(self, ref: str, edits: Sequence[Edit], expected_hash: str) -> dict[str, Any]:
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
        data, text = self.files.read(row["file"], self.settings.max_note_bytes)
        check_hash(rel, content_hash(data), expected_hash)
        check_writable(text, rel)
        new_text = text
        for edit in edits:
            new_text = apply_edit(new_text, edit, rel)
        if new_text == text:
            return {"path": rel, "hash": expected_hash, "changed": False, "uri": uri}
        new_hash = self.files.replace(row["file"], new_text, expected_hash)
        self.refresh(paths=[row["file"]])
        return {"path": rel, "hash": new_hash, "changed": True, "uri": uri}

    def move_note(self, ref: str, to: str, expected_hash: str) -> dict[str, Any]:
        """Move or rename a note (``to``: a vault-relative path, or a folder ending in
        "/"); never overwrites. Links that pointed at it and no longer resolve are listed.

        Raises:
            ConflictError: stale hash, or a note already at ``to``.
            RefusedError: unsafe paths, a git operation in progress.
            NotFoundError: no such note.
        """
        index, row = self._row_to_change(ref, expected_hash)
        target = to.strip()
        if target.endswith("/"):
            target += row["path"].rsplit("/", 1)[-1]
        elif not target.lower().endswith(".md"):
            target += ".md"
        if target == row["path"]:
            return {"path": target, "moved": False, "hash": row["hash"], "uri": note_uri(row["id"])}
        linking = sorted({link["source"] for link in index.links_of(row["path"])[1]})
        self.files.move(row["file"], target, expected_hash)
        self.refresh(paths=[row["file"], target])
        broken = [
            {"source": link["source"], "line": link["line"], "target": link["target"]}
            for source in linking
            for link in self._reader().links_of(source)[0]
            if link["target_path"] is None and link["target"]
        ]
        moved = self._reader().find_notes("path", target)
        note_id = moved[0]["id"] if moved else target
        return {
            "path": target,
            "from": row["path"],
            "moved": True,
            "id": note_id,
            "uri": note_uri(note_id),
            "hash": expected_hash,
            "broken_links": broken,
        }

    def delete_note(self, ref: str, expected_hash: str) -> dict[str, Any]:
        """Move a note into the vault's ``.trash/`` folder, from where it can be restored.

        Raises:
            ConflictError: stale hash. RefusedError, NotFoundError: as for edits.
        """
        _, row = self._row_to_change(ref, expected_hash)
        trash_path = self.files.trash(row["file"], expected_hash)
        self.refresh(paths=[row["file"]])
        return {
            "path": row["path"],
            "trash_path": trash_path,
            "restore": f"restore_note(trash_path={trash_path!r})",
        }

    def restore_note(self, trash_path: str, to: str | None = None) -> dict[str, Any]:
        """Bring a note back from the trash to where it was, or to ``to``."""
        restored = self.files.restore(trash_path, to)
        self.refresh(paths=[restored])
        row = self._reader().find_notes("path", restored)
        note_id = row[0]["id"] if row else restored
        return {
            "path": restored,
            "id": note_id,
            "uri": note_uri(note_id),
            "hash": row[0]["hash"] if row else None,
        }

    def trash(self) -> list[dict[str, object]]:
        """What the trash holds, newest first."""
        return self.files.trash_listing()

    def _row_to_change(self, ref: str, expected_hash: str) -> tuple[Index, dict[str, Any]]:
        if not expected_hash:
            raise UsageError(
                "Changing a note needs its current hash.",
                "Read it first (vault get REF --json) and pass the hash it returns.",
            )
        if _chunk_ref(ref.strip()) is not None:
            raise UsageError("Change a note, not a chunk.", "Pass the note's id or path.")
        index = self._reader()
        return index, self._note_row(index, ref)

    # ---- knowledge -----------------------------------------------------------------

    def learn_knowledge(
        self, topic: str, content: str, tags: Iterable[str] = (), title: str | None = None
    ) -> dict[str, Any]:
        """Write a knowledge point as a note under ``knowledge/<topic>/``; the title is
        the content's first line unless given, made unique with a number."""
        if not content.strip():
            raise UsageError("The knowledge point is empty.", "Pass the content to remember.")
        base = (title or _first_line(content)).strip()
        tag_list = list(tags)
        for attempt in range(1, 50):
            name = base if attempt == 1 else f"{base} ({attempt})"
            try:
                path = self.new_note("knowledge", name, topic=topic, tags=tag_list, content=content)
                break
            except ConflictError:
                continue
        else:
            raise ConflictError(f"Too many knowledge points titled {base!r}.", "Pass a title.")
        return self.written(path)

    def store_document(
        self, source: str | Path, topic: str | None = None, title: str | None = None
    ) -> dict[str, Any]:
        """Copy a Markdown, text or JSON file from an allowed folder into ``documents/``.

        Raises:
            RefusedError: the file is outside the allowed folders, or not text.
            NotFoundError: no such file. ConflictError: a document with that title exists.
        """
        full, text = self.files.read_external(
            source, self.settings.allowed_document_roots, self.settings.max_note_bytes
        )
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
        return self.written(self.new_note("document", name, topic=topic, edits=edits))

    def topics(self) -> list[dict[str, Any]]:
        """Knowledge and document topics with their counts."""
        return self._reader().topics()

    def complete(self, what: str, prefix: str, limit: int = 100) -> dict[str, Any]:
        """Completions of a ``note``, ``topic``, ``project`` or ``session`` argument
        that start with ``prefix``: ``{"values": [...] (best first), "total": n}``."""
        values, total = self._reader().completions(what, prefix, limit)
        return {"values": values, "total": total}

    def topic_points(self, topic: str, max_chars: int = PAGE_CHARS) -> dict[str, Any]:
        """A topic's knowledge points, newest first, their text within ``max_chars``."""
        filters = Filters(kinds=["knowledge"], topics=[topic], include_expired=True)
        briefs = self._reader().note_briefs(filters)
        if not briefs:
            raise NotFoundError(
                f"No knowledge points on topic {topic!r}.", "List the topics to see which exist."
            )
        briefs.sort(key=lambda b: b["date"] or "", reverse=True)
        return self.get_many([b["path"] for b in briefs[:MAX_GET_NOTES]], max_chars=max_chars)

    def written(self, path: Path) -> dict[str, Any]:
        note = self.get(path.relative_to(self.settings.vault_dir).as_posix())
        return {
            "path": note["path"],
            "id": note["id"],
            "uri": note["uri"],
            "hash": note["hash"],
            "title": note["title"],
        }

    # ---- context -------------------------------------------------------------------

    def recent(
        self,
        *,
        since: str | None = None,
        until: str | None = None,
        days: float | None = None,
        filters: Filters | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> dict[str, Any]:
        """Notes created or changed (file modified) in a time frame, newest first.

        ``days`` counts back from now when ``since`` is not given (default 7).
        """
        _check_page(limit, offset)
        now = dt.datetime.now().astimezone()
        start = _moment(since, "since") if since else now - dt.timedelta(days=days or 7)
        end = _moment(until, "until", end_of_day=True) if until else now
        assert start is not None and end is not None
        events = []
        listed = (filters or Filters(include_expired=True)).notes_only()
        for brief in self._reader().note_briefs(listed):
            changed = dt.datetime.fromtimestamp(brief["mtime_ns"] / 1e9).astimezone()
            created = _moment(brief["created"])
            in_range = [
                (when, what)
                for when, what in ((created, "created"), (changed, "changed"))
                if when is not None and start <= when <= end
            ]
            if in_range:
                when, what = max(in_range, key=lambda pair: pair[0])
                events.append((when, what, brief))
        events.sort(key=lambda e: (e[0], e[2]["path"]), reverse=True)
        return {
            "since": start.isoformat(timespec="seconds"),
            "until": end.isoformat(timespec="seconds"),
            "total": len(events),
            "notes": [
                {**_brief_view(b), "event": what, "at": when.isoformat(timespec="seconds")}
                for when, what, b in events[offset : offset + limit]
            ],
        }

    def timeline(
        self,
        anchor: str | None = None,
        *,
        query: str | None = None,
        before: int = 5,
        after: int = 5,
        filters: Filters | None = None,
    ) -> dict[str, Any]:
        """Notes in time order around an anchor: a note (id, path, URI), a session id,
        an ISO time, or the best match of ``query``."""
        if (anchor is None) == (query is None):
            raise UsageError(
                "Give an anchor or a query (one of them).",
                'Example: anchor="2026-03-01" or query="duckdb lock error".',
            )
        if not (0 <= before <= 100 and 0 <= after <= 100):
            raise UsageError("before and after must be 0..100.")
        briefs = self._reader().note_briefs((filters or Filters(include_expired=True)).notes_only())
        for b in briefs:
            b["_at"] = _moment(b["created"]) or _moment(b["date"]) or _epoch()
        briefs.sort(key=lambda b: (b["_at"], b["path"]))
        how = "query" if query else "note"
        if query is not None:
            hits = self.search(query, limit=1, filters=filters).hits
            if not hits:
                raise NotFoundError(f"Nothing matches {query!r}.", "Try other words.")
            anchor_path: str | None = hits[0].path
        else:
            assert anchor is not None
            anchor_path = self._anchor_path(anchor, briefs)
            how = "note" if anchor_path else "time"
        if anchor_path is not None:
            pos = next((i for i, b in enumerate(briefs) if b["path"] == anchor_path), None)
            if pos is None:
                raise NotFoundError(
                    f"{anchor_path} is left out by the filters.", "Loosen the filters."
                )
            centre: dict[str, Any] | None = _brief_view(briefs[pos])
            lo, hi = pos, pos + 1
        else:
            assert anchor is not None
            moment = _moment(anchor, "anchor")
            lo = hi = next((i for i, b in enumerate(briefs) if b["_at"] >= moment), len(briefs))
            centre = None
        shown_before = [_brief_view(b) for b in briefs[max(0, lo - before) : lo]]
        shown_after = [_brief_view(b) for b in briefs[hi : hi + after]]
        # Sessions bring their decisions, outcomes and open items into the timeline.
        self._session_summaries([*shown_before, *([centre] if centre else []), *shown_after])
        return {
            "anchor": {"by": how, "value": anchor or query, "note": centre},
            "before": shown_before,
            "after": shown_after,
        }

    def _anchor_path(self, anchor: str, briefs: list[dict[str, Any]]) -> str | None:
        """The note an anchor names (id, path, URI or session id), or None for a time."""
        text = anchor.strip()
        for b in briefs:
            if text in (b["session_id"], b["id"]):
                return str(b["path"])
        # A session id cut to 8 characters, as session file names and listings show it.
        started = [b for b in briefs if len(text) >= 8 and (b["session_id"] or "").startswith(text)]
        if len(started) == 1:
            return str(started[0]["path"])
        try:
            return str(self._note_row(self._reader(), text)["path"])
        except NotFoundError:
            pass
        try:
            _moment(text, "anchor")
        except UsageError:
            raise NotFoundError(
                f"No note, session or time {anchor!r}.",
                "Anchor on a note id or path, a session id, or an ISO time like 2026-03-01.",
            ) from None
        return None

    def _graph(self) -> tuple[LinkGraph, dict[str, dict[str, Any]]]:
        index = self._reader()
        briefs = {b["path"]: b for b in index.note_briefs()}
        return LinkGraph(index.link_edges(), briefs), briefs

    def related(self, ref: str, depth: int = 1, limit: int = 50) -> dict[str, Any]:
        """Notes linked to or from ``ref``, up to ``depth`` links away, nearest first."""
        if not 1 <= depth <= 3:
            raise UsageError("depth must be 1..3.", "Use 1 for direct links and backlinks.")
        _check_page(limit, 0)
        row = self._note_row(self._reader(), ref)
        graph, briefs = self._graph()
        found = graph.related(row["path"], depth)
        return {
            "note": _brief_view(briefs[row["path"]]),
            "total": len(found),
            "related": [{**_brief_view(briefs[f["path"]]), **f} for f in found[:limit]],
        }

    def link_path(self, source: str, target: str) -> dict[str, Any]:
        """The shortest chain of links (followed either way) from one note to another."""
        index = self._reader()
        a, b = self._note_row(index, source)["path"], self._note_row(index, target)["path"]
        graph, briefs = self._graph()
        steps = graph.shortest_path(a, b)
        return {
            "from": a,
            "to": b,
            "connected": steps is not None,
            "hops": len(steps) - 1 if steps else None,
            "path": [{**_brief_view(briefs[s["path"]]), **s} for s in steps or []],
        }

    def vault_map(self, depth: int | None = None, top: int = 10) -> dict[str, Any]:
        """Folders with note counts and the links between them, the most linked notes,
        orphans and broken links."""
        if not 1 <= top <= 100:
            raise UsageError("top must be 1..100.")
        graph, _ = self._graph()
        broken_count, broken = self._reader().unresolved_links(top * 5)
        return {
            **graph.folders(depth),
            **graph.metrics(top),
            "broken_links": broken,
            "broken_link_count": broken_count,
        }

    # ---- sessions ------------------------------------------------------------------

    def import_sessions(
        self,
        source: str | Path | None = None,
        *,
        project: str | Path | None = None,
        since: str | None = None,
        progress: Progress | None = None,
        home: Path | None = None,
    ) -> SessionImportReport:
        """Import Claude Code transcripts as session notes under ``sessions/<project>/``.

        Idempotent and incremental: a session's note is found by its ``session_id``
        (wherever a person moved it) and rewritten only when the transcript grew; its
        summary and every other edit are kept (``sessions.render_note``). A transcript
        whose size and mtime, and whose note, are as the last import left them is not
        even read. A transcript that cannot be read, or a note that cannot be updated,
        is reported and skipped. The index is refreshed once at the end, not per note:
        a refresh rebuilds the keyword index, seconds on a large vault.

        Raises:
            NotFoundError: no transcripts folder (or no folder for ``project``).
            UsageError: a bad ``since`` or a ``project`` that does not fit ``source``.
            RefusedError: a git merge or rebase is in progress in the vault.
        """
        began = time.perf_counter()
        cutoff = _moment(since, "since") if since else None
        if project is not None:  # "." or "~/code/x": Claude Code names folders by absolute path
            project = os.path.abspath(os.path.expanduser(project))
        files = transcripts_at(source, project=project, since=cutoff, home=home)
        self.files.refuse_during_git_operation()  # else every note would fail alike
        report = SessionImportReport(transcripts=len(files))
        state = self._import_state(report)
        progress = progress or NoProgress()
        progress.start("Importing sessions", len(files))
        todo: list[TranscriptFile] = []
        for transcript in files:
            done = self._unchanged_source(transcript, state)
            if done is None:
                todo.append(transcript)
                continue
            report.unchanged += 1
            report.sessions.append({**done, "action": "unchanged"})
            progress.advance(1)
        recorded: list[dict[str, Any]] = []
        try:
            for transcript, parsed in _parse_transcripts(todo):
                row = self._import_transcript(transcript, parsed, state.known, report)
                if row is not None:
                    recorded.append(row)
                progress.advance(1)
        finally:
            progress.finish()
        if report.new or report.updated:
            self._refresh_after_import(report, progress)
        if recorded and report.index != "busy":
            with contextlib.suppress(IndexBusyError):
                self._open_index(write=True).record_session_sources(recorded)
        report.seconds = time.perf_counter() - began
        return report

    def _import_state(self, report: SessionImportReport) -> _ImportState:
        """What the import needs to know before reading transcripts: session_id -> the
        note that holds it (from the index, plus files the index has not seen yet), and
        what the last import recorded. When another process holds the index (a running
        MCP server that has written), the session notes' frontmatter is read instead."""
        on_disk, _ = self.files.scan()
        try:
            index = self._reader()
        except IndexBusyError:
            report.index = "busy"
            report.notices.append(
                "The index is in use by another markvault process: session notes were found "
                "by reading sessions/, and the index will catch up at the next reindex."
            )
            known = self._scan_session_ids(on_disk, lambda rel, st: rel.startswith("sessions/"))
            return _ImportState(known, on_disk, {}, {})
        states = index.file_states()
        unseen = self._scan_session_ids(
            on_disk,
            lambda rel, st: rel not in states or states[rel][:3] != (st.file, st.mtime_ns, st.size),
        )
        known = {**index.session_notes(), **unseen}
        return _ImportState(known, on_disk, states, index.session_sources())

    def _scan_session_ids(
        self, on_disk: Mapping[str, FileStat], wanted: Callable[[str, FileStat], bool]
    ) -> dict[str, dict[str, Any]]:
        """session_id -> note, of the files that ``wanted(path, stat)`` picks."""
        found: dict[str, dict[str, Any]] = {}
        for rel, st in sorted(on_disk.items()):
            if not wanted(rel, st):
                continue
            try:
                _, text = self.files.read(st.file, self.settings.max_note_bytes)
            except MarkvaultError:
                continue
            sid = _session_id_of(text)
            if sid:
                found.setdefault(sid, {"path": rel, "file": st.file})
        return found

    @staticmethod
    def _unchanged_source(transcript: TranscriptFile, state: _ImportState) -> dict[str, Any] | None:
        """The report entry of a transcript the last import saw as it is now and whose
        note nobody has changed since (on disk as indexed, with the hash recorded);
        None when it must be read."""
        seen = state.sources.get(_source_key(transcript.path))
        if (
            seen is None
            or seen["size"] != transcript.size
            or seen["mtime"] != transcript.mtime
            or seen["renderer"] != renderer_fingerprint()
        ):
            return None
        st, indexed = state.on_disk.get(seen["path"]), state.states.get(seen["path"])
        if (
            st is None
            or indexed is None
            or indexed != (st.file, st.mtime_ns, st.size, seen["hash"])
        ):
            return None
        return {
            "session_id": seen["session_id"],
            "source": str(transcript.path),
            "path": seen["path"],
        }

    def _import_transcript(
        self,
        transcript: TranscriptFile,
        parsed: Session | str,
        known: dict[str, dict[str, Any]],
        report: SessionImportReport,
    ) -> dict[str, Any] | None:
        """Write one parsed transcript's note; the source record to keep, if any."""
        if isinstance(parsed, str):
            report.failed += 1
            report.errors.append({"source": str(transcript.path), "message": parsed})
            return None
        session = parsed
        report.read += 1
        report.malformed_lines += session.malformed_lines
        report.oversized_lines += session.oversized_lines
        report.redactions += session.redactions
        entry: dict[str, Any] = {"session_id": session.session_id, "source": str(transcript.path)}
        if not session.events:  # nothing said yet (Claude Code makes such files): no note
            report.empty += 1
            report.sessions.append({**entry, "action": "empty", "path": None})
            return None
        try:
            action, rel, data = self._write_session(session, known)
        except MarkvaultError as exc:
            report.failed += 1
            report.errors.append({"source": str(transcript.path), "message": str(exc)})
            return None
        if action == "new":
            report.new += 1
        elif action == "updated":
            report.updated += 1
        else:
            report.unchanged += 1
        report.sessions.append({**entry, "action": action, "path": rel})
        if len(data) > self.settings.max_note_bytes:
            report.notices.append(
                f"{rel} is {len(data) / 1048576:.1f} MiB, over the "
                f"{self.settings.max_note_bytes:,} bytes a note may have: it is kept but not "
                "indexed."
            )
        return {
            "source": _source_key(transcript.path),
            "size": transcript.size,
            "mtime": transcript.mtime,
            "renderer": renderer_fingerprint(),
            "session_id": session.session_id,
            "path": rel,
            "hash": content_hash(data),
        }

    def _write_session(
        self, session: Session, known: dict[str, dict[str, Any]]
    ) -> tuple[str, str, bytes]:
        """("new" | "updated" | "unchanged", vault path, the note's bytes now).

        An existing note is replaced only if it still has the hash it was read with, so
        an edit made meanwhile is never lost (the import reports a conflict instead).
        """
        row = known.get(session.session_id)
        if row is not None:
            try:
                data, text = self.files.read(row["file"], self.settings.max_note_bytes)
            except NotFoundError:
                row = None  # deleted since the index saw it: written anew below
        if row is None:
            rel = note_path(session)
            text = render_note(session)
            try:
                self.files.create(rel, text)
                known[session.session_id] = {"path": rel, "file": rel}
                return "new", rel, text.encode("utf-8")
            except ConflictError:
                # A note is there already: ours from an import the index has not seen.
                data, text = self.files.read(rel, self.settings.max_note_bytes)
                if _session_id_of(text) != session.session_id:
                    raise
                row = {"path": rel, "file": rel}
        new_text = render_note(session, text)
        if new_text == text:
            return "unchanged", row["path"], data
        check_writable(text, row["path"])
        self.files.replace(row["file"], new_text, content_hash(data))
        return "updated", row["path"], new_text.encode("utf-8")

    def _refresh_after_import(self, report: SessionImportReport, progress: Progress) -> None:
        if report.index == "busy":
            return
        try:
            # Not limited to the notes written now: a stat scan is cheap next to the
            # keyword rebuild, and it also catches up notes an earlier import wrote while
            # another process held the index.
            self.refresh(progress)
            report.index = "refreshed"
        except IndexBusyError:
            report.index = "busy"
            report.notices.append(
                "The notes are written, but another markvault process holds the index: "
                "run `vault reindex` when it is free to make them searchable."
            )

    def list_sessions(
        self,
        *,
        project: str | None = None,
        cwd: str | None = None,
        has_summary: bool | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> dict[str, Any]:
        """Session notes, newest first: all, a project's (name or working folder), with or
        without a summary, active between ``since`` and ``until``."""
        _check_page(limit, offset)
        for name, value in (("since", since), ("until", until)):
            _moment(value, name)  # a bad date is a UsageError, not an empty list
        total, rows = self._reader().list_sessions(
            project=project,
            cwd=cwd,
            has_summary=has_summary,
            since=since,
            until=until,
            limit=limit,
            offset=offset,
        )
        shown = offset + len(rows)
        return {
            "total": total,
            "offset": offset,
            "next_offset": shown if shown < total else None,
            "sessions": [_session_view(r) for r in rows],
        }

    def session_projects(self) -> dict[str, Any]:
        """Projects with counts of sessions (summarised or not) and other notes, the
        folders their sessions ran in, and when each was last active."""
        return {"projects": self._reader().project_overview()}

    def read_session(
        self,
        ref: str,
        *,
        lines: tuple[int, int] | None = None,
        query: str | None = None,
        max_chars: int = PAGE_CHARS,
        max_matches: int = 50,
    ) -> dict[str, Any]:
        """A session note in pages, like ``get``, with its summary parsed; or, with
        ``query``, the transcript lines that hold the query's words (within ``lines``),
        each with the turn it belongs to and a line range to read next.

        Raises:
            NotFoundError: no such session. UsageError: not a session note; bad range.
        """
        index = self._reader()
        row = self._session_row(index, ref)
        data, text = self.files.read(row["file"], self.settings.max_note_bytes)
        summary = read_summary(text)
        meta = json.loads(row["metadata"] or "{}")
        about = {
            "session": {
                "session_id": meta.get("session_id"),
                "project": row["project"],
                "cwd": meta.get("cwd"),
                "started": _text_or_none(meta.get("started")),
                "ended": _text_or_none(meta.get("ended")),
                "turns": _int_or_none(meta.get("turns")),
            },
            "has_summary": summary is not None,
            "summary": summary.to_dict() if summary else None,
        }
        if query is None:
            view = self.get(row["path"], lines, max_chars)
            view.pop("chunks", None)  # a transcript has hundreds; pages are read by lines
            return {**view, **about}
        if not query.strip():
            raise UsageError("The query is empty.", "Give words to find in the transcript.")
        all_lines = text.splitlines()
        start, end = lines or (1, len(all_lines))
        if start < 1 or end < start:
            raise UsageError(f"Bad line range {start}:{end}.", 'Use lines "A:B" with 1 <= A <= B.')
        body_line = split_frontmatter(text.lstrip("\ufeff"))[2]  # frontmatter is no turn
        first = max(start, body_line)
        matches, total, how = _find_lines(all_lines, query, first, min(end, len(all_lines)))
        return {
            "id": row["id"],
            "path": row["path"],
            "title": row["title"],
            "uri": note_uri(row["id"]),
            "hash": content_hash(data),
            "total_lines": len(all_lines),
            "query": query,
            "match": how,
            "total_matches": total,
            "matches": matches[:max_matches],
            **about,
        }

    def save_session_summary(
        self, ref: str, summary: SessionSummary | Mapping[str, Any], expected_hash: str
    ) -> dict[str, Any]:
        """Write a session's structured summary into its ``## Summary`` section (replacing
        the previous one; the transcript and everything else stay byte for byte) and
        merge its tags, if the note's hash is still ``expected_hash``.

        Raises:
            UsageError: no hash, an empty or malformed summary, not a session note.
            ConflictError: the hash is stale. NotFoundError: no such session.
            RefusedError: conflict markers, unsafe path, a git operation in progress.
        """
        if not expected_hash:
            raise UsageError(
                "Saving a summary needs the note's current hash.",
                "Read the session first (read_session / vault sessions show) and pass its hash.",
            )
        if not isinstance(summary, SessionSummary):
            summary = SessionSummary.from_dict(summary)
        index = self._reader()
        row = self._session_row(index, ref)
        rel, uri = row["path"], note_uri(row["id"])
        data, text = self.files.read(row["file"], self.settings.max_note_bytes)
        check_hash(rel, content_hash(data), expected_hash)
        check_writable(text, rel)
        new_text = set_summary(text, summary)
        saved = read_summary(new_text)
        result: dict[str, Any] = {"path": rel, "id": row["id"], "uri": uri}
        if new_text == text:
            return {**result, "hash": expected_hash, "changed": False, "summary": _dict(saved)}
        new_hash = self.files.replace(row["file"], new_text, expected_hash)
        self.refresh(paths=[row["file"]])
        return {**result, "hash": new_hash, "changed": True, "summary": _dict(saved)}

    def _session_row(self, index: Index, ref: str) -> dict[str, Any]:
        """The session note ``ref`` names: a session id (or its first 8+ characters, as
        in file names), or a note id, path or URI."""
        text = ref.strip()
        if not text:
            raise UsageError("No session given.", "Pass a session id, or a note id or path.")
        rows = index.sessions_by_prefix(text, 50) if len(text) >= 4 else []
        exact = [r for r in rows if json.loads(r["metadata"] or "{}").get("session_id") == text]
        if exact or len(rows) == 1:
            row = (exact or rows)[0]
        elif len(rows) > 1:
            raise UsageError(
                f"Several sessions start with {text!r}.", "Give more of the session id."
            )
        else:
            try:
                row = self._note_row(index, text)
            except NotFoundError:
                raise NotFoundError(
                    f"No session or note {text!r}.",
                    "Pass a session id (or its first 8 characters), a note id or a path; "
                    "list sessions with list_sessions (vault sessions list).",
                ) from None
        if (row["kind"] or "").lower() != "session":
            raise UsageError(
                f"{row['path']} is not a session note.",
                "Read other notes with get; list sessions with list_sessions.",
            )
        return row

    def _session_summaries(self, views: Iterable[dict[str, Any]]) -> None:
        """Add each session note's decisions, outcomes and open items to its listing
        entry, so that a timeline shows them in time order beside the notes."""
        index = self._reader()
        for view in views:
            if (view.get("kind") or "").lower() != "session":
                continue
            rows = index.find_notes("path", view["path"])
            if not rows:
                continue
            try:
                _, text = self.files.read(rows[0]["file"], self.settings.max_note_bytes)
            except MarkvaultError:
                continue
            summary = read_summary(text)
            if summary is None:
                continue
            for key in ("decisions", "outcomes", "open_items"):
                items = getattr(summary, key)
                if items:
                    view[key] = list(items)

    def refresh(
        self, progress: Progress | None = None, paths: Iterable[str] | None = None
    ) -> ReindexReport:
        """Bring the index up to date after a write or a watcher's hint (``paths``):
        keyword at once, vectors when the model is already loaded (a long-running
        server), else at the next reindex."""
        return self.reindex(
            vectors=self._embedder is not None and self._embedder.loaded,
            progress=progress,
            paths=paths,
            embed_limit=INLINE_EMBED_MAX,
        )

    def chunks_without_vectors(self, limit: int = EMBED_GROUP) -> list[tuple[str, str]]:
        """Up to ``limit`` (content hash, text the model reads) of chunks that have no
        vector yet, when the model is loaded (a server's background backfill)."""
        if self._embedder is None or not self._embedder.loaded:
            return []
        return self._open_index(write=True).missing_embeddings(self.settings.model)[:limit]

    def add_vectors(self, hashes: Sequence[str], vectors: Any) -> None:
        """Store vectors computed for ``chunks_without_vectors`` (outside any lock)."""
        if not hashes or self._embedder is None:
            return
        index = self._open_index(write=True)
        model = self.settings.model
        index.ensure_embedding_table(model, self._embedder.dim)
        # A sync may have embedded some of them meanwhile, or dropped their chunks.
        still = {h for h, _ in index.missing_embeddings(model)}
        keep = [i for i, h in enumerate(hashes) if h in still]
        if keep:
            index.add_embeddings(model, [hashes[i] for i in keep], vectors[keep])

    def _template(self, kind: str) -> str:
        for folder in self.template_dirs():
            path = folder / f"{kind}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8")
        raise ConfigError(
            f"No template for kind {kind!r}.",
            f"Add {kind}.md to a templates/ folder beside the vault.",
        )

    def template_dirs(self) -> list[Path]:
        """Where templates are looked for: beside the vault, then the project's own."""
        return [
            self.settings.vault_dir.parent / "templates",
            Path(__file__).resolve().parents[2] / "templates",
        ]


def _chunk_ref(ref: str) -> int | None:
    if ref.startswith("vault://chunk/"):
        ref = ref[len("vault://chunk/") :]
    elif ref.startswith("#"):
        ref = ref[1:]
    else:
        return None
    if not ref.isdigit():
        raise UsageError(f"Bad chunk reference {ref!r}.", "Chunk references look like #123.")
    return int(ref)


def _page(lines: list[str], start: int, end: int, max_chars: int) -> tuple[str, int, bool]:
    """(text, last line shown, whether that line was cut) of lines ``start``..``end``,
    stopping at the line that would take the text past ``max_chars``."""
    shown: list[str] = []
    size = 0
    last = start - 1
    for number in range(start, end + 1):
        line = lines[number - 1]
        if size + len(line) + 1 > max_chars:
            if not shown:  # one line longer than a page: cut it rather than loop forever
                return line[:max_chars], number, True
            break
        shown.append(line)
        size += len(line) + 1
        last = number
    return "\n".join(shown), last, False


def _check_page(limit: int, offset: int) -> None:
    if not 1 <= limit <= 1000 or offset < 0:
        raise UsageError("limit must be 1..1000 and offset 0 or more.", "Page with offset.")


def _epoch() -> dt.datetime:
    return dt.datetime.fromtimestamp(0).astimezone()


def _moment(
    value: str | None, name: str | None = None, end_of_day: bool = False
) -> dt.datetime | None:
    """An ISO date or time as an aware datetime (local time when it has no offset).

    With ``name``, a bad value raises UsageError; without, it is None.
    """
    if not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        if name is None:
            return None
        raise UsageError(
            f"{name} {value!r} is not an ISO date or time.",
            "Example: 2026-03-01 or 2026-03-01T14:00.",
        ) from None
    if end_of_day and len(value.strip()) == 10:
        moment = moment.replace(hour=23, minute=59, second=59)
    return moment.astimezone() if moment.tzinfo is None else moment


def _brief_view(brief: dict[str, Any]) -> dict[str, Any]:
    """What a listing shows of a note."""
    return {
        "id": brief["id"],
        "path": brief["path"],
        "title": brief["title"],
        "kind": brief["kind"],
        "type": brief["type"],
        "project": brief["project"],
        "date": brief["created"] or brief["date"],
        "uri": note_uri(brief["id"]),
        "hash": brief["hash"],
    }


@dataclass
class SessionImportReport:
    """What an import of Claude Code transcripts did."""

    transcripts: int = 0  # transcripts found
    read: int = 0  # transcripts read (the others were as the last import left them)
    new: int = 0  # notes created
    updated: int = 0  # notes whose transcript grew (summary and edits kept)
    unchanged: int = 0
    empty: int = 0  # transcripts without a message yet: no note
    failed: int = 0  # transcripts unreadable, or notes that could not be updated
    malformed_lines: int = 0  # skipped and counted, never fatal
    oversized_lines: int = 0
    redactions: int = 0  # secrets replaced by [REDACTED]
    index: str = "unchanged"  # "refreshed", "unchanged", or "busy" (another process has it)
    seconds: float = 0.0
    sessions: list[dict[str, Any]] = field(default_factory=list)  # session_id, action, path
    errors: list[dict[str, str]] = field(default_factory=list)  # source, message
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["seconds"] = round(self.seconds, 3)
        return data


@dataclass(frozen=True)
class _ImportState:
    known: dict[str, dict[str, Any]]  # session_id -> {path, file} of its note
    on_disk: Mapping[str, FileStat]  # the vault's notes now
    states: Mapping[str, tuple[str, int, int, str]]  # as indexed: file, mtime, size, hash
    sources: Mapping[str, dict[str, Any]]  # transcript -> what the last import recorded


# Transcripts are parsed in worker processes when there are this many (CPU-bound Python:
# JSON, redaction patterns).
PARALLEL_MIN_TRANSCRIPTS = 16
TRANSCRIPT_BATCH = 8


def _source_key(path: Path) -> str:
    return os.path.abspath(path)


@functools.cache
def renderer_fingerprint() -> str:
    """Identifies the code that turns transcripts into notes: a transcript recorded
    under another renderer is read again, so a new markvault re-renders its notes."""
    source = Path(sessions_module.__file__ or "sessions.py")
    try:
        return hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    except OSError:  # no source beside the code (a zipped install): go by version
        return "version-" + importlib.metadata.version("markvault")


def _read_transcript_batch(batch: list[tuple[str, str]]) -> list[Session | str]:
    """read_transcript over (path, session id) pairs; an error becomes its message
    (exceptions lose their hint when pickled back from a worker)."""
    out: list[Session | str] = []
    for path, sid in batch:
        try:
            out.append(read_transcript(path, session_id=sid))
        except MarkvaultError as exc:
            out.append(str(exc))
    return out


def _parse_transcripts(
    todo: list[TranscriptFile],
) -> Iterator[tuple[TranscriptFile, Session | str]]:
    """Each transcript with its parsed session (or error message), in order; parsed in
    worker processes when there are many, as ``sync.read_files`` reads notes."""
    workers = min(os.cpu_count() or 1, 8)
    pairs = [(str(t.path), t.session_id) for t in todo]
    if len(todo) < PARALLEL_MIN_TRANSCRIPTS or workers < 2:
        for transcript, pair in zip(todo, pairs, strict=True):
            yield transcript, _read_transcript_batch([pair])[0]
        return
    batches = [
        list(range(i, min(i + TRANSCRIPT_BATCH, len(todo))))
        for i in range(0, len(todo), TRANSCRIPT_BATCH)
    ]
    done = 0
    try:
        # forkserver: workers start from a clean process, not a fork of one holding DuckDB.
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            jobs = [[pairs[i] for i in batch] for batch in batches]
            for batch, results in zip(batches, pool.map(_read_transcript_batch, jobs), strict=True):
                for i, parsed in zip(batch, results, strict=True):
                    yield todo[i], parsed
                done += 1
    except (BrokenProcessPool, OSError):
        # Workers cannot start everywhere (e.g. a __main__ read from stdin): go on here.
        for batch in batches[done:]:
            for i in batch:
                yield todo[i], _read_transcript_batch([pairs[i]])[0]


def _session_id_of(text: str) -> str | None:
    """The ``session_id`` in a note's frontmatter, if it has one."""
    fm_text, _, _ = split_frontmatter(text.lstrip("\ufeff"))
    if fm_text is None:
        return None
    meta, _problem = load_frontmatter(fm_text)
    value = meta.get("session_id")
    return str(value) if value not in (None, "") else None


def _text_or_none(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _dict(summary: SessionSummary | None) -> dict[str, Any] | None:
    return summary.to_dict() if summary else None


def _session_view(row: dict[str, Any]) -> dict[str, Any]:
    """What a session listing shows of one session note."""
    return {
        "session_id": row["session_id"],
        "id": row["id"],
        "path": row["path"],
        "title": row["title"],
        "project": row["project"],
        "cwd": row["cwd"],
        "git_branch": row["git_branch"],
        "started": row["started"] or row["created"],
        "ended": row["ended"],
        "turns": _int_or_none(row["turns"]),
        "has_summary": bool(row["has_summary"]),
        "tags": list(row["tags"] or []),
        "uri": note_uri(row["id"]),
        "hash": row["hash"],
    }


# A turn or section heading of a session note: "### 09:15 User", "## Summary".
_TURN_HEADING = re.compile(r"^(#{2,3}) +(.+?)\s*$")
MATCH_CHARS = 300


def _find_lines(
    lines: list[str], query: str, start: int, end: int
) -> tuple[list[dict[str, Any]], int, str]:
    """(matches, how many, "all" | "some") of lines ``start``..``end`` holding the
    query's words, compared as search compares them (folded, stemmed; CJK bigrams).

    Lines with every word come first; only when there are none, lines with some of
    them. Each match names the heading it sits under and suggests lines to read.
    """
    wanted = set(tokenize(query))
    if not wanted:
        raise UsageError("The query has no words to look for.", 'Example: query="rounding"')
    heading: tuple[int, str] | None = None
    every: list[dict[str, Any]] = []
    some: list[dict[str, Any]] = []
    in_fence = False
    for number in range(1, end + 1):
        line = lines[number - 1]
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        found = _TURN_HEADING.match(line) if not in_fence else None
        if found:
            heading = (number, found.group(2))
        if number < start:
            continue
        common = wanted & set(tokenize(line))
        if not common:
            continue
        turn_line = heading[0] if heading else 1
        entry = {
            "line": number,
            "text": line.strip()[:MATCH_CHARS],
            "under": heading[1] if heading else None,
            "read": f"{turn_line}:{number + 20}",
        }
        (every if common == wanted else some).append(entry)
    if every or not some:
        return every, len(every), "all"
    return some, len(some), "some"


def _first_line(content: str) -> str:
    """A title from a knowledge point's first line: no Markdown marks, at most ~80 chars."""
    for line in content.splitlines():
        line = re.sub(r"^[#>*\-\s]+|[*_`]+", "", line).strip()
        if line:
            if len(line) > 80:
                line = line[:80].rsplit(" ", 1)[0] + "…"
            return line
    return "Knowledge point"


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


def fill_template(template: str, values: dict[str, Any]) -> str:
    """A template with its placeholders filled: in the frontmatter as YAML scalars that
    survive any title (quotes, backslashes, ": ", "#"), in the body as plain text."""
    fm_text, _, body_line = split_frontmatter(template)

    def plain(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            return m.group(0)
        return ", ".join(value) if isinstance(value, list) else str(value)

    def yaml_scalar(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            return m.group(0)
        quoted = m.group(0).startswith('"')
        if value == "":
            return '""' if quoted else ""
        if isinstance(value, list):
            items = [v if _plain_yaml(v) else json.dumps(v, ensure_ascii=False) for v in value]
            return "[" + ", ".join(items) + "]"
        if not quoted and _plain_yaml(value):
            return str(value)
        # A JSON string is a valid YAML double-quoted scalar, escapes included.
        return json.dumps(value, ensure_ascii=False)

    if fm_text is None:
        return _PLACEHOLDER.sub(plain, template)
    lines = template.split("\n")
    head = "\n".join(lines[: body_line - 1])
    rest = "\n".join(lines[body_line - 1 :])
    return _YAML_PLACEHOLDER.sub(yaml_scalar, head) + "\n" + _PLACEHOLDER.sub(plain, rest)


def _plain_yaml(value: str) -> bool:
    return bool(_PLAIN_YAML.match(value)) and not _YAML_SPECIAL.match(value)


class ActivityProgress:
    """Passes progress on, and keeps the vault's ``activity`` up to date."""

    def __init__(self, inner: Progress | None, vault: Vault) -> None:
        self.inner = inner
        self.vault = vault

    def start(self, label: str, total: int) -> None:
        self.vault.activity = (label, 0, total)
        if self.inner is not None:
            self.inner.start(label, total)

    def advance(self, n: int) -> None:
        if self.vault.activity is not None:
            label, done, total = self.vault.activity
            self.vault.activity = (label, done + n, total)
        if self.inner is not None:
            self.inner.advance(n)

    def finish(self) -> None:
        if self.inner is not None:
            self.inner.finish()


def parse_lines(value: str | None) -> tuple[int, int] | None:
    """ "A:B", "A:" (to the end), ":B" or "A" (one line) as a 1-based range, for both faces.

    Raises:
        UsageError: anything else.
    """
    if not value:
        return None
    start, sep, end = value.strip().partition(":")
    try:
        a = int(start) if start else 1
        b = int(end) if end else 10**9
    except ValueError:
        raise UsageError(
            f"Bad line range {value!r}.", 'Give lines as "A:B", "A:" or ":B", e.g. "10:40".'
        ) from None
    return (a, b) if sep else (a, a)
