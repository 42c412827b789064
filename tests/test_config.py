"""Where settings come from, and where the index goes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from markvault import ConfigError, Settings
from markvault.config import (
    ORIGIN_CACHE,
    ORIGIN_CONFIG,
    ORIGIN_GIVEN,
    CredentialSettings,
    read_credential_settings,
)
from markvault.user_folders import user_cache_dir

from .conftest import BUNDLED_VAULT, REPO, run_cli


def _cache_root() -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "markvault" / "indexes"


@pytest.mark.parametrize(
    ("xdg", "home"),
    [
        ("/xdg/cache", "/home/u"),
        (None, "/home/u"),
        ("", "/home/u/"),
        ("rel/cache", "/home/u"),
        (None, "/"),
    ],
)
def test_the_cache_folder_is_the_one_platformdirs_gives(
    monkeypatch: pytest.MonkeyPatch, xdg: str | None, home: str
) -> None:
    """The Linux shortcut (no platformdirs import on a search) and platformdirs agree."""
    import platformdirs

    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    monkeypatch.setenv("HOME", home)
    assert user_cache_dir() == platformdirs.user_cache_path("markvault")


def test_index_defaults_to_a_folder_per_vault_in_the_cache_directory(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "notes", tmp_path / "b" / "notes"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    sa, sb = Settings.load(vault=a, env={}), Settings.load(vault=b, env={})
    assert sa.index_origin == ORIGIN_CACHE
    assert sa.index_dir.parent == _cache_root().resolve()
    assert sa.index_dir.name.startswith("notes-")
    assert sa.index_dir != sb.index_dir  # same name, two vaults: two indexes
    assert sa.db_path.parent == sa.index_dir
    # Keyed by the resolved path: the same vault reached through a link shares it.
    (tmp_path / "link").symlink_to(a)
    assert Settings.load(vault=tmp_path / "link", env={}).index_dir == sa.index_dir
    assert not list(tmp_path.rglob("*.duckdb"))


def test_index_option_environment_and_vault_file_still_choose(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    chosen = Settings.load(vault=vault, index=tmp_path / "idx", env={})
    assert (chosen.index_dir, chosen.index_origin) == ((tmp_path / "idx").resolve(), ORIGIN_GIVEN)
    env = Settings.load(vault=vault, env={"MARKVAULT_INDEX": str(tmp_path / "env")})
    assert (env.index_dir, env.index_origin) == ((tmp_path / "env").resolve(), ORIGIN_GIVEN)
    (vault / ".markvault.toml").write_text('index_dir = "../cfg"\n', encoding="utf-8")
    cfg = Settings.load(vault=vault, env={})
    assert (cfg.index_dir, cfg.index_origin) == ((tmp_path / "cfg").resolve(), ORIGIN_CONFIG)


def test_the_bundled_starter_vault_keeps_the_repository_index_folder() -> None:
    settings = Settings.load(vault=BUNDLED_VAULT, env={})
    assert settings.index_dir == (REPO / "index").resolve()


def test_sync_table(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    assert Settings.load(vault=vault, env={}).sync.pull == "merge"
    (vault / ".markvault.toml").write_text('[sync]\npull = "rebase"\n', encoding="utf-8")
    assert Settings.load(vault=vault, env={}).sync.pull == "rebase"
    (vault / ".markvault.toml").write_text('[sync]\npull = "squash"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="merge"):
        Settings.load(vault=vault, env={})
    (vault / ".markvault.toml").write_text("[sync]\nevery = 5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="every"):
        Settings.load(vault=vault, env={})


def test_credentials_table(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    assert Settings.load(vault=vault, env={}).credentials == CredentialSettings("redact")
    (vault / ".markvault.toml").write_text(
        '[credentials]\nmode = "refuse"\nallow = [\n'
        '  { note = "notes/a.md", fingerprint = "github-token:0123abcd4567ef89" },\n'
        '  { note = "*", fingerprint = "password:89ef4567abcd0123" },\n]\n',
        encoding="utf-8",
    )
    loaded = Settings.load(vault=vault, env={}).credentials
    assert loaded.mode == "refuse"
    assert loaded.allow == {
        ("notes/a.md", "github-token:0123abcd4567ef89"),
        ("*", "password:89ef4567abcd0123"),
    }
    assert read_credential_settings(vault) == loaded
    for bad, named in (
        ('mode = "warn"', "credentials.mode"),
        ('allow = [{ note = "x.md" }]', "credentials.allow"),
        ("allow = 3", "credentials.allow"),
        ("every = 5", "[credentials]"),
    ):
        (vault / ".markvault.toml").write_text(f"[credentials]\n{bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=re.escape(named)) as caught:
            Settings.load(vault=vault, env={})
        assert "allow = [{ note" in str(caught.value.hint) or "refuse" in str(caught.value.hint)


def test_status_says_where_the_index_is_and_why(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    # run_cli passes --index; this one must take the default, so call the CLI directly.
    done = subprocess.run(
        [sys.executable, "-m", "markvault.cli", "--vault", str(vault), "status"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    index_line = next(line for line in done.stdout.splitlines() if line.startswith("index"))
    assert str(_cache_root().resolve()) in index_line and "cache directory" in index_line
    assert not (tmp_path / "index").exists()  # nothing beside the vault any more
    explicit = run_cli(vault, "status", "--json")
    assert '"index_origin": "set by --index' in explicit.stdout
