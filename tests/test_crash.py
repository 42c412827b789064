"""Crashes and hostile sizes: kill -9 mid-write and mid-index, a full disk, a server told
to stop, and requests too large to honour."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from markvault.errors import RefusedError, UsageError
from markvault.files.atomic import TEMP_PREFIX
from markvault.runtime.local_host import open_local
from markvault.types.search import SearchRequest

from .conftest import OpenVault, WriteNotes, vault_argv

VERSIONS = 40


def version_text(n: int) -> str:
    # Large enough that a write takes a moment, so a kill lands inside it.
    return f"# Note\n\nversion {n}\n" + f"line of version {n}\n" * 20_000


def run_child(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


WRITER = """
    import sys
    from markvault.runtime.local_host import open_local
    from markvault.types.edits import Edit
    v = open_local(sys.argv[1], sys.argv[2])
    from tests.test_crash import version_text, VERSIONS
    for n in range(1, VERSIONS):
        note = v.get("note.md")
        v.edit_note("note.md", [Edit("replace_text", find=note["text"].split("\\n")[2],
                     text=f"version {n}")], note["hash"])
        print(n, flush=True)
"""


def test_kill_9_during_writes_leaves_whole_versions(write: WriteNotes, vault_dir: Path) -> None:
    """kill -9 during a note write: whatever instant the writer dies, the note is one whole
    version and leftover temp files are never indexed and are cleaned up later."""
    write({"note.md": version_text(0)})
    index = vault_dir.parent / "index"
    open_local(vault_dir, index).reindex(vectors=False)
    rng = random.Random(7)
    env_cwd = Path(__file__).resolve().parents[1]
    for _ in range(8):
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(WRITER), str(vault_dir), str(index)],
            cwd=env_cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        child.stdout.readline()  # it has written once: imports are done
        time.sleep(rng.uniform(0.0, 0.3))  # a random instant to kill at: the test, not a wait
        child.send_signal(signal.SIGKILL)
        child.wait()
        text = (vault_dir / "note.md").read_text()
        header = text.split("\n")[2]
        assert header.startswith("version ")
        assert text.endswith("\n") and text.count("\n") == version_text(0).count("\n")
    leftovers = [p for p in vault_dir.iterdir() if p.name.startswith(TEMP_PREFIX)]
    with open_local(vault_dir, index) as v:
        report = v.reindex(vectors=False)
        assert report.notes == 1 and not report.errors
        for tmp in leftovers:  # old enough to be a crash's, not a live writer's
            if tmp.exists():
                os.utime(tmp, (time.time() - 3600, time.time() - 3600))
        v.reindex(vectors=False)
    assert not [p for p in vault_dir.iterdir() if p.name.startswith(TEMP_PREFIX)]


INDEXER = """
    import sys, itertools
    from pathlib import Path
    from markvault.runtime.local_host import open_local
    vault = Path(sys.argv[1])
    v = open_local(vault, sys.argv[2])
    for n in itertools.count():
        for i in range(0, 60, 7):
            (vault / f"n{(i + n) % 60}.md").write_text(f"# N\\n\\nwalrus round {n} item {i}\\n")
        v.reindex(vectors=False)
        print(n, flush=True)
"""


def test_kill_9_during_indexing_never_needs_a_repair(write: WriteNotes, vault_dir: Path) -> None:
    """kill -9 during indexing: after a kill at any point of a sync, the next start answers."""
    write({f"n{i}.md": f"# N\n\nwalrus item {i}\n" for i in range(60)})
    index = vault_dir.parent / "index"
    open_local(vault_dir, index).reindex(vectors=False)
    rng = random.Random(11)
    for _ in range(8):
        child = run_child(INDEXER, str(vault_dir), str(index))
        assert child.stdout is not None
        child.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.4))  # a random instant to kill at: the test, not a wait
        child.send_signal(signal.SIGKILL)
        child.wait()
        with open_local(vault_dir, index) as v:
            assert v.search(SearchRequest("walrus", mode="keyword", limit=100)).hits  # it answers
            v.reindex(vectors=False)
            assert v.pending() == {"new": 0, "changed": 0, "deleted": 0}
            # The test's own writes are plain (a kill can truncate one): the index must
            # match the disk, whatever the disk holds.
            on_disk = {p.name for p in vault_dir.glob("*.md") if "walrus" in p.read_text()}
            found = {
                h.path for h in v.search(SearchRequest("walrus", mode="keyword", limit=100)).hits
            }
            assert found == on_disk


def test_a_full_disk_keeps_the_original(write: WriteNotes, vault_dir: Path) -> None:
    """A full disk: the write fails midway (a file size limit stands in for a full
    disk): the note is untouched, the temp file gone, the error says so."""
    write({"note.md": "# Note\n\nshort\n"})
    index = vault_dir.parent / "index"
    open_local(vault_dir, index).reindex(vectors=False)
    code = """
        import resource, signal, sys
        from markvault.runtime.local_host import open_local
        from markvault.types.edits import Edit
        from markvault.errors import MarkvaultError
        v = open_local(sys.argv[1], sys.argv[2])
        note = v.get("note.md")
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            v.edit_note("note.md", [Edit("append", "x" * 100_000)], note["hash"])
        except MarkvaultError as exc:
            print(type(exc).__name__, exc)
    """
    child = run_child(code, str(vault_dir), str(index))
    out, err = child.communicate(timeout=60)
    assert out.startswith("RefusedError Could not write note.md"), out + err
    assert "unchanged" in out
    assert (vault_dir / "note.md").read_text() == "# Note\n\nshort\n"
    assert not [p for p in vault_dir.iterdir() if p.name.startswith(TEMP_PREFIX)]


@pytest.mark.parametrize("how", ["close stdin", "SIGTERM"])
def test_the_server_stops_within_two_seconds(write: WriteNotes, vault_dir: Path, how: str) -> None:
    """A client that goes away, or a SIGTERM, ends `vault mcp` at once."""
    write({"a.md": "apple"})
    proc = subprocess.Popen(
        vault_argv(vault_dir, "mcp"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    proc.stdin.write(json.dumps(hello).encode() + b"\n")
    proc.stdin.flush()
    assert b'"result"' in proc.stdout.readline()  # up and answering
    started = time.monotonic()
    if how == "close stdin":
        proc.stdin.close()
    else:
        proc.terminate()
    proc.wait(timeout=10)
    assert time.monotonic() - started < 2.0
    assert not list(vault_dir.glob(f"**/{TEMP_PREFIX}*"))


def test_oversized_requests_are_refused(write: WriteNotes, open_vault: OpenVault) -> None:
    """A 20 MB write, a 1 MB query and a huge limit get clear refusals."""
    write({"a.md": "apple"})
    v = open_vault()
    v.reindex(vectors=False)
    with pytest.raises(RefusedError, match="over the 5 MiB note size limit"):
        v.new_note("note", "Huge", content="x" * 20_000_000)
    assert not (v.settings.vault_dir / "notes/Huge.md").exists()
    note = v.get("a.md")
    with pytest.raises(RefusedError, match="size limit"):
        from markvault.types.edits import Edit

        v.edit_note("a.md", [Edit("append", "y" * 20_000_000)], note["hash"])
    assert (v.settings.vault_dir / "a.md").read_text() == "apple"
    with pytest.raises(UsageError, match="characters long"):
        v.search(SearchRequest("q" * 1_000_000))
    with pytest.raises(UsageError, match="limit"):
        v.search(SearchRequest("apple", limit=1_000_000_000))
    with pytest.raises(UsageError, match="limit"):
        v.recent(limit=1_000_000_000)
