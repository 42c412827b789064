"""The vault's git repository as markvault's writes see it: where its state is, the
operations that stop writes, and the lock that keeps writes and `vault sync` apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import markvault.files.vault_files
from markvault import RefusedError
from markvault.files.vault_files import VaultFiles, content_hash
from markvault.git.repo import find_repo, has_conflict_markers

HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo_vault(tmp_path: Path) -> Path:
    vault = tmp_path / "repo" / "vault"
    (vault / "notes").mkdir(parents=True)
    _git(tmp_path / "repo", "init", "-q")
    (vault / "notes" / "a.md").write_text("# A\n", encoding="utf-8")
    return vault


def test_the_repository_is_found_from_a_vault_in_a_subfolder_and_in_a_worktree(
    repo_vault: Path, tmp_path: Path
) -> None:
    repo = find_repo(repo_vault)
    assert repo is not None and repo.work_tree == tmp_path / "repo"
    assert repo.git_dir == tmp_path / "repo" / ".git" and repo.operation() is None
    top = tmp_path / "repo"
    _git(
        top, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "0"
    )
    _git(top, "worktree", "add", "-q", str(tmp_path / "other"))
    other = find_repo(tmp_path / "other")
    assert other is not None and other.work_tree == tmp_path / "other"
    assert other.git_dir.parent == top / ".git" / "worktrees"
    assert find_repo(tmp_path) is None


def test_writes_are_refused_during_a_merge_or_rebase_also_in_a_worktree(
    repo_vault: Path, tmp_path: Path
) -> None:
    files = VaultFiles(repo_vault)
    git_dir = tmp_path / "repo" / ".git"
    for marker in ("MERGE_HEAD", "rebase-merge", "CHERRY_PICK_HEAD"):
        path = git_dir / marker
        path.mkdir() if marker == "rebase-merge" else path.write_text("x\n")
        with pytest.raises(RefusedError, match="in progress"):
            files.create("notes/b.md", "# B\n")
        path.rmdir() if marker == "rebase-merge" else path.unlink()
    files.create("notes/b.md", "# B\n")
    # A worktree keeps its rebase state in its own git folder, named by its .git file.
    wt_state = tmp_path / "wt-state"
    (wt_state / "rebase-merge").mkdir(parents=True)
    worktree = tmp_path / "wt"
    (worktree / "notes").mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {wt_state}\n", encoding="utf-8")
    with pytest.raises(RefusedError, match="rebase is in progress"):
        VaultFiles(worktree).create("notes/c.md", "# C\n")


def test_a_write_waits_for_a_sync_holding_the_lock_in_another_process(
    repo_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = find_repo(repo_vault)
    assert repo is not None
    lock = repo.lock_path
    assert tmp_path not in lock.parents  # never in the vault nor in its .git
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(markvault.files.vault_files, "WRITE_WAIT_SECONDS", 0.2)
        files = VaultFiles(repo_vault)
        old = (repo_vault / "notes" / "a.md").read_bytes()
        with pytest.raises(RefusedError, match="vault sync"):
            files.replace("notes/a.md", "# A changed\n", content_hash(old))
        assert (repo_vault / "notes" / "a.md").read_bytes() == old
        with pytest.raises(RefusedError, match="vault sync"):
            files.create("notes/b.md", "# B\n")
        assert not (repo_vault / "notes" / "b.md").exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    files.create("notes/b.md", "# B\n")  # the lock is free again
    assert not [p for p in (tmp_path / "repo").rglob("*") if "lock" in p.name]


def test_writes_share_the_lock_and_a_sync_waits_for_them(repo_vault: Path) -> None:
    repo = find_repo(repo_vault)
    assert repo is not None
    first = repo.writes_lock(exclusive=False, timeout=1)
    second = repo.writes_lock(exclusive=False, timeout=1)
    sync = repo.writes_lock(exclusive=True, timeout=0.1)
    with first, second, pytest.raises(RefusedError, match="write kept the vault busy"), sync:
        pass
    with repo.writes_lock(exclusive=True, timeout=0.1):
        pass


@pytest.mark.parametrize(
    ("text", "conflicted"),
    [
        ("a\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> main\nb\n", True),
        ("<<<<<<<\nours\n>>>>>>>", True),  # markers without a name, at the text's ends
        ("a\r\n<<<<<<< HEAD\r\nx\r\n>>>>>>> b\r\n", True),  # CRLF lines
        ("x <<<<<<< HEAD\n>>>>>>> main\n", False),  # not at a line's start
        ("<<<<<<<< HEAD\n>>>>>>> main\n", False),  # eight
        ("<<<<<<<x\n>>>>>>> main\n", False),
        ("<<<<<<< HEAD\n", False),  # one end only
        (">>>>>>> main\n<<<<<<< HEAD", True),  # both ends, in any order
        ("a\n=======\n", False),  # a setext heading's underline
        ("", False),
    ],
)
def test_conflict_markers_are_both_ends_at_a_line_start(text: str, conflicted: bool) -> None:
    assert has_conflict_markers(text) is conflicted
