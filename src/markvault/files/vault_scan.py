"""The scan of the vault: every note file with its stat, every attachment, and warnings.

One walk (walk.py's, with ``VaultRules.enters``) or, on Linux, GNU find's listing of
the vault (find_walk.py) turned into the same answer. Notes are keyed by their NFC
path (macOS writes NFD names); a regular file or a symbolic link that stays inside the
vault is a note, any other file links may name is an attachment.
"""

from __future__ import annotations

import gc
import os
import re
import stat as stat_mod
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from markvault.files.walk import VaultRules, is_attachment_name, walk_files

if TYPE_CHECKING:
    from markvault.files.find_walk import FindListing


class FileStat(NamedTuple):
    """One note file as a scan found it. A named tuple, not a frozen dataclass: a scan
    makes one per note, and a frozen dataclass's ``__init__`` took twice as long (~10 ms
    of a 14k-note vault's scan)."""

    path: str  # vault-relative, POSIX, NFC: the note's key
    file: str  # vault-relative as named on disk
    mtime_ns: int
    size: int
    # Seen by a sync too: a restored mtime (`cp -p`) changes them (racy.py).
    ctime_ns: int = 0
    ino: int = 0


@dataclass
class VaultScan:
    """What one walk of the vault found (``scan_vault``)."""

    notes: dict[str, FileStat]  # by NFC vault-relative path
    attachments: set[str]  # NFC vault-relative paths of every other file
    warnings: list[str]


def _nfc(path: str) -> str:
    # ASCII is its own NFC form: most paths skip the normalization.
    return path if path.isascii() else unicodedata.normalize("NFC", path)


def scan_vault(rules: VaultRules, under: Iterable[str] | None = None) -> VaultScan:
    """One walk of the vault: every note file (keyed by NFC path), every other file
    (attachments: what links and embeds may name besides notes) and warnings
    (duplicates, odd links).

    ``under``: only these vault-relative files or folders (a watcher's hints); a
    path that is gone or ignored contributes nothing.
    """
    found = VaultScan({}, set(), [])
    if under is None:
        _walk(rules, "", found)
        return found
    root = str(rules.root)
    # A hint may name a file in another Unicode form than the disk's (macOS writes
    # NFD): look for every form, or a note would be taken for deleted.
    forms = {unicodedata.normalize(f, h.strip("/")) for h in under for f in ("NFC", "NFD")}
    for rel in sorted(forms | {h.strip("/") for h in under}):
        parts = rel.split("/") if rel else []
        if any(p in ("", ".", "..") for p in parts):
            continue
        full = os.path.join(root, *parts)
        if os.path.isdir(full) and not os.path.islink(full):
            if not rel or not rules.folder_excluded(rel):
                _walk(rules, rel + "/" if rel else "", found)
        else:
            folder, _, name = rel.rpartition("/")
            if folder and rules.folder_excluded(folder):
                continue
            if name.lower().endswith(".md") or os.path.isfile(full):
                _add_file(rules, folder + "/" if folder else "", name, found)
    return found


def scan_listing(rules: VaultRules, listing: FindListing) -> VaultScan | None:
    """What ``scan_vault()`` finds, from GNU find's listing of the vault (find_walk.py)
    rather than a walk: the same notes in the same order, attachments and warnings.
    None when the listing is not of this vault with its index pruned, or a line of
    it does not parse: the caller walks."""
    if listing.root != str(rules.root) or listing.skip != str(rules.index_dir):
        return None
    # The listing's objects (two a file) live only until the scan is built: the
    # cycle collector would only move them to older generations, and the next full
    # collection (~6 ms on 14k notes) would come for them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _scan_listed(rules, listing.data)
    finally:
        if collecting:
            gc.enable()


def _walk(rules: VaultRules, rel_start: str, found: VaultScan) -> None:
    spec = rules.spec
    for rel_dir, entry in walk_files(str(rules.root), rel_start, rules.enters):
        name = entry.name
        file = rel_dir + name
        # The folders above were checked on the way down (no dot folder, none
        # ignored), so only the name and the ignore rules are left to check.
        if spec is not None and spec.match_file(file):
            continue
        if not name.lower().endswith(".md"):
            if is_attachment_name(name):
                found.attachments.add(_nfc(file))
            continue
        if name.startswith("."):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # vanished: not a note now
        _add_stat(rules, file, entry.path, st, found)


def _add_file(rules: VaultRules, rel_dir: str, name: str, found: VaultScan) -> None:
    """Add one file to ``found``: a note if it is .md, not ignored, a regular file or
    a symlink that stays inside the vault; any other file that is neither hidden nor
    ignored is an attachment (only its name matters: no stat)."""
    file = rel_dir + name
    if not name.lower().endswith(".md"):
        if is_attachment_name(name) and not rules.is_ignored(file):
            found.attachments.add(_nfc(file))
        return
    if rules.is_ignored(file):
        return
    full = os.path.join(str(rules.root), file)
    try:
        st = os.lstat(full)
    except OSError:
        return  # vanished: not a note now
    _add_stat(rules, file, full, st, found)


