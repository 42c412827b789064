"""`vault sync`: commit the vault's changes, pull the other machines', push this one's.

Git does the work (a ``git`` subprocess, the user's own configuration and credentials);
this module decides the order and keeps it safe:

1. A merge or rebase that an earlier sync stopped on is finished first, once no file in
   conflict holds markers any more (else it stops again, naming them).
2. Under the vault's write lock (gitrepo.py; no markvault write is in flight and none
   starts): stage the vault's folder (``git add -A``, never markvault's temporary
   files), run the commit checks on exactly what is staged (the hook where a credential
   scan refuses a commit), and commit with a message that says what changed.
3. Fetch the upstream (no lock: the network can be slow).
4. Under the lock again: merge or rebase (``[sync] pull``). On a conflict it stops: the
   notes in conflict are named, both sides' text stays in them between git's markers,
   and markvault refuses every write while the merge or rebase waits (files.py).
5. Push (no lock); if the upstream moved meanwhile, fetch and go again, twice at most.

The caller brings the index up to date with ``changed_paths``. Nothing here resolves a
conflict by dropping a side, and nothing is committed outside the vault's folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from markvault.config import CONFIG_FILE
from markvault.errors import ConfigError, MarkvaultError, RefusedError, SyncConflict, SyncError
from markvault.files.atomic import TEMP_PREFIX, write_replacing
from markvault.git.repo import GitRepo, check_writable, exclude_trash, find_repo
from markvault.types import TRASH_DIR

if TYPE_CHECKING:
    from markvault.answers.sync import SyncJSON

# How long a sync waits for in-flight markvault writes before each git step.
LOCK_WAIT_SECONDS = 30.0
PUSH_ATTEMPTS = 3
MESSAGE_LINES = 50  # changes listed in a commit message's body
Status = Literal["added", "edited", "moved", "deleted"]
PullMode = Literal["merge", "rebase"]
_STATUS: dict[str, Status] = {
    "A": "added",
    "M": "edited",
    "T": "edited",
    "R": "moved",
    "C": "added",
    "D": "deleted",
}


@dataclass(frozen=True)
class Change:
    """One file in the commit, with vault-relative paths."""

    status: Status
    path: str  # the new path of a move
    old_path: str | None  # the old path of a move
    blob: str | None  # git's id of the staged content; None when deleted

    @property
    def is_note(self) -> bool:
        return self.path.lower().endswith(".md") and not any(
            part.startswith(".") for part in self.path.split("/")
        )


class StagedCommit:
    """What is about to be committed, for the commit checks: every change and a way to
    read exactly the staged bytes (not the file, which may change meanwhile)."""

    def __init__(self, git: Git, changes: list[Change], subject: str | None = None) -> None:
        self._git = git
        self.changes = changes
        self.vault_dir = git.top / git.prefix
        self.subject = subject  # the commit message's subject given by the caller, if any

    def read(self, change: Change) -> bytes:
        if change.blob is None:
            return b""
        return self._git.run("cat-file", "blob", change.blob, text=False).stdout

    def blobs(self, changes: Iterable[Change]) -> Iterator[tuple[Change, bytes]]:
        """Each change with its staged bytes, read one at a time through a single
        ``git cat-file --batch`` (a process per file costs more than the read on a large
        first commit, and holding every blob at once would hold the whole vault)."""
        pending = list(changes)
        if not any(c.blob for c in pending):
            yield from ((c, b"") for c in pending)
            return
        for change, chunks in self.contents(pending):
            yield change, b"".join(chunks)

    def contents(self, changes: Iterable[Change]) -> Iterator[tuple[Change, Iterator[bytes]]]:
        """Each change with its staged bytes in chunks of at most ``BLOB_CHUNK`` (a file
        of any size in bounded memory), through a single ``git cat-file --batch``. Each
        chunk iterator must be read (or dropped) before the next change is asked for."""
        pending = list(changes)
        with subprocess.Popen(
            ["git", "-C", str(self._git.top), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self._git.env,
        ) as batch:
            assert batch.stdin is not None and batch.stdout is not None
            try:
                for change in pending:
                    if change.blob is None:
                        yield change, iter(())
                        continue
                    chunks = _blob_chunks(batch.stdin, batch.stdout, change)
                    yield change, chunks
                    for _ in chunks:  # what the reader left
                        pass
            finally:
                batch.stdin.close()


BLOB_CHUNK = 1024 * 1024


def _blob_chunks(ask: IO[bytes], answer: IO[bytes], change: Change) -> Iterator[bytes]:
    """One object of ``git cat-file --batch``, in chunks, and the newline after it."""
    assert change.blob is not None
    ask.write(change.blob.encode("ascii") + b"\n")
    ask.flush()
    header = answer.readline().split()
    if len(header) != 3:
        raise SyncError(
            f"git could not read the staged content of {change.path}.",
            "Run `git status` in the vault and retry `vault sync`.",
        )
    left = int(header[2])
    while left > 0:
        chunk = answer.read(min(BLOB_CHUNK, left))
        if not chunk:
            raise SyncError(f"git stopped while reading {change.path}.", "Retry `vault sync`.")
        left -= len(chunk)
        yield chunk
    answer.read(1)


# A check receives the staged commit and raises RefusedError to refuse it (then nothing
# is committed and the git index is as it was). The credential scan plugs in here.
CommitCheck = Callable[[StagedCommit], None]


def refuse_conflict_markers(staged: StagedCommit) -> None:
    """Never commit a note that still holds git conflict markers: it would carry a
    half-resolved merge to every machine."""
    notes = [c for c in staged.changes if c.is_note and c.status != "deleted"]
    for change, data in staged.blobs(notes):
        check_writable(data.decode("utf-8", errors="replace"), change.path)


def refuse_credentials(staged: StagedCommit) -> None:
    """Never commit a credential, in a file (any file, its name included) or in the
    message: a pushed one is on every machine and in the remote's history for good. The
    vault's allowlist lets a known false positive through."""
    from markvault.credentials.scan import is_scanned, refuse_message, refuse_to_commit

    refuse_message(staged.vault_dir, staged.subject)
    changed = [c for c in staged.changes if c.status != "deleted" and is_scanned(c.path)]
    refuse_to_commit(staged.vault_dir, ((c.path, data) for c, data in staged.contents(changed)))


