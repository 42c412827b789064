"""The README's git recipe, run as written: on any default branch name (git before 2.28
and many installs still make `master`, others `main`), the remote ends up holding the
vault and `vault sync` finds an upstream."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import run_cli

README = Path(__file__).resolve().parents[1] / "README.md"


def _once_per_vault() -> str:
    section = README.read_text(encoding="utf-8").split("## Git sync", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the Git sync section lost its setup commands"
    return block.group(1)


@pytest.mark.parametrize("branch", ["master", "main", "trunk"])
def test_the_git_recipe_works_on_any_default_branch(tmp_path: Path, branch: str) -> None:
    config = tmp_path / "gitconfig"
    config.write_text(
        f"[user]\n\tname = T\n\temail = t@example.org\n[init]\n\tdefaultBranch = {branch}\n",
        encoding="utf-8",
    )
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GIT_CONFIG_GLOBAL": str(config),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True, env=env)
    vault = tmp_path / "notes"
    vault.mkdir()
    (vault / "Note.md").write_text("# Note\n", encoding="utf-8")
    script = _once_per_vault().replace("git@example.org:me/notes.git", str(remote))
    script = script.replace("~/notes", str(vault))
    done = subprocess.run(
        ["bash", "-e", "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    heads = subprocess.run(
        ["git", "ls-remote", "--heads", str(remote)], capture_output=True, text=True, env=env
    ).stdout
    assert f"refs/heads/{branch}" in heads, heads  # the remote is not empty
    python_path = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}
    synced = run_cli(
        vault, "sync", env={**env, **python_path, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    )
    assert synced.returncode == 0, synced.stderr
