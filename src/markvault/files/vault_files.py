"""The vault's files: which ones are notes, reading them, and the only writes.

Reads refuse what cannot be a note (binary, not UTF-8, over the size limit).
Writes go to a temporary file in the same folder, are fsynced, and are moved
into place with a hard link (creation must never overwrite) or ``os.replace``;
then the folder is fsynced so the rename survives a power cut.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
import re
import secrets
import stat as stat_mod
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Concatenate, NamedTuple, ParamSpec, TypeVar
from urllib.parse import unquote

from markvault.answers.writing import TrashItem
from markvault.errors import ConflictError, NotFoundError, RefusedError
from markvault.git.repo import WRITE_WAIT_SECONDS, find_repo
from markvault.types import TRASH_DIR

if TYPE_CHECKING:
    import pathspec

    from markvault.files.find_walk import FindListing

P = ParamSpec("P")
R = TypeVar("R")

IGNORE_FILE = ".markvaultignore"
DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt", ".json")
_TRASH_STAMP = re.compile(r"~\d{8}-\d{6}-[0-9a-f]{4}\.md$")
TEMP_PREFIX = ".mv-tmp-"
STALE_TEMP_SECONDS = 600.0  # a write takes milliseconds; older temp files are crash leftovers
# What editors and systems leave beside notes (backups, swap and probe files): never
# attachments, so neither indexed nor listed.
_LITTER = re.compile(r"~$|^#.*#$|\.sw[a-p]$|^4913$|^(thumbs\.db|desktop\.ini)$", re.IGNORECASE)
_RESERVED = re.compile(r"^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$", re.IGNORECASE)
_BAD_NAME_CHARS = re.compile(r'[\x00-\x1f\\/:*?"<>|#^\[\]]+')


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
    """What one walk of the vault found (``VaultFiles.scan_all``)."""

    notes: dict[str, FileStat]  # by NFC vault-relative path
    attachments: set[str]  # NFC vault-relative paths of every other file
    warnings: list[str]


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _nfc(path: str) -> str:
    # ASCII is its own NFC form: most paths skip the normalization.
    return path if path.isascii() else unicodedata.normalize("NFC", path)


def content_hash(data: bytes) -> str:
    """The hash every read returns and every change to a note must quote."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def check_hash(rel: str, current: str, expected: str) -> None:
    """Raises ConflictError unless the note still has the hash its writer read."""
    if current != expected:
        raise ConflictError(
            f"{rel} changed since it was read (hash {current}, not {expected}).",
            "Read it again and redo the change on the current text.",
        )


