"""The facade both faces call: one vault, its files, its index, its embedder.

Layers: the CLI and the MCP server compose a ``Vault`` and format what it
returns; ``Vault`` decides when to open, build or refresh the index; ``index``
owns the DuckDB file; ``files`` owns reading and writing vault files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .chunk import fingerprint
from .config import ChunkParams, Settings
from .edit import Edit, apply_edit, check_writable
from .embed import Embedder
from .errors import ConfigError, MarkvaultError, NotFoundError, UsageError
from .files import VaultFiles, check_hash, content_hash, safe_file_name
from .index import Filters, Index, IndexUnusable
from .model import KINDS, ReindexReport, SearchResult
from .parse import FOLDER_KINDS
from .search import Searcher, chunk_uri, note_uri
from .sync import Progress, Syncer

KIND_FOLDERS = {kind: folder for folder, kind in FOLDER_KINDS.items()}
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def chunk_fingerprint(params: ChunkParams) -> str:
    """The part of the fingerprint that changes chunk text (the model is tracked apart)."""
    return fingerprint(params, model="")


class Vault:
    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        """``embedder`` lets several vaults share one loaded model (its name must match)."""
        self.settings = settings
        self.files = VaultFiles(settings.vault_dir, settings.index_dir)
        self._index: Index | None = None
        self._embedder = embedder if embedder and embedder.name == settings.model else None
        # None: a search that needs the model loads it. A number: a server loading it in
        # the background answers from keywords after waiting that long.
        self.model_wait: float | None = None
        self.notices: list[str] = []

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
        self, *, full: bool = False, vectors: bool = True, progress: Progress | None = None
    ) -> ReindexReport:
        """Bring the index in step with the files; ``full`` rebuilds it from nothing."""
        if full:
            self.close()
            for path in (self.settings.db_path, self.settings.db_path.with_suffix(".duckdb.wal")):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        index = self._open_index(write=True)
        self.files.remove_stale_temp_files()
        report = Syncer(self.settings, index, self.files).run(
            vectors=vectors, embedder=self.embedder, progress=progress
        )
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
        progress: Progress | None = None,
    ) -> SearchResult:
        index = self._reader(progress)
        result = Searcher(index, self.settings.model, self.embedder, self.model_wait).search(
            query, mode=mode, filters=filters, limit=limit, offset=offset, full_text=full_text
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

    def get(self, ref: str, lines: tuple[int, int] | None = None) -> dict[str, Any]:
        """A note (by id, path or ``vault://note/`` URI) or a chunk (``#12``, ``vault://chunk/12``).

        Raises:
            NotFoundError: nothing matches ``ref``.
            UsageError: ``lines`` is not a valid range.
        """
        index = self._reader()
        chunk_id = _chunk_ref(ref.strip())
        if chunk_id is not None:
            return self._get_chunk(index, chunk_id)
        return self._note_view(index, self._note_row(index, ref), lines)

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
        self, index: Index, row: dict[str, Any], lines: tuple[int, int] | None
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
            text = "\n".join(all_lines[start - 1 : end])
            end = min(end, len(all_lines))
        out_links, in_links = index.links_of(row["path"])
        current = content_hash(data)
        import json

        return {
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
            "text": text,
            "chunks": [
                {
                    "chunk_id": c["id"],
                    "heading_path": c["heading_path"],
                    "lines": [c["start_line"], c["end_line"]],
                    "uri": chunk_uri(c["id"]),
                }
                for c in index.chunks_of(row["path"])
            ],
            "links": out_links,
            "backlinks": in_links,
            "problems": row["problems"],
        }

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
    ) -> Path:
        """Create a note from ``templates/<kind>.md``, with ``content`` appended, in one
        write; never overwrites.

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
        values = {
            "id": note_id,
            "title": title.strip().replace('"', "'"),
            "kind": kind,
            "created": now.isoformat(),
            "date": now.date().isoformat(),
            "topic": (topic or "").strip(),
            "project": (project or "").strip(),
            "tags": "[" + ", ".join(tag_list) + "]",
        }
        text = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
        if content.strip():
            text = apply_edit(text, Edit("append", content))
        folder = KIND_FOLDERS[kind]
        if kind == "knowledge":
            folder += "/" + safe_file_name(values["topic"])[:-3]
        elif kind == "session" and values["project"]:
            folder += "/" + safe_file_name(values["project"])[:-3]
        path = self.files.create(f"{folder}/{safe_file_name(title)}", text)
        if self.settings.db_path.exists():
            self.refresh()
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
        if not expected_hash:
            raise UsageError(
                "Changing a note needs its current hash.",
                "Read it first (vault get REF --json) and pass the hash it returns.",
            )
        index = self._reader()
        if _chunk_ref(ref.strip()) is not None:
            raise UsageError("Edit a note, not a chunk.", "Pass the note's id or path.")
        row = self._note_row(index, ref)
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
        self.refresh()
        return {"path": rel, "hash": new_hash, "changed": True, "uri": uri}

    def refresh(self) -> ReindexReport:
        """Bring the index up to date after a write: keyword at once, vectors when the
        model is already loaded (a long-running server), else at the next reindex."""
        return self.reindex(vectors=self._embedder is not None and self._embedder.loaded)

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
