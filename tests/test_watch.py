"""The vault watcher: real folders, real watchfiles, waits on the callback, not sleeps.

Editor saves, autosaves, checkouts, git operations in progress, too many folders for
inotify, filesystems without events and a prompt stop, from the watcher's side.
"""

from __future__ import annotations

import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from markvault.indexing.watch_batches import (
    FOLDER,
    GIT,
    IGNORE_RULES,
    MANY,
    PERIODIC,
    RETRY,
    START,
    VAULT_BACK,
    WatchBatch,
    vault_callback,
)
from markvault.indexing.watch_limits import no_event_filesystem, read_mounts
from markvault.indexing.watcher import POLLING, Watcher
from markvault.types.search import SearchRequest

from .conftest import OpenVault

WAIT_S = 10.0  # generous: two loaded cores; a pass takes a fraction of it


class Recorder:
    """The callback: keeps every batch and lets a test wait for the one it expects."""

    def __init__(self) -> None:
        self.batches: list[WatchBatch] = []
        self._queue: queue.Queue[WatchBatch] = queue.Queue()

    def __call__(self, batch: WatchBatch) -> None:
        self.batches.append(batch)
        self._queue.put(batch)

    def wait_for(self, wanted: Callable[[WatchBatch], bool], timeout: float = WAIT_S) -> WatchBatch:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                batch = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if wanted(batch):
                return batch
        got = [(sorted(b.paths)[:5], len(b.paths), b.reasons) for b in self.batches]
        raise AssertionError(f"no such batch within {timeout} s; got {got}")

    def wait_paths(self, *paths: str, timeout: float = WAIT_S) -> set[str]:
        """Wait until every path has been reported (in one batch or several)."""
        seen: set[str] = set()

        def covers(batch: WatchBatch) -> bool:
            seen.update(batch.paths)
            return set(paths) <= seen

        self.wait_for(covers, timeout)
        return seen

    def quiet_for(self, seconds: float) -> bool:
        """True if no batch arrives within ``seconds`` (for asserting that none does)."""
        try:
            batch = self._queue.get(timeout=seconds)
        except queue.Empty:
            return True
        self._queue.put(batch)
        return False


StartWatch = Callable[..., tuple[Watcher, Recorder]]


@pytest.fixture
def watch(vault_dir: Path, tmp_path: Path) -> Iterator[StartWatch]:
    """Start a watcher on the test vault; waits for its start batch; stops it after."""
    started: list[Watcher] = []

    def _start(
        callback: Callable[[WatchBatch], None] | None = None, **options: object
    ) -> tuple[Watcher, Recorder]:
        recorder = Recorder()

        def on_change(batch: WatchBatch) -> None:
            if callback is not None:
                callback(batch)
            recorder(batch)

        options.setdefault("min_interval_ms", 100)
        options.setdefault("index_dir", tmp_path / "index")
        watcher = Watcher(vault_dir, on_change, **options)
        started.append(watcher)
        watcher.start()
        if options.get("reconcile_on_start", True):
            recorder.wait_for(lambda b: START in b.reasons)
        return watcher, recorder

    yield _start
    for watcher in started:
        assert watcher.stop(5.0)


