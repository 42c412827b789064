"""The watcher inside the owner: `vault watch` and `vault mcp` keep the index fresh for
every process, after editor saves, renames, a checkout and a pull."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import WriteNotes, run_cli, vault_argv


def found(vault_dir: Path, word: str) -> set[str]:
    result = run_cli(vault_dir, "search", word, "--mode", "keyword", "--json", "--limit", "100")
    assert result.returncode in (0, 1), result.stderr
    return {h["path"] for h in json.loads(result.stdout)["hits"]}


class Watching:
    """`vault watch --json` running: its process, and each sync it reports (a line)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.syncs: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        stdout = proc.stdout
        threading.Thread(target=lambda: [self.syncs.put(x) for x in stdout], daemon=True).start()

    def until(self, check: Callable[[], bool], seconds: float = 20.0) -> None:
        """Await the watcher's syncs until ``check`` holds (the index is another
        process's: its sync reports are the events to wait on)."""
        deadline = time.monotonic() + seconds
        while not check():
            try:
                self.syncs.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("not within the time allowed") from None
            with contextlib.suppress(queue.Empty):
                while True:  # a burst of syncs: check once after the last
                    self.syncs.get_nowait()


@pytest.fixture
def watching(write: WriteNotes, vault_dir: Path) -> Iterator[Watching]:
    write({"notes/a.md": "# A\n\napple\n", "notes/b.md": "# B\n\nbanana\n"})
    proc = subprocess.Popen(
        vault_argv(vault_dir, "watch", "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until it owns the index and watches
        if line.startswith("Watching"):
            break
    yield Watching(proc)
    proc.terminate()
    proc.wait(timeout=10)


def test_vault_watch_keeps_every_process_fresh(watching: Watching, vault_dir: Path) -> None:
    status = json.loads(run_cli(vault_dir, "status", "--json").stdout)
    assert status["owner"]["owner_pid"] == watching.pid
    assert status["watcher"]["mode"] == "events"
    watching.until(lambda: found(vault_dir, "apple") == {"notes/a.md"})
    # An editor saving the vim way: write a backup, rename over the original.
    tmp = vault_dir / "notes/.a.md.swp"
    tmp.write_text("# A\n\napricot\n")
    tmp.replace(vault_dir / "notes/a.md")
    watching.until(lambda: found(vault_dir, "apricot") == {"notes/a.md"})
    assert found(vault_dir, "apple") == set()
    # A rename and a new folder: no ghost of the old path.
    (vault_dir / "notes/b.md").rename(vault_dir / "notes/banana.md")
    (vault_dir / "new").mkdir()
    (vault_dir / "new/c.md").write_text("# C\n\ncherry\n")
    watching.until(lambda: found(vault_dir, "banana") == {"notes/banana.md"})
    watching.until(lambda: found(vault_dir, "cherry") == {"new/c.md"})
    assert run_cli(vault_dir, "status", "--json").returncode == 0


def test_a_checkout_converges_once_git_is_done(watching: Watching, vault_dir: Path) -> None:
    """A large checkout, scaled down: hundreds of files change under git's index.lock; once
    the lock is gone the index equals a fresh scan."""
    git = vault_dir / ".git"
    git.mkdir()
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "index.lock").write_text("")
    for i in range(300):
        (vault_dir / f"notes/n{i}.md").write_text(f"# N{i}\n\nwalrus {i}\n")
    (vault_dir / "notes/a.md").unlink()
    (git / "index.lock").unlink()
    (git / "HEAD").write_text("ref: refs/heads/other\n")
    watching.until(lambda: len(found(vault_dir, "walrus")) == 100, seconds=60)  # limit 100
    watching.until(
        lambda: json.loads(run_cli(vault_dir, "status", "--json").stdout)["notes"] == 301, 60
    )
    final = json.loads(run_cli(vault_dir, "status", "--json").stdout)
    assert final["pending"] == {"new": 0, "changed": 0, "deleted": 0}
    assert found(vault_dir, "apple") == set()


PROBE = """
import sys
from markvault.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = ("duckdb", "pyarrow", "torch", "sentence_transformers", "markvault.index",
         "markvault.core", "markvault.search.searcher", "markvault.sessions.transcript_reader")
print("LOADED=" + ",".join(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


def test_a_command_sent_to_the_owner_never_loads_the_index_layer(
    watching: Watching, vault_dir: Path
) -> None:
    """A client only encodes the call and prints the answer: the owner has the index."""
    # The owner's first sync done: under load it can outlast the wait a read gives a
    # running sync (BUSY_ANSWER_SECONDS), and the answer would come before the note.
    watching.until(lambda: found(vault_dir, "apple") == {"notes/a.md"})
    argv = vault_argv(vault_dir, "search", "apple", "--mode", "keyword", "--json")
    probe = subprocess.run(
        [argv[0], "-c", PROBE, *argv[3:]], capture_output=True, text=True, timeout=120
    )
    assert json.loads(probe.stdout)["hits"][0]["path"] == "notes/a.md", probe.stderr
    assert "LOADED=\n" in probe.stderr, probe.stderr