DEFAULT_CHECKS: tuple[CommitCheck, ...] = (refuse_conflict_markers, refuse_credentials)


@dataclass
class SyncOptions:
    message: str | None = None  # the commit's subject; the list of changes follows
    push: bool = True
    dry_run: bool = False
    pull: PullMode = "merge"
    interactive: bool = True  # may git ask for a password or passphrase on a terminal
    trash: bool = False  # commit the trash too ([sync] trash); else it stays out of git


@dataclass
class SyncReport:
    vault: Path
    branch: str = ""
    upstream: str = ""
    dry_run: bool = False
    finished: str | None = None  # "merge" or "rebase" an earlier sync stopped on
    changes: list[Change] = field(default_factory=list)
    commit: str | None = None
    message: str | None = None
    pulled: int = 0  # commits received
    pushed: int = 0  # commits sent
    ahead: int = 0  # commits to push (dry run: as of the last fetch)
    behind: int = 0  # commits to pull (dry run: as of the last fetch)
    changed_paths: list[str] = field(default_factory=list)  # vault-relative, for the index
    conflicts: list[str] = field(default_factory=list)  # vault-relative
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> SyncJSON:
        return {
            "vault": str(self.vault),
            "branch": self.branch,
            "upstream": self.upstream,
            "dry_run": self.dry_run,
            "finished": self.finished,
            "commit": self.commit,
            "message": self.message,
            "changes": [
                {"status": c.status, "path": c.path, "from": c.old_path, "note": c.is_note}
                for c in self.changes
            ],
            "pulled": self.pulled,
            "pushed": self.pushed,
            "ahead": self.ahead,
            "behind": self.behind,
            "changed_paths": self.changed_paths,
            "conflicts": self.conflicts,
            "notices": self.notices,
        }


