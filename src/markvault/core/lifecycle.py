"""Lifecycle and sync: the vault's files, its index and its embedder, kept in step.

``IndexKeeper`` decides when to open, build or refresh the index: a read opens it
read-only and builds a keyword-only index first when there is none or it is unusable;
a write, a watcher's hint or `vault reindex` syncs it (``sync.Syncer``). It also holds
what a long-running owner needs: the model loading in the background, what a sync is
doing (for busy answers), and the vectors the background embedding fills in.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from markvault.core.runtime_context import RuntimeContext
from markvault.embed.embedder import Embedder, SentenceEmbedder, model_path
from markvault.errors import IndexBusyError, MarkvaultError
from markvault.files.vault_files import VaultFiles
from markvault.git.merge_state import merge_state
from markvault.index import Index, IndexUnusable
from markvault.index.guard import FileStamp, is_index_failure, looks_like_duckdb
from markvault.indexing.change_feed import ChangeFeed
from markvault.indexing.racy import RACY_CTIME
from markvault.markdown.fingerprint import chunk_fingerprint, fingerprint
from markvault.types.progress import Progress

if TYPE_CHECKING:
    from markvault.answers.status import IndexStatus, PendingCounts
    from markvault.files.find_walk import FindWalk
    from markvault.git.autosync import AutoSync
    from markvault.indexing.watcher import Watcher
    from markvault.types.reindex import ReindexReport

# A write or a watcher's sync embeds its new chunks at once when there are at most this
# many; more (a first build, a checkout) are left to the background backfill. Inline
# embedding holds the call lock: a few notes' chunks take well under a second on any
# encoder; 256 took a CPU without VNNI (fp32 or 7-bit int8) long enough that reads
# waiting behind it were answered "busy".
INLINE_EMBED_MAX = 32


class IndexKeeper:
    """Opens, builds and refreshes one vault's index (see the module's docstring)."""

    def __init__(self, context: RuntimeContext) -> None:
        """``context``: what the core runs with (``runtime_context.py``)."""
        settings = context.settings
        self.settings = settings
        self.host = context.host
        self._walk = context.walk
        self.files = VaultFiles(settings.vault_dir, settings.index_dir, settings.max_note_bytes)
        self._index: Index | None = None
        shared = context.embedder
        self._embedder = shared if shared and shared.name == settings.model else None
        self.notices: list[str] = []
        # (stage, done, total) while a sync runs: other threads read it to say why the
        # index is busy (a tuple is replaced whole, so reading needs no lock).
        self.activity: tuple[str, int, int] | None = None
        self.feed = ChangeFeed()  # what each sync changed, for whoever listens (feed.py)
        # The index file as this process left it at the end of its last turn (index_guard.py).
        self._stamp: FileStamp | None = None
        # When and why a running owner last rebuilt its index (shown by status), None if never.
        self.rebuilt: dict[str, str] | None = None
        # Said with the next answer (a search's warnings, a write's), kept apart from
        # ``notices``, which a sync before that answer hands to its own report.
        self.rebuild_notices: list[str] = []
        # Attachments a sync left waiting, and the signal to the owner's background
        # reading of them (attachment_backfill.py).
        self.attachments_waiting: set[str] = set()
        self.attachments_wake = threading.Event()

    @property
    def watcher(self) -> Watcher | None:
        """The host's watcher of the files, when it runs one."""
        return self.host.watcher()

    @property
    def autosync(self) -> AutoSync | None:
        """The host's ``[sync] auto`` runner, when it runs one."""
        return self.host.autosync()

    @property
    def model_wait(self) -> float | None:
        """None: a search that needs the model loads it. A number: a server loading it
        in the background answers from keywords after waiting that long."""
        return self.host.model_wait()

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
        self._stamp = None

    # ---- an index that another program deleted, replaced or changed -------------------

    def stamp(self) -> None:
        """Remember the index file as this turn leaves it (``index_guard.IndexTurns``);
        the stamp taken at its open when the file at the path is no longer the one open
        (deleted or replaced during the turn: the next turn must see it)."""
        if self._index is None:
            self._stamp = None
            return
        now = FileStamp.of(self.settings.db_path)
        if self._stamp is None or (now is not None and now[:2] == self._stamp[:2]):
            self._stamp = now

    def index_moved(self) -> str | None:
        """Why the open index file is no longer what this process left (one ``stat``);
        None when it is, or none is open."""
        stamp = self._stamp
        if stamp is None or self._index is None:
            return None
        db = self.settings.db_path
        reason = stamp.change(FileStamp.of(db))
        if reason is None and not looks_like_duckdb(db):
            return "the index file was changed by another program"
        return reason

    def check_index(self) -> None:
        """At the start of a turn: rebuild the index when another program deleted,
        replaced or changed its file since this process's last turn."""
        reason = self.index_moved()
        if reason is not None:
            self.recover(reason)

    def recover(self, reason: str) -> None:
        """Rebuild the index from the vault (keywords now, vectors in the background or
        at the next reindex; those the old file still holds are kept), and say so: in the
        next answer's notices, in status, and to the clients as a log message.

        Raises:
            IndexBusyError: another process owns the index now; this one stepped down.
        """
        if not self.host.claim():
            raise IndexBusyError(
                "Another markvault process took this index over while its folder was gone.",
                "Retry: the call goes to that process.",
            )
        self.close()
        self._index = Index.open(
            self.settings,
            write=True,
            chunk_fingerprint=chunk_fingerprint(self.settings.chunk),
            discard=reason,
        )
        kept = [n for n in self._index.notices if n.startswith("Kept ")]
        self._index.notices.clear()
        self._sync(False, False, None, None, None, None, tell=False)
        self.feed.lost(f"the index was rebuilt ({reason})")
        message = (
            f"The index was rebuilt from the vault: {reason} while this process "
            f"(pid {os.getpid()}) was using it."
        )
        self.rebuilt = {"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "reason": reason}
        self.rebuild_notices.extend([message, *kept])
        self.feed.event("warning", "index_rebuilt", message)
        self.host.recovered()
        self.stamp()

    def take_notices(self) -> list[str]:
        """What this answer says besides its result (a rebuild, a build, a look at the
        disk that failed), handed over once."""
        told = [*self.rebuild_notices, *self.notices]
        self.notices, self.rebuild_notices = [], []
        return told

    @contextlib.contextmanager
    def busy(self, stage: str) -> Iterator[None]:
        """Work that counts nothing (`vault sync`'s git), as a busy answer tells it."""
        self.activity = (stage, 0, 0)
        try:
            yield
        finally:
            self.activity = None

    def refresh_written(self, paths: Iterable[str]) -> list[str]:
        """``refresh`` after a write whose file has landed: the write succeeded whatever
        the index does, so a failure here is recovered (the index rebuilt) or, failing
        that, returned as a warning for the answer; never raised."""
        paths = list(paths)
        try:
            try:
                self.check_index()  # it may have gone since the call's turn began
                self.refresh(paths=paths)
            except (MarkvaultError, OSError, IndexUnusable) as exc:
                self.recover(f"updating it after a write failed ({_first_line(exc)})")
            except Exception as exc:
                if not is_index_failure(exc):
                    raise
                self.recover(f"updating it after a write failed ({_first_line(exc)})")
        except Exception as exc:  # a full disk, another owner: the next sync indexes it
            return [
                f"The note was written, but the index could not be updated ({_first_line(exc)}); "
                "it is indexed at the next sync (`vault reindex`, or a running watcher)."
            ]
        told, self.rebuild_notices = self.rebuild_notices, []  # this call's, or before it
        return told

    def has_index(self) -> bool:
        """Whether there is an index to keep up to date (a file, or one open here)."""
        return self._index is not None or self.settings.db_path.exists()

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
        moved = self.index_moved()  # a reopen must not start an empty file in its place
        if moved is not None:
            self.recover(moved)
            assert self._index is not None
            if self._index.writable or not write:
                return self._index
        self.close()
        self._index = Index.open(
            self.settings, write=write, chunk_fingerprint=chunk_fingerprint(self.settings.chunk)
        )
        self._stamp = FileStamp.of(self.settings.db_path)
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
        except IndexUnusable:
            # An unusable file says why as the rebuild opens it (Store.open): one line.
            if not self.settings.db_path.exists():
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
            try:
                return self._sync(full, vectors, progress, paths, embed_limit, walk)
            except Exception as exc:
                if not is_index_failure(exc):
                    raise
                # The file broke under this sync (deleted with its folder, overwritten):
                # rebuilt from the vault, which this sync then completes.
                self.recover(f"the index could not be read or written ({_first_line(exc)})")
                return self._sync(full, vectors, progress, paths, embed_limit, None)
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
        *,
        tell: bool = True,
    ) -> ReindexReport:
        """``tell``: tell the change feed what changed (not after a rebuild: every note
        would be news)."""
        if full:
            self.close()
            for path in (self.settings.db_path, self.settings.db_path.with_suffix(".duckdb.wal")):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        index = self.open_index(write=True)
        # A write's refresh cleans only the folders it wrote in (its temp file sits beside
        # the note); a full sync, as at a reindex or start, the whole vault.
        paths = None if paths is None else list(paths)
        self.files.remove_stale_temp_files(
            folders=None if paths is None else {p.rpartition("/")[0] for p in paths}
        )
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
                # A rebuild would list every note as new.
                feed=None if full or not tell else self.feed,
            )
        finally:
            self.activity = None
        if full:
            self.feed.lost("the index was rebuilt")
        if report.attachments.get("waiting"):
            self.attachments_waiting.update(report.attachments["waiting"])
            self.attachments_wake.set()
        report.notices[:0] = self.notices
        self.notices = []
        if paths is None:  # a look at every note: ids that name no note of their own
            report.warnings += [
                {"path": p["path"], "message": p["problem"]}
                for p in index.reads.identity_problems()
            ]
        return report

    def refresh(
        self, progress: Progress | None = None, paths: Iterable[str] | None = None
    ) -> ReindexReport:
        """Bring the index up to date after a write or a watcher's hint (``paths``):
        keyword at once, vectors when the model is already open (a long-running server;
        never the seconds of opening it while the caller holds the index), else by the
        server's backfill or at the next reindex."""
        return self.reindex(
            vectors=self._embedder is not None and self._embedder.batch_ready,
            progress=progress,
            paths=paths,
            embed_limit=INLINE_EMBED_MAX,
        )

    def reload_ignore_rules(self) -> None:
        """Read ``.markvaultignore`` again (a watcher saw it change)."""
        self.files.reload_ignore_rules()

    def status(self) -> IndexStatus:
        from markvault.embed import encoder_choice  # reads a verdict; a search never needs it

        index = self.reader()
        meta = index.meta()
        done, total = index.vectors.counts(self.settings.model)
        db = self.settings.db_path
        wal = db.with_name(db.name + ".wal")
        return {
            "vault": str(self.settings.vault_dir),
            "index": str(db),
            "index_origin": self.settings.index_origin,
            "index_bytes": _size(db) + _size(wal),
            "index_rebuilt": self.rebuilt,
            **index.reads.stats(),
            "model": self.settings.model,
            "dimension": int(meta["embedding_dim"]) if meta.get("embedding_dim") else None,
            "vectors": {"embedded": done, "total": total, "ready": total > 0 and done == total},
            # What runs the model here, and why (encoder_choice.py); never measures.
            "encoder": encoder_choice.describe(
                self._embedder, lambda: model_path(self.settings.model)
            ),
            "fingerprint": fingerprint(self.settings.chunk, self.settings.model),
            "last_sync": meta.get("last_sync"),
            "pending": self.pending(),
            "problems": index.reads.problems(),
            "git_operation": merge_state(self.settings.vault_dir),
            "attachments": index.extracts.summary(),
            "notices": [*self.rebuild_notices, *self.notices],
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
            if path in known
            and (
                known[path][:3] != (st.file, st.mtime_ns, st.size)
                # a racy record (racy.py) is not a change to count
                or known[path][4] not in (st.ctime_ns, RACY_CTIME)
                or known[path][5] != st.ino
            )
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


def _size(path: os.PathLike[str]) -> int:
    """A file's size; 0 when it is gone (deleted under a running owner, or a log that
    DuckDB has folded in)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
