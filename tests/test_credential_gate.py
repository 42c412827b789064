"""The credential gate on every write, through MCP and the command line, on a home folder
laid out as a new user's: a vault at ~/notes (made by `vault init`), cloud credentials in
~/.aws, ordinary files in ~/ and ~/docs. The secrets are generated per run."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from markvault import Vault
from markvault.config import trust_vault
from markvault.credentials.detection import scan
from markvault.credentials.policy import CredentialRefused
from markvault.files.vault_init import init_vault
from markvault.runtime.local_host import open_local
from markvault.server.tools import build_server
from markvault.types.search import SearchRequest

from .test_credentials import ALNUM, UPPER_ALNUM, rand
from .test_sessions import assistant, user

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Home:
    root: Path
    aws_key: str
    aws_secret: str
    github: str

    @property
    def vault(self) -> Path:
        return self.root / "notes"

    @property
    def index(self) -> Path:
        return self.root / "index"

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.aws_key, self.aws_secret, self.github)

    def leaks(self) -> list[str]:
        """Every file of the vault (and every file name) that holds one of the secrets."""
        found = []
        for path in sorted(self.vault.rglob("*")):
            name = path.relative_to(self.vault).as_posix()
            data = path.read_bytes() if path.is_file() else b""
            if any(s in name or s.encode() in data for s in self.secrets):
                found.append(name)
        return found

    def configure(self, text: str) -> None:
        """Add top-level settings (before the file's first table)."""
        config = self.vault / ".markvault.toml"
        head, table, rest = config.read_text(encoding="utf-8").partition("\n[")
        config.write_text(head + "\n" + text + table + rest, encoding="utf-8")

    def refuse(self, allow: list[tuple[str, str]] = ()) -> None:  # type: ignore[assignment]
        """Turn the vault's [credentials] mode to refuse, with these allowlist entries."""
        config = self.vault / ".markvault.toml"
        entries = ", ".join(f'{{ note = "{n}", fingerprint = "{f}" }}' for n, f in allow)
        head, _, _ = config.read_text(encoding="utf-8").partition("\n[credentials]\n")
        table = f'[credentials]\nmode = "refuse"\nallow = [{entries}]\n'
        config.write_text(f"{head}\n{table}", encoding="utf-8")

    def cli(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "markvault.cli", "--vault", str(self.vault)]
        env = {**os.environ, "HOME": str(self.root), "MARKVAULT_INDEX": str(self.index)}
        return subprocess.run(
            [*argv, *args], capture_output=True, text=True, input=input, timeout=120, env=env
        )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    rng = random.Random()
    home = Home(
        tmp_path / "home",
        aws_key="AKIA" + rand(rng, UPPER_ALNUM, 16),
        aws_secret=rand(rng, ALNUM + "+/", 40),
        github="ghp_" + rand(rng, ALNUM, 36),
    )
    init_vault(home.vault)
    files = {
        ".aws/credentials.txt": "[default]\naws_access_key_id = {aws_key}\n"
        "aws_secret_access_key = {aws_secret}\n",
        "report.md": "# Release report\n\nThe CI used {github} to push the tag.\n",
        "docs/github.json": '{{"user": "ada", "token": "{github}"}}\n',
        "docs/plain.md": "# Plain\n\nNothing secret here.\n",
        "docs/.env": "GITHUB_TOKEN={github}\n",
    }
    for rel, text in files.items():
        path = home.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(**vars(home)), encoding="utf-8")
    monkeypatch.setenv("HOME", str(home.root))
    monkeypatch.delenv("MARKVAULT_DOCUMENT_ROOTS", raising=False)
    return home


@pytest.fixture
def vault(home: Home) -> Iterator[Vault]:
    with open_local(home.vault, home.index) as v:
        yield v


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{tool}: {text}"
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    return result.content[0].text if result.content else ""


def kinds(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["kind"], f["where"]) for f in result["redacted"]]


# ---- through MCP ------------------------------------------------------------------------