def write(path: Path, text: str = "# note\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def wait_until(condition: Callable[[], bool], timeout: float = WAIT_S) -> None:
    """For state with no event to wait on (the watcher's status)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


# ---- events ------------------------------------------------------------------------------


def test_start_batch_is_full_then_an_external_edit_is_reported(
    watch: StartWatch, vault_dir: Path
) -> None:
    write(vault_dir / "notes" / "a.md")
    watcher, recorder = watch()
    assert recorder.batches[0].full and recorder.batches[0].reasons == (START,)
    assert watcher.mode == "events" and watcher.status()["ready"]

    write(vault_dir / "notes" / "a.md", "# changed\n")
    batch = recorder.wait_for(lambda b: bool(b.paths))
    assert batch.paths == {"notes/a.md"} and not batch.full
    assert watcher.last_batch_at is not None


def test_a_rename_reports_both_names(watch: StartWatch, vault_dir: Path) -> None:
    write(vault_dir / "notes" / "old.md")
    _, recorder = watch()
    os.rename(vault_dir / "notes" / "old.md", vault_dir / "notes" / "new.md")
    assert recorder.wait_paths("notes/old.md", "notes/new.md") == {
        "notes/old.md",
        "notes/new.md",
    }


def test_hidden_ignored_and_litter_files_are_never_reported(
    watch: StartWatch, vault_dir: Path, tmp_path: Path
) -> None:
    write(vault_dir / ".markvaultignore", "drafts/\nprivate.md\n")
    (vault_dir / "drafts").mkdir()
    (vault_dir / "notes").mkdir()
    (vault_dir / "idx").mkdir()
    _, recorder = watch(index_dir=vault_dir / "idx")

    for rel in (
        "notes/.mv-tmp-1a2b3c",  # markvault's own temp file
        ".git/objects/ab/x.md",
        ".obsidian/workspace.md",
        ".trash/old.md",
        "notes/.hidden/x.md",
        "drafts/d.md",  # ignored folder
        "private.md",  # ignored file
        "idx/x.md",  # the index folder
        "notes/a.md~",  # editor backups, swap and probe files
        "notes/#a.md#",
        "notes/a.md.swp",
        "notes/4913",
    ):
        write(vault_dir / rel, "noise")
    write(vault_dir / "notes" / "image.png", "an attachment: links may name it")
    write(vault_dir / "notes" / "sentinel.md")

    recorder.wait_paths("notes/image.png", "notes/sentinel.md")
    later = recorder.batches[1:]
    assert {p for b in later for p in b.paths} == {"notes/image.png", "notes/sentinel.md"}
    assert not any(b.full for b in later)


def test_vim_and_obsidian_saves_end_as_one_entry_with_the_final_text(
    watch: StartWatch, vault_dir: Path, open_vault: OpenVault
) -> None:
    note = vault_dir / "notes" / "v.md"
    write(note, "# Draft\n\nalphaword\n")
    vault = open_vault()
    vault.reindex(vectors=False)
    lock = threading.Lock()
    _, recorder = watch(callback=vault_callback(vault.host.core().keeper, lock, vectors=False))

    # vim: probe file, original renamed to a backup, new file written, backup deleted.
    write(vault_dir / "notes" / "4913", "")
    (vault_dir / "notes" / "4913").unlink()
    os.rename(note, vault_dir / "notes" / "v.md~")
    write(note, "# Draft\n\nbetaword\n")
    (vault_dir / "notes" / "v.md~").unlink()
    recorder.wait_paths("notes/v.md")
    # Obsidian: the file rewritten in place.
    with open(note, "r+", encoding="utf-8") as fh:
        fh.truncate(0)
        fh.write("# Draft\n\ngammaword\n")
    recorder.wait_for(lambda b: "notes/v.md" in b.paths)

    with lock:
        found = vault.search(SearchRequest("gammaword", mode="keyword"))
        assert [h.path for h in found.hits] == ["notes/v.md"]
        assert vault.search(SearchRequest("alphaword", mode="keyword")).hits == []
        assert vault.search(SearchRequest("betaword", mode="keyword")).hits == []
        assert vault.status()["notes"] == 1


def test_a_rename_synced_from_hints_leaves_no_ghost_of_the_old_path(
    watch: StartWatch, vault_dir: Path, open_vault: OpenVault
) -> None:
    write(vault_dir / "notes" / "old name.md", "# Plans\n\nrenameword\n")
    vault = open_vault()
    vault.reindex(vectors=False)
    lock = threading.Lock()
    _, recorder = watch(callback=vault_callback(vault.host.core().keeper, lock, vectors=False))

    os.rename(vault_dir / "notes" / "old name.md", vault_dir / "archive.md")
    recorder.wait_paths("notes/old name.md", "archive.md")
    with lock:
        assert [h.path for h in vault.search(SearchRequest("renameword", mode="keyword")).hits] == [
            "archive.md"
        ]
        assert vault.status()["notes"] == 1


def test_an_autosave_burst_is_coalesced_and_the_last_version_is_seen(
    watch: StartWatch, vault_dir: Path
) -> None:
    note = vault_dir / "notes" / "busy.md"
    write(note, "v0")
    seen: list[str] = []
    _, recorder = watch(callback=lambda b: seen.append(note.read_text()), min_interval_ms=500)
    before = len(recorder.batches)
    for i in range(1, 101):  # 100 saves in ~2 s
        write(note, f"v{i}")
        time.sleep(0.02)

    recorder.wait_for(lambda b: seen[-1] == "v100")
    batches = recorder.batches[before:]
    assert 1 <= len(batches) <= 20, len(batches)
    assert all(b.paths == {"notes/busy.md"} for b in batches)


def test_many_changes_at_once_ask_for_a_full_reconcile(watch: StartWatch, vault_dir: Path) -> None:
    (vault_dir / "bulk").mkdir()
    _, recorder = watch(min_interval_ms=3000)  # the writes pile up behind the start batch
    for i in range(1100):
        (vault_dir / "bulk" / f"n{i}.md").write_text("x")
    batch = recorder.wait_for(lambda b: b.full)
    assert MANY in batch.reasons


def test_a_folder_moved_in_or_removed_asks_for_a_full_reconcile(
    watch: StartWatch, vault_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside" / "project"
    write(outside / "inside.md")
    (vault_dir / "notes").mkdir()
    _, recorder = watch()

    os.rename(outside, vault_dir / "notes" / "project")
    assert FOLDER in recorder.wait_for(lambda b: b.full).reasons
    shutil.rmtree(vault_dir / "notes" / "project")
    batch = recorder.wait_for(lambda b: b.full or "notes/project/inside.md" in b.paths)
    assert batch.full or "notes/project/inside.md" in batch.paths


def test_a_changed_ignore_file_asks_for_a_full_reconcile_and_applies(
    watch: StartWatch, vault_dir: Path
) -> None:
    (vault_dir / "drafts").mkdir()
    (vault_dir / "notes").mkdir()
    _, recorder = watch()

    write(vault_dir / ".markvaultignore", "drafts/\n")
    assert IGNORE_RULES in recorder.wait_for(lambda b: b.full).reasons
    write(vault_dir / "drafts" / "d.md")
    write(vault_dir / "notes" / "sentinel.md")
    recorder.wait_paths("notes/sentinel.md")
    assert not any("drafts/d.md" in b.paths for b in recorder.batches)


def test_the_periodic_reconcile_comes_without_any_change(watch: StartWatch) -> None:
    _, recorder = watch(reconcile_interval=0.5)
    assert recorder.wait_for(lambda b: b.full).reasons == (PERIODIC,)


# ---- git ---------------------------------------------------------------------------------


def make_repo(folder: Path) -> Path:
    git = folder / ".git"
    write(git / "HEAD", "ref: refs/heads/main\n")
    write(git / "index", "index v1")
    return git


def test_a_checkout_gives_one_full_reconcile_once_the_lock_is_gone(
    watch: StartWatch, vault_dir: Path
) -> None:
    git = make_repo(vault_dir)
    (vault_dir / "notes").mkdir()
    watcher, recorder = watch()
    assert watcher.status()["git_dir"] == str(git)

    write(git / "index.lock", "")  # git takes the lock, then rewrites the work tree
    for i in range(50):
        write(vault_dir / "notes" / f"n{i}.md", f"checked out {i}")
    wait_until(lambda: watcher.status()["pending_paths"] >= 50)
    assert recorder.quiet_for(0.3), "no per-file batch while git holds the lock"

    write(git / "index.lock", "index v2")
    os.replace(git / "index.lock", git / "index")  # git commits the lock as the index
    batch = recorder.wait_for(lambda b: True)
    assert batch.full and GIT in batch.reasons
    assert len(batch.paths) == 50
    assert recorder.quiet_for(0.5), "one reconcile, not one per file"


def test_a_vault_inside_a_project_repository_sees_its_git_operations(
    tmp_path: Path, vault_dir: Path, watch: StartWatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git = make_repo(project)
    moved = project / "vault"
    os.rename(vault_dir, moved)
    os.symlink(moved, vault_dir)  # the fixture's path leads to the vault inside the repo
    watcher, recorder = watch()
    assert watcher.status()["git_dir"] == str(git)

    write(git / "HEAD", "ref: refs/heads/other\n")  # a checkout of another branch
    assert GIT in recorder.wait_for(lambda b: b.full).reasons


def test_a_stale_index_lock_does_not_hold_changes_back(watch: StartWatch, vault_dir: Path) -> None:
    git = make_repo(vault_dir)
    write(git / "index.lock", "")
    hour_ago = time.time() - 3600
    os.utime(git / "index.lock", (hour_ago, hour_ago))
    (vault_dir / "notes").mkdir()
    _, recorder = watch(stale_lock_s=0.5)

    write(vault_dir / "notes" / "a.md")
    recorder.wait_paths("notes/a.md")


# ---- polling and falling back to it ------------------------------------------------------


def test_polling_sees_an_edit_within_the_poll_interval(watch: StartWatch, vault_dir: Path) -> None:
    write(vault_dir / "notes" / "a.md")
    watcher, recorder = watch(poll=True, poll_interval=0.3)
    assert watcher.mode == POLLING and watcher.status()["poll_interval_s"] == 0.3

    write(vault_dir / "notes" / "a.md", "# changed, and longer\n")
    began = time.monotonic()
    recorder.wait_paths("notes/a.md")
    assert time.monotonic() - began < 0.3 + 1.5  # one interval, plus a loaded machine
    (vault_dir / "notes" / "a.md").unlink()
    write(vault_dir / "notes" / "sub" / "b.md")
    recorder.wait_paths("notes/a.md", "notes/sub/b.md")


def test_more_folders_than_the_watch_limit_falls_back_to_polling(
    watch: StartWatch, vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for folder in ("a", "b", "c"):
        (vault_dir / folder).mkdir()
    watcher, recorder = watch(max_watches=2, poll_interval=0.3)
    assert watcher.mode == POLLING
    assert "inotify watch limit" in watcher.reason
    assert watcher.warnings and "inotify watch limit" in caplog.text

    write(vault_dir / "a" / "n.md")
    recorder.wait_paths("a/n.md")


def test_a_network_filesystem_means_polling(
    watch: StartWatch, vault_dir: Path, tmp_path: Path
) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/vda / ext4 rw 0 0\nserver:/export {vault_dir} nfs4 rw 0 0\n")
    watcher, recorder = watch(mounts_file=mounts, poll_interval=0.3)
    assert watcher.mode == POLLING and "nfs4" in watcher.reason
    write(vault_dir / "n.md")
    recorder.wait_paths("n.md")


def test_no_event_filesystems_are_recognised_from_the_mount_table(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/vda / ext4 rw 0 0\n"
        "server:/x /mnt/nfs nfs4 rw 0 0\n"
        "/dev/vdb /mnt/nfs/local ext4 rw 0 0\n"
        "me@host: /home/me/My\\040Notes fuse.sshfs rw 0 0\n"
        "share /data/vault/shared 9p rw 0 0\n"
    )
    assert ("/home/me/My Notes", "fuse.sshfs") in read_mounts(mounts)
    assert no_event_filesystem(Path("/mnt/nfs/vault"), mounts) == "nfs4 at /mnt/nfs"
    assert no_event_filesystem(Path("/mnt/nfs/local/vault"), mounts) is None  # nearest mount
    assert no_event_filesystem(Path("/home/me/My Notes"), mounts) == (
        "fuse.sshfs at /home/me/My Notes"
    )
    assert no_event_filesystem(Path("/data/vault"), mounts) == "9p at /data/vault/shared"
    assert no_event_filesystem(Path("/home/me/vault"), mounts) is None
    assert no_event_filesystem(Path("/x"), tmp_path / "missing") is None


# ---- failures and stopping ---------------------------------------------------------------


def test_a_failing_callback_keeps_the_watcher_alive_and_retries_in_full(
    watch: StartWatch, vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    failures: list[WatchBatch] = []

    def flaky(batch: WatchBatch) -> None:
        if batch.paths and not failures:
            failures.append(batch)
            raise RuntimeError("index busy")

    watcher, recorder = watch(callback=flaky)
    write(vault_dir / "a.md")
    retried = recorder.wait_for(lambda b: RETRY in b.reasons)
    assert retried.full and retried.paths == {"a.md"}
    status = watcher.status()
    assert status["running"] and status["errors"] == 1
    assert "index busy" in status["last_error"] and "index busy" in caplog.text

    write(vault_dir / "b.md")
    assert recorder.wait_for(lambda b: bool(b.paths)).paths == {"b.md"}


def test_a_missing_vault_folder_delivers_nothing_until_it_is_back(
    watch: StartWatch, vault_dir: Path, tmp_path: Path
) -> None:
    write(vault_dir / "a.md")
    watcher, recorder = watch()
    away = tmp_path / "away"
    os.rename(vault_dir, away)  # an unmount, a sync tool swapping the folder
    wait_until(lambda: any("missing" in w for w in watcher.warnings))
    delivered = len(recorder.batches)
    write(away / "b.md")  # changes meanwhile are not lost: the return brings a reconcile
    assert recorder.quiet_for(0.5)
    os.rename(away, vault_dir)
    batch = recorder.wait_for(lambda b: b.full)
    assert VAULT_BACK in batch.reasons
    assert recorder.batches[delivered] is batch  # nothing was delivered while it was away
    write(vault_dir / "c.md")
    recorder.wait_paths("c.md")


@pytest.mark.parametrize("poll", [False, True])
def test_stop_is_prompt_and_the_vault_is_untouched(
    watch: StartWatch, vault_dir: Path, poll: bool
) -> None:
    write(vault_dir / "notes" / "a.md")
    before = sorted(p.relative_to(vault_dir) for p in vault_dir.rglob("*"))
    watcher, _ = watch(poll=poll)
    began = time.monotonic()
    assert watcher.stop(2.0)
    assert time.monotonic() - began < 2.0 and not watcher.running
    assert sorted(p.relative_to(vault_dir) for p in vault_dir.rglob("*")) == before


def test_run_blocks_until_its_stop_event_is_set(vault_dir: Path) -> None:
    recorder = Recorder()
    watcher = Watcher(vault_dir, recorder)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,))
    thread.start()
    recorder.wait_for(lambda b: START in b.reasons)
    assert watcher.running
    began = time.monotonic()
    stop.set()
    thread.join(2.0)
    assert not thread.is_alive() and time.monotonic() - began < 2.0


def test_a_closing_host_stops_the_watchers_sync_between_steps(
    vault_dir: Path, open_vault: OpenVault
) -> None:
    """Closing never waits for a long sync: once ``stop`` is set, the sync under way
    stops at its next step, the batch is dropped without a report, and the index is
    left whole for the next sync to finish the work."""
    for i in range(40):
        write(vault_dir / "notes" / f"n{i}.md", f"# Note {i}\n\nstopword{i}\n")
    vault = open_vault()
    vault.reindex(vectors=False)
    write(vault_dir / "notes" / "late.md", "# Late\n\nlateword\n")
    stop, reports = threading.Event(), []
    keeper = vault.host.core().keeper
    on_change = vault_callback(
        keeper, vectors=False, stop=stop, on_report=lambda b, r: reports.append(r)
    )
    stop.set()
    on_change(WatchBatch(paths=frozenset(), full=True, reasons=(START,), since=time.monotonic()))
    assert reports == []
    assert (
        vault.search(SearchRequest("lateword", mode="keyword")).hits == []
    )  # stopped before it wrote
    stop.clear()
    on_change(WatchBatch(paths=frozenset(), full=True, reasons=(START,), since=time.monotonic()))
    assert [r.added for r in reports] == [1]
    assert [h.path for h in vault.search(SearchRequest("lateword", mode="keyword")).hits] == [
        "notes/late.md"
    ]
