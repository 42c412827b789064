"""The vault's files: which ones are notes, reading them, and the only writes.

Reads refuse what cannot be a note (binary, not UTF-8, over the size limit).
Writes go through the atomic writer (atomic.py): a temporary file in the same folder,
fsynced, moved into place with a hard link (creation must never overwrite) or
``os.replace``, then the folder fsynced so the rename survives a power cut.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat as stat_mod
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar
from urllib.parse import unquote

from markvault.errors import ConflictError, NotFoundError, RefusedError
from markvault.files.atomic import TEMP_PREFIX, fsync_dir, write_new, write_temp
from markvault.files.vault_scan import FileStat, VaultScan, scan_listing, scan_vault
from markvault.files.walk import VaultRules, enters_everything, enters_for_temp_files, walk_files
from markvault.git.repo import WRITE_WAIT_SECONDS, find_repo
from markvault.types import TRASH_DIR

if TYPE_CHECKING:
    from markvault.answers.writing import TrashItem
    from markvault.files.find_walk import FindListing

P = ParamSpec("P")
R = TypeVar("R")

DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt", ".json")
_TRASH_STAMP = re.compile(r"~\d{8}-\d{6}-[0-9a-f]{4}\.md$")
STALE_TEMP_SECONDS = 600.0  # a write takes milliseconds; older temp files are crash leftovers
_RESERVED = re.compile(r"^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$", re.IGNORECASE)
_BAD_NAME_CHARS = re.compile(r'[\x00-\x1f\\/:*?"<>|#^\[\]]+')


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
    """The vault's files as markvault reads and writes them: scans through ``rules``
    (walk.py), reads refused when not a note, the only writes, the trash."""

    def __init__(
        self, vault_dir: Path, index_dir: Path | None = None, max_note_bytes: int | None = None
    ) -> None:
        self.root = vault_dir
        self.index_dir = index_dir
        self.max_note_bytes = max_note_bytes  # a larger note would not be indexed
        self.rules = VaultRules(vault_dir, index_dir)

    def reload_ignore_rules(self) -> None:
        """Read ``.markvaultignore`` again (it changed: the set of notes changed)."""
        self.rules.reload()

    def scan(self, under: Iterable[str] | None = None) -> tuple[dict[str, FileStat], list[str]]:
        """Every note file, keyed by NFC path; and warnings (``scan_all`` without the
        attachments)."""
        found = scan_vault(self.rules, under)
        return found.notes, found.warnings

    def scan_all(self, under: Iterable[str] | None = None) -> VaultScan:
        """Every note, attachment and warning (vault_scan.py); ``under``: only these
        vault-relative files or folders."""
        return scan_vault(self.rules, under)

    def scan_listing(self, listing: FindListing) -> VaultScan | None:
        """What ``scan_all()`` finds, from GNU find's listing (vault_scan.py); None when
        the caller must walk."""
        return scan_listing(self.rules, listing)

    def attachments(self) -> list[str]:
        """Every file in the vault that is not a note (images, PDFs, audio, canvases, ...),
        as sorted vault-relative NFC paths. Hidden and ignored files are left out, as
        they are for notes."""
        return sorted(scan_vault(self.rules).attachments)

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
            write_new(full, data)
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
            write_new(full, data)
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
            write_new(full, data)
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
            tmp = write_temp(full.parent, data)
            os.chmod(tmp, stat_mod.S_IMODE(full.stat().st_mode))
            # Checked again right before the swap to keep the window for a lost edit small.
            if content_hash(full.read_bytes()) != expected_hash:
                raise ConflictError(
                    f"{rel} changed while it was being written; nothing written.",
                    "Read it again and retry.",
                )
            os.replace(tmp, full)
            fsync_dir(full.parent)
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
        fsync_dir(dst.parent)
        if src.parent != dst.parent:
            fsync_dir(src.parent)
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
            trash_rel = f"{trash_rel[:-3]}~{stamp}-{os.urandom(2).hex()}.md"
            dst = self.root / trash_rel
        self._refuse_symlinked_folders(dst)  # before mkdir: it would follow a link out
        dst.parent.mkdir(parents=True, exist_ok=True)
        self._refuse_symlinked_folders(dst)
        os.link(src, dst)
        os.unlink(src)
        os.utime(dst)  # the trash lists notes by when they were deleted
        fsync_dir(dst.parent)
        fsync_dir(src.parent)
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
        fsync_dir(dst.parent)
        return target

    def trash_listing(self) -> list[TrashItem]:
        """The notes in the trash, newest first."""
        folder = self.root / TRASH_DIR
        if not folder.is_dir() or folder.is_symlink():
            return []
        found: list[TrashItem] = []
        for rel_dir, entry in walk_files(str(self.root), TRASH_DIR + "/", enters_everything):
            if not entry.name.endswith(".md") or not entry.is_file(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
            trash_path = rel_dir + entry.name
            found.append(
                {
                    "trash_path": trash_path,
                    "restores_to": _TRASH_STAMP.sub(".md", trash_path[len(TRASH_DIR) + 1 :]),
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

    def remove_stale_temp_files(
        self, older_than: float = STALE_TEMP_SECONDS, folders: Iterable[str] | None = None
    ) -> int:
        """Delete temp files left by a crash mid-write (they are never notes): in the
        whole vault, or only in the vault-relative ``folders`` (not below them; a
        write's temp file sits beside the file it writes).

        Only old ones: a fresh temp file may belong to another process writing now.
        """
        removed = 0
        cutoff = time.time() - older_than
        root = str(self.root)
        if folders is None:
            entries: Iterable[tuple[str, os.DirEntry[str]]] = walk_files(
                root, "", enters_for_temp_files
            )
        else:
            entries = (e for f in sorted(set(folders)) for e in _folder_files(root, f))
        for _, entry in entries:
            if entry.name.startswith(TEMP_PREFIX):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)
                        removed += 1
        return removed


def _folder_files(root: str, rel: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """The files of one vault-relative folder ("" for the top), not below it; nothing
    where the folder leads out of the vault through a symbolic link."""
    full = os.path.join(root, rel) if rel else root
    if os.path.realpath(full) != os.path.realpath(root) and not os.path.realpath(full).startswith(
        os.path.realpath(root) + os.sep
    ):
        return iter(())
    return walk_files(root, rel + "/" if rel else "", _enters_nothing)


def _enters_nothing(rel: str, full: str) -> bool:
    return False


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


def safe_file_name(title: str) -> str:
    """A file name from a title: keeps Unicode, drops what breaks paths or links."""
    name = unicodedata.normalize("NFC", _BAD_NAME_CHARS.sub(" ", title)).strip(" .")
    name = re.sub(r"\s+", " ", name)[:100].strip(" .") or "Untitled"
    if _RESERVED.match(name):
        name += " note"
    return name + ".md"