async def test_create_note_and_learn_knowledge_keep_no_key_in_any_file(
    home: Home, vault: Vault
) -> None:
    keys = f"deploy key is {home.aws_key} token {home.github}"
    async with Client(build_server(vault)) as client:
        made = await call(
            client,
            "create_note",
            kind="note",
            title=keys,
            content=f"## Access\n\nKey {home.aws_key}\nsecret: {home.aws_secret}\n{home.github}\n",
            tags=["ops", home.github],
        )
        assert made["path"] == "notes/deploy key is REDACTED token REDACTED.md"
        assert made["title"] == "deploy key is [REDACTED] token [REDACTED]"
        written = (home.vault / made["path"]).read_text(encoding="utf-8").splitlines()
        at = written.index("Key [REDACTED]") + 1
        assert kinds(made) == [
            ("AWS access key", "title"),
            ("GitHub token", "title"),
            ("GitHub token", "tags"),
            ("AWS access key", f"line {at}"),
            ("secret", f"line {at + 1}"),
            ("GitHub token", f"line {at + 2}"),
        ]
        assert made["credentials"] == (
            "6 credentials redacted: AWS access key, title; GitHub token, title; "
            f"GitHub token, tags; AWS access key, line {at}; secret, line {at + 1}; and 1 more"
        )
        assert all(f["fingerprint"] and "secret" not in f for f in made["redacted"])
        note = await call(client, "get", ref=made["id"])
        assert note["hash"] == made["hash"] and "[REDACTED]" in note["text"]

        learned = await call(client, "learn_knowledge", topic="ops", content=keys + "\n\nRotate.")
        assert learned["path"] == "knowledge/ops/deploy key is REDACTED token REDACTED.md"
        written = (home.vault / learned["path"]).read_text(encoding="utf-8").splitlines()
        at = written.index("deploy key is [REDACTED] token [REDACTED]") + 1
        assert learned["credentials"] == (
            "4 credentials redacted: AWS access key, title; GitHub token, title; "
            f"AWS access key, line {at}; GitHub token, line {at}"
        )
    assert vault.search(SearchRequest(home.aws_key, mode="keyword")).hits == []
    assert vault.search(SearchRequest("deploy", mode="keyword")).total == 2
    assert home.leaks() == []


async def test_edits_summaries_and_moves_redact_what_they_add_only(
    home: Home, vault: Vault
) -> None:
    # A person's note already holding a token: the agent's edit answers for its own text.
    person = home.vault / "notes" / "Ops.md"
    person.write_text(f"# Ops\n\nOld token {home.github}\n", encoding="utf-8")
    vault.reindex(vectors=False)
    other = "ghp_" + rand(random.Random(), ALNUM, 36)
    async with Client(build_server(vault)) as client:
        note = await call(client, "get", ref="notes/Ops.md")
        edited = await call(
            client, "edit_note", ref="notes/Ops.md", hash=note["hash"], op="append",
            text=f"New token {other}",
        )  # fmt: skip
        assert edited["credentials"] == "1 credential redacted: GitHub token, line 4"
        text = person.read_text(encoding="utf-8")
        assert home.github in text and other not in text and "New token [REDACTED]" in text
        keyed = await call(
            client, "edit_note", ref="notes/Ops.md", hash=edited["hash"], op="set_key",
            key="api_token", value=home.aws_secret,
        )  # fmt: skip
        assert keyed["credentials"] == "1 credential redacted: token, key api_token"
        assert "api_token: '[REDACTED]'" in person.read_text(encoding="utf-8")
        moved = await call(
            client, "move_note", ref="notes/Ops.md", hash=keyed["hash"],
            to=f"notes/{home.aws_key}.md",
        )  # fmt: skip
        assert moved["path"] == "notes/REDACTED.md"
        assert moved["credentials"] == "1 credential redacted: AWS access key, file name"

        (session := home.vault / "sessions" / "s.md").write_text(
            "---\nid: s1\nkind: session\nsession_id: abcd1234\n---\n# S\n\n## Summary\n",
            encoding="utf-8",
        )
        vault.reindex(vectors=False)
        read = await call(client, "read_session", ref="abcd1234")
        saved = await call(
            client, "save_session_summary", ref="abcd1234", hash=read["hash"],
            overview="Rotated keys.", decisions=[f"Use {other} for CI"], tags=[home.aws_key],
        )  # fmt: skip
        written = session.read_text(encoding="utf-8")
        at = written.splitlines().index("- Use [REDACTED] for CI") + 1
        assert kinds(saved) == [("AWS access key", "tags"), ("GitHub token", f"line {at}")]
        assert other not in written and home.aws_key not in written
    assert home.leaks() == ["notes/REDACTED.md"]  # only the person's own, untouched token