class Git:
    """git run in the vault's repository, with paths relative to the repository's top."""

    def __init__(self, repo: GitRepo, vault_dir: Path, interactive: bool) -> None:
        self.repo = repo
        self.top = repo.work_tree
        rel = vault_dir.relative_to(self.top).as_posix()
        self.prefix = "" if rel == "." else rel + "/"  # the vault's folder in the repo
        self.env = {**os.environ, "GIT_EDITOR": "true", "GIT_MERGE_AUTOEDIT": "no"}
        self.trash = False  # whether the trash is committed
        if not interactive:
            self.env["GIT_TERMINAL_PROMPT"] = "0"

    def run(
        self, *args: str, check: bool = True, text: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[Any]:
        done = subprocess.run(
            ["git", "-C", str(self.top), *args],
            capture_output=True,
            text=text,
            input=input,
            env=self.env,
        )
        if check and done.returncode != 0:
            stderr = done.stderr if text else done.stderr.decode("utf-8", "replace")
            raise SyncError(f"git {args[0]} failed: {_last_lines(stderr)}", _hint(stderr))
        return done

    def out(self, *args: str) -> str:
        return str(self.run(*args).stdout).strip()

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    @property
    def pathspec(self) -> list[str]:
        """The vault's folder, without markvault's temporary files."""
        spec = [
            f":(top){self.prefix.rstrip('/')}",  # ":(top)" alone is the whole repository
            f":(top,exclude,glob){self.prefix}**/{TEMP_PREFIX}*",
        ]
        if not self.trash:  # whatever .gitignore says
            spec.append(f":(top,exclude,literal){self.prefix}{TRASH_DIR}")
        return spec

    def vault_path(self, top_path: str) -> str | None:
        """A repository path made vault-relative; None when outside the vault."""
        return top_path[len(self.prefix) :] if top_path.startswith(self.prefix) else None

    def count(self, revisions: str) -> int:
        return int(self.out("rev-list", "--count", revisions) or 0)

    def conflicted(self) -> list[str]:
        names = self.run("diff", "--name-only", "--diff-filter=U", "-z").stdout
        return [p for p in (self.vault_path(n) for n in names.split("\0") if n) if p]

    def changed_since(self, commit: str) -> list[str]:
        """Vault files that differ between ``commit`` and the working tree, both names of
        a move (so the index drops the old one)."""
        names = self.run("diff", "--name-only", "--no-renames", "-z", commit, "--").stdout
        return sorted({p for p in (self.vault_path(n) for n in names.split("\0") if n) if p})


def open_git(vault_dir: Path, interactive: bool = True) -> Git:
    """The vault's repository, ready for git commands.

    Raises:
        ConfigError: git is not installed, or the vault is in no git repository.
    """
    if shutil.which("git") is None:
        raise ConfigError("git is not installed.", "Install git, then run `vault sync` again.")
    repo = find_repo(vault_dir)
    if repo is None:
        raise ConfigError(
            f"{vault_dir} is not in a git repository, so there is nothing to sync with.",
            f"Make it one: git -C {vault_dir} init && git -C {vault_dir} remote add origin "
            "<url>, then commit once and push with -u (see the README's Git sync).",
        )
    return Git(repo, vault_dir, interactive)


def sync_vault(
    vault_dir: Path,
    options: SyncOptions,
    checks: Sequence[CommitCheck] = DEFAULT_CHECKS,
    network: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
) -> SyncReport:
    """Commit, pull and push the vault (see the module's docstring for the order).
    ``network`` wraps each fetch and push: the caller may let other work run meanwhile.

    A conflict does not raise: the report names it in ``conflicts``.

    Raises:
        ConfigError: no git, no repository, no branch or no upstream.
        SyncConflict: a merge or rebase still waits for files with conflict markers.
        RefusedError: a commit check refused what was staged, or writes kept the lock.
        SyncError: a git command failed (network, credentials, a hook).
    """
    git = open_git(vault_dir, options.interactive)
    git.trash = options.trash
    if not options.trash and not options.dry_run:
        exclude_trash(git.repo, vault_dir)  # a plain `git add -A` leaves it out too
    report = SyncReport(vault=vault_dir, dry_run=options.dry_run, notices=[])
    if git.repo.operation():
        if options.dry_run:
            report.conflicts = git.conflicted()
            report.notices.append(f"A git {git.repo.operation()} waits to be finished.")
            return report
        _finish_operation(git, report)
        if report.conflicts:
            return report
    report.branch, report.upstream = _branch_and_upstream(git)
    # A dry run changes no file and no index: it need not hold writes back.
    with (
        contextlib.nullcontext()
        if options.dry_run
        else git.repo.writes_lock(exclusive=True, timeout=LOCK_WAIT_SECONDS)
    ):
        _commit(git, options, checks, report)
    if options.dry_run:
        report.ahead = git.count(f"{report.upstream}..HEAD") + (1 if report.changes else 0)
        report.behind = git.count(f"HEAD..{report.upstream}")
        report.notices.append("Dry run: nothing committed, fetched, merged or pushed.")
        return report
    settings_file = vault_dir / CONFIG_FILE
    before = settings_file.read_bytes() if settings_file.is_file() else None
    _pull_and_push(git, options, report, network)
    if CONFIG_FILE in report.changed_paths:  # it travels with git: say what it brought
        from markvault.config import pulled_notices

        report.notices.extend(pulled_notices(vault_dir, before))
    return report


def _branch_and_upstream(git: Git) -> tuple[str, str]:
    head = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    if head.returncode != 0:
        raise ConfigError(
            "The vault's repository is not on a branch (detached HEAD).",
            "Check out the branch to sync: git switch main",
        )
    branch = str(head.stdout).strip()
    upstream = git.run(
        "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", check=False
    )
    if upstream.returncode != 0:
        raise ConfigError(
            f"The branch {branch!r} has no upstream to pull from and push to.",
            f"Push it once with one: git -C {git.top} push -u origin {branch} "
            f"(or: git branch --set-upstream-to origin/{branch}).",
        )
    return branch, str(upstream.stdout).strip()


def _commit(
    git: Git, options: SyncOptions, checks: Sequence[CommitCheck], report: SyncReport
) -> None:
    """Stage the vault, check and commit it. A dry run stages into a copy of git's index,
    so the real one is never touched; a refused commit puts the real one back."""
    index_file = git.repo.git_dir / "index"
    saved = index_file.read_bytes() if index_file.exists() else None
    if options.dry_run:
        scratch = git.repo.git_dir / "index.markvault-dry-run"
        if saved is not None:
            scratch.write_bytes(saved)
        git.env["GIT_INDEX_FILE"] = str(scratch)
    try:
        git.run("add", "--all", "--", *git.pathspec[:2])  # an excluded ignored path fails
        if not git.trash:  # whatever .gitignore says: the trash as the last commit had it
            git.run("reset", "--quiet", "--", f":(top,literal){git.prefix}{TRASH_DIR}")
        # Checked: exactly what the commit will hold (at the repository's top, the whole
        # index, so that a file staged by hand is checked too).
        report.changes = _staged_changes(git, whole_index=not git.prefix)
        if report.changes:
            staged = StagedCommit(git, report.changes, options.message)
            for check in checks:
                check(staged)
        if options.dry_run or not report.changes:
            return
        report.message = commit_message(report.changes, options.message)
        only = ["--", *git.pathspec] if git.prefix else []
        git.run("commit", "--quiet", "-F", "-", *only, input=report.message)
        report.commit = git.out("rev-parse", "HEAD")
    except MarkvaultError:  # a check refused, or git failed (a hook, no identity)
        if not options.dry_run:
            _restore_index(index_file, saved)
        raise
    finally:
        if options.dry_run:
            del git.env["GIT_INDEX_FILE"]
            scratch.unlink(missing_ok=True)


def _restore_index(index_file: Path, saved: bytes | None) -> None:
    """Put git's index back as it was before this sync staged anything."""
    if saved is None:
        index_file.unlink(missing_ok=True)
        return
    write_replacing(index_file, saved)


def _staged_changes(git: Git, whole_index: bool = False) -> list[Change]:
    spec = [] if whole_index else ["--", *git.pathspec]
    raw = git.run("diff", "--cached", "--raw", "-z", "-M", "--no-abbrev", *spec).stdout
    fields = raw.split("\0")
    changes: list[Change] = []
    i = 0
    while i < len(fields) - 1:
        meta = fields[i].split()
        kind = meta[4][0]
        if kind in "RC":
            old, new = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old, new = None, fields[i + 1]
            i += 2
        blob = None if kind == "D" else meta[3]
        path = git.vault_path(new) or new
        old_path = git.vault_path(old) or old if old else None
        changes.append(_classify(_STATUS.get(kind, "edited"), path, old_path, blob))
    return changes


def _classify(status: Status, path: str, old_path: str | None, blob: str | None) -> Change:
    """Moves into the trash are deletions, out of it restorations (when the trash is
    committed at all: `vault init` leaves it out of git)."""
    if status == "moved" and old_path:
        if path.startswith(TRASH_DIR + "/"):
            return Change("deleted", old_path, None, None)
        if old_path.startswith(TRASH_DIR + "/"):
            return Change("added", path, None, blob)
    return Change(status, path, old_path, blob)


def commit_message(changes: Sequence[Change], subject: str | None = None) -> str:
    """A subject that counts what changed, and a body that lists it."""
    notes = Counter(c.status for c in changes if c.is_note)
    others = sum(1 for c in changes if not c.is_note)
    counts = [(n, s) for s in ("added", "edited", "moved", "deleted") if (n := notes[s])]
    parts = [f"{n} {s}" for n, s in counts]
    if parts:  # "1 note added, 2 edited", "2 notes added, 1 edited"
        parts[0] = parts[0].replace(" ", " note " if counts[0][0] == 1 else " notes ", 1)
    if others:
        parts.append(f"{others} other file{'' if others == 1 else 's'} changed")
    host = socket.gethostname().split(".")[0] or "this machine"
    head = subject.strip() if subject and subject.strip() else f"vault sync from {host}"
    lines = [f"{head}: {', '.join(parts)}" if not subject else head, ""]
    for change in changes[:MESSAGE_LINES]:
        where = f"{change.old_path} -> {change.path}" if change.old_path else change.path
        lines.append(f"{change.status + ':':<9}{where}")
    if len(changes) > MESSAGE_LINES:
        lines.append(f"... and {len(changes) - MESSAGE_LINES} more")
    return "\n".join(lines) + "\n"


def _pull_and_push(
    git: Git,
    options: SyncOptions,
    report: SyncReport,
    network: Callable[[], AbstractContextManager[None]],
) -> None:
    remote = git.run("config", "--get", f"branch.{report.branch}.remote", check=False)
    remote_name = str(remote.stdout).strip() or report.upstream.split("/", 1)[0]
    changed: set[str] = set(report.changed_paths)
    for _attempt in range(PUSH_ATTEMPTS):
        with network():
            git.run("fetch", "--quiet", remote_name)
        before = git.out("rev-parse", "HEAD")
        behind = git.count(f"HEAD..{report.upstream}")
        if behind:
            with git.repo.writes_lock(exclusive=True, timeout=LOCK_WAIT_SECONDS):
                merged = _integrate(git, options.pull, report.upstream)
            report.pulled += behind
            changed.update(git.changed_since(before))
            if not merged:
                report.conflicts = git.conflicted()
                break
        report.ahead = git.count(f"{report.upstream}..HEAD")
        if not options.push or not report.ahead:
            break
        target = f"HEAD:{_branch_of(git, report)}"
        with network():
            pushed = git.run("push", "--quiet", remote_name, target, check=False)
        if pushed.returncode == 0:
            report.pushed = report.ahead
            report.ahead = 0
            break
        with network():
            git.run("fetch", "--quiet", remote_name)
        if not git.count(f"HEAD..{report.upstream}"):  # not a race: a real failure
            raise SyncError(f"git push failed: {_last_lines(pushed.stderr)}", _hint(pushed.stderr))
    report.changed_paths = sorted(changed)


def _branch_of(git: Git, report: SyncReport) -> str:
    """The upstream branch's name on the remote (``origin/main`` -> ``main``)."""
    merge = git.run("config", "--get", f"branch.{report.branch}.merge", check=False)
    ref = str(merge.stdout).strip()
    return ref.removeprefix("refs/heads/") or report.upstream.split("/", 1)[1]


def _integrate(git: Git, mode: str, upstream: str) -> bool:
    """Merge or rebase onto the upstream; False when it stopped on a conflict."""
    if mode == "rebase":
        done = git.run("rebase", "--quiet", upstream, check=False)
    else:
        done = git.run("merge", "--quiet", "--no-edit", upstream, check=False)
    if done.returncode == 0:
        return True
    if git.repo.operation() is None:  # it failed before starting: nothing to resolve
        raise SyncError(f"git {mode} failed: {_last_lines(done.stderr)}", _hint(done.stderr))
    return False


def _finish_operation(git: Git, report: SyncReport) -> None:
    """Finish a merge or rebase a sync stopped on, once its conflicts are resolved."""
    operation = git.repo.operation()
    if operation not in ("merge", "rebase"):
        raise ConfigError(
            f"A git {operation} is in progress in {git.top}.",
            f"Finish it (git {operation} --continue) or abort it, then run `vault sync`.",
        )
    with git.repo.writes_lock(exclusive=True, timeout=LOCK_WAIT_SECONDS):
        while True:
            pending = git.conflicted()
            unresolved = [p for p in pending if _has_markers(git, p)]
            if unresolved:
                raise SyncConflict(
                    f"The {operation} is waiting: {len(unresolved)} note(s) still hold "
                    f"conflict markers: {', '.join(unresolved)}.",
                    "Edit them to keep the text you want (remove the <<<<<<< ======= >>>>>>> "
                    f"lines), then run `vault sync` again; or give up the {operation} with "
                    f"`git {operation} --abort`.",
                )
            if pending:
                git.run("add", "--", *(git.prefix + p for p in pending))
            report.changed_paths.extend(pending)
            if operation == "merge":
                git.run("commit", "--quiet", "--no-edit")
                break
            cont = git.run("rebase", "--continue", check=False)
            if cont.returncode == 0:
                break
            if git.repo.operation() is None:
                raise SyncError(f"git rebase failed: {_last_lines(cont.stderr)}")
            report.conflicts = git.conflicted()
            if report.conflicts:  # the next commit of the rebase conflicts too
                return
    report.finished = operation


def _has_markers(git: Git, path: str) -> bool:
    try:
        text = (git.top / (git.prefix + path)).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False  # resolved by deleting it
    try:
        check_writable(text, path)
    except RefusedError:
        return True
    return False


def _last_lines(stderr: str, n: int = 3) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return " ".join(lines[-n:]) or "no message"


_AUTH = re.compile(r"auth|permission denied|credential|could not read username", re.IGNORECASE)
_NETWORK = re.compile(r"could not resolve|unable to access|connection|timed out", re.IGNORECASE)
_IDENTITY = re.compile(r"tell me who you are|user\.email", re.IGNORECASE)


def _hint(stderr: str) -> str:
    if _IDENTITY.search(stderr):
        return 'Tell git who you are: git config --global user.name "Your Name" and user.email.'
    if _AUTH.search(stderr):
        return "Check your access to the remote (SSH key or credential helper), then retry."
    if _NETWORK.search(stderr):
        return "Check the network and the remote's address (git remote -v), then retry."
    return "Run the git command by hand in the vault to see more, then `vault sync` again."
