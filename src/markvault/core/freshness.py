"""Fresh on every read: what changed on disk since the index last looked, found cheaply
and synced before a call is answered, when no watcher keeps the index in step.

A `vault search` run right after `git pull`, or after an edit in Obsidian, must find the
new text without `vault reindex`; and on a vault that did not change it must cost
nothing a person could notice. So the check does not stat every note when git can say
what changed:

- **A git vault:** the commit checked out (read from git's files, no process) against
  the one recorded at the last check gives what a pull, merge or checkout changed
  (`git diff`); `git status` (git's own stat cache, in C) gives what is edited, added or
  deleted and not committed; the files dirty at the last check are looked at again (a
  `git checkout -- note.md` puts one back). Only those files are statted and compared
  with the index.
- **Any other vault** (a repository with no commit yet too): one stat walk of the
  vault, summed up (files, mtimes, sizes, and folders' mtimes, which change when a file
  is added, removed or renamed) and compared with the sum at the last check; only when
  it differs, the walk that compares each file with the index (as `vault status`'
  pending count does).

With a watcher running in this process (a `vault mcp` server, `vault watch`) edits are
the watcher's, and only the commit is compared: a pull lands before the watcher's
settle time, and the search right after it must see it.

The look at the disk needs no index, so before a search (``OVERLAPPED_CALLS``) it runs
in a thread beside the search, and on Linux the walk is GNU find's, in a process of its
own (a walk in Python would hold the GIL the search needs): the search answers from the
index as it is, and when the look finds a change it is synced and the search run again,
so the answer is the one a check first would give, and a vault that did not change
pays for its walk only in the other core's time.

Up to ``FRESH_MAX_FILES`` changed files are synced before the answer (keywords at once;
vectors where the model is loaded); more are left to `vault reindex` or a watcher, and
the answer says it comes from the index as it was. What the check saw is kept beside
the index (``<index>.fresh.json``); deleting it costs one full stat walk.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from markvault.core.disk_look import DiskPlan, LookAhead
from markvault.errors import MarkvaultError
from markvault.files.atomic import write_replacing
from markvault.files.find_walk import FindListing, FindWalk
from markvault.files.walk import IGNORE_FILE
from markvault.git.repo import find_repo
from markvault.indexing.racy import same_file

if TYPE_CHECKING:
    from markvault.config import Settings
    from markvault.core.lifecycle import IndexKeeper
    from markvault.git.sync import Git
    from markvault.index import Index

FRESH_MAX_FILES = 300  # changed files synced before an answer; more wait for a reindex
# A long-lived process without a watcher checks again no sooner than this many times the
# last check's duration after it: the check costs it at most a small share of its time.
RECHECK_FACTOR = 5.0
# Calls that sync themselves, or report what is not yet synced: no check before them.
EXEMPT_CALLS = frozenset({"reindex", "refresh", "sync", "pending", "index_status"})
# Read-only calls cheap to run twice: run on the index while the disk is looked at
# (``Freshness.around``), again only when that look syncs something.
OVERLAPPED_CALLS = frozenset({"search"})

T = TypeVar("T")


def look_ahead(settings: Settings) -> LookAhead:
    """The disk side of the first call's check, started now: a one-shot `vault search`
    starts it as it becomes the owner, before the index layer (DuckDB) is imported, so
    GNU find's walk runs on the other core during that import and the connect rather
    than after them. Its look begins after the command was given, as ``around``'s own
    would; ``Freshness`` uses it for its first overlapped call. A vault without git is
    looked at by GNU find alone, spawned here by this thread (a few hundred µs), so the
    look's own thread needs the GIL only once find is done, not during the imports."""
    walk = None
    with contextlib.suppress(OSError):  # the look's thread meets it again, and says so
        if find_repo(settings.vault_dir) is None:
            walk = FindWalk.start(str(settings.vault_dir), str(settings.index_dir))
    return LookAhead(lambda: look_at_disk(settings, False, walk))