def read_bytes_checked(full: Path, max_bytes: int, name: str) -> tuple[bytes, str]:
    """(raw bytes, UTF-8 text) of a file, refused when too large, binary or not UTF-8."""
    try:
        size = full.stat().st_size
    except FileNotFoundError:
        raise NotFoundError(
            f"{name} no longer exists.", "Run `vault reindex` to drop it from the index."
        ) from None
    if size > max_bytes:
        raise RefusedError(
            f"{name} is {size / 1048576:.1f} MiB, over the {max_bytes // 1048576} MiB "
            "note size limit; skipped.",
            "Split it, or move it out of the vault or into .markvaultignore.",
        )
    data = full.read_bytes()
    if b"\x00" in data[:8192]:
        raise RefusedError(
            f"{name} looks binary (NUL bytes); skipped.", "Rename it if it is not a note."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RefusedError(
            f"{name} is not valid UTF-8 (byte {exc.start}); skipped.",
            "Re-save it as UTF-8.",
        ) from exc
    return data, text


def _guarded(
    method: Callable[Concatenate[VaultFiles, P], R],
) -> Callable[Concatenate[VaultFiles, P], R]:
    """A write method that runs inside ``VaultFiles.writing``. An error of the disk (full,
    a file size limit, no permission) is a refusal that says so: each write is atomic,
    so nothing was changed."""

    @functools.wraps(method)
    def wrapper(self: VaultFiles, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.writing():
            try:
                return method(self, *args, **kwargs)
            except OSError as exc:
                what = args[0] if args else "the note"
                raise RefusedError(
                    f"Could not write {what}: {exc.strerror or exc}. Nothing was changed.",
                    "Free disk space or fix permissions, then retry.",
                ) from exc

    return wrapper


class VaultFiles:
    def __init__(
        self, vault_dir: Path, index_dir: Path | None = None, max_note_bytes: int | None = None
    ) -> None:
        self.root = vault_dir
        self.index_dir = index_dir
        self.max_note_bytes = max_note_bytes  # a larger note would not be indexed
        self._spec = self._load_ignore()

    def reload_ignore_rules(self) -> None:
        """Read ``.markvaultignore`` again (it changed: the set of notes changed)."""
        self._spec = self._load_ignore()

    def _load_ignore(self) -> pathspec.PathSpec | None:
        ignore = self.root / IGNORE_FILE
        if not ignore.is_file():
            return None
        import pathspec  # only for a vault with ignore rules

        with ignore.open(encoding="utf-8", errors="replace") as fh:
            return pathspec.GitIgnoreSpec.from_lines(fh)

    def is_ignored(self, rel: str, is_dir: bool = False) -> bool:
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts):
            return True
        if self._spec is None:
            return False
        return self._spec.match_file(rel + ("/" if is_dir else ""))

    def scan(self, under: Iterable[str] | None = None) -> tuple[dict[str, FileStat], list[str]]:
        """Every note file, keyed by NFC path; and warnings (``scan_all`` without the
        attachments)."""
        found = self.scan_all(under)
        return found.notes, found.warnings

    def scan_all(self, under: Iterable[str] | None = None) -> VaultScan:
        """One walk of the vault: every note file (keyed by NFC path), every other file
        (attachments: what links and embeds may name besides notes) and warnings
        (duplicates, odd links).

        ``under``: only these vault-relative files or folders (a watcher's hints); a
        path that is gone or ignored contributes nothing.
        """
        found = VaultScan({}, set(), [])
        if under is None:
            self._walk("", found)
            return found
        # A hint may name a file in another Unicode form than the disk's (macOS writes
        # NFD): look for every form, or a note would be taken for deleted.
        forms = {unicodedata.normalize(f, h.strip("/")) for h in under for f in ("NFC", "NFD")}
        for rel in sorted(forms | {h.strip("/") for h in under}):
            parts = rel.split("/") if rel else []
            if any(p in ("", ".", "..") for p in parts):
                continue
            full = os.path.join(str(self.root), *parts)
            if os.path.isdir(full) and not os.path.islink(full):
                if not rel or not self._dir_excluded(rel, full):
                    self._walk(rel + "/" if rel else "", found)
            else:
                folder, _, name = rel.rpartition("/")
                if folder and self._dir_excluded(folder, os.path.join(str(self.root), folder)):
                    continue
                if name.lower().endswith(".md") or os.path.isfile(full):
                    self._add_file(folder + "/" if folder else "", name, found)
        return found

    def scan_listing(self, listing: FindListing) -> VaultScan | None:
        """What ``scan_all()`` finds, from GNU find's listing of the vault (find_walk.py)
        rather than a walk: the same notes in the same order, attachments and warnings.
        None when the listing is not of this vault with its index pruned, or a line of
        it does not parse: the caller walks."""
        if listing.root != str(self.root) or listing.skip != str(self.index_dir):
            return None
        # The listing's objects (two a file) live only until the scan is built: the
        # cycle collector would only move them to older generations, and the next full
        # collection (~6 ms on 14k notes) would come for them.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return _scan_listed(self, listing.data)
        finally:
            if collecting:
                gc.enable()

    def _dir_excluded(self, rel: str, full: str) -> bool:
        parts = rel.split("/")
        if any(self.is_ignored("/".join(parts[: i + 1]), is_dir=True) for i in range(len(parts))):
            return True
        return self.index_dir is not None and full == str(self.index_dir)

    def attachments(self) -> list[str]:
        """Every file in the vault that is not a note (images, PDFs, audio, canvases, ...),
        as sorted vault-relative NFC paths. Hidden and ignored files are left out, as
        they are for notes."""
        return sorted(self.scan_all().attachments)

    def _walk(self, rel_start: str, found: VaultScan) -> None:
        for rel_dir, entry in self._walk_entries(rel_start):
            name = entry.name
            file = rel_dir + name
            # The folders above were checked on the way down (no dot folder, none
            # ignored), so only the name and the ignore rules are left to check.
            if self._spec is not None and self._spec.match_file(file):
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
            self._add_stat(file, entry.path, st, found)

    def _walk_entries(self, rel_start: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """(vault-relative folder ending in "/", file entry) under ``rel_start``, sorted,
        skipping hidden and ignored folders and the index folder."""
        root = str(self.root)
        start = os.path.join(root, rel_start) if rel_start else root
        index_dir = str(self.index_dir) if self.index_dir else None
        return self._walk_dir(rel_start, start, index_dir)

    def _walk_dir(
        self, rel_dir: str, full_dir: str, index_dir: str | None
    ) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """One folder's files (sorted), then its subfolders' (sorted, depth first), as
        ``os.walk`` without following links; callers use the directory entries' own
        stat, so a file costs one ``lstat`` and no path is built twice."""
        try:
            with os.scandir(full_dir) as listing:
                entries = list(listing)
        except OSError:
            return  # gone or unreadable: nothing to index there now
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
            rel = rel_dir + entry.name
            if self.is_ignored(rel, is_dir=True) or entry.path == index_dir:
                continue
            if not entry.is_symlink():
                yield from self._walk_dir(rel + "/", entry.path, index_dir)

    def _add_file(self, rel_dir: str, name: str, found: VaultScan) -> None:
        """Add one file to ``found``: a note if it is .md, not ignored, a regular file or
        a symlink that stays inside the vault; any other file that is neither hidden nor
        ignored is an attachment (only its name matters: no stat)."""
        file = rel_dir + name
        if not name.lower().endswith(".md"):
            if is_attachment_name(name) and not self.is_ignored(file):
                found.attachments.add(_nfc(file))
            return
        if self.is_ignored(file):
            return
        full = os.path.join(str(self.root), file)
        try:
            st = os.lstat(full)
        except OSError:
            return  # vanished: not a note now
        self._add_stat(file, full, st, found)

    def _add_stat(self, file: str, full: str, st: os.stat_result, found: VaultScan) -> None:
        """``file`` (its ``lstat`` is ``st``) as a note, if it is a regular file or a
        symlink that stays inside the vault."""
        if stat_mod.S_ISLNK(st.st_mode):
            try:
                target = Path(full).resolve()
            except (OSError, RuntimeError):  # a loop of links (RuntimeError before 3.13)
                found.warnings.append(f"{file}: symlink loop, skipped")
                return
            if self.root not in target.parents:
                found.warnings.append(f"{file}: symlink out of the vault, skipped")
                return
            try:
                st = os.stat(full)
            except OSError:
                return  # dangling: not a note now
        if stat_mod.S_ISREG(st.st_mode):
            _add_note(file, st.st_mtime_ns, st.st_size, found, st.st_ctime_ns, st.st_ino)

    def read(self, file: str, max_bytes: int) -> tuple[bytes, str]:
        """(raw bytes, decoded text) of a note file.

        Raises:
            RefusedError: the file is too large, binary or not UTF-8.
            NotFoundError: the file is gone.
        """
        return read_bytes_checked(self.root / file, max_bytes, file)

    def safe_path(self, rel: str) -> Path:
        """The absolute path of a vault-relative note path, or a refusal.

        Raises:
            RefusedError: the path leaves the vault, names a hidden or reserved
                location, or is not a Markdown file.
        """
        if (
            not rel
            or "\x00" in rel
            or "\\" in rel
            or ":" in rel
            or rel.startswith("/")
            or unquote(rel) != rel  # percent-escapes could hide '..' from a later decoder
        ):
            raise RefusedError(f"Refused path {rel!r}.", "Give a relative path inside the vault.")
        parts = PurePosixPath(rel).parts
        if any(p in ("..", ".") or p.startswith(".") or _RESERVED.match(p) for p in parts):
            raise RefusedError(
                f"Refused path {rel!r}.",
                "Paths may not contain '..', hidden folders or reserved names.",
            )
        if not rel.lower().endswith(".md"):
            raise RefusedError(f"Refused path {rel!r}: notes are .md files.")
        full = self.root.joinpath(*parts)
        resolved = resolve_path(full.parent)
        if resolved != self.root and self.root not in resolved.parents:
            raise RefusedError(f"Refused path {rel!r}: it leads out of the vault.")
        if full.is_symlink():
            raise RefusedError(f"Refused path {rel!r}: it is a symbolic link.")
        return full

    @_guarded
    def create(self, rel: str, text: str) -> Path:
        """Write a new note atomically; never overwrites.

        Raises:
            ConflictError: a file already exists at ``rel``.
            RefusedError: the path is unsafe.
        """
        full = self.safe_path(rel)
        data = self._checked_size(rel, text)
        full.parent.mkdir(parents=True, exist_ok=True)
        try:
            _write_new(full, data)
        except FileExistsError:
            raise ConflictError(
                f"{rel} already exists; nothing was written.",
                "Choose another title or edit the existing note.",
            ) from None
        return full

    @_guarded
    def create_attachment(self, rel: str, data: bytes) -> Path:
        """Write a new attachment (a stored PDF or Office file) atomically; never
        overwrites. The path rules are a note's, but for the suffix.

        Raises:
            ConflictError: a file already exists at ``rel``.
            RefusedError: the path is unsafe.
        """
        full = self.safe_path(rel + ".md").with_name(PurePosixPath(rel).name)
        if full.is_symlink():
            raise RefusedError(f"Refused path {rel!r}: it is a symbolic link.")
        full.parent.mkdir(parents=True, exist_ok=True)
        try:
            _write_new(full, data)
        except FileExistsError:
            raise ConflictError(
                f"{rel} already exists; nothing was written.", "Choose another title."
            ) from None
        return full

    def create_setup_file(self, rel: str, data: bytes) -> bool:
        """Create one of markvault's own files in the vault (``.gitignore``,
        ``.markvault.toml``, a template under ``.markvault/``) unless something is
        already at ``rel``, which is never touched. Returns whether it was created.

        Raises:
            RefusedError: ``rel`` leaves the vault.
        """
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise RefusedError(f"Refused path {rel!r}.", "Give a relative path inside the vault.")
        full = self.root.joinpath(*parts)
        self._refuse_symlinked_folders(full)  # an existing folder on the way may be a link
        full.parent.mkdir(parents=True, exist_ok=True)
        self._refuse_symlinked_folders(full)
        if full.exists() or full.is_symlink():
            return False
        try:
            _write_new(full, data)
        except FileExistsError:
            return False
        return True

    @_guarded
    def replace(self, rel: str, text: str, expected_hash: str) -> str:
        """Atomically replace an existing note, if it still has ``expected_hash``.

        Returns the new content hash.

        Raises:
            ConflictError: the file changed since it was read (its hash differs).
            RefusedError: unsafe path, a git merge or rebase in progress, or the write failed.
            NotFoundError: the note does not exist.
        """
        full = self.safe_path(rel)
        if not full.is_file():
            raise NotFoundError(f"{rel} does not exist.", "Create it instead, or check the path.")
        check_hash(rel, content_hash(full.read_bytes()), expected_hash)
        data = self._checked_size(rel, text)
        tmp: Path | None = None
        try:
            tmp = _write_temp(full.parent, data)
            os.chmod(tmp, stat_mod.S_IMODE(full.stat().st_mode))
            # Checked again right before the swap to keep the window for a lost edit small.
            if content_hash(full.read_bytes()) != expected_hash:
                raise ConflictError(
                    f"{rel} changed while it was being written; nothing written.",
                    "Read it again and retry.",
                )
            os.replace(tmp, full)
            _fsync_dir(full.parent)
        except OSError as exc:
            raise RefusedError(
                f"Could not write {rel}: {exc.strerror or exc}. The note is unchanged.",
                "Free disk space or fix permissions, then retry.",
            ) from exc
        finally:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        return content_hash(data)

    @_guarded
    def move(self, rel: str, new_rel: str, expected_hash: str) -> Path:
        """Move a note to ``new_rel`` if it still has ``expected_hash``; never overwrites.

        Raises:
            ConflictError: the note changed since it was read, or ``new_rel`` exists.
            RefusedError: an unsafe path or a git operation in progress.
            NotFoundError: the note does not exist.
        """
        src, dst = self.safe_path(rel), self.safe_path(new_rel)
        if not src.is_file():
            raise NotFoundError(f"{rel} does not exist.", "Check the path.")
        check_hash(rel, content_hash(src.read_bytes()), expected_hash)
        dst.parent.mkdir(parents=True, exist_ok=True)
        self._refuse_symlinked_folders(dst)
        try:
            if dst.exists() and os.path.samefile(src, dst):
                os.rename(src, dst)  # a case-only rename on a case-insensitive disk
            else:
                os.link(src, dst)  # atomic, and fails if the name exists
                os.unlink(src)
        except FileExistsError:
            raise ConflictError(
                f"{new_rel} already exists; nothing was moved.",
                "Choose another path, or delete that note first.",
            ) from None
        _fsync_dir(dst.parent)
        if src.parent != dst.parent:
            _fsync_dir(src.parent)
        return dst

    @_guarded
    def trash(self, rel: str, expected_hash: str) -> str:
        """Move a note into ``.trash/`` (Obsidian's vault trash), keeping its folders;
        returns the trash path. A name already in the trash gets a time suffix.

        Raises:
            ConflictError, RefusedError, NotFoundError: as for ``move``.
        """
        src = self.safe_path(rel)
        if not src.is_file():
            raise NotFoundError(f"{rel} does not exist.", "Check the path.")
        check_hash(rel, content_hash(src.read_bytes()), expected_hash)
        trash_rel = f"{TRASH_DIR}/{rel}"
        dst = self.root / trash_rel
        if dst.exists() or dst.is_symlink():
            stamp = time.strftime("%Y%m%d-%H%M%S")
            trash_rel = f"{trash_rel[:-3]}~{stamp}-{secrets.token_hex(2)}.md"
            dst = self.root / trash_rel
        self._refuse_symlinked_folders(dst)  # before mkdir: it would follow a link out
        dst.parent.mkdir(parents=True, exist_ok=True)
        self._refuse_symlinked_folders(dst)
        os.link(src, dst)
        os.unlink(src)
        os.utime(dst)  # the trash lists notes by when they were deleted
        _fsync_dir(dst.parent)
        _fsync_dir(src.parent)
        return trash_rel

    @_guarded
    def restore(self, trash_rel: str, new_rel: str | None = None) -> str:
        """Move a trashed note back to where it was (or to ``new_rel``); never overwrites.

        Raises:
            NotFoundError: nothing in the trash at ``trash_rel``.
            ConflictError: a note is already at the destination.
            RefusedError: unsafe paths.
        """
        inner = trash_rel.removeprefix(TRASH_DIR + "/")
        self.safe_path(inner)  # the same shape rules; the file itself is in the trash
        src = self.root / TRASH_DIR / PurePosixPath(inner)
        self._refuse_symlinked_folders(src)
        if not src.is_file() or src.is_symlink():
            raise NotFoundError(
                f"{TRASH_DIR}/{inner} is not in the trash.", "List the trash to see what is there."
            )
        target = new_rel or _TRASH_STAMP.sub(".md", inner)
        dst = self.safe_path(target)
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dst)
        except FileExistsError:
            raise ConflictError(
                f"{target} already exists; nothing was restored.",
                "Restore it to another path.",
            ) from None
        os.unlink(src)
        _fsync_dir(dst.parent)
        return target

    def trash_listing(self) -> list[TrashItem]:
        """The notes in the trash, newest first."""
        folder = self.root / TRASH_DIR
        if not folder.is_dir() or folder.is_symlink():
            return []
        found: list[TrashItem] = []
        for path in folder.rglob("*.md"):
            if path.is_file() and not path.is_symlink():
                st = path.stat()
                found.append(
                    {
                        "trash_path": path.relative_to(self.root).as_posix(),
                        "restores_to": _TRASH_STAMP.sub(".md", path.relative_to(folder).as_posix()),
                        "deleted": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(st.st_mtime)),
                        "bytes": st.st_size,
                    }
                )
        found.sort(key=lambda item: str(item["deleted"]), reverse=True)
        return found

    def read_external(self, full: Path, max_bytes: int) -> str:
        """The text of a file outside the vault that ``DocumentSources.check`` allowed
        (document_sources.py decides where documents may come from).

        Raises:
            RefusedError: wrong type, too large, not UTF-8.
        """
        if full.suffix.lower() not in DOCUMENT_SUFFIXES:
            raise RefusedError(
                f"{full.name} is not a Markdown, text or JSON file.",
                f"Store files ending in {', '.join(DOCUMENT_SUFFIXES)}.",
            )
        return read_bytes_checked(full, max_bytes, str(full))[1]

    def _checked_size(self, rel: str, text: str) -> bytes:
        """The bytes to write, or a refusal when the note would be over the size limit
        (it would be skipped by the index: a 20 MB write is refused, not half-kept)."""
        data = text.encode("utf-8")
        if self.max_note_bytes is not None and len(data) > self.max_note_bytes:
            raise RefusedError(
                f"{rel} would be {len(data) / 1048576:.1f} MiB, over the "
                f"{self.max_note_bytes / 1048576:.0f} MiB note size limit; nothing written.",
                "Split the content into several notes.",
            )
        return data

    def _refuse_symlinked_folders(self, dst: Path) -> None:
        """Raises RefusedError when ``dst``'s folder, once created, leads out of the vault
        (a symlinked folder on the way)."""
        resolved = resolve_path(dst.parent)
        if resolved != self.root and self.root not in resolved.parents:
            raise RefusedError(
                f"Refused: {dst.parent} leads out of the vault through a symbolic link."
            )

    def refuse_during_git_operation(self) -> None:
        """Raises RefusedError while a merge or rebase is in progress in the vault's repo."""
        repo = find_repo(self.root)
        if repo is not None:
            repo.refuse_during_operation()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Held around every write: waits while `vault sync` runs git on the vault, and
        refuses during a merge or rebase (see gitrepo.py)."""
        repo = find_repo(self.root)
        if repo is None:
            yield
            return
        with repo.writes_lock(exclusive=False, timeout=WRITE_WAIT_SECONDS):
            repo.refuse_during_operation()
            yield

    def remove_stale_temp_files(self, older_than: float = STALE_TEMP_SECONDS) -> int:
        """Delete temp files left by a crash mid-write (they are never notes).

        Only old ones: a fresh temp file may belong to another process writing now.
        """
        removed = 0
        cutoff = time.time() - older_than
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d not in (".git", ".obsidian")]
            for name in filenames:
                if name.startswith(TEMP_PREFIX):
                    full = os.path.join(dirpath, name)
                    with contextlib.suppress(OSError):
                        if os.lstat(full).st_mtime < cutoff:
                            os.unlink(full)
                            removed += 1
        return removed


def resolve_path(path: Path) -> Path:
    """``path.resolve()``, or a refusal where symbolic links lead in a loop (which
    Python 3.11 raises as RuntimeError) or cannot be followed.

    Raises:
        RefusedError: the links on the way loop or cannot be read.
    """
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:
        raise RefusedError(
            f"Refused: {path} leads through symbolic links that loop or cannot be read ({exc}).",
            "Fix or remove the link.",
        ) from None


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


def _scan_listed(files: VaultFiles, data: bytes) -> VaultScan | None:
    """``scan_listing``'s work, once the listing is known to be of this vault."""
    folders = _listed_folders(data)
    if folders is None:
        return None
    found = VaultScan({}, set(), [])
    spec = files._spec  # this module's own class: the ignore rules, matched inline
    for rel_dir, entries in _listed_walk(files, folders):
        for name, kind, mtime_ns, size, ctime_ns, ino in entries:
            # The common case inline: a note file no ignore rule names.
            if kind == "f" and name[-3:].lower() == ".md":
                file = rel_dir + name
                if spec is None or not spec.match_file(file):
                    _add_note(file, mtime_ns, size, found, ctime_ns, ino)
                continue
            _add_listed(files, rel_dir, name, kind, found)
    return found


