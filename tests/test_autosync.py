"""Automatic sync in the process that owns the index (`[sync] auto`), with real git: a
bare remote and two clones, each served by its own owner (as two machines' `vault mcp`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from markvault import ConfigError
from markvault.config import Settings, trust_vault
from markvault.core.runtime_context import RuntimeContext
from markvault.runtime.local_host import LocalHost
from markvault.types.search import SearchRequest
from markvault.vault import Vault

from .test_gitsync import Clone, clone, git, git_config, write

__all__ = ["clone", "git_config"]  # fixtures used here

AUTO = "\n[sync]\nauto = true\ninterval = 1\nquiet = 0\n"


class Machine:
    """One clone's owner process, in this test's process: its vault and sync results."""

    def __init__(self, vault: Path, index: Path) -> None:
        self.host = LocalHost(RuntimeContext(Settings.load(vault=vault, index=index)), owner=True)
        self.vault = Vault(self.host)
        self.vault.reindex(vectors=False)
        self.host.start_background(watch=False)  # the watcher is not what is tested here

    def next_sync(self, until: Callable[[Any], bool], timeout: float = 60.0) -> Any:
        """The first sync result (a report, or an error) for which ``until`` holds."""
        assert self.host.autosync is not None
        found = self.host.autosync.wait_for(until, timeout)
        assert found is not None, "no such sync in time"
        return found


@pytest.fixture
def machines(clone: Clone, tmp_path: Path) -> Iterator[tuple[Machine, Machine]]:
    a, b = clone("a"), clone("b")
    config = a / ".markvault.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("auto = false\n", "auto = true\ninterval = 1\nquiet = 0\n"))
    git(a, "commit", "-qam", "sync on its own")
    git(a, "push", "-q")
    git(b, "pull", "-q")
    trust_vault(a), trust_vault(b)  # [sync] auto counts once trusted on the machine
    started = [Machine(a, tmp_path / "a" / "index"), Machine(b, tmp_path / "b" / "index")]
    yield started[0], started[1]
    for m in started:
        m.host.close()


def test_a_note_written_on_one_machine_reaches_the_other_by_itself(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    a.vault.new_note("note", "Written by an agent", content="A capybara crossed the road.")
    pushed = a.next_sync(lambda r: isinstance(r, dict) and r["pushed"])
    assert pushed["changes"][0]["path"] == "notes/Written by an agent.md"
    assert "1 note added" in pushed["message"]
    b.next_sync(lambda r: isinstance(r, dict) and r["pulled"])
    running = a.vault.status()["autosync"]["running"]  # `vault status` asks the owner
    assert running["runs"] >= 2 and running["interval_s"] == 1 and running["last_at"]
    assert [h.path for h in b.vault.search(SearchRequest("capybara", mode="keyword")).hits] == [
        "notes/Written by an agent.md"
    ]


def test_a_vault_with_no_upstream_is_said_once(tmp_path: Path) -> None:
    vault = tmp_path / "solo" / "vault"
    write(vault, "notes/a.md", "# A\n")
    write(vault, ".markvault.toml", AUTO)
    trust_vault(vault)
    git(vault, "init", "-q")
    m = Machine(vault, tmp_path / "solo" / "index")
    try:
        assert "no upstream" in str(m.next_sync(lambda r: isinstance(r, ConfigError)))
        assert m.host.autosync is not None and m.host.autosync.runs == 1
        status = m.vault.status()["autosync"]
        assert status["on"] and status["running"]["last"]["ok"] is False
        assert "no upstream" in status["running"]["last"]["message"]
    finally:
        m.host.close()


def test_auto_sync_is_off_by_default(tmp_path: Path) -> None:
    assert Settings.load(vault=tmp_path).sync.auto is False
    write(tmp_path / "v", ".markvault.toml", "[sync]\nauto = 1\n")
    with pytest.raises(ConfigError, match="auto"):
        Settings.load(vault=tmp_path / "v")
