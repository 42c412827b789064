"""What `vault status` says of a git merge or rebase left open in the vault's repository:
which operation, and which of the vault's files still hold conflict markers (markvault
refuses to write while it lasts: gitrepo.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from markvault.errors import MarkvaultError
from markvault.git.repo import find_repo, has_conflict_markers

if TYPE_CHECKING:
    from markvault.answers.status import GitOperation

MAX_LISTED = 50


def merge_state(vault_dir: Path) -> GitOperation | None:
    """``{"operation": "merge", "conflicts": [vault-relative paths], "hint": ...}`` while a
    git operation waits to be finished in the vault's repository, else None."""
    repo = find_repo(vault_dir)
    name = repo.operation() if repo is not None else None
    if name is None:
        return None
    conflicts: list[str] = []
    if shutil.which("git") is not None:
        from markvault.git.sync import open_git

        try:
            git = open_git(vault_dir, interactive=False)
            unmerged = git.conflicted()
        except (MarkvaultError, OSError):
            unmerged = []
        for path in unmerged[: MAX_LISTED * 4]:
            try:
                text = (vault_dir / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue  # resolved by deleting it
            if has_conflict_markers(text):
                conflicts.append(path)
    cont = "git rebase --continue" if name == "rebase" else "git commit"
    return {
        "operation": name,
        "conflicts": conflicts[:MAX_LISTED],
        "hint": "Resolve the conflicts (remove the <<<<<<< ======= >>>>>>> markers, keeping "
        f"the text you want), then run `vault sync` (or `git add` and `{cont}`), or abort "
        f"it with `git {name} --abort`. Until then markvault does not write.",
    }
