"""`vault sessions ...`: import, list, show, summarize, the capture hooks; output forms,
exit codes, help. The hooks are also run as Claude Code runs them: a shell command
with the hook's JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from markvault.cli.main import main

from .test_cli import run
from .test_sessions import SID
from .test_sessions_import import OTHER_SID, transcripts

SUBCOMMANDS = [
    ["sessions"],
    ["sessions", "import"],
    ["sessions", "list"],
    ["sessions", "projects"],
    ["sessions", "show"],
    ["sessions", "summarize"],
    ["sessions", "hook"],
    ["sessions", "hook", "install"],
    ["sessions", "hook", "uninstall"],
    ["sessions", "hook", "status"],
    ["sessions", "hook", "run"],
]


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    return transcripts(tmp_path / "claude" / "projects")


@pytest.fixture
def imported(vault_dir: Path, projects: Path) -> Path:
    result = run(vault_dir, "sessions", "import", "--source", str(projects))
    assert result.exit_code == 0, result.output
    return vault_dir


def hash_of(vault: Path, ref: str = SID) -> str:
    shown = run(vault, "sessions", "show", ref, "--json")
    assert shown.exit_code == 0, shown.output
    return str(json.loads(shown.stdout)["hash"])


@pytest.mark.parametrize("command", SUBCOMMANDS, ids=" ".join)
def test_every_sessions_command_has_help_with_examples(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0 and "Examples:" in result.output


def test_import_prints_a_summary_and_is_idempotent(vault_dir: Path, projects: Path) -> None:
    first = run(vault_dir, "sessions", "import", "--source", str(projects))
    assert first.exit_code == 0
    assert first.stdout.startswith(
        "2 transcripts (2 read) · 2 new, 0 updated, 0 unchanged · 2 malformed lines skipped · "
        "0 failed · index refreshed · "
    )
    again = run(vault_dir, "sessions", "import", "--source", str(projects), "--json")
    assert again.exit_code == 0
    data = json.loads(again.stdout)
    assert (data["read"], data["new"], data["unchanged"], data["index"]) == (0, 0, 2, "unchanged")
    assert {s["action"] for s in data["sessions"]} == {"unchanged"}
    found = run(vault_dir, "search", "printer", "--mode", "keyword", "--kind", "session")
    assert found.exit_code == 0 and "sessions/kiosk/" in found.stdout


def test_import_exit_codes(vault_dir: Path, projects: Path, tmp_path: Path) -> None:
    missing = run(vault_dir, "sessions", "import", "--source", str(tmp_path / "nowhere"))
    assert missing.exit_code == 3 and "No transcripts at" in missing.output
    assert "Traceback" not in missing.output
    bad_date = run(vault_dir, "sessions", "import", "--source", str(projects), "--since", "May")
    assert bad_date.exit_code == 2 and "ISO date" in bad_date.output
    folder = projects / "-home-me-work-kiosk"
    (folder / "not-a-file.jsonl").mkdir()
    partly = run(vault_dir, "sessions", "import", "--source", str(folder))
    assert partly.exit_code == 1 and "not a file" in partly.output
    assert "1 new" in partly.stdout
    both = run(vault_dir, "sessions", "import", "--source", str(folder), "--project", "/x")
    assert both.exit_code == 2 and "--project" in both.output


def test_import_reads_claude_codes_folder_by_default(
    vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcripts(tmp_path / "cfg" / "projects")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    result = run(vault_dir, "sessions", "import", "--project", "/home/me/work/kiosk", "-q")
    assert result.exit_code == 0 and "1 transcripts (1 read) · 1 new" in result.stdout


def test_list_projects_show_summarize(imported: Path) -> None:
    listed = run(imported, "sessions", "list")
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert len(lines) == 2 and OTHER_SID[:8] in lines[0] and SID[:8] in lines[1]
    assert "shop-app · 4 turns" in lines[1]
    data = json.loads(run(imported, "sessions", "list", "--no-summary", "--json").stdout)
    assert data["total"] == 2
    projects = run(imported, "sessions", "projects")
    assert projects.exit_code == 0 and "kiosk" in projects.stdout
    assert "1 sessions (0 summarised)" in projects.stdout

    shown = run(imported, "sessions", "show", SID[:8])
    assert shown.exit_code == 0 and "### 09:15 User" in shown.stdout
    found = run(imported, "sessions", "show", SID[:8], "--query", "decimal")
    assert found.exit_code == 0
    assert found.stdout.splitlines()[0].split() == [
        "56",
        ">",
        "Found",
        "it:",
        "float",
        "rounding.",
        "I'll",
        "switch",
        "to",
        "`Decimal`.",
        "[09:15",
        "Assistant]",
    ]
    none = run(imported, "sessions", "show", SID[:8], "--query", "zeppelin")
    assert none.exit_code == 1
    page = run(imported, "sessions", "show", SID[:8], "--lines", "1:3")
    assert page.stdout.splitlines() == ["---", f"id: session-{SID}", page.stdout.splitlines()[2]]

    current = hash_of(imported)
    saved = run(
        imported,
        "sessions",
        "summarize",
        SID[:8],
        "--hash",
        current,
        "--overview",
        "Fixed the rounding.",
        "--decision",
        "Decimal for money",
        "--outcome",
        "pricing.py patched",
        "--open-item",
        "invoice.py",
        "--tag",
        "money",
    )
    assert saved.exit_code == 0 and "summary saved · hash " in saved.stdout
    stale = run(imported, "sessions", "summarize", SID, "--hash", current, "--overview", "x")
    assert stale.exit_code == 5 and "changed since it was read" in stale.output
    from_json = run(
        imported,
        "sessions",
        "summarize",
        SID,
        "--hash",
        hash_of(imported),
        "--from-json",
        "-",
        "--json",
        input=json.dumps({"overview": "Fixed it.", "decisions": ["Use Decimal for money"]}),
    )
    assert from_json.exit_code == 0
    assert json.loads(from_json.stdout)["summary"]["decisions"] == ["Use Decimal for money"]
    summarized = run(imported, "sessions", "list", "--summary", "--json")
    assert [s["session_id"] for s in json.loads(summarized.stdout)["sessions"]] == [SID]

    decided = run(imported, "search", "decimal", "--mode", "keyword", "--scope", "decisions")
    assert decided.exit_code == 0 and '> Summary > Decisions" |' in decided.stdout
    assert "- Use **Decimal** for money" in decided.stdout
    asked = run(imported, "search", "decimal", "--mode", "keyword", "--scope", "prompts")
    assert asked.exit_code == 1  # nobody typed "decimal"
    timeline = run(imported, "timeline", SID[:8], "--before", "0", "--after", "0")
    assert "decision: Use Decimal for money" in timeline.stdout


def test_summarize_bad_input(imported: Path) -> None:
    current = hash_of(imported)
    empty = run(imported, "sessions", "summarize", SID, "--hash", current)
    assert empty.exit_code == 2 and "The summary is empty" in empty.output
    both = run(
        imported, "sessions", "summarize", SID, "--hash", current, "--overview", "x",
        "--from-json", "-",
    )  # fmt: skip
    assert both.exit_code == 2
    not_json = run(
        imported, "sessions", "summarize", SID, "--hash", current, "--from-json", "-",
        input="{oops",
    )  # fmt: skip
    assert not_json.exit_code == 2 and "not JSON" in not_json.output
    wrong = run(
        imported, "sessions", "summarize", SID, "--hash", current, "--from-json", "-",
        input='{"verdict": 1}',
    )  # fmt: skip
    assert wrong.exit_code == 2 and "Unknown summary field" in wrong.output
    not_session = run(imported, "sessions", "show", "notes/none.md")
    assert not_session.exit_code == 3 and "No session or note" in not_session.output


# ---- hooks ----------------------------------------------------------------------------


def test_hook_install_status_uninstall(vault_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.local.json"
    project.mkdir()
    status = run(vault_dir, "sessions", "hook", "status", "--project", str(project), "--json")
    assert status.exit_code == 0
    assert [s["events"] for s in json.loads(status.stdout)["scopes"]] == [[], [], []]

    installed = run(vault_dir, "sessions", "hook", "install", "--project", str(project))
    assert installed.exit_code == 0
    assert f"SessionEnd and PreCompact hooks installed in {settings}" in installed.stdout
    data = json.loads(settings.read_text())
    command = data["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    assert command == data["hooks"]["PreCompact"][0]["hooks"][0]["command"]
    assert str(vault_dir.resolve()) in command and command.endswith(" sessions hook run")
    again = run(vault_dir, "sessions", "hook", "install", "--project", str(project))
    assert "already installed" in again.stdout

    status = json.loads(
        run(vault_dir, "sessions", "hook", "status", "--project", str(project), "--json").stdout
    )
    local = next(s for s in status["scopes"] if s["scope"] == "local")
    assert local["events"] == ["SessionEnd", "PreCompact"] and local["this_vault"] is True
    shown = run(vault_dir, "sessions", "hook", "status", "--project", str(project))
    assert "SessionEnd, PreCompact → this vault" in shown.stdout

    removed = run(vault_dir, "sessions", "hook", "uninstall", "--project", str(project))
    assert removed.exit_code == 0 and "was deleted" in removed.stdout
    assert not settings.exists()
    absent = run(vault_dir, "sessions", "hook", "uninstall", "--project", str(project))
    assert absent.exit_code == 0 and "nothing changed" in absent.stdout


def test_hook_install_keeps_the_rest_of_the_settings(vault_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    original = '{\n  "permissions": {"allow": ["Bash(ls)"]},\n  "model": "opus"\n}\n'
    settings.write_text(original)
    args = ["--scope", "project", "--project", str(project)]
    assert run(vault_dir, "sessions", "hook", "install", *args).exit_code == 0
    assert json.loads(settings.read_text())["model"] == "opus"
    assert run(vault_dir, "sessions", "hook", "uninstall", *args).exit_code == 0
    assert settings.read_text() == original
    settings.write_text('{"hooks": [}')
    broken = run(vault_dir, "sessions", "hook", "install", *args)
    assert broken.exit_code == 6 and "not valid JSON" in broken.output
    assert settings.read_text() == '{"hooks": [}'
    status = run(vault_dir, "sessions", "hook", "status", "--project", str(project))
    assert status.exit_code == 0 and "unreadable" in status.stdout


def test_user_scope_goes_to_claudes_config_dir(
    vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    result = run(vault_dir, "sessions", "hook", "install", "--scope", "user")
    assert result.exit_code == 0 and (tmp_path / "cfg" / "settings.json").is_file()
    assert run(vault_dir, "sessions", "hook", "uninstall", "--scope", "user").exit_code == 0
    assert not (tmp_path / "cfg" / "settings.json").exists()


def hook_input(transcript: Path, event: str = "SessionEnd") -> str:
    return json.dumps(
        {
            "session_id": transcript.stem,
            "transcript_path": str(transcript),
            "cwd": "/home/me/work/shop-app",
            "hook_event_name": event,
            "reason": "exit",
        }
    )


def test_hook_run_imports_one_session_and_never_fails_loudly(
    vault_dir: Path, projects: Path, tmp_path: Path
) -> None:
    transcript = projects / "-home-me-work-shop-app" / f"{SID}.jsonl"
    done = run(vault_dir, "sessions", "hook", "run", input=hook_input(transcript))
    assert done.exit_code == 0 and f"session {SID[:8]} new → sessions/shop-app/" in done.output
    listed = json.loads(run(vault_dir, "sessions", "list", "--json").stdout)
    assert [s["session_id"] for s in listed["sessions"]] == [SID]  # that one session only
    again = run(vault_dir, "sessions", "hook", "run", input=hook_input(transcript, "PreCompact"))
    assert again.exit_code == 0 and "unchanged" in again.output
    for bad in (
        "",
        "not json",
        '{"transcript_path": "/etc/passwd"}',
        hook_input(tmp_path / "x.jsonl"),
    ):
        result = run(vault_dir, "sessions", "hook", "run", input=bad)
        assert result.exit_code == 0 and "markvault: session not imported" in result.output
        assert "Traceback" not in result.output
    nowhere = run(tmp_path / "no-vault", "sessions", "hook", "run", input=hook_input(transcript))
    assert nowhere.exit_code == 0 and "not imported" in nowhere.output


def test_installed_hook_runs_as_claude_code_runs_it(
    vault_dir: Path, projects: Path, tmp_path: Path
) -> None:
    """Install, take the command from the settings file, run it through a shell from
    another folder with the hook input on stdin, as Claude Code does."""
    project = tmp_path / "project"
    project.mkdir()
    index = vault_dir.parent / "index"
    runner = CliRunner()
    args = ["--vault", str(vault_dir), "--index", str(index), "sessions", "hook", "install"]
    result = runner.invoke(main, [*args, "--project", str(project)])
    assert result.exit_code == 0, result.output
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    assert f"--index {index.resolve()}" in command
    transcript = projects / "-home-me-work-kiosk" / f"{OTHER_SID}.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("MARKVAULT_VAULT", None)
    done = subprocess.run(
        command,
        shell=True,
        input=hook_input(transcript),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "new → sessions/kiosk/" in done.stderr and done.stdout == ""
    assert list((vault_dir / "sessions" / "kiosk").glob("*.md"))