async def test_store_document_reads_nothing_unconfigured_and_redacts_what_it_stores(
    home: Home, vault: Vault
) -> None:
    async with Client(build_server(vault)) as client:
        for path in ("report.md", "docs/plain.md", ".aws/credentials.txt", "notes/.markvault.toml"):
            message = await refused(client, "store_document", path=str(home.root / path))
            assert "document_roots" in message and "MARKVAULT_DOCUMENT_ROOTS" in message, message
        assert list((home.vault / "documents").iterdir()) == []

    home.configure(f'document_roots = ["{home.root / "docs"}"]\n')
    trust_vault(home.vault)  # counts once trusted on this machine
    with open_local(home.vault, home.index) as configured:
        async with Client(build_server(configured)) as client:
            stored = await call(
                client, "store_document", path=str(home.root / "docs/github.json"), topic="ci"
            )
            assert stored["credentials"].startswith("1 credential redacted: GitHub token, line ")
            for path in (".aws/credentials.txt", "docs/.env"):
                message = await refused(client, "store_document", path=str(home.root / path))
                assert "Refused: " in message, message
            assert "hidden" in message
    assert home.leaks() == []


async def test_refuse_mode_names_the_entry_to_allow_and_a_running_server_takes_it(
    home: Home, vault: Vault
) -> None:
    home.refuse()
    async with Client(build_server(vault)) as client:
        message = await refused(
            client, "create_note", kind="note", title="CI", content=f"token {home.github}"
        )
        assert "Refused: notes/CI.md holds 1 credential (GitHub token, line " in message
        assert not (home.vault / "notes" / "CI.md").exists()
        [finding] = scan(f"token {home.github}")
        assert f'allow = [{{ note = "notes/CI.md", fingerprint = "{finding.fingerprint}" }}]' in (
            message
        )
        home.refuse(allow=[("notes/CI.md", finding.fingerprint)])  # the same server goes on
        made = await call(
            client, "create_note", kind="note", title="CI", content=f"token {home.github}"
        )
        assert "credentials" not in made
        assert home.github in (home.vault / "notes" / "CI.md").read_text(encoding="utf-8")
        # Allowed in that note only.
        message = await refused(
            client, "learn_knowledge", topic="ci", content=f"The token {home.github}"
        )
        assert "knowledge/ci/The token" in message


def test_a_template_holding_a_credential_is_redacted_too(home: Home, vault: Vault) -> None:
    template = home.vault / ".markvault" / "templates" / "note.md"
    template.write_text(
        template.read_text(encoding="utf-8") + f"\nDeploy with {home.github}\n", encoding="utf-8"
    )
    made = vault.new_note("note", "From the template")
    assert made["credentials"].startswith("1 credential redacted: GitHub token, line ")
    assert home.github not in (home.vault / made["path"]).read_text(encoding="utf-8")


def test_transcript_import_redacts_even_in_refuse_mode(home: Home, vault: Vault) -> None:
    """Automatic capture must never lose a session: import redacts, never refuses."""
    home.refuse()
    project = home.root / "claude" / "projects" / "-home-me-work-ci"
    project.mkdir(parents=True)
    lines = [
        user(f"Push the tag with {home.github} please", "2025-05-01T10:00:00Z"),
        assistant("Pushed.", "2025-05-01T10:00:05Z"),
    ]
    (project / "0a1b2c3d-aaaa-4bbb-8ccc-000000000001.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8"
    )
    report = vault.import_sessions(home.root / "claude" / "projects")
    assert report.new == 1 and report.failed == 0
    assert home.leaks() == []


