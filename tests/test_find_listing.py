"""The vault's files from GNU find's listing (``VaultFiles.scan_listing``): exactly what
``scan_all``'s walk finds, and a sync that takes it gives the index a walk gives."""

from __future__ import annotations

import json
import os
import shutil
import sys
import unicodedata
from pathlib import Path

import pytest

from markvault.config import Settings
from markvault.core.lifecycle import IndexKeeper
from markvault.core.runtime_context import RuntimeContext
from markvault.files.find_walk import FindListing, FindWalk
from markvault.files.vault_files import VaultFiles
from markvault.files.vault_scan import VaultScan

from .conftest import run_cli

needs_find = pytest.mark.skipif(
    shutil.which("find") is None or not sys.platform.startswith("linux"),
    reason="GNU find on Linux only",
)


def put(root: Path, rel: str, text: str = "# note\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build_vault(vault: Path, outside: Path, with_rules: bool) -> None:
    """A vault with every case the walk has a rule for."""
    for rel in (
        "top.md",
        "a.md",
        "a/b.md",
        "a/b/c.md",
        "a b/n.md",
        "a-b/n.md",
        "B/n.md",
        "Z.md",
        "zz/ä/n.md",
        "zz/z/n.md",
        "notes/a note with spaces.md",
        "notes/a note\nwith a newline.md",
        "notes/x 1767323045.1234567890 12 y.md",  # looks like a line's fields
        "notes/UPPER.MD",
        "notes/emoji \U0001f600.md",
        "notes/private \ue000.md",
        "notes/replacement \ufffd.md",
        ".hidden/n.md",
        ".obsidian/workspace.json",
        "notes/.dotted.md",
        "ignored/n.md",
        "keep/skip/n.md",
        "keep/kept.md",
        "keep/draft.draft.md",
        "index/inside-the-index.md",
        "notes/plain.txt",
    ):
        put(vault, rel)
    for rel in ("pic.png", "docs/paper.pdf", "notes/backup.md~", "notes/4913", ".hidden.png"):
        put(vault, rel, "x")
    (vault / "empty" / "deeper").mkdir(parents=True)
    nfc = unicodedata.normalize("NFC", "notes/café.md")
    put(vault, unicodedata.normalize("NFD", nfc))
    put(vault, nfc)  # its twin in the other Unicode form: one is kept, one warned about
    raw = os.fsencode(vault / "notes")
    for name in (b"bad \xff name.md", b"bad \xfe.png", b"\xff\xfe.md"):
        with open(os.path.join(raw, name), "wb") as fh:
            fh.write(b"# not UTF-8 in its name\n")
    os.utime(vault / "a.md", ns=(1767323045_123456789, 1767323045_123456789))
    os.utime(vault / "Z.md", ns=(1767323045_000000001, 1767323045_999999999))
    os.mkfifo(vault / "notes" / "pipe.md")
    put(outside, "elsewhere.md")
    put(outside, "folder/n.md")
    links = {
        "notes/inside.md": vault / "a.md",  # a link that stays in the vault: a note
        "notes/relative.md": Path("../top.md"),
        "notes/out.md": outside / "elsewhere.md",  # out of the vault: warned about
        "notes/dangling.md": vault / "nowhere.md",
        "notes/dangling.png": vault / "nowhere.png",
        "notes/pic-link.png": vault / "pic.png",
        "notes/folder-link": vault / "a",  # a link to a folder: never entered
        "notes/folder-link.md": vault / "a",
        "notes/out-folder": outside / "folder",
        "notes/loop.md": Path("loop.md"),  # a link to itself: skipped, with a warning
    }
    for rel, target in links.items():
        (vault / rel).symlink_to(target)
    if with_rules:
        # A folder's rule holds for what is in it, even a file a later rule lets in.
        rules = "ignored/\nkeep/skip/\n!keep/skip/n.md\n*.draft.md\nZ.md\n"
        put(vault, ".markvaultignore", rules)


def scans(vault: Path, index: Path) -> tuple[VaultScan, VaultScan | None]:
    files = VaultFiles(vault, index)
    walk = FindWalk.start(str(vault), str(index))
    assert walk is not None
    listing = walk.listing()
    assert listing is not None
    return files.scan_all(), files.scan_listing(listing)


@needs_find
@pytest.mark.parametrize("with_rules", [True, False])
def test_the_listing_gives_what_the_walk_finds(tmp_path: Path, with_rules: bool) -> None:
    vault, index = tmp_path / "vault", tmp_path / "vault" / "index"
    build_vault(vault, tmp_path / "outside", with_rules)
    walked, listed = scans(vault, index)
    assert listed is not None
    assert list(listed.notes.items()) == list(walked.notes.items())  # the order too
    assert listed.attachments == walked.attachments
    assert listed.warnings == walked.warnings
    # The cases are there to be compared (a test that could not fail proves nothing).
    notes = walked.notes
    assert {"a.md", "a/b/c.md", "notes/inside.md", "notes/relative.md"} <= set(notes)
    assert notes["a.md"].mtime_ns == 1767323045_123456789
    assert os.fsdecode(b"notes/bad \xff name.md") in notes
    assert not {"index/inside-the-index.md", ".hidden/n.md", "notes/pipe.md"} & set(notes)
    assert ("ignored/n.md" in notes) != with_rules and ("Z.md" in notes) != with_rules
    assert ("keep/skip/n.md" in notes) != with_rules
    assert {"pic.png", "notes/pic-link.png", "notes/dangling.png"} <= walked.attachments
    assert any("symlink out of the vault" in w for w in walked.warnings)
    assert any("Unicode form" in w for w in walked.warnings)
    assert "notes/loop.md: symlink loop, skipped" in walked.warnings


@needs_find
def test_a_listing_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    """The caller walks instead: a line cut short or of another shape, an mtime not as
    find 4.9 prints it, a listing of another folder or with another folder pruned."""
    vault, index = tmp_path / "vault", tmp_path / "index"
    put(vault, "a.md")
    files = VaultFiles(vault, index)
    root, skip = str(vault), str(index)
    good = b"f 1767323045.1234567890 1767323046.1234567890 42 7 a.md\0"
    listed = files.scan_listing(FindListing(root, skip, good))
    assert listed is not None
    assert listed.notes["a.md"][2:] == (1767323045_123456789, 7, 1767323046_123456789, 42)
    t = b"1767323045.1234567890"
    for data in (
        good[:-1],  # cut short
        b"f 1767323045.1234567890 7 a.md\0",  # no ctime nor inode (find's old format)
        b"f 1767323045.123456789 " + t + b" 42 7 a.md\0",  # nine digits
        b"f " + t + b" 1767323045.1234567891 42 7 a.md\0",  # not the trailing "0"
        b"f -1.1234567890 " + t + b" 42 7 a.md\0",
        b"f " + t + b" " + t + b" 42 seven a.md\0",
        b"f " + t + b" " + t + b" x 7 a.md\0",
        b"f " + t + b" " + t + b" 42 7\0",
        b"ff " + t + b" " + t + b" 42 7 a.md\0",
        good + b"garbage\0",
        good + b"d " + t + b" " + t + b" 42 4096 folder/\0",  # a name that ends in "/"
    ):
        assert files.scan_listing(FindListing(root, skip, data)) is None, data
    assert files.scan_listing(FindListing(root + "x", skip, good)) is None
    assert files.scan_listing(FindListing(root, skip + "x", good)) is None


def index_rows(keeper: IndexKeeper) -> tuple[object, ...]:
    index = keeper.reader()
    # Each state but its ctime: a sync records a note changed within the racy window of
    # its start as racy (racy.py), which depends on when each index was synced.
    states = {p: s[:4] + s[5:] for p, s in index.writes.file_states().items()}
    return states, index.writes.skipped_states(), index.reads.attachments()


@needs_find
def test_a_reindex_from_the_listing_gives_the_walks_index(tmp_path: Path) -> None:
    """Two indexes of one vault, one synced from find's listings and one by walks, after
    a build and an edit, an addition, a deletion and a rename: the same reports, the
    same file states and attachments."""
    vault = tmp_path / "vault"
    put(vault, "notes/a.md", "# A\n\nApples.\n")
    put(vault, "notes/b.md", "# B\n\nSee [[a]].\n")
    put(vault, "notes/c.md", "# C\n\nCherries.\n")
    put(vault, "pic.png", "x")
    listed = Settings.load(vault=vault, index=tmp_path / "listed")
    walked = Settings.load(vault=vault, index=tmp_path / "walked")

    def both() -> None:
        walk = FindWalk.start(str(vault), str(listed.index_dir))
        with_listing = IndexKeeper(RuntimeContext(listed, walk=walk))
        by_walk = IndexKeeper(RuntimeContext(walked))
        try:
            first = with_listing.reindex(vectors=False)
            assert walk is not None and walk.listing() is not None  # taken, not stopped
            second = by_walk.reindex(vectors=False)
            summary = ("added", "updated", "renamed", "removed", "unchanged", "notes")
            assert [getattr(first, k) for k in summary] == [getattr(second, k) for k in summary]
            assert index_rows(with_listing)[1:] == index_rows(by_walk)[1:]
            states = [
                {k: v[:3] for k, v in index_rows(k)[0].items()}  # type: ignore[attr-defined]
                for k in (with_listing, by_walk)
            ]
            assert states[0] == states[1]
        finally:
            with_listing.close()
            by_walk.close()

    both()
    put(vault, "notes/a.md", "# A\n\nApples and pears.\n")
    put(vault, "notes/d.md", "# D\n\nDates.\n")
    (vault / "notes" / "c.md").unlink()
    (vault / "notes" / "b.md").rename(vault / "notes" / "renamed.md")
    put(vault, "more/pic.png", "y")
    both()


@needs_find
def test_a_walk_that_failed_or_is_not_needed_leaves_the_sync_to_the_walk(tmp_path: Path) -> None:
    """find failed (a folder that is not there), or listed another folder, or the first
    sync looks at a few paths only: the sync walks, and find is reaped."""
    vault = tmp_path / "vault"
    put(vault, "a.md", "# A\n\nApples.\n")
    settings = Settings.load(vault=vault, index=tmp_path / "index")
    for root in (tmp_path / "missing", tmp_path):
        walk = FindWalk.start(str(root), str(settings.index_dir))
        keeper = IndexKeeper(RuntimeContext(settings, walk=walk))
        try:
            report = keeper.reindex(full=True, vectors=False)
        finally:
            keeper.close()
        assert (report.added, report.notes) == (1, 1)
    walk = FindWalk.start(str(vault), str(settings.index_dir))
    assert walk is not None
    keeper = IndexKeeper(RuntimeContext(settings, walk=walk))
    try:
        put(vault, "a.md", "# A\n\nApricots.\n")
        assert keeper.reindex(vectors=False, paths=["a.md"]).updated == 1
    finally:
        keeper.close()
    with pytest.raises(ChildProcessError):  # stopped and reaped
        os.waitpid(walk.pid, os.WNOHANG)


@needs_find
def test_the_reindex_command_after_changes(tmp_path: Path) -> None:
    """`vault reindex` as a command (it scans from find's listing) sees an edit, an
    addition, a deletion and a rename, and then nothing left to do."""
    vault = tmp_path / "vault"
    put(vault, "notes/a.md", "# A\n\nApples.\n")
    put(vault, "notes/b.md", "# B\n\nBananas.\n")
    put(vault, "notes/c.md", "# C\n\nCherries.\n")

    def reindex() -> dict[str, int]:
        out = run_cli(vault, "reindex", "--no-vectors", "--json")
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        return {k: data[k] for k in ("added", "updated", "renamed", "removed", "unchanged")}

    assert reindex()["added"] == 3
    put(vault, "notes/a.md", "# A\n\nApples and pears.\n")
    put(vault, "notes/d.md", "# D\n\nDates.\n")
    (vault / "notes" / "b.md").unlink()
    (vault / "notes" / "c.md").rename(vault / "notes" / "renamed.md")
    changes = {"added": 1, "updated": 1, "renamed": 1, "removed": 1, "unchanged": 0}
    assert reindex() == changes
    assert reindex() == {**dict.fromkeys(changes, 0), "unchanged": 3}
