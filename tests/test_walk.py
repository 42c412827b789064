"""The vault's rules and its one walk (files/walk.py): the copies kept for speed prune
what the walker prunes, `vault check` and the temp cleanup walk with it, and a write's
refresh cleans only the folders it wrote in."""

from __future__ import annotations

import os
import time
from pathlib import Path

from markvault.core.freshness import stat_sum
from markvault.credentials.scan import vault_files
from markvault.files.atomic import TEMP_PREFIX
from markvault.files.vault_files import VaultFiles
from markvault.files.walk import VaultRules, walk_files

from .conftest import OpenVault

TREE = (
    "top.md",
    "a/b.md",
    "a/picture.png",
    "a/.dotted.md",
    "a/b/c/deep.md",
    "notes/n.md",
    ".obsidian/workspace.json",
    ".obsidian/plugins/p/data.json",
    ".git/HEAD",
    ".git/objects/ab/cdef",
    ".trash/gone.md",
    ".trash/old/gone.md",
    ".markvault/templates/t.md",
    "index/mv.duckdb",  # the index folder, made inside the vault by hand
    "index/sub/x.md",
    "sub/.git/HEAD",  # a nested repository's folder
    "sub/n.md",
    f"a/{TEMP_PREFIX}abc",
)


def build(root: Path) -> None:
    for rel in TREE:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"text of {rel}\n", encoding="utf-8")
    os.symlink(root / "a" / "b.md", root / "a" / "link.md")


def walked(root: Path, rules: VaultRules) -> tuple[list[str], set[str]]:
    """(files, folders entered) of the vault's walk with ``rules``."""
    folders = {""}

    def enters(rel: str, full: str) -> bool:
        if rules.enters(rel, full):
            folders.add(rel)
            return True
        return False

    files = [d + e.name for d, e in walk_files(str(root), "", enters)]
    return files, folders


def test_the_freshness_sum_prunes_what_the_vault_walk_prunes(tmp_path: Path) -> None:
    # stat_sum (and GNU find's FIND_ARGS, held equal to it by test_find_listing) is the
    # freshness check's own fast loop: it must leave out exactly the folders and files
    # the walk leaves out (ignore rules aside: the ignore file's mtime is summed instead).
    root = tmp_path / "vault"
    build(root)
    rules = VaultRules(root, root / "index")
    files, folders = walked(root, rules)
    shown = [f for f in files if not f.rpartition("/")[2].startswith(".")]
    total = stat_sum(str(root), {str(root / "index")})
    assert total[0] == len(shown) and total[3] == len(folders)
    assert "index" not in folders and ".obsidian" not in folders and "a/b/c" in folders
    assert total[2] == sum(os.stat(root / f).st_size for f in shown)


def test_the_scan_finds_the_vault_files_of_the_rules(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    build(root)
    files = VaultFiles(root, root / "index")
    found = files.scan_all()
    notes = ["a/b.md", "a/b/c/deep.md", "a/link.md", "notes/n.md", "sub/n.md", "top.md"]
    assert sorted(found.notes) == notes
    assert found.attachments == {"a/picture.png"}
    assert all(files.rules.is_vault_file(p) for p in [*found.notes, *found.attachments])


def test_vault_check_reads_every_file_but_gits_and_the_trash(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    build(root)
    listed = list(vault_files(root))
    assert listed == [  # os.walk's order: a folder's files, then its folders, each sorted
        "top.md",
        ".markvault/templates/t.md",
        ".obsidian/workspace.json",
        ".obsidian/plugins/p/data.json",
        "a/.dotted.md",
        "a/b.md",
        "a/picture.png",
        "a/b/c/deep.md",
        "index/mv.duckdb",
        "index/sub/x.md",
        "notes/n.md",
        "sub/n.md",
    ]
    assert ".obsidian/plugins/p/data.json" in listed and "index/mv.duckdb" in listed
    assert not [p for p in listed if p.startswith((".git/", "sub/.git/", ".trash/"))]
    assert f"a/{TEMP_PREFIX}abc" not in listed and "a/link.md" not in listed
    with_trash = list(vault_files(root, trash=True))
    assert ".trash/gone.md" in with_trash and ".trash/old/gone.md" in with_trash


def age(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_a_writes_refresh_cleans_only_the_folder_it_wrote_in(
    vault_dir: Path, open_vault: OpenVault
) -> None:
    stale = [vault_dir / f"{d}{TEMP_PREFIX}0123" for d in ("a/", "b/", "", ".markvault/")]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
        age(path)
    (vault_dir / "a" / "new.md").write_text("# New\n", encoding="utf-8")
    v = open_vault()
    v.refresh(paths=["a/new.md"])
    assert [p.exists() for p in stale] == [False, True, True, True]
    v.reindex(vectors=False)
    assert not any(p.exists() for p in stale)


def test_the_trash_lists_its_notes_through_the_walk(vault_dir: Path) -> None:
    for rel in (".trash/x.md", ".trash/deep/y~20260101-101010-abcd.md", ".trash/z.txt"):
        path = vault_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# t\n", encoding="utf-8")
    items = VaultFiles(vault_dir).trash_listing()
    assert sorted((i["trash_path"], i["restores_to"]) for i in items) == [
        (".trash/deep/y~20260101-101010-abcd.md", "deep/y.md"),
        (".trash/x.md", "x.md"),
    ]