def test_transcript_import_keeps_what_the_allowlist_lets_through(home: Home, vault: Vault) -> None:
    """An entry for any note, or for the note that already holds the session, lets its
    credential through an import; every other one is still redacted."""
    project = home.root / "claude" / "projects" / "-home-me-work-ci"
    project.mkdir(parents=True)
    transcript = project / "0a1b2c3d-aaaa-4bbb-8ccc-000000000002.jsonl"
    lines = [
        user(f"Push with {home.github}, key {home.aws_key}", "2025-05-01T10:00:00Z"),
        assistant("Pushed.", "2025-05-01T10:00:05Z"),
    ]

    def write(lines: list[dict[str, Any]]) -> None:
        transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")

    write(lines)
    (github,) = [f.fingerprint for f in scan(home.github)]
    (aws,) = [f.fingerprint for f in scan(home.aws_key)]
    home.refuse(allow=[("*", github)])
    first = vault.import_sessions(home.root / "claude" / "projects")
    note = home.vault / first.sessions[0]["path"]
    text = note.read_text(encoding="utf-8")
    assert home.github in text and home.aws_key not in text
    assert first.redactions == 1

    home.refuse(allow=[(first.sessions[0]["path"], aws)])  # this note's entry only
    lines.append(user(f"Again {home.aws_key} and {home.github}", "2025-05-01T10:01:00Z"))
    write(lines)
    again = vault.import_sessions(home.root / "claude" / "projects")
    assert again.updated == 1
    added = note.read_text(encoding="utf-8").split("Again", 1)[1]
    assert home.aws_key in added and home.github not in added


def test_the_gate_refuses_before_anything_is_named_or_written(home: Home, vault: Vault) -> None:
    home.refuse()
    with pytest.raises(CredentialRefused) as caught:
        vault.learn_knowledge("ops", f"deploy key is {home.aws_key}")
    assert caught.value.exit_code == 6 and "title" in caught.value.message
    assert list((home.vault / "knowledge").rglob("*.md")) == []


# ---- the command line -------------------------------------------------------------------


def test_vault_learn_and_new_redact_and_say_so(home: Home) -> None:
    keys = f"deploy key is {home.aws_key} token {home.github}"
    learned = home.cli("learn", "ops", keys)
    assert learned.returncode == 0, learned.stderr
    assert learned.stdout.startswith(
        "learned knowledge/ops/deploy key is REDACTED token REDACTED.md"
    )
    assert "4 credentials redacted: AWS access key, title; GitHub token, title;" in learned.stderr
    made = home.cli("new", "note", keys, "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["credentials"].startswith("2 credentials redacted")
    piped = home.cli("learn", "ops", "-", "--title", "From stdin", input=f"key {home.aws_key}\n")
    assert "1 credential redacted: AWS access key, line " in piped.stderr
    assert home.leaks() == []


def test_vault_store_refuses_hidden_files_and_redacts_ordinary_ones(home: Home) -> None:
    hidden = home.cli("store", "~/.aws/credentials.txt")
    assert hidden.returncode == 6 and "--allow-hidden" in hidden.stderr
    stored = home.cli("store", "~/report.md")
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("stored documents/Release report.md")
    assert "1 credential redacted: GitHub token, line " in stored.stderr
    assert home.leaks() == []


def test_refuse_mode_on_the_command_line(home: Home) -> None:
    home.refuse()
    done = home.cli("learn", "ops", f"token {home.github}")
    assert done.returncode == 6
    assert "Refused: knowledge/ops/token REDACTED.md holds 1 credential (GitHub token, title)" in (
        done.stderr
    )
    assert home.github not in done.stderr  # nor in the note's path it shows
    assert "[credentials] allow = " in done.stderr and "fingerprint" in done.stderr
    assert list((home.vault / "knowledge").rglob("*.md")) == []


def test_a_knowledge_point_learned_twice_reports_its_credentials_once(
    home: Home, vault: Vault
) -> None:
    content = f"Rotate the CI token\n\nIt was {home.github}\n"
    first = vault.learn_knowledge("ci", content)
    second = vault.learn_knowledge("ci", content)  # named "... (2)" after a conflict
    assert second["path"] == "knowledge/ci/Rotate the CI token (2).md"
    assert first["credentials"] == second["credentials"]
    assert second["credentials"].startswith("1 credential redacted: GitHub token, line ")
    assert home.leaks() == []