class Freshness:
    """Syncs a small change set before a call (see the module's docstring)."""

    def __init__(self, keeper: IndexKeeper, look: LookAhead | None = None) -> None:
        """``look``: the first call's look at the disk, already under way (``look_ahead``)."""
        self.keeper = keeper
        self._next_check = 0.0  # time.monotonic() before which a full check is skipped
        self._ahead = look

    @property
    def state_path(self) -> Path:
        return state_path(self.keeper.settings)

    def _watched(self) -> bool:
        watcher = self.keeper.watcher
        return watcher is not None and watcher.running

    def _due(self, name: str, watched: bool) -> bool:
        if name in EXEMPT_CALLS or not self.keeper.settings.db_path.exists():
            return False  # a call that finds no index builds it from the files anyway
        return watched or time.monotonic() >= self._next_check

    def before_call(self, name: str) -> None:
        """Bring the index up to date with a small change set before the call ``name``
        runs; a failure only adds a notice (the answer comes from the index as it is)."""
        watched = self._watched()
        self._ahead = None  # for an overlapped call only
        if not self._due(name, watched):
            return
        began = time.monotonic()
        try:
            self._settle(look_at_disk(self.keeper.settings, watched))
            self._checked(watched, time.monotonic() - began)
        except (MarkvaultError, OSError) as exc:
            self.keeper.notices.append(f"Could not check the vault for changes: {exc}")

    def around(self, name: str, read: Callable[[], T]) -> T:
        """Run the read-only call ``read`` on the index as it is while a thread looks at
        the disk; when that look finds a change (or a notice for the answer), sync it and
        run ``read`` again. The answer is the one ``before_call`` then ``read`` gives: the
        look starts after the call was asked for (when the call was made, or, for a
        one-shot command's search, once the command was given: ``look_ahead``), and an
        answer from before a sync is dropped.
        With a watcher the check only compares the commit: done first, as cheap as a
        thread's start, which a warm server's search would feel."""
        from markvault.index import IndexUnusable  # loaded by now: the keeper has imported it

        if self._watched():
            self.before_call(name)
            return read()
        ahead, self._ahead = self._ahead, None
        if not self._due(name, False):  # no index yet: ``read`` builds it
            first = read()
            if ahead is not None:  # done by now; its process reaped before this one ends
                ahead.join()
            return first
        settings = self.keeper.settings
        look = ahead or LookAhead(lambda: look_at_disk(settings, False))
        # Opened first, so the notices opening adds are known and given to a second read.
        with contextlib.suppress(IndexUnusable):
            self.keeper.open_index(write=False)
        kept = list(self.keeper.notices)
        try:
            answer, failed = read(), None
        except (MarkvaultError, OSError) as exc:  # maybe from an index behind the files
            answer, failed = None, exc
        look.join()
        count = len(self.keeper.notices)
        synced = False
        began = time.monotonic()
        try:
            if look.error is not None:
                raise look.error
            synced = self._settle(look.plan)
            self._checked(False, look.took + time.monotonic() - began)
        except (MarkvaultError, OSError) as exc:
            self.keeper.notices.append(f"Could not check the vault for changes: {exc}")
        if synced or len(self.keeper.notices) != count:
            self.keeper.notices[:0] = [n for n in kept if n not in self.keeper.notices]
            return read()
        if failed is not None:
            raise failed
        return answer  # type: ignore[return-value]

    def _checked(self, watched: bool, took: float) -> None:
        if not watched:  # the next check waits a few times this one's duration
            self._next_check = time.monotonic() + RECHECK_FACTOR * took

    def _settle(self, plan: DiskPlan | None) -> bool:
        """The index side of a check: sync what differs from the index; True when it
        synced something."""
        if plan is None:
            return False
        changed = (
            self._changed_by_walk(plan.listing)
            if plan.walk_all
            else self._changed_among(plan.candidates)
        )
        if len(changed) > FRESH_MAX_FILES:
            then = (
                "the watcher is indexing them; later answers will include them."
                if self._watched()
                else "run `vault reindex` to bring it up to date (or keep `vault watch` or "
                "`vault mcp` running, which do it as files change)."
            )
            self.keeper.notices.append(
                f"{len(changed):,} files changed since the index was last updated; this "
                f"answer comes from the index as it was: {then}"
            )
            return False
        if changed:
            self.keeper.refresh(paths=changed)
        # A walk's sum taken while a note was racy (racy.py) may hide a change made in
        # the same tick: not kept, so the next check compares the notes again.
        racy = plan.walk_all and self.keeper.reader().reads.racy_notes() > 0
        if plan.new_state != plan.state and not racy:
            self._save(plan.new_state)
        return bool(changed)

    def _changed_among(self, candidates: set[str]) -> list[str]:
        """The candidates whose file differs from what the index holds of it."""
        if not candidates:
            return []
        scan = self.keeper.files.scan_all(under=sorted(candidates))
        names = {unicodedata.normalize("NFC", c) for c in candidates}
        index = self.keeper.reader()
        known = index.reads.file_states_of([*names, *scan.notes])
        files = index.reads.attachments()
        changed = {
            st.file
            for key, st in scan.notes.items()
            if key not in known or not same_file(known[key], st)
        }
        changed |= {p for p in names if p not in scan.notes and p in known}  # deleted notes
        changed |= {p for p in names if (p in scan.attachments) != (p in files)}
        changed |= self._attachments_changed(scan.attachments, index) & names
        return sorted(changed)

    def _changed_by_walk(self, listing: FindListing | None) -> list[str]:
        """Every file that differs from the index: the vault as the look's find listed
        it (``listing``), else as one stat walk finds it."""
        files = self.keeper.files
        scan = files.scan_listing(listing) if listing is not None else None
        if scan is None:
            scan = files.scan_all()
        index = self.keeper.reader()
        known = index.writes.file_states()
        skipped = index.writes.skipped_states()
        changed = {
            st.file
            for key, st in scan.notes.items()
            if (
                not same_file((old[1], old[2], old[4], old[5]), st)
                if (old := known.get(key)) is not None
                else skipped.get(key, (None, None))[:2] != (st.mtime_ns, st.size)
            )
        }
        changed |= (set(known) | set(skipped)) - set(scan.notes)
        changed |= scan.attachments ^ index.reads.attachments()
        changed |= self._attachments_changed(scan.attachments, index)
        return sorted(changed)

    def _attachments_changed(self, on_disk: set[str], index: Index) -> set[str]:
        """Attachments whose text is indexed and whose file changed (an edited PDF)."""
        from markvault.attachments.reconcile import changed_attachments

        return changed_attachments(self.keeper.files, on_disk, index, self.keeper.settings)

    def _save(self, state: dict[str, Any]) -> None:
        # A cache (losing it costs one stat walk): atomic, but not worth an fsync.
        with contextlib.suppress(OSError):
            write_replacing(self.state_path, json.dumps(state).encode("utf-8"), durable=False)


