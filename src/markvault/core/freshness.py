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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MarkvaultError
from ..files import IGNORE_FILE
from ..gitrepo import find_repo
from .lifecycle import IndexKeeper

if TYPE_CHECKING:
    from ..gitsync import Git

FRESH_MAX_FILES = 300  # changed files synced before an answer; more wait for a reindex
# A long-lived process without a watcher checks again no sooner than this many times the
# last check's duration after it: the check costs it at most a small share of its time.
RECHECK_FACTOR = 5.0
# Calls that sync themselves, or report what is not yet synced: no check before them.
EXEMPT_CALLS = frozenset({"reindex", "refresh", "sync", "pending", "index_status"})


class Freshness:
    """Syncs a small change set before a call (see the module's docstring)."""

    def __init__(self, keeper: IndexKeeper) -> None:
        self.keeper = keeper
        self._next_check = 0.0  # time.monotonic() before which a full check is skipped

    @property
    def state_path(self) -> Path:
        db = self.keeper.settings.db_path
        return db.with_name(db.name + ".fresh.json")

    def before_call(self, name: str) -> None:
        """Bring the index up to date with a small change set before the call ``name``
        runs; a failure only adds a notice (the answer comes from the index as it is)."""
        if name in EXEMPT_CALLS or not self.keeper.settings.db_path.exists():
            return  # a call that finds no index builds it from the files anyway
        watcher = self.keeper.watcher
        watched = watcher is not None and watcher.running
        if not watched and time.monotonic() < self._next_check:
            return
        began = time.monotonic()
        try:
            self._freshen(watched)
            if not watched:
                self._next_check = time.monotonic() + RECHECK_FACTOR * (time.monotonic() - began)
        except (MarkvaultError, OSError) as exc:
            self.keeper.notices.append(f"Could not check the vault for changes: {exc}")

    def _freshen(self, watched: bool) -> None:
        repo = find_repo(self.keeper.settings.vault_dir)
        state = self._load()
        new_state: dict[str, Any] = {}
        head = repo.head() if repo is not None and shutil.which("git") is not None else None
        if repo is None or head is None:
            # No git, or no commit yet (`git init` and nothing committed): git cannot say
            # what changed since a commit, so the walk's sum does.
            if watched:
                return
            fingerprint = self._fingerprint()
            if fingerprint == state.get("walk"):
                return  # not a file or folder changed since the last check
            changed = self._changed_by_walk()
            new_state = {"walk": fingerprint}
        else:
            if watched and head == state.get("head"):
                return
            from ..gitsync import open_git  # git vaults only

            git = open_git(self.keeper.settings.vault_dir, interactive=False)
            candidates = self._git_candidates(git, head, state, watched)
            if candidates is None and watched:
                changed, dirty = [], None  # the watcher reconciled every file as it started
            elif candidates is None:  # nothing to start from: look at every file once
                changed, dirty = self._changed_by_walk(), _dirty(git)
            else:
                changed = self._changed_among(candidates[0])
                dirty = candidates[1]
            new_state = {"head": head, "dirty": sorted(dirty) if dirty is not None else None}
        if len(changed) > FRESH_MAX_FILES:
            then = (
                "the watcher is indexing them; later answers will include them."
                if watched
                else "run `vault reindex` to bring it up to date (or keep `vault watch` or "
                "`vault mcp` running, which do it as files change)."
            )
            self.keeper.notices.append(
                f"{len(changed):,} files changed since the index was last updated; this "
                f"answer comes from the index as it was: {then}"
            )
            return
        if changed:
            self.keeper.refresh(paths=changed)
        if new_state and new_state != state:
            self._save(new_state)

    def _git_candidates(
        self, git: Git, head: str | None, state: dict[str, Any], watched: bool
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
            st.file for key, st in scan.notes.items() if known.get(key) != (st.mtime_ns, st.size)
        }
        changed |= {p for p in names if p not in scan.notes and p in known}  # deleted notes
        changed |= {p for p in names if (p in scan.attachments) != (p in files)}
        return sorted(changed)

    def _changed_by_walk(self) -> list[str]:
        """Every file that differs from the index: one stat walk of the vault."""
        scan = self.keeper.files.scan_all()
        index = self.keeper.reader()
        known = index.writes.file_states()
        skipped = index.writes.skipped_states()
        changed = {
            st.file
            for key, st in scan.notes.items()
            if (known[key][1:3] if key in known else skipped.get(key, (None, None))[:2])
            != (st.mtime_ns, st.size)
        }
        changed |= (set(known) | set(skipped)) - set(scan.notes)
        changed |= scan.attachments ^ index.reads.attachments()
        return sorted(changed)

    def _fingerprint(self) -> list[int]:
        """What one stat walk of the vault sums up: files, their mtimes and sizes, and
        folders and their mtimes (a file added, removed or renamed changes its folder's),
        and the ignore file's mtime. Equal to the last check's: nothing changed. Cheaper
        than ``_changed_by_walk``: no ignore rules per file, no Unicode forms, no index."""
        settings = self.keeper.settings
        ignore_mtime = 0
        with contextlib.suppress(OSError):
            ignore_mtime = os.stat(settings.vault_dir / IGNORE_FILE).st_mtime_ns
        total = stat_sum(str(settings.vault_dir), {str(settings.index_dir)})
        total[4] += ignore_mtime
        return total

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, state: dict[str, Any]) -> None:
        tmp = self.state_path.with_name(self.state_path.name + f".{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(state), encoding="utf-8")
            os.replace(tmp, self.state_path)


def stat_sum(root: str, skip: set[str]) -> list[int]:
    """[files, sum of their mtimes, sum of their sizes, folders, sum of the folders'
    mtimes] under ``root``, hidden entries and the ``skip`` folders left out. The
    freshness check's one pass over the disk: written for speed (plain locals, no
    context manager per file), as it runs before every call on a vault without git.
    Each folder is listed through its descriptor, so each file's stat is relative to
    it (``fstatat``) rather than a lookup of its whole path."""
    files = mtimes = sizes = folders = folder_mtimes = 0
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
        finally:
            os.close(fd)
    return [files, mtimes, sizes, folders, folder_mtimes]


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