def _add_listed(files: VaultFiles, rel_dir: str, name: str, kind: str, found: VaultScan) -> None:
    """One listed entry that is neither a folder nor a regular .md file, as ``_walk``
    takes a directory entry: find's type stands for its ``lstat``; a link is statted
    here."""
    file = rel_dir + name
    full = ""
    if kind == "l":  # a link to a folder is a folder, never entered: nothing
        full = os.path.join(str(files.root), file)
        try:
            if stat_mod.S_ISDIR(os.stat(full).st_mode):
                return
        except OSError:
            pass  # dangling: a file
    if files.is_ignored(file):  # no hidden part: find pruned those
        return
    if not name.lower().endswith(".md"):
        if is_attachment_name(name):
            found.attachments.add(_nfc(file))
        return
    if kind == "l":  # else not a regular file: never a note
        try:
            st = os.lstat(full)
        except OSError:
            return  # vanished: not a note now
        files._add_stat(file, full, st, found)


def _listed_walk(
    files: VaultFiles, folders: dict[str, tuple[list[_Listed], list[str]]]
) -> Iterator[tuple[str, list[_Listed]]]:
    """(vault-relative folder ending in "/", its entries sorted by name) in
    ``VaultFiles._walk_dir``'s order: a folder's files, then its subfolders, each
    sorted by name, depth first; ignored folders left out on the way down (find pruned
    hidden ones and the index)."""
    stack = [""]
    while stack:
        rel = stack.pop()
        entries, subfolders = folders.get(rel, ([], []))
        prefix = rel + "/" if rel else ""
        yield prefix, sorted(entries)
        for name in sorted(subfolders, reverse=True):
            if not files.is_ignored(prefix + name, is_dir=True):
                stack.append(prefix + name)


