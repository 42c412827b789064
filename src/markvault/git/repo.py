"""The git repository a vault lives in, as markvault's writes see it.

Three things, read from the files git keeps (no git process, so every write can ask):
where the repository's state is (``.git``, or the folder a ``.git`` file names in a
worktree or submodule); whether a merge, rebase, cherry-pick or revert is under way
(then markvault writes nothing: a person is resolving it, or `vault sync` stopped on a
conflict); and the lock that keeps markvault's writes and `vault sync` apart. Also the
rule for a single note left mid-merge: one holding git's conflict markers is never
written by markvault (``check_writable``).

The lock is a file in this user's runtime folder (``$XDG_RUNTIME_DIR/markvault``, else
``markvault-<uid>`` in the temporary folder, beside the owners' sockets), named after the
repository's resolved path: never inside the vault or its ``.git`` (git's folder is
git's, and a repository on a read-only or network mount must still lock). Taken with
``flock``: every
write holds it shared for the few milliseconds of its read-check-replace, `vault sync`
holds it exclusively while git changes the working tree (staging and committing, then
merging or rebasing what it fetched; never while it talks to the network). So a sync
never commits or merges under a write in flight, and a write never lands in the middle
of a merge. The kernel drops the lock when a process dies, so a crash never leaves it
stuck.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from markvault.errors import RefusedError

LOCK_SUFFIX = ".writes.lock"
# A write waits this long for a sync's git step (a local merge of a large pull).
WRITE_WAIT_SECONDS = 30.0
# State files git leaves while an operation waits for a person, and its name.
OPERATION_MARKERS = (
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
)
_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class GitRepo:
    work_tree: Path  # the folder that holds `.git`
    git_dir: Path  # where this work tree's state is (HEAD, MERGE_HEAD, rebase-merge/)

    def operation(self) -> str | None:
        """The git operation waiting to be finished ("merge", "rebase", ...), or None."""
        for marker, name in OPERATION_MARKERS:
            if (self.git_dir / marker).exists():
                return name
        return None

    def refuse_during_operation(self) -> None:
        """Raises RefusedError while a merge, rebase, cherry-pick or revert is under way."""
        name = self.operation()
        if name is None:
            return
        cont = "git rebase --continue" if name == "rebase" else "git commit"
        raise RefusedError(
            f"A git {name} is in progress in {self.work_tree}; markvault does not write during it.",
            f"Resolve the conflicts (remove the <<<<<<< ======= >>>>>>> markers, keeping the "
            f"text you want), then run `vault sync` (or `git add` and `{cont}`), or abort "
            f"it with `git {name} --abort`.",
        )

    def head(self) -> str | None:
        """The commit checked out (read from git's files: no process), or None when
        there is none yet or it cannot be read."""
        try:
            text = (self.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if not text.startswith("ref:"):
            return text or None
        ref = text[4:].strip()
        common = self._common_dir()
        for base in dict.fromkeys((self.git_dir, common)):
            with contextlib.suppress(OSError):
                return (base / ref).read_text(encoding="utf-8").strip() or None
        with contextlib.suppress(OSError):
            for line in (common / "packed-refs").read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha
        return None

    def _common_dir(self) -> Path:
        """Where refs are shared between worktrees (the main repository's .git)."""
        try:
            rel = (self.git_dir / "commondir").read_text(encoding="utf-8").strip()
        except OSError:
            return self.git_dir
        return (self.git_dir / rel).resolve()

    @property
    def lock_path(self) -> Path:
        """Where the vault's write lock lives (see the module's docstring)."""
        top = str(self.work_tree.resolve())
        digest = hashlib.blake2b(top.encode(), digest_size=8).hexdigest()
        return runtime_dir() / f"{self.work_tree.name or 'repo'}-{digest}{LOCK_SUFFIX}"

    @contextlib.contextmanager
    def writes_lock(self, *, exclusive: bool, timeout: float) -> Iterator[None]:
        """Hold the vault's write lock: shared for a markvault write, exclusive for a
        sync's git step. Waits up to ``timeout`` seconds.

        Raises:
            RefusedError: the lock stayed taken for ``timeout`` seconds.
        """
        path = self.lock_path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + timeout
            mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise _busy(exclusive, timeout) from None
                    time.sleep(_POLL_SECONDS)
            yield
        finally:
            os.close(fd)  # closing drops the lock


def _busy(exclusive: bool, timeout: float) -> RefusedError:
    if exclusive:
        return RefusedError(
            f"A markvault write kept the vault busy for {timeout:.0f} s; nothing was synced.",
            "Run `vault sync` again in a moment.",
        )
    return RefusedError(
        f"`vault sync` was running git on the vault for over {timeout:.0f} s; nothing was written.",
        "Retry in a moment.",
    )


def runtime_dir() -> Path:
    """This user's private folder for locks: ``$XDG_RUNTIME_DIR/markvault`` when the
    session has one, else ``markvault-<uid>`` in the temporary folder."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK):
        return Path(runtime) / "markvault"
    return Path(tempfile.gettempdir()) / f"markvault-{os.getuid()}"


def find_repo(path: Path) -> GitRepo | None:
    """The repository ``path`` lies in, found by walking up to a ``.git``; None if none."""
    for folder in (path, *path.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return GitRepo(folder, dot)
        if dot.is_file():
            # A worktree or submodule: ".git" is a file saying "gitdir: <path>".
            try:
                first = dot.read_text(encoding="utf-8", errors="replace").splitlines()[0]
            except (OSError, IndexError):
                return None
            if not first.startswith("gitdir:"):
                return None
            git_dir = Path(first.partition(":")[2].strip())
            return GitRepo(folder, git_dir if git_dir.is_absolute() else folder / git_dir)
    return None


# git's conflict markers: a note holding both ends is mid-merge, and no markvault write
# may touch it (sync, edits, the change feed all ask here). A lone ======= is a setext
# heading's underline, so only the two ends count.
_CONFLICT_START = re.compile(r"^<{7}(?: |$)", re.MULTILINE)
_CONFLICT_END = re.compile(r"^>{7}(?: |$)", re.MULTILINE)


def has_conflict_markers(text: str) -> bool:
    """Whether ``text`` holds both ends of a git merge conflict. The patterns run only
    where both markers occur at all: a line-start pattern is scanned for character by
    character (big's 90 MiB of notes: 0.46 CPU s), a substring found several times faster
    (0.04 s), and every note a sync reads is asked."""
    return bool(
        "<<<<<<<" in text
        and ">>>>>>>" in text
        and _CONFLICT_START.search(text)
        and _CONFLICT_END.search(text)
    )


def check_writable(text: str, path: str) -> None:
    """Refuse to edit a note that is mid-merge.

    Raises:
        RefusedError: the note holds git conflict markers.
    """
    if has_conflict_markers(text):
        raise RefusedError(
            f"{path} contains git conflict markers (<<<<<<<, =======, >>>>>>>).",
            "Resolve the merge conflict in the file first, then retry.",
        )


def exclude_trash(repo: GitRepo, vault_dir: Path) -> bool:
    """Keep the vault's trash out of git on this machine, whatever ``.gitignore`` says:
    a line in the repository's ``info/exclude`` (never committed). True if added."""
    from markvault.types import TRASH_DIR

    common = repo.git_dir
    pointer = repo.git_dir / "commondir"  # a linked worktree shares the main one's info/
    with contextlib.suppress(OSError):
        common = (repo.git_dir / pointer.read_text(encoding="utf-8").strip()).resolve()
    exclude = common / "info" / "exclude"
    rel = vault_dir.resolve().relative_to(repo.work_tree.resolve()).as_posix()
    line = f"/{'' if rel == '.' else rel + '/'}{TRASH_DIR}/"
    try:
        have = exclude.read_text(encoding="utf-8").splitlines() if exclude.exists() else []
        if line in have:
            return False
        exclude.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join([*have, "# markvault: deleted notes stay on this machine", line])
        exclude.write_text(text + "\n", encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False  # the sync's own pathspec keeps the trash out all the same
    return True
