"""Lifecycle and sync: the vault's files, its index and its embedder, kept in step.

``IndexKeeper`` decides when to open, build or refresh the index: a read opens it
read-only and builds a keyword-only index first when there is none or it is unusable;
a write, a watcher's hint or `vault reindex` syncs it (``sync.Syncer``). It also holds
what a long-running owner needs: the model loading in the background, what a sync is
doing (for busy answers), and the vectors the background embedding fills in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from markvault.answers import IndexStatus, PendingCounts
from markvault.config import ChunkParams, Settings
from markvault.embed.embedder import Embedder, SentenceEmbedder
from markvault.files.vault_files import VaultFiles
from markvault.index import Index, IndexUnusable
from markvault.indexing.change_feed import ChangeFeed
from markvault.markdown.chunk import fingerprint
from markvault.types import Progress, ReindexReport

if TYPE_CHECKING:
    from markvault.files.find_walk import FindWalk
    from markvault.git.autosync import AutoSync
    from markvault.indexing.watcher import Watcher

# A write or a watcher's sync embeds its new chunks at once when there are at most this
# many; more (a first build, a checkout) are left to the background backfill.
INLINE_EMBED_MAX = 256


class IndexKeeper:
    """Opens, builds and refreshes one vault's index (see the module's docstring)."""

    def __init__(
        self, settings: Settings, embedder: Embedder | None = None, walk: FindWalk | None = None
    ) -> None:
        """``embedder`` lets several vaults share one loaded model (its name must match);
        ``walk``: GNU find's walk of the vault, started for the first sync (a one-shot
        `vault reindex`), which scans the vault from its listing. Only that sync, right
        away: a later one walks the vault as it is then."""
        self.settings = settings
        self._walk = walk
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
        self.watcher: Watcher | None = None  # set by a host that watches the files
        self.autosync: AutoSync | None = None  # set by a host that syncs with git itself
        self.feed = ChangeFeed()  # what each sync changed, for whoever listens (feed.py)
        # Set by the host: lets its other calls run while the current one waits on
        # something that does not touch the index (`vault sync`'s fetch and push).
        self.lend_turn: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext

    @property
    def max_note_bytes(self) -> int:
        """A note over this size is kept but not indexed, and never written."""
        return self.settings.max_note_bytes

    def close(self) -> None:
        if self._walk is not None:  # never synced: find stopped and reaped
            self._walk.cancel()
            self._walk = None
        if self._index is not None:
            self._index.close()
            self._index = None

    def start_background(self) -> None:
        """For long-running servers: load the model in a background thread, so keyword
        searches are answered meanwhile."""
        self.embedder().start_loading()

    def embedder(self) -> Embedder:
        if self._embedder is None:
            # The export is the same for every vault: one per machine, in the cache.
            self._embedder = SentenceEmbedder(self.settings.model)
        return self._embedder

    def open_index(self, write: bool) -> Index:
        if self._index is not None and (self._index.writable or not write):
            return self._index
        self.close()
        self._index = Index.open(
            self.settings, write=write, chunk_fingerprint=chunk_fingerprint(self.settings.chunk)
        )
        self.notices.extend(self._index.notices)
        self._index.notices.clear()
        return self._index

    def reader(self, progress: Progress | None = None) -> Index:
        """An index to query; built first when there is none or it is unusable.

        Such a build is keyword-only: embedding a vault can take hours and belongs to
        `vault reindex`, not to the first search.
        """
        try:
            return self.open_index(write=False)
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
        walk, self._walk = self._walk, None  # the first sync's, if it looks at every file
        try:
            return self._sync(full, vectors, progress, paths, embed_limit, walk)
        finally:
            if walk is not None:  # not used (a narrower sync, or a failure): reaped
                walk.cancel()

    def _sync(
        self,
        full: bool,
        vectors: bool,
        progress: Progress | None,
        paths: Iterable[str] | None,
        embed_limit: int | None,
        walk: FindWalk | None,
    ) -> ReindexReport:
        if full:
            self.close()
            for path in (self.settings.db_path, self.settings.db_path.with_suffix(".duckdb.wal")):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        index = self.open_index(write=True)
        self.files.remove_stale_temp_files()
        tracked = ActivityProgress(progress, self)
        # Imported here: a process that only reads an index it finds ready never loads
        # the sync (parsing, chunking, worker processes).
        from markvault.indexing.reconcile import Syncer

        try:
            report = Syncer(self.settings, index, self.files, walk if paths is None else None).run(
                vectors=vectors,
                embedder=self.embedder,
                progress=tracked,
                hints=paths,
                embed_limit=embed_limit,
                feed=None if full else self.feed,  # a rebuild would list every note as new
            )
        finally:
            self.activity = None
        if full:
            self.feed.lost("the index was rebuilt")
        report.notices[:0] = self.notices
        self.notices = []
        return report

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

    def reload_ignore_rules(self) -> None:
        """Read ``.markvaultignore`` again (a watcher saw it change)."""
        self.files.reload_ignore_rules()

    def status(self) -> IndexStatus:
        index = self.reader()
        meta = index.meta()
        done, total = index.vectors.counts(self.settings.model)
        db = self.settings.db_path
        wal = db.with_name(db.name + ".wal")
        return {
            "vault": str(self.settings.vault_dir),
            "index": str(db),
            "index_origin": self.settings.index_origin,
            "index_bytes": db.stat().st_size + (wal.stat().st_size if wal.exists() else 0),
            **index.reads.stats(),
            "model": self.settings.model,
            "dimension": int(meta["embedding_dim"]) if meta.get("embedding_dim") else None,
            "vectors": {"embedded": done, "total": total, "ready": total > 0 and done == total},
            "fingerprint": fingerprint(self.settings.chunk, self.settings.model),
            "last_sync": meta.get("last_sync"),
            "pending": self.pending(),
            "problems": index.reads.problems(),
            "notices": self.notices,
            "watcher": self.watcher.status() if self.watcher else None,
            "autosync": {
                "on": self.settings.sync.auto,
                # None where no owner runs it (this process is not one, or none runs).
                "running": self.autosync.status() if self.autosync else None,
            },
        }

    def pending(self) -> PendingCounts:
        """Files new, changed or deleted since the last sync: a stat scan, nothing read."""
        index = self.reader()
        on_disk, _ = self.files.scan()
        known = index.writes.file_states()
        skipped = index.writes.skipped_states()
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

    def vector_counts(self) -> tuple[int, int]:
        """(chunks with a vector, chunks) for the configured model."""
        return self.open_index(write=True).vectors.counts(self.settings.model)

    def chunks_without_vectors(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (content hash, text the model reads) of chunks that have no
        vector yet, when the model is loaded (a server's background backfill)."""
        if self._embedder is None or not self._embedder.loaded:
            return []
        return self.open_index(write=True).vectors.missing(self.settings.model)[:limit]

    def add_vectors(self, hashes: Sequence[str], vectors: Any) -> None:
        """Store vectors computed for ``chunks_without_vectors`` (outside any lock)."""
        if not hashes or self._embedder is None:
            return
        index = self.open_index(write=True)
        model = self.settings.model
        index.vectors.ensure_table(model, self._embedder.dim)
        # A sync may have embedded some of them meanwhile, or dropped their chunks.
        still = {h for h, _ in index.vectors.missing(model)}
        keep = [i for i, h in enumerate(hashes) if h in still]
        if keep:
            index.vectors.add(model, [hashes[i] for i in keep], vectors[keep])


def chunk_fingerprint(params: ChunkParams) -> str:
    """The part of the fingerprint that changes chunk text (the model is tracked apart)."""
    return fingerprint(params, model="")


class ActivityProgress:
    """Passes progress on, and keeps the vault's ``activity`` up to date."""

    def __init__(self, inner: Progress | None, keeper: IndexKeeper) -> None:
        self.inner = inner
        self.keeper = keeper

    def start(self, label: str, total: int) -> None:
        self.keeper.activity = (label, 0, total)
        if self.inner is not None:
            self.inner.start(label, total)

    def advance(self, n: int) -> None:
        if self.keeper.activity is not None:
            label, done, total = self.keeper.activity
            self.keeper.activity = (label, done + n, total)
        if self.inner is not None:
            self.inner.advance(n)

    def finish(self) -> None:
        if self.inner is not None:
            self.inner.finish()