def is_attachment_name(name: str) -> bool:
    """Whether a file of this name, not a note, is one links may name (an image, a
    PDF): not hidden, not an editor's backup, swap or probe file."""
    return not name.startswith(".") and not _LITTER.search(name)


def safe_file_name(title: str) -> str:
    """A file name from a title: keeps Unicode, drops what breaks paths or links."""
    name = unicodedata.normalize("NFC", _BAD_NAME_CHARS.sub(" ", title)).strip(" .")
    name = re.sub(r"\s+", " ", name)[:100].strip(" .") or "Untitled"
    if _RESERVED.match(name):
        name += " note"
    return name + ".md"


def _write_new(full: Path, data: bytes) -> None:
    """Write ``data`` to a new file at ``full``, atomically: a temporary file in the same
    folder, fsynced, then hard-linked into place, so the name shows the whole content or
    nothing.

    Raises:
        FileExistsError: something is already at ``full`` (it is left as it was).
    """
    tmp = _write_temp(full.parent, data)
    try:
        os.link(tmp, full)  # atomic, and fails if the name exists
        _fsync_dir(full.parent)
    finally:
        tmp.unlink(missing_ok=True)


def _write_temp(folder: Path, data: bytes) -> Path:
    """A new temporary file in ``folder`` holding ``data``, fsynced (removed again if
    the write fails). Its name marks it as never a note, and never to be committed."""
    tmp = folder / f"{TEMP_PREFIX}{secrets.token_hex(6)}"
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
