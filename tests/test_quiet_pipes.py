"""Output piped into a reader that closes early (`| head -1`, `| grep -q`) ends every
command silently with status 141, as a shell reports a command killed by SIGPIPE,
and leaves the vault and its index fine for the next command."""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
from pathlib import Path

import pytest

from .conftest import WriteNotes, run_cli, vault_argv

READER_GONE = 141


def quiet(stderr: str) -> bool:
    """No error, warning or traceback (a note's header, which `get` writes to stderr so
    that stdout holds the text alone, is fine)."""
    return not any(word in stderr for word in ("Error", "Traceback", "pipe", "Exception"))


@pytest.fixture
def piped_vault(write: WriteNotes) -> Path:
    vault = write(
        {
            **{
                f"notes/n{i}.md": f"# Note {i}\n\nthe quokka number {i} and the rest\n"
                for i in range(60)
            },
            "knowledge/zoo/quokka.md": "# Quokka\n\nThe quokka smiles.\n",
            "notes/long.md": "# Long\n\n"
            + "".join(f"line {n} of the long note\n" for n in range(8000)),
        }
    )
    done = run_cli(vault, "reindex", "--no-vectors")
    assert done.returncode == 0, done.stderr
    return vault


def closed_before_output(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command with its stdout read by nobody: the reader is gone before it writes."""
    proc = subprocess.Popen(
        vault_argv(vault, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read()
    return subprocess.CompletedProcess(proc.args, proc.wait(timeout=120), "", stderr)


@pytest.mark.parametrize(
    "args",
    [
        ("search", "the", "--mode", "keyword", "--limit", "50"),
        ("search", "the", "--mode", "keyword", "--json"),
        ("get", "notes/long.md"),
        ("status",),
        ("topics",),
        ("--help",),
        ("search", "--help"),
    ],
    ids=" ".join,
)
def test_a_reader_gone_before_any_output(piped_vault: Path, args: tuple[str, ...]) -> None:
    done = closed_before_output(piped_vault, *args)
    assert quiet(done.stderr), done.stderr
    assert done.returncode == READER_GONE
    if args[0] == "search":
        assert done.stderr == ""


def test_a_reader_that_closes_mid_stream(piped_vault: Path) -> None:
    """`vault watch --json | head -1`: a sync is reported, the reader goes, the next
    report hits the closed pipe: the watcher stops quietly (from its sync thread) and
    hands the index on in good order."""
    proc = subprocess.Popen(
        vault_argv(piped_vault, "watch", "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(120, proc.kill)  # a hang fails the test, not the run
    watchdog.start()
    try:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stderr:  # wait until it owns the index and watches
            if line.startswith("Watching"):
                break
        (piped_vault / "notes/new1.md").write_text("# New one\n\nwombat\n")
        assert "added" in json.loads(proc.stdout.readline())
        proc.stdout.close()
        (piped_vault / "notes/new2.md").write_text("# New two\n\nwombat\n")
        assert proc.wait() == READER_GONE
        assert proc.stderr.read() == ""
    finally:
        watchdog.cancel()
    after = run_cli(piped_vault, "search", "wombat", "--mode", "keyword", "--json")
    assert after.returncode == 0 and len(json.loads(after.stdout)["hits"]) == 2


def test_search_into_head_prints_nothing_on_stderr(piped_vault: Path) -> None:
    """The issue's command: the hits go to the pipe, and no footer or error to stderr
    (the footer is for a terminal)."""
    argv = shlex.join(
        vault_argv(piped_vault, "search", "the", "--mode", "keyword", "--limit", "50")
    )
    for reader in ("head -1", "grep -q quokka", "less -FX"):
        shell = f"{argv} 2>stderr.txt | {reader} >/dev/null; echo ${{PIPESTATUS[0]}} >status.txt"
        subprocess.run(["bash", "-c", shell], cwd=piped_vault.parent, timeout=120, check=True)
        assert (piped_vault.parent / "stderr.txt").read_text() == "", reader
        assert (piped_vault.parent / "status.txt").read_text().strip() in ("0", str(READER_GONE))


@pytest.mark.model
def test_the_issue_command_with_the_model(piped_vault: Path) -> None:
    """`vault search the --limit 50 | head -1`, hybrid, with vectors."""
    assert run_cli(piped_vault, "reindex").returncode == 0
    argv = shlex.join(vault_argv(piped_vault, "search", "the", "--limit", "50"))
    shell = f"{argv} 2>stderr.txt | head -1"
    done = subprocess.run(
        ["bash", "-c", shell], cwd=piped_vault.parent, capture_output=True, text=True, timeout=300
    )
    assert done.stdout.startswith("#")
    assert (piped_vault.parent / "stderr.txt").read_text() == ""
