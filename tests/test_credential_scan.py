"""`vault check` over a whole vault, and `vault sync` refusing to commit a credential
written by hand (real git: a bare remote and a clone, as in test_gitsync.py)."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

from markvault.credentials.detection import scan
from markvault.credentials.scan import check_vault, is_scanned
from markvault.files.vault_init import init_vault

from .conftest import run_cli
from .test_credentials import ALNUM, rand
from .test_gitsync import Clone, clone, git, git_config, sync, write  # noqa: F401


def token() -> str:
    return "ghp_" + rand(random.Random(), ALNUM, 36)


def allow(vault: Path, note: str, fingerprint: str) -> None:
    config = vault / ".markvault.toml"
    text = config.read_text(encoding="utf-8")
    entry = f'allow = [{{ note = "{note}", fingerprint = "{fingerprint}" }}]\n'
    config.write_text(text.replace('mode = "redact"\n', f'mode = "redact"\n{entry}'), "utf-8")


def test_which_files_are_scanned() -> None:
    assert is_scanned("notes/a.md") and is_scanned(".obsidian/plugins/gpt/data.json")
    assert is_scanned("docs/.env") and is_scanned("settings.toml")
    assert is_scanned("plugins/main.js") and is_scanned("images/cat.png")  # every file
    assert not is_scanned(".git/config") and not is_scanned("notes/.mv-tmp-123.md")
    assert is_scanned(".trash/old.md") and not is_scanned(".trash/old.md", trash=False)


def test_vault_check_lists_every_credential_and_the_allowlist_lets_one_through(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    init_vault(vault)
    secret, other = token(), token()
    write(vault, "notes/Ops.md", f"# Ops\n\nThe CI pushes with\n{secret}\n")
    write(vault, ".obsidian/plugins/gpt/data.json", f'{{"apiKey": "{other}"}}\n')
    write(vault, ".trash/Old.md", f"{secret}\n")  # not synced: not read
    write(vault, "notes/Plain.md", "# Plain\n\nsha 3f2a9c1e0b4d5f6a7b8c9d0e1f2a3b4c5d6e7f80\n")

    done = run_cli(vault, "check")
    assert done.returncode == 6, done.stderr
    [fp] = [f.fingerprint for f in scan(f"{secret}\n")]
    assert done.stdout.splitlines() == [
        f".obsidian/plugins/gpt/data.json:1:13: GitHub token  {scan(other)[0].fingerprint}",
        f"notes/Ops.md:4:1: GitHub token  {fp}",
    ]
    assert "2 credentials in 2 files" in done.stderr and "skipped" not in done.stderr
    assert secret not in done.stdout + done.stderr

    data = json.loads(run_cli(vault, "check", "--json").stdout)
    assert data["credentials"] == 2 and data["skipped"] == []
    assert [n["path"] for n in data["notes"]] == [".obsidian/plugins/gpt/data.json", "notes/Ops.md"]
    assert data["notes"][1]["credentials"][0] == {
        "kind": "GitHub token",
        "rule": "github-token",
        "line": 4,
        "column": 1,
        "where": "line 4",
        "fingerprint": fp,
    }

    allow(vault, "notes/Ops.md", fp)
    report = check_vault(vault)
    assert [n.path for n in report.found] == [".obsidian/plugins/gpt/data.json"]
    assert report.allowed == 1 and report.credentials == 1
    (vault / ".obsidian/plugins/gpt/data.json").unlink()
    done = run_cli(vault, "check")
    assert done.returncode == 0 and done.stdout == ""
    assert "no credentials, 1 allowed" in done.stderr


def test_sync_refuses_a_hand_written_token_names_the_note_and_commits_nothing(
    clone: Clone,  # noqa: F811
) -> None:
    vault = clone("a")
    secret = token()
    head = git(vault, "rev-parse", "HEAD")
    write(vault, "notes/Deploy.md", f"# Deploy\n\nPush with {secret} on Fridays.\n")
    write(vault, "notes/Other.md", "# Other\n\nNothing secret.\n")
    code, _, stderr = sync(vault)
    assert code == 6, stderr
    assert "notes/Deploy.md holds 1 credential (GitHub token, line 3)" in stderr
    assert "nothing was committed" in stderr and "fingerprint" in stderr
    assert git(vault, "rev-parse", "HEAD") == head  # nothing committed, the other note too
    assert git(vault, "status", "--porcelain") == "?? notes/Deploy.md\n?? notes/Other.md"
    everything = subprocess.run(
        ["git", "log", "--all", "-p"], cwd=vault, capture_output=True, text=True, check=True
    ).stdout
    assert secret not in everything

    # Several notes: each is named.
    write(vault, "notes/More.md", f"key\n{token()}\n")
    code, _, stderr = sync(vault)
    assert code == 6 and "2 notes hold credentials: notes/Deploy.md (GitHub token, line 3);" in (
        stderr
    )
    (vault / "notes/More.md").unlink()

    # A file named after a key.
    named = token()
    write(vault, f"notes/{named}.md", "# Named\n")
    code, _, stderr = sync(vault)
    assert code == 6 and "notes/REDACTED.md (GitHub token, file name)" in stderr
    assert named not in stderr
    (vault / f"notes/{named}.md").unlink()

    # A known false positive, allowed by note and fingerprint, goes through.
    allow(vault, "notes/Deploy.md", scan(secret)[0].fingerprint)
    code, data, stderr = sync(vault)
    assert code == 0, stderr
    assert data["commit"] and git(vault, "status", "--porcelain") == ""
