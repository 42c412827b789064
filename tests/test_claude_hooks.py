"""Capture hooks in Claude Code's settings: minimal edits, exact undo, checked hook input."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from markvault.errors import NotFoundError, RefusedError, UsageError
from markvault.sessions.claude_hooks import (
    EVENTS,
    NEW_FILE,
    add_hooks,
    find_hooks,
    hook_command,
    install,
    installed,
    parse_hook_input,
    remove_hooks,
    settings_path,
    uninstall,
)

ODD = Path(__file__).parent / "fixtures" / "claude" / "settings_odd.json"
CMD = "/opt/mv/.venv/bin/vault --vault /home/me/vault sessions hook run"
OTHER_CMD = "/new/place/vault --vault /home/me/vault sessions hook run"

SETTINGS_TEXTS = {
    "odd": ODD.read_text(encoding="utf-8"),
    "empty-inline": "{}",
    "empty-inline-newline": "{}\n",
    "minified": '{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}}',
    "python-style-compact": '{"hooks": {"SessionEnd": []}, "a": [1, 2]}',
    "tabs": '{\n\t"hooks": {\n\t\t"Stop": []\n\t},\n\t"env": {"A": "1"}\n}\n',
    "hooks-empty-object": '{\n  "a": 1,\n  "hooks": {}\n}\n',
    "no-hooks": '{\n  "permissions": {\n    "allow": []\n  }\n}\n',
    "crlf-bom": (
        '\ufeff{\r\n  "hooks": {\r\n    "PreCompact": [\r\n      {"hooks": []}\r\n    ]\r\n'
        "  }\r\n}\r\n"
    ),
    "first-key-is-hooks": (
        '{"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "y"}]}]},\n "z": 0}'
    ),
    "escaped-keys": '{"hook\\u0073": {"Session\\u0045nd": []}, "k": "\\"q\\""}',
}


def project(tmp_path: Path, text: str | None = None) -> tuple[Path, Path]:
    """A project folder and its .claude/settings.json (written when ``text`` is given)."""
    proj = tmp_path / "proj"
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    if text is not None:
        settings.write_bytes(text.encode("utf-8"))
    return proj, settings


# ---- the text edits -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SETTINGS_TEXTS))
def test_install_then_uninstall_restores_every_byte(name: str) -> None:
    original = SETTINGS_TEXTS[name]
    added = add_hooks(original, CMD)
    data = json.loads(added.lstrip("\ufeff"))
    for event in EVENTS:
        assert data["hooks"][event][-1] == {"hooks": [{"type": "command", "command": CMD}]}
    assert find_hooks(added) == {event: [CMD] for event in EVENTS}
    assert add_hooks(added, CMD) == added  # idempotent
    assert remove_hooks(added) == original
    replaced = add_hooks(added, OTHER_CMD)  # a moved vault replaces ours
    assert find_hooks(replaced) == {event: [OTHER_CMD] for event in EVENTS}
    assert remove_hooks(replaced) == original


@pytest.mark.parametrize("name", sorted(SETTINGS_TEXTS))
def test_install_keeps_everything_else(name: str) -> None:
    original = json.loads(SETTINGS_TEXTS[name].lstrip("\ufeff"))
    data = json.loads(add_hooks(SETTINGS_TEXTS[name], CMD).lstrip("\ufeff"))
    for key, value in original.items():
        if key != "hooks":
            assert data[key] == value
    for event, entries in original.get("hooks", {}).items():
        assert data["hooks"][event][: len(entries)] == entries


def test_new_file_is_what_claude_code_would_write() -> None:
    text = add_hooks(None, CMD)
    entry = {"hooks": [{"type": "command", "command": CMD}]}
    assert text == json.dumps({"hooks": {e: [entry] for e in EVENTS}}, indent=2) + "\n"
    assert remove_hooks(text) is None  # what we created, we delete
    assert remove_hooks(NEW_FILE) is None


def test_new_entries_copy_the_neighbours_layout() -> None:
    added = add_hooks(SETTINGS_TEXTS["odd"], CMD)
    # appended to the existing SessionEnd list, indented like the entry before it
    assert (
        "            }\n            ," not in added
        and '            },\n            {\n                "hooks": [\n' in added
    )
    # the empty `[]` list gets a one-line entry instead of a reformatted list
    assert f'"PreCompact": [{{"hooks": [{{"type": "command", "command": "{CMD}"}}]}}]' in added
    crlf = add_hooks(SETTINGS_TEXTS["crlf-bom"], CMD)
    assert "\n" not in crlf.replace("\r\n", "")  # no bare newlines in a CRLF file


def test_other_edits_between_install_and_uninstall_are_kept() -> None:
    original = SETTINGS_TEXTS["odd"]
    added = add_hooks(original, CMD).replace('"deny": []', '"deny": ["Bash(rm:*)"]')
    added = added.replace('"FOO": "b\\u00e4r"', '"FOO": "baz"')
    assert remove_hooks(added) == original.replace('"deny": []', '"deny": ["Bash(rm:*)"]').replace(
        '"FOO": "b\\u00e4r"', '"FOO": "baz"'
    )


def test_only_our_entries_are_removed() -> None:
    theirs = '{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "bye"}]}]}}'
    added = add_hooks(theirs, CMD)
    # a person puts their own entry after ours
    mixed = added.replace(
        f'"command": "{CMD}"}}]}}]',
        f'"command": "{CMD}"}}]}}, {{"hooks": [{{"type": "command", "command": "later"}}]}}]',
        1,
    )
    left = json.loads(remove_hooks(mixed) or "")
    assert left["hooks"]["SessionEnd"] == [
        {"hooks": [{"type": "command", "command": "bye"}]},
        {"hooks": [{"type": "command", "command": "later"}]},
    ]
    assert "PreCompact" not in left["hooks"]


def test_refuses_malformed_settings() -> None:
    for text in ("{", '{"a": 1,}', "[]", '{"hooks": []}', '{"hooks": {"SessionEnd": {}}}', ""):
        with pytest.raises(RefusedError):
            add_hooks(text, CMD)
        if text:
            with pytest.raises(RefusedError):
                remove_hooks(text)


def test_refuses_bad_commands() -> None:
    with pytest.raises(UsageError):
        add_hooks("{}", "echo hi")  # no marker: uninstall could never find it
    with pytest.raises(UsageError):
        add_hooks("{}", CMD + "\nrm -rf /")
    with pytest.raises(UsageError):
        add_hooks("{}", "   ")


# ---- on disk --------------------------------------------------------------------------


def test_project_install_and_uninstall_on_disk(tmp_path: Path) -> None:
    proj, settings = project(tmp_path)
    shutil.copyfile(ODD, settings)
    before = settings.read_bytes()
    change = install("project", proj, CMD)
    assert change.action == "installed" and change.path == settings and not change.created_file
    after_install = settings.read_bytes()
    assert installed("project", proj) == {event: [CMD] for event in EVENTS}
    assert install("project", proj, CMD).action == "unchanged"
    assert settings.read_bytes() == after_install
    assert install("project", proj, OTHER_CMD).action == "updated"
    change = uninstall("project", proj)
    assert change.action == "removed" and not change.deleted_file
    assert settings.read_bytes() == before
    assert uninstall("project", proj).action == "absent"
    assert settings.read_bytes() == before
    assert not [p for p in settings.parent.iterdir() if p.name != "settings.json"]  # no temp files


def test_user_scope_creates_and_deletes_the_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    change = install("user", None, CMD, home=home)
    path = home / ".claude" / "settings.json"
    assert change.path == path and change.created_file and change.action == "installed"
    assert json.loads(path.read_text())["hooks"]["PreCompact"][0]["hooks"][0]["command"] == CMD
    change = uninstall("user", home=home)
    assert change.deleted_file and not path.exists()
    assert uninstall("user", home=home).action == "absent"


def test_a_symlinked_settings_file_stays_a_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(SETTINGS_TEXTS["no-hooks"])
    link = home / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    install("user", None, CMD, home=home)
    assert link.is_symlink() and "sessions hook run" in dotfiles.read_text()
    uninstall("user", home=home)
    assert link.is_symlink() and dotfiles.read_text() == SETTINGS_TEXTS["no-hooks"]


def test_malformed_file_on_disk_is_left_alone(tmp_path: Path) -> None:
    proj, settings = project(tmp_path, '{"hooks": {,}}')
    with pytest.raises(RefusedError) as info:
        install("project", proj, CMD)
    assert "not valid JSON (line 1" in str(info.value)
    assert settings.read_text() == '{"hooks": {,}}'
    settings.write_bytes(b"\xff\xfe{}")
    with pytest.raises(RefusedError):
        install("project", proj, CMD)


def test_settings_paths(tmp_path: Path) -> None:
    assert settings_path("project", tmp_path) == tmp_path / ".claude" / "settings.json"
    assert settings_path("local", tmp_path) == tmp_path / ".claude" / "settings.local.json"
    assert settings_path("user", home=tmp_path) == tmp_path / ".claude" / "settings.json"
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    assert settings_path("user", env=env) == tmp_path / "cfg" / "settings.json"
    with pytest.raises(UsageError):
        settings_path("project")
    with pytest.raises(UsageError):
        settings_path("global", tmp_path)


def test_hook_command_quotes_paths() -> None:
    command = hook_command("/opt/my tools/vault", "/home/me/My Vault")
    assert shlex.split(command) == [
        "/opt/my tools/vault",
        "--vault",
        "/home/me/My Vault",
        "sessions",
        "hook",
        "run",
    ]
    assert find_hooks(add_hooks(None, command)) == {event: [command] for event in EVENTS}


# ---- hook input -----------------------------------------------------------------------


def test_parse_hook_input(tmp_path: Path) -> None:
    transcript = tmp_path / ".claude" / "projects" / "-p" / "abc.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("{}\n")
    payload = {
        "session_id": "abc",
        "transcript_path": "~/.claude/projects/-p/abc.jsonl",
        "cwd": "/p",
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    }
    hook = parse_hook_input(json.dumps(payload).encode(), home=tmp_path)
    assert hook.transcript_path == transcript
    assert (hook.session_id, hook.cwd, hook.event) == ("abc", "/p", "SessionEnd")
    assert hook.data["reason"] == "exit"
    relative = {"transcript_path": ".claude/projects/-p/abc.jsonl", "cwd": str(tmp_path)}
    assert parse_hook_input(json.dumps(relative)).transcript_path == transcript
    assert parse_hook_input(json.dumps(relative)).session_id == "abc"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ("", UsageError),
        ("not json", UsageError),
        ("[1]", UsageError),
        ('{"session_id": "x"}', UsageError),
        ('{"transcript_path": 5}', UsageError),
        ('{"transcript_path": "relative.jsonl"}', UsageError),
        ('{"transcript_path": "/etc/passwd"}', RefusedError),
        ('{"transcript_path": "/no/such/file.jsonl"}', NotFoundError),
        (b"\xff", UsageError),
    ],
)
def test_bad_hook_input(data: str | bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_hook_input(data)


def test_hook_input_path_may_be_checked_later(tmp_path: Path) -> None:
    hook = parse_hook_input('{"transcript_path": "/later/s.jsonl"}', must_exist=False)
    assert hook.transcript_path == Path("/later/s.jsonl") and hook.session_id == "s"
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(RefusedError):
        parse_hook_input(json.dumps({"transcript_path": str(tmp_path / "dir.jsonl")}))
