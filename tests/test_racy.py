"""Changes a stat of (mtime, size) cannot see (issue 31): a same-size edit whose mtime
was put back (`cp -p`, `rsync -t`, `touch -r`) is seen through ctime and the inode; a file
changed within the filesystem's timestamp granularity of a sync is recorded as racy and
hashed again by the next one (git's "racily clean" rule). For `vault reindex`, `vault
watch` and the freshness check before a call, on real files and real processes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from markvault.files.vault_scan import FileStat
from markvault.indexing.racy import RACY_CTIME, measure_granularity, racy_window, settle
from markvault.runtime.local_host import open_local
from markvault.types.search import SearchRequest

from .conftest import WriteNotes, vault_argv

DEADLINE = 60.0


def _argv(vault: Path, index: Path, *args: str) -> list[str]:
    return vault_argv(vault, *args, index_dir=index)


def _hits(vault: Path, index: Path, query: str) -> list[str]:
    done = subprocess.run(
        _argv(vault, index, "search", query, "--mode", "keyword", "--json"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: no hits
    return [h["path"] for h in json.loads(done.stdout)["hits"]]


def _await(what: str, ready: Any) -> Any:
    deadline = time.monotonic() + DEADLINE
    while not (found := ready()):
        assert time.monotonic() < deadline, f"not within {DEADLINE} s: {what}"
        time.sleep(0.1)
    return found


def _same_size_edit_mtime_restored(path: Path, old: str, new: str) -> None:
    """What `cp -p` of an edited copy, or `rsync -t`, leaves: other bytes of the same
    size, the mtime as it was (ctime and maybe the inode change: no tool can keep those)."""
    assert len(old.encode()) == len(new.encode())
    before = path.stat()
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


def test_reindex_sees_a_same_size_edit_with_its_mtime_restored(
    write: WriteNotes, vault_dir: Path, tmp_path: Path
) -> None:
    write({"a.md": "# A\n\nquokka\n", "b.md": "# B\n\nother\n"})
    with open_local(vault_dir, tmp_path / "index") as vault:
        vault.reindex(vectors=False)
        _same_size_edit_mtime_restored(vault_dir / "a.md", "quokka", "wombat")
        report = vault.reindex(vectors=False)
        assert report.updated == 1
        assert [h.path for h in vault.search(SearchRequest("wombat", mode="keyword")).hits] == [
            "a.md"
        ]
        assert vault.status()["pending"] == {"new": 0, "changed": 0, "deleted": 0}


@pytest.mark.parametrize("git", [False, True], ids=["plain", "git"])
def test_the_check_before_a_search_sees_it(
    write: WriteNotes, vault_dir: Path, tmp_path: Path, git: bool
) -> None:
    """A one-shot `vault search`, no watcher: the freshness check (GNU find's listing in
    a plain vault, `git status` in a git one) syncs the edit before answering."""
    write({"a.md": "# A\n\nquokka\n", "b.md": "# B\n\nother\n"})
    if git:
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
            subprocess.run(
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                cwd=vault_dir,
                check=True,
            )
    index = tmp_path / "index"
    assert _hits(vault_dir, index, "quokka") == ["a.md"]
    assert _hits(vault_dir, index, "quokka") == ["a.md"]  # the check's state is saved
    _same_size_edit_mtime_restored(vault_dir / "a.md", "quokka", "wombat")
    assert _hits(vault_dir, index, "wombat") == ["a.md"]
    assert _hits(vault_dir, index, "quokka") == []


@pytest.fixture
def watching(write: WriteNotes, vault_dir: Path, tmp_path: Path) -> Iterator[Path]:
    write({"a.md": "# A\n\nquokka\n"})
    index = tmp_path / "index"
    proc = subprocess.Popen(
        _argv(vault_dir, index, "watch"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def owned() -> bool:
            done = subprocess.run(
                _argv(vault_dir, index, "status", "--json"), capture_output=True, text=True
            )
            return (
                done.returncode == 0 and json.loads(done.stdout)["owner"]["owner_pid"] == proc.pid
            )

        _await("vault watch owns the index", owned)
        _await("a.md indexed", lambda: _hits(vault_dir, index, "quokka"))
        yield index
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        assert "Traceback" not in err, err


def test_vault_watch_sees_it(watching: Path, vault_dir: Path) -> None:
    _same_size_edit_mtime_restored(vault_dir / "a.md", "quokka", "wombat")
    assert _await("the edit is indexed", lambda: _hits(vault_dir, watching, "wombat")) == ["a.md"]


def test_a_note_synced_within_the_racy_window_is_hashed_again_next_time(
    write: WriteNotes, vault_dir: Path, tmp_path: Path
) -> None:
    """A vault on a FAT filesystem (2-second timestamps: the granularity its index keeps,
    and its mtimes even seconds): a note whose mtime is in the window of a sync is
    recorded as racy, and each next sync reads it again until it is out of the window."""
    second = 2 * 10**9
    write({"old.md": "# Old\n\nquokka\n"})
    os.utime(vault_dir / "old.md", ns=(0, (time.time_ns() // second - 3600) * second))
    with open_local(vault_dir, tmp_path / "index") as vault:

        def states() -> dict[str, Any]:
            return vault.host.core().keeper.open_index(write=True).writes.file_states()

        def settled(path: str) -> bool:
            """Reindexed (nothing changes) until ``path`` is no longer racy."""
            report = vault.reindex(vectors=False)
            assert report.updated == 0  # its bytes did not change: only hashed
            if states()[path][4] == RACY_CTIME:
                time.sleep(0.05)  # polls the clock: the window closes with time alone
                return False
            return True

        vault.reindex(vectors=False)  # the first full scan measures the filesystem's
        index = vault.host.core().keeper.open_index(write=True)
        assert int(index.meta()["timestamp_granularity_ns"]) <= 10**6  # this one's: fine
        assert not [p.name for p in vault_dir.iterdir() if p.name.startswith(".")]
        with index.store.transaction():  # as a FAT card's would be
            index.store.set_meta(timestamp_granularity_ns=str(second))
        _await("old.md out of the window", lambda: settled("old.md"))
        old = states()["old.md"]
        assert old[4] == (vault_dir / "old.md").stat().st_ctime_ns
        write({"new.md": "# New\n\nnumbat\n"})
        # The next even second: FAT rounds up, and a clock may run a little ahead.
        os.utime(vault_dir / "new.md", ns=(0, (time.time_ns() // second + 1) * second))
        assert vault.reindex(vectors=False).added == 1
        assert states()["new.md"][4] == RACY_CTIME
        _await("new.md out of the window", lambda: settled("new.md"))
        assert states()["new.md"][4] == (vault_dir / "new.md").stat().st_ctime_ns
        assert states()["old.md"] == old


def test_the_rules_of_the_window() -> None:
    def stat(mtime: int, ctime: int) -> FileStat:
        return FileStat("a.md", "a.md", mtime, 1, ctime, 7)

    second = 10**9
    assert measure_granularity([]) is None
    assert measure_granularity([stat(5 * second, 3)]) == second  # 1 s: HFS+
    assert measure_granularity([stat(4 * second, 3)]) == 2 * second  # FAT
    assert measure_granularity([stat(4 * second, 0), stat(3, 0)]) == 1  # ext4
    assert racy_window(None) == 2 * second  # not measured yet: the coarsest
    assert racy_window(1) == racy_window(1000) > 1000  # never under a clock tick
    now = 100 * second
    assert settle(stat(now - second, 0), now, 2 * second).ctime_ns == RACY_CTIME
    assert settle(stat(now + second, 0), now, 2 * second).ctime_ns == RACY_CTIME  # ahead
    assert settle(stat(0, now), now, 2 * second).ctime_ns == now  # mtime only, as git
    assert settle(stat(now - 3 * second, 1), now, 2 * second).ctime_ns == 1
