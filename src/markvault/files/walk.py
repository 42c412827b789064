"""Which files belong to the vault, and the one walk of the vault's folders.

``VaultRules`` decides what is the vault's: a note is a ``.md`` file, an attachment any
other file links may name; neither is hidden (a name starting with ".": ``.git``,
``.obsidian``, the ``.trash``, markvault's own ``.markvault/`` and its half-written
``.mv-tmp-`` files), in a hidden folder, in the index folder (kept outside the vault by
markvault; this guards a hand-made setup) or matched by ``.markvaultignore``.

``walk_files`` is the walk every caller shares: a folder's files sorted by name, then
its subfolders, sorted, depth first (``os.walk``'s order), never through a symbolic
link to a folder, each file as its ``os.DirEntry`` (one ``lstat`` a file, cached). What
it enters is a view, one of those below, all kept here so their differences are
deliberate:

- the vault's notes and attachments (``VaultRules.enters``): the scan, the watcher's
  polling and its folder list, the reconcile;
- every file `vault check` reads (``enters_checked``): all but git's own folders, and
  the trash unless it is committed; hidden folders included (``.obsidian`` may hold a
  plugin's token), ignore rules not applied (an ignored file is still committed);
- where a crash may have left a temp file (``enters_for_temp_files``): all but
  ``.git`` and ``.obsidian`` (markvault writes its setup files into ``.markvault/``);
- the trash's notes (``enters_everything``).

Walks that stay their own, each for a stated reason:

- ``core/freshness.stat_sum`` and ``files/find_walk.FIND_ARGS``: the freshness check
  before every call on a vault without git, written for speed. They prune what
  ``VaultRules.enters`` prunes but the ignore rules (the ignore file's mtime is summed
  instead); ``tests/test_walk.py`` holds the two equal.
- ``indexing/watch_limits.count_folders``: counts every folder inotify will watch,
  hidden and ignored ones too (the watch covers the whole tree).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from markvault.types import TRASH_DIR

if TYPE_CHECKING:
    import pathspec

IGNORE_FILE = ".markvaultignore"
GIT_DIR = ".git"
# What editors and systems leave beside notes (backups, swap and probe files): never
# attachments, so neither indexed nor listed.
_LITTER = re.compile(r"~$|^#.*#$|\.sw[a-p]$|^4913$|^(thumbs\.db|desktop\.ini)$", re.IGNORECASE)

# (vault-relative folder, its full path) -> whether a walk goes into it.
Enters = Callable[[str, str], bool]


def is_attachment_name(name: str) -> bool:
    """Whether a file of this name, not a note, is one links may name (an image, a
    PDF): not hidden, not an editor's backup, swap or probe file."""
    return not name.startswith(".") and not _LITTER.search(name)


class VaultRules:
    """What belongs to the vault at ``root``: its ignore rules (``.markvaultignore``,
    read once and again on ``reload``), the hidden names and the index folder."""

    def __init__(self, root: Path, index_dir: Path | None = None) -> None:
        self.root = root
        self.index_dir = index_dir
        self._index_path = str(index_dir) if index_dir is not None else None
        self.spec = self._load()

    def reload(self) -> None:
        """Read ``.markvaultignore`` again (it changed: the set of notes changed)."""
        self.spec = self._load()

    def _load(self) -> pathspec.PathSpec | None:
        ignore = self.root / IGNORE_FILE
        if not ignore.is_file():
            return None
        import pathspec  # only for a vault with ignore rules

        with ignore.open(encoding="utf-8", errors="replace") as fh:
            return pathspec.GitIgnoreSpec.from_lines(fh)

    def is_ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether ``rel`` is hidden or ignored by its own name and path (the folders
        above it are not asked about: a walk has asked on its way down)."""
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts):
            return True
        if self.spec is None:
            return False
        return self.spec.match_file(rel + ("/" if is_dir else ""))

    def is_index(self, full: str) -> bool:
        """Whether ``full`` is the index folder."""
        return full == self._index_path

    def enters(self, rel: str, full: str) -> bool:
        """Whether a walk of the vault's notes goes into the folder ``rel`` (at
        ``full``), the folders above it entered already."""
        return not self.is_ignored(rel, is_dir=True) and full != self._index_path

    def folder_excluded(self, rel: str) -> bool:
        """Whether the folder ``rel``, or one above it, is left out of the vault."""
        parts = rel.split("/")
        if any(self.is_ignored("/".join(parts[: i + 1]), is_dir=True) for i in range(len(parts))):
            return True
        return self.is_index(os.path.join(str(self.root), *parts))

    def is_vault_file(self, rel: str) -> bool:
        """Whether a file at ``rel``, its folders not excluded, is a note or an
        attachment, by its name alone (the stat a caller makes is the truth)."""
        name = rel.rpartition("/")[2]
        if not (name.lower().endswith(".md") or is_attachment_name(name)):
            return False
        return not self.is_ignored(rel)


def enters_checked(trash: bool) -> Enters:
    """The folders `vault check` reads: all but git's own, and the trash unless
    ``trash`` (it is committed then)."""
    never = frozenset({GIT_DIR}) if trash else frozenset({GIT_DIR, TRASH_DIR})

    def enters(rel: str, full: str) -> bool:
        return rel.rpartition("/")[2] not in never

    return enters


def enters_for_temp_files(rel: str, full: str) -> bool:
    """The folders a crash mid-write may have left a temp file in: all but git's and
    Obsidian's (markvault writes nothing there)."""
    return rel.rpartition("/")[2] not in (GIT_DIR, ".obsidian")


def enters_everything(rel: str, full: str) -> bool:
    """Every folder (but symbolic links to one, which no walk follows)."""
    return True


def walk_files(root: str, rel_start: str, enters: Enters) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(vault-relative folder ending in "/" or "", file entry) under ``rel_start`` (a
    folder ending in "/", or "" for the whole vault), in ``os.walk``'s order, going
    into the folders ``enters`` accepts. A symbolic link to a folder is neither entered
    nor a file; a folder that is gone or unreadable yields nothing."""
    start = os.path.join(root, rel_start) if rel_start else root
    return _walk_dir(rel_start, start, enters)


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _walk_dir(
    rel_dir: str, full_dir: str, enters: Enters
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """One folder's files (sorted), then its subfolders' (sorted, depth first); callers
    use the directory entries' own stat, so a file costs one ``lstat`` and no path is
    built twice."""
    try:
        with os.scandir(full_dir) as listing:
            entries = list(listing)
    except OSError:
        return  # gone or unreadable: nothing there now
    folders: list[os.DirEntry[str]] = []
    files: list[os.DirEntry[str]] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()  # a link to a folder counts as one, never entered
        except OSError:
            is_dir = False
        (folders if is_dir else files).append(entry)
    for entry in sorted(files, key=_entry_name):
        yield rel_dir, entry
    for entry in sorted(folders, key=_entry_name):
        if entry.is_symlink():
            continue
        rel = rel_dir + entry.name
        if enters(rel, entry.path):
            yield from _walk_dir(rel + "/", entry.path, enters)
