"""A full disk, for real: the vault on a tiny tmpfs filled to the last byte. Every MCP
write tool answers with a message that says what happened (never the SDK's bare "Error
executing tool"), and nothing is half-written: no note changed, no temporary file left.

Mounting needs root (CAP_SYS_ADMIN); elsewhere the test is skipped. The file size
limit (RLIMIT_FSIZE) test runs everywhere: a write over it fails with EFBIG."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from markvault.config import trust_vault
from markvault.files.atomic import TEMP_PREFIX
from markvault.runtime.local_host import open_local
from markvault.server.tools import build_server

from .conftest import checksums

pytestmark = pytest.mark.anyio

NOTES = {
    "notes/Alpha.md": "---\nid: alpha\n---\n# Alpha\n\nText.\n",
    "sessions/mv/s.md": (
        "---\nid: s1\nkind: session\nsession_id: abcd1234\n---\n# S\n\n## Summary\n"
    ),
}
BIG = "A long paragraph about the quokka lock manager. " * 400  # ~19 KB: more than is left


@pytest.fixture
def full_vault(tmp_path: Path) -> Iterator[Path]:
    """A vault on a 256 KiB tmpfs, holding NOTES, then filled until no byte is left."""
    vault = tmp_path / "vault"
    vault.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(vault)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        for rel, text in NOTES.items():
            (vault / rel).parent.mkdir(parents=True, exist_ok=True)
            (vault / rel).write_text(text, encoding="utf-8")
        (vault / ".markvault.toml").write_text(f'document_roots = ["{tmp_path}"]\n')
        trust_vault(vault)  # the person's own setting, trusted on this machine
        (tmp_path / "doc.md").write_text("# Doc\n\n" + BIG, encoding="utf-8")
        with contextlib.suppress(OSError), open(vault / ".filler", "wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        yield vault
    finally:
        subprocess.run(["umount", "-l", str(vault)], check=False)


async def test_every_write_tool_says_the_disk_is_full(full_vault: Path, tmp_path: Path) -> None:
    vault = open_local(full_vault, tmp_path / "index")
    vault.reindex(vectors=False)
    before = checksums(full_vault)
    try:
        with anyio.fail_after(60):
            async with Client(build_server(vault)) as client:
                alpha = (await client.call_tool("get", {"ref": "alpha"})).structured_content
                session = await client.call_tool("read_session", {"ref": "abcd1234"})
                calls: dict[str, dict[str, Any]] = {
                    "create_note": {"kind": "note", "title": "New", "content": BIG},
                    "learn_knowledge": {"topic": "zoo", "content": BIG},
                    "edit_note": {
                        "ref": "alpha", "hash": alpha["hash"], "op": "append", "text": BIG
                    },
                    "store_document": {"path": str(tmp_path / "doc.md")},
                    "save_session_summary": {
                        "ref": "abcd1234",
                        "hash": session.structured_content["hash"],
                        "overview": BIG,
                    },
                }  # fmt: skip
                for tool, args in calls.items():
                    result = await client.call_tool(tool, args)
                    text = result.content[0].text
                    assert result.is_error, f"{tool} wrote on a full disk: {text}"
                    assert "No space left on device" in text, f"{tool}: {text}"
                    assert "Nothing was changed" in text or "unchanged" in text, text
                    assert "Traceback" not in text
    finally:
        vault.close()
    assert checksums(full_vault) == before
    assert not [p for p in full_vault.rglob("*") if p.name.startswith(TEMP_PREFIX)]


# A new note over a file size limit: the CLI, in a process of its own with the limit set.
_OVER_LIMIT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG rather than the signal's kill
resource.setrlimit(resource.RLIMIT_FSIZE, (200, resource.RLIM_INFINITY))
from markvault.cli.main import main
main(sys.argv[1:], prog_name="vault")
"""


def test_a_write_over_the_file_size_limit_is_refused_cleanly(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    argv = ["--vault", str(vault), "--index", str(tmp_path / "index")]
    ok = subprocess.run(
        [sys.executable, "-m", "markvault.cli", *argv, "reindex", "--no-vectors"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    done = subprocess.run(
        [sys.executable, "-c", _OVER_LIMIT, *argv, "learn", "zoo", BIG],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 6, done.stderr
    assert "File too large" in done.stderr and "Traceback" not in done.stderr
    assert not [p for p in vault.rglob("*") if p.is_file()]
