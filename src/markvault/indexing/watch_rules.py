"""Which paths a vault watcher reports, and the polling scan: the vault's rules
(walk.py's ``VaultRules``) asked by path alone, folder answers cached and reloaded when
``.markvaultignore`` changes; the polling snapshot walks with walk.py's walker.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
from pathlib import Path

from markvault.files.walk import IGNORE_FILE, VaultRules, walk_files

Signature = tuple[int, int, int] | None  # (mtime_ns, size, inode) of a file, None if absent


def file_signature(path: Path) -> Signature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class WatchRules:
    """The rules of the vault's scan (``VaultRules``): notes and attachments outside
    hidden and ignored folders and the index folder; never temp files.

    Answers come from the path alone (the stat the consumer makes anyway is the
    truth); folder answers are cached, and the rules reload when the ignore file
    changes on disk.
    """

    def __init__(self, root: Path, index_dir: Path | None) -> None:
        self.root = root
        self.vault = VaultRules(root, index_dir)
        self.index_rel = relative_path(index_dir, root) if index_dir else None
        self._signature = file_signature(root / IGNORE_FILE)
        self._folders: dict[str, bool] = {}

    def reload_if_changed(self) -> bool:
        """Reload the ignore rules if the ignore file changed; True when it did."""
        signature = file_signature(self.root / IGNORE_FILE)
        if signature == self._signature:
            return False
        self._signature = signature
        self.vault.reload()
        self._folders.clear()
        return True

    def hidden(self, rel: str) -> bool:
        """Hidden (``.git``, ``.obsidian``, ``.trash``, temp files), or the index folder."""
        if any(p.startswith(".") for p in rel.split("/")):
            return True
        index = self.index_rel
        return index is not None and (rel == index or rel.startswith(index + "/"))

    def folder_ignored(self, rel: str) -> bool:
        """Whether the folder ``rel`` (or one holding it) is left out of the vault."""
        known = self._folders.get(rel)
        if known is None:
            parent = rel.rpartition("/")[0]
            known = (
                self.hidden(rel)
                or bool(parent and self.folder_ignored(parent))
                or self.vault.is_ignored(rel, True)
            )
            self._folders[rel] = known
        return known

    def enters(self, rel: str, full: str) -> bool:
        """``walk_files``' question: whether the walk goes into the folder ``rel``."""
        return not self.folder_ignored(rel)

    def is_vault_file(self, rel: str) -> bool:
        """Whether a file at ``rel`` would be a note, or another file links may name
        (an attachment: an image, a PDF), which the index also keeps track of."""
        if self.hidden(rel) or not self.vault.is_vault_file(rel):
            return False
        parent = rel.rpartition("/")[0]
        return not (parent and self.folder_ignored(parent))


def relative_path(path: Path | str, root: Path) -> str | None:
    """``path`` relative to ``root`` in POSIX form; None outside it or for root itself."""
    text, base = str(path), str(root)
    if not text.startswith(base + os.sep):
        return None
    return text[len(base) + 1 :].replace(os.sep, "/")


def scan_files(root: Path, rules: WatchRules) -> dict[str, Signature]:
    """Signature of every note and attachment: what polling compares from one scan to
    the next."""
    found: dict[str, Signature] = {}
    for rel_dir, entry in walk_files(str(root), "", rules.enters):
        rel = rel_dir + entry.name
        if not rules.is_vault_file(rel):
            continue
        with contextlib.suppress(OSError):
            st = entry.stat()  # follows a symlink, as the Syncer's scan does
            if stat_mod.S_ISREG(st.st_mode):
                found[rel] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return found


def scan_folders(root: Path, rules: WatchRules) -> set[str]:
    """Every folder that can hold notes, so that its disappearance can be recognised."""
    folders: set[str] = set()

    def enters(rel: str, full: str) -> bool:
        if rules.folder_ignored(rel):
            return False
        folders.add(rel)
        return True

    for _ in walk_files(str(root), "", enters):
        pass
    return folders