def _add_stat(
    rules: VaultRules, file: str, full: str, st: os.stat_result, found: VaultScan
) -> None:
    """``file`` (its ``lstat`` is ``st``) as a note, if it is a regular file or a
    symlink that stays inside the vault."""
    if stat_mod.S_ISLNK(st.st_mode):
        try:
            target = Path(full).resolve()
        except (OSError, RuntimeError):  # a loop of links (RuntimeError before 3.13)
            found.warnings.append(f"{file}: symlink loop, skipped")
            return
        if rules.root not in target.parents:
            found.warnings.append(f"{file}: symlink out of the vault, skipped")
            return
        try:
            st = os.stat(full)
        except OSError:
            return  # dangling: not a note now
    if stat_mod.S_ISREG(st.st_mode):
        _add_note(file, st.st_mtime_ns, st.st_size, found, st.st_ctime_ns, st.st_ino)


def _add_note(
    file: str, mtime_ns: int, size: int, found: VaultScan, ctime_ns: int = 0, ino: int = 0
) -> None:
    """A regular file ``file`` as a note, unless one in another Unicode form came first."""
    key = _nfc(file)
    if key in found.notes:
        found.warnings.append(
            f"{file}: same name as {found.notes[key].file} (Unicode form), skipped"
        )
        return
    found.notes[key] = FileStat(key, file, mtime_ns, size, ctime_ns, ino)


# One entry of find's listing that is not a folder: (name, find's type letter, mtime in
# ns, size, ctime in ns, inode); all but the name and type only for a regular file ("f").
_Listed = tuple[str, str, int, int, int, int]
# A line of find's listing (``find_walk.FIND_ARGS``), from the NUL before it to the one
# that ends it: a link's "l" and path, or a type letter, mtime and ctime (``%T@``,
# ``%C@``: seconds, a dot, nine digits of nanoseconds and a "0"), inode, size and path.
_LISTED_LINE = re.compile(
    r"\0(?:l ([^\0]*)|([a-km-zA-Z]) ([0-9]+)\.([0-9]{9})0 ([0-9]+)\.([0-9]{9})0 ([0-9]+) "
    r"([0-9]+) ([^\0]*))(?=\0)"
)


def _listed_folders(data: bytes) -> dict[str, tuple[list[_Listed], list[str]]] | None:
    """Find's listing as {vault-relative folder ("" for the top): (its
    other entries, its subfolders' names)}; None when a line does not parse. Names are
    decoded as ``os.scandir`` decodes them (``os.fsdecode``)."""
    text = os.fsdecode(data)  # NUL and space end any byte sequence: as name by name
    if text and not text.endswith("\0"):
        return None  # cut short
    lines = _LISTED_LINE.findall("\0" + text)
    if len(lines) != text.count("\0"):
        return None  # a line that does not parse (a match is a whole line)
    folders: dict[str, tuple[list[_Listed], list[str]]] = {"": ([], [])}
    for link, kind, secs, nanos, csecs, cnanos, ino, size, path in lines:
        folder, _, name = (link or path).rpartition("/")
        if not name:
            return None
        listed = folders.get(folder)
        if listed is None:
            listed = folders[folder] = ([], [])
        if kind == "d":
            listed[1].append(name)
        elif kind == "f":
            listed[0].append(
                (name, kind, int(secs + nanos), int(size), int(csecs + cnanos), int(ino))
            )
        else:
            listed[0].append((name, kind or "l", 0, 0, 0, 0))
    return folders


def _scan_listed(rules: VaultRules, data: bytes) -> VaultScan | None:
    """``scan_listing``'s work, once the listing is known to be of this vault."""
    folders = _listed_folders(data)
    if folders is None:
        return None
    found = VaultScan({}, set(), [])
    spec = rules.spec  # the ignore rules, matched inline
    for rel_dir, entries in _listed_walk(rules, folders):
        for name, kind, mtime_ns, size, ctime_ns, ino in entries:
            # The common case inline: a note file no ignore rule names.
            if kind == "f" and name[-3:].lower() == ".md":
                file = rel_dir + name
                if spec is None or not spec.match_file(file):
                    _add_note(file, mtime_ns, size, found, ctime_ns, ino)
                continue
            _add_listed(rules, rel_dir, name, kind, found)
    return found


def _add_listed(rules: VaultRules, rel_dir: str, name: str, kind: str, found: VaultScan) -> None:
    """One listed entry that is neither a folder nor a regular .md file, as ``_walk``
    takes a directory entry: find's type stands for its ``lstat``; a link is statted
    here."""
    if kind == "l":  # a link to a folder is a folder, never entered: nothing
        try:
            if stat_mod.S_ISDIR(os.stat(os.path.join(str(rules.root), rel_dir + name)).st_mode):
                return
        except OSError:
            pass  # dangling: a file
    elif name.lower().endswith(".md"):
        return  # a .md that is not a regular file or a link (a fifo, a socket): never a note
    _add_file(rules, rel_dir, name, found)


def _listed_walk(
    rules: VaultRules, folders: dict[str, tuple[list[_Listed], list[str]]]
) -> Iterator[tuple[str, list[_Listed]]]:
    """(vault-relative folder ending in "/", its entries sorted by name) in
    ``walk_files``' order: a folder's files, then its subfolders, each sorted by name,
    depth first; ignored folders left out on the way down (find pruned hidden ones and
    the index)."""
    stack = [""]
    while stack:
        rel = stack.pop()
        entries, subfolders = folders.get(rel, ([], []))
        prefix = rel + "/" if rel else ""
        yield prefix, sorted(entries)
        for name in sorted(subfolders, reverse=True):
            if not rules.is_ignored(prefix + name, is_dir=True):
                stack.append(prefix + name)