def state_path(settings: Settings) -> Path:
    """Where what the last check saw is kept, beside the index."""
    db = settings.db_path
    return db.with_name(db.name + ".fresh.json")


def look_at_disk(
    settings: Settings, watched: bool, walk: FindWalk | None = None
) -> DiskPlan | None:
    """The disk side of a check (no index): what to compare with the index, or None
    when nothing changed since the last check. ``walk``: GNU find's walk of the vault,
    started already (``look_ahead``)."""
    repo = find_repo(settings.vault_dir)
    state = _load(settings)
    head = repo.head() if repo is not None and shutil.which("git") is not None else None
    if walk is not None and (repo is not None or watched):  # not the walk this look needs
        walk.cancel()
        walk = None
    if repo is None or head is None:
        # No git, or no commit yet (`git init` and nothing committed): git cannot say
        # what changed since a commit, so the walk's sum does.
        if watched:
            return None
        fingerprint, listing = _fingerprint(settings, walk)
        if fingerprint == state.get("walk"):
            return None  # not a file or folder changed since the last check
        return DiskPlan(state, {"walk": fingerprint}, True, set(), listing)
    if watched and head == state.get("head"):
        return None
    from markvault.git.sync import open_git  # git vaults only

    git = open_git(settings.vault_dir, interactive=False)
    candidates = _git_candidates(git, head, state, watched)
    if candidates is None and watched:  # the watcher reconciled every file as it started
        return DiskPlan(state, {"head": head, "dirty": None}, False, set())
    if candidates is None:  # nothing to start from: look at every file once
        return DiskPlan(state, {"head": head, "dirty": sorted(_dirty(git))}, True, set())
    dirty = candidates[1]
    new_state = {"head": head, "dirty": sorted(dirty) if dirty is not None else None}
    return DiskPlan(state, new_state, False, candidates[0])


