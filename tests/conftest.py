"""Shared fixtures: temporary vaults on disk, real DuckDB files, the real model."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp import StdioServerParameters

from markvault import Vault
from markvault.runtime.local_host import open_local

REPO = Path(__file__).resolve().parents[1]
BUNDLED_VAULT = REPO / "vault"

WriteNotes = Callable[[dict[str, str | bytes]], Path]
OpenVault = Callable[..., Vault]

# The fields every search hit carries, in the CLI's JSON and the MCP server's results.
HIT_FIELDS = frozenset(
    [
        "id",
        "path",
        "title",
        "kind",
        "chunk_id",
        "heading_path",
        "lines",
        "score",
        "ranks",
        "snippet",
        "hash",
        "uri",
    ]
)


@pytest.fixture(scope="session")
def encoder_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the session's ONNX export of the packaged model (made once)."""
    return tmp_path_factory.mktemp("encoders")


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Indexes that no test placed elsewhere go to a cache folder of the test run's own,
    never to the user's ~/.cache (subprocesses inherit the variable)."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        yield cache


@pytest.fixture(scope="session", autouse=True)
def private_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """What `vault trust` records goes to a config folder of the test run's own."""
    config = tmp_path_factory.mktemp("xdg-config")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(config))
        yield config


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    path.mkdir()
    return path


@pytest.fixture
def write(vault_dir: Path) -> WriteNotes:
    """Write {relative path: text or bytes} into the vault; returns the vault folder."""

    def _write(files: dict[str, str | bytes]) -> Path:
        for rel, content in files.items():
            target = vault_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8", newline="")
        return vault_dir

    return _write


@pytest.fixture
def open_vault(vault_dir: Path) -> Iterator[Callable[..., Vault]]:
    opened: list[Vault] = []

    def _open(**kwargs: object) -> Vault:
        v = open_local(vault_dir, vault_dir.parent / "index", **kwargs)  # type: ignore[arg-type]
        opened.append(v)
        return v

    yield _open
    for v in opened:
        v.close()


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (the MCP clients and servers) run on asyncio."""
    return "asyncio"


@pytest.fixture
def notes() -> dict[str, str | bytes]:
    """The files of the vault that ``vault`` opens; a test module overrides it."""
    return {}


@pytest.fixture
def vault(write: WriteNotes, notes: dict[str, str | bytes], open_vault: OpenVault) -> Vault:
    """A vault of ``notes``, keyword-indexed, whose calls run in this process."""
    write(notes)
    v = open_vault()
    v.reindex(vectors=False)
    return v


def checksums(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (the vault must never change under us)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def bundled_copy(tmp_path: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(BUNDLED_VAULT, target)
    return target


def vault_argv(vault_dir: Path, *args: str, index_dir: Path | None = None) -> list[str]:
    """`vault --vault DIR --index INDEX ARGS` as a fresh Python process runs it (INDEX:
    ``index_dir``, by default DIR/../index)."""
    index = str(index_dir or vault_dir.parent / "index")
    return [
        sys.executable,
        "-m",
        "markvault.cli",
        "--vault",
        str(vault_dir),
        "--index",
        index,
        *args,
    ]


def run_cli(
    vault_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process (another process than the test's, on purpose)."""
    return subprocess.run(
        vault_argv(vault_dir, *args), capture_output=True, text=True, timeout=120, env=env
    )


def stdio_server(vault_dir: Path) -> StdioServerParameters:
    """`vault mcp` over stdio, as Claude Code starts it. The test's environment goes with
    it (the SDK passes only a few variables by default): its cache and config folders,
    so the server reads the trust record and the encoder verdict this test made, and
    the sources under test (PYTHONPATH) when a worktree runs them."""
    argv = vault_argv(vault_dir, "mcp")
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
