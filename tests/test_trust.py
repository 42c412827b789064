"""Settings that widen what an agent or markvault may do do not arrive through git: a
pulled ``document_roots``, ``index_dir``, ``[sync] auto`` or ``[sync] trash`` waits for
`vault trust` on this machine, and the sync and `vault status` say so. Real git and a
real MCP client."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from markvault.config import Settings, trust_vault
from markvault.runtime.local_host import open_local
from markvault.server.tools import build_server

from .conftest import run_cli
from .test_gitsync import Clone, clone, git, git_config, sync, write  # noqa: F401


def set_config(vault: Path, extra: str, sync_table: str = "") -> None:
    config = vault / ".markvault.toml"
    text = config.read_text(encoding="utf-8")
    text = extra + text
    if sync_table:
        text = text.replace("[sync]\n", f"[sync]\n{sync_table}")
    config.write_text(text, encoding="utf-8")


@pytest.mark.anyio
async def test_pulled_document_roots_do_not_let_an_agent_read_outside_the_vault(
    clone: Clone,  # noqa: F811
    tmp_path: Path,
) -> None:
    a, b = clone("a"), clone("b")
    private = tmp_path / "private.txt"
    private.write_text("my diary, never to be synced\n", encoding="utf-8")
    set_config(a, 'document_roots = ["/"]\n')
    code, _, err = sync(a)
    assert code == 0, err

    code, done, err = sync(b)
    assert code == 0, err
    notices = " ".join(done["notices"])
    assert "The pull changed .markvault.toml: document_roots." in notices
    assert 'document_roots = ["/"]' in notices and "vault trust" in notices
    assert Settings.load(vault=b, env={}).document_roots == ()
    status = run_cli(b, "status")
    assert 'document_roots = ["/"]' in status.stderr and "vault trust" in status.stderr

    with open_local(b, tmp_path / "b-index") as v:
        async with Client(build_server(v)) as client:
            result = await client.call_tool("store_document", {"path": str(private)})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "not trusted here" in text and "vault trust" in text
    assert not any("diary" in p.read_text(errors="replace") for p in b.rglob("*.*") if p.is_file())

    # The person reads the setting and trusts it: now it applies, here only.
    shown = run_cli(b, "trust", "--show")
    assert 'untrusted  document_roots = ["/"]' in shown.stdout
    assert run_cli(b, "trust").returncode == 0
    assert Settings.load(vault=b, env={}).document_roots == (Path("/"),)
    assert Settings.load(vault=b, env={}).untrusted == ()
    assert "trust" not in run_cli(b, "status").stderr
    # A later change to the value needs trust again.
    config = b / ".markvault.toml"
    text = config.read_text(encoding="utf-8").replace('["/"]', '["~"]')
    config.write_text(text, encoding="utf-8")
    assert Settings.load(vault=b, env={}).document_roots == ()


def test_widening_sync_and_index_settings_wait_for_trust(tmp_path: Path) -> None:
    vault = tmp_path / "deep" / "v"
    vault.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere" / "index"  # outside the vault's parent folder
    (vault / ".markvault.toml").write_text(
        f'index_dir = "{elsewhere}"\n[sync]\nauto = true\ntrash = true\n', encoding="utf-8"
    )
    loaded = Settings.load(vault=vault, env={})
    assert not loaded.sync.auto and not loaded.sync.trash
    assert loaded.index_dir != elsewhere.resolve()
    assert len(loaded.untrusted) == 3
    trusted = trust_vault(vault)
    assert set(trusted) == {"index_dir", "sync.auto", "sync.trash"}
    loaded = Settings.load(vault=vault, env={})
    assert loaded.sync.auto and loaded.sync.trash and loaded.index_dir == elsewhere.resolve()
    # An index beside the vault (in its parent folder) needs no trust; the environment is
    # this machine's own.
    (vault / ".markvault.toml").write_text('index_dir = "../idx"\n', encoding="utf-8")
    assert Settings.load(vault=vault, env={}).index_dir == (tmp_path / "deep/idx").resolve()
    (vault / ".markvault.toml").write_text('document_roots = ["/"]\n', encoding="utf-8")
    env = {"MARKVAULT_DOCUMENT_ROOTS": str(tmp_path)}
    assert Settings.load(vault=vault, env=env).document_roots == (tmp_path.resolve(),)
    assert Settings.load(vault=vault, env=env).untrusted == ()


def test_a_pulled_trash_setting_does_not_push_the_trash(clone: Clone) -> None:  # noqa: F811
    a, b = clone("a"), clone("b")
    set_config(a, "", "trash = true\n")
    assert sync(a)[0] == 0
    code, done, err = sync(b)
    assert code == 0, err
    assert "sync.trash = true" in " ".join(done["notices"])
    write(b, ".trash/Old.md", "# Old\n\nDeleted for a reason.\n")
    write(b, "notes/New.md", "# New\n")
    code, done, err = sync(b)
    assert code == 0 and done["pushed"] == 1, err
    assert [c["path"] for c in done["changes"]] == ["notes/New.md"]
    assert ".trash/Old.md" not in git(b, "ls-tree", "-r", "--name-only", "origin/main")