def _git_candidates(
    git: Git, head: str | None, state: dict[str, Any], watched: bool
) -> tuple[set[str], set[str] | None] | None:
    """(paths that may have changed, the files dirty now or None when not asked);
    None when the last check left nothing to compare with."""
    before, dirty_before = state.get("head"), state.get("dirty")
    if before is None or head is None or (dirty_before is None and not watched):
        return None
    candidates: set[str] = set()
    if head != before:
        diff = git.run(
            "diff",
            "--name-only",
            "--no-renames",
            "-z",
            before,
            head,
            "--",
            *git.pathspec,
            check=False,
        )
        if diff.returncode != 0:  # the old commit is gone (a rebase, a gc)
            return None
        candidates |= _vault_paths(git, diff.stdout)
    if watched:
        return candidates, None
    dirty = _dirty(git)
    return candidates | dirty | set(dirty_before or ()), dirty


def _fingerprint(
    settings: Settings, walk: FindWalk | None = None
) -> tuple[list[int] | str, FindListing | None]:
    """What one stat walk of the vault sums up: files, their mtimes and sizes, and
    folders and their mtimes (a file added, removed or renamed changes its folder's),
    and the ignore file's mtime. Equal to the last check's: nothing changed. Cheaper
    than ``_changed_by_walk``: no ignore rules per file, no Unicode forms, no index.
    GNU find's digest where it runs (``walk``, or one started now), else ``stat_sum``;
    and find's listing, if any, for ``_changed_by_walk``."""
    ignore_mtime = 0
    with contextlib.suppress(OSError):
        ignore_mtime = os.stat(settings.vault_dir / IGNORE_FILE).st_mtime_ns
    root, skip = str(settings.vault_dir), str(settings.index_dir)
    walk = walk or FindWalk.start(root, skip)
    digest = walk.digest() if walk is not None else None
    if walk is not None and digest is not None:
        return f"{digest} {ignore_mtime}", walk.listing()
    total = stat_sum(root, {skip})
    total[4] += ignore_mtime
    return total, None


def _load(settings: Settings) -> dict[str, Any]:
    try:
        data = json.loads(state_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def stat_sum(root: str, skip: set[str]) -> list[int]:
    """[files, sum of their mtimes, sum of their sizes, folders, sum of the folders'
    mtimes, sum of the files' ctimes each xor its inode] under ``root``, hidden entries
    and the ``skip`` folders left out. The
    freshness check's one pass over the disk: written for speed (plain locals, no
    context manager per file), as it runs before every call on a vault without git.
    Each folder is listed through its descriptor, so each file's stat is relative to
    it (``fstatat``) rather than a lookup of its whole path.

    Not the vault's walk (files/walk.py) for speed, but its pruning rule: hidden names
    and the index folder, as ``VaultRules.enters`` (the ignore rules aside: the ignore
    file's mtime is summed instead); tests/test_walk.py holds the two equal."""
    files = mtimes = sizes = folders = folder_mtimes = 0
    ctimes = 0  # ctime and inode: a restored mtime (`cp -p`) changes them (racy.py)
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            folder_mtimes += os.fstat(fd).st_mtime_ns
            folders += 1
            with os.scandir(fd) as entries:
                for entry in entries:
                    name = entry.name
                    if name[0] == ".":
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        path = os.path.join(folder, name)
                        if path not in skip:
                            stack.append(path)
                        continue
                    try:
                        st = entry.stat()  # follows a symlink, as the scan does
                    except OSError:
                        continue
                    files += 1
                    mtimes += st.st_mtime_ns
                    sizes += st.st_size
                    ctimes += st.st_ctime_ns ^ st.st_ino
        finally:
            os.close(fd)
    return [files, mtimes, sizes, folders, folder_mtimes, ctimes]


def _dirty(git: Git) -> set[str]:
    """Vault files that differ from the commit (edited, added, deleted, untracked), and
    what git ignores (a folder kept out of git may still hold notes: it is looked at
    each time, folders as a whole)."""
    out = git.run(
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignored=matching",
        "--no-renames",
        "--",
        *git.pathspec,
    ).stdout
    return _vault_paths(git, "\0".join(entry[3:] for entry in out.split("\0") if entry))


def _vault_paths(git: Git, names: str) -> set[str]:
    """Vault-relative paths from git's NUL-separated, repository-relative ones."""
    return {p for p in (git.vault_path(n) for n in names.split("\0") if n) if p}
