"""Claude Code transcripts become session notes: parsing, rendering, redaction, merging."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from markvault.credentials.finding import REDACTED
from markvault.errors import NotFoundError, RefusedError, UsageError
from markvault.files.vault_files import VaultFiles
from markvault.markdown.parse import parse_note
from markvault.sessions.sanitize import redact, sanitize
from markvault.sessions.session import Session
from markvault.sessions.session_note import note_path, render_note
from markvault.sessions.session_summary import (
    SessionSummary,
    has_summary,
    read_summary,
    set_summary,
)
from markvault.sessions.transcript_files import (
    claude_projects_dir,
    find_transcripts,
    project_folder_names,
)
from markvault.sessions.transcript_reader import ARG_CHARS, read_transcript

PROJECTS = Path(__file__).parent / "fixtures" / "claude" / "projects"
SID = "5f0c2a9e-1b7d-4c3e-9a51-2d8e6f4b7c10"
FIXTURE = PROJECTS / "-home-me-work-shop-app" / f"{SID}.jsonl"
CWD = "/home/me/work/shop-app"
OUR_HEADING = re.compile(
    r"^(?:(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} )?(?:User|Assistant|Context compacted)$"
)

Line = dict[str, Any] | str
WriteTranscript = Callable[..., Path]


# ---- building transcripts -------------------------------------------------------------


def user(text: Any, ts: str = "2025-06-01T10:00:00Z", **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": extra.pop("uuid", None) or f"u-{abs(hash((str(text), ts)))}",
        "timestamp": ts,
        "sessionId": "s",
        "cwd": extra.pop("cwd", CWD),
        "gitBranch": extra.pop("gitBranch", "main"),
        "isSidechain": False,
        "message": {"role": "user", "content": text},
        **extra,
    }


def assistant(blocks: Any, ts: str = "2025-06-01T10:00:05Z", **extra: Any) -> dict[str, Any]:
    if isinstance(blocks, str):
        blocks = [{"type": "text", "text": blocks}]
    return {
        "type": "assistant",
        "uuid": extra.pop("uuid", None) or f"a-{abs(hash((json.dumps(blocks), ts)))}",
        "timestamp": ts,
        "sessionId": "s",
        "cwd": CWD,
        "isSidechain": False,
        "message": {
            "role": "assistant",
            "model": extra.pop("model", "claude-sonnet-4-5"),
            "content": blocks,
        },
        **extra,
    }


def tool_use(tool_id: str, name: str, **inputs: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": inputs}


def tool_result(tool_id: str, content: Any, ts: str = "2025-06-01T10:00:06Z", **kw: Any) -> Any:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content, **kw}
    return user([block], ts)


@pytest.fixture
def write_transcript(tmp_path: Path) -> WriteTranscript:
    def _write(lines: list[Line], name: str = "0a1b2c3d-session", folder: str = "proj") -> Path:
        path = tmp_path / "projects" / folder / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(
            x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines
        )
        path.write_text(text + "\n", encoding="utf-8")
        return path

    return _write


def sections(text: str) -> list[tuple[int, str]]:
    return [(s.level, s.text) for s in parse_note("sessions/x/n.md", text).sections]


def assert_only_our_headings(text: str) -> None:
    found = sections(text)
    assert found[0][0] == 1
    assert found[1:3] == [(2, "Summary"), (2, "Transcript")]
    for level, heading in found[3:]:
        assert level == 3 and OUR_HEADING.match(heading), (level, heading)


# ---- the fixture transcript -----------------------------------------------------------


@pytest.fixture(scope="module")
def session() -> Session:
    return read_transcript(FIXTURE)


@pytest.fixture(scope="module")
def note(session: Session) -> str:
    return render_note(session)


def test_fixture_session_fields(session: Session) -> None:
    assert session.session_id == SID
    assert session.project == "shop-app"
    assert session.cwd == CWD
    assert session.git_branch == "fix/rounding"
    assert session.version == "2.0.50"
    assert session.started == dt.datetime(2025, 3, 4, 9, 15, 2, tzinfo=dt.UTC)
    assert session.ended == dt.datetime(2025, 3, 5, 8, 0, 31, tzinfo=dt.UTC)
    # the first prompt, the CJK prompt, /cost and the last prompt; not meta, tool
    # results, compaction summaries or local command output
    assert session.turns == 4
    assert session.models == (
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5-20251001",
        "claude-opus-4-1-20250805",
    )
    assert dict(session.tools) == {
        "Grep": 2,
        "Read": 2,
        "Bash": 1,
        "Edit": 1,
        "Task": 1,
        "Write": 1,
    }
    assert list(session.tools)[:2] == ["Grep", "Read"]  # most used first, then by name
    assert session.files_read == ("docs/screenshot.png", "src", "src/pricing.py")
    assert session.files_modified == ("src/cart.py", "src/pricing.py")
    assert session.malformed_lines == 2
    # file-history-snapshot, system, isMeta, local-command-stdout, queue-operation
    assert session.skipped_lines == 5
    assert session.subagent_messages == 4
    assert session.compactions == 1
    assert session.titles == ("Fix checkout rounding bug",)
    assert session.title.startswith("The checkout total is off by one cent")


def test_rendered_note_parses_cleanly_with_our_frontmatter(session: Session, note: str) -> None:
    parsed = parse_note(note_path(session), note)
    assert parsed.problems == ()
    assert parsed.kind == "session"
    assert parsed.id == f"session-{SID}"
    assert parsed.title == session.title
    assert parsed.tags == ("claude-code",)
    meta = parsed.metadata
    assert meta["session_id"] == SID
    assert meta["project"] == "shop-app"
    assert meta["cwd"] == CWD
    assert meta["git_branch"] == "fix/rounding"
    assert meta["started"] == "2025-03-04T09:15:02Z"
    assert meta["ended"] == "2025-03-05T08:00:31Z"
    assert meta["created"] == "2025-03-04"
    assert meta["turns"] == 4
    assert meta["models"] == list(session.models)
    assert meta["tools"] == ["Grep", "Read", "Bash", "Edit", "Task", "Write"]
    assert meta["tool_calls"] == dict(session.tools)
    assert meta["files_read"] == ["docs/screenshot.png", "src", "src/pricing.py"]
    assert meta["files_modified"] == ["src/cart.py", "src/pricing.py"]
    assert_only_our_headings(note)


def test_transcript_layout(note: str) -> None:
    assert "\n## Summary\n\n<!--" in note
    assert "### 09:15 User\n\n> The checkout total is off by one cent" in note
    assert "### 09:15 Assistant\n\n> I'll look at the pricing module first.\n\n- tool: Read" in note
    assert "### 2025-03-05 08:00 User\n\n> Thanks, please open a PR." in note  # another day
    assert "### 09:30 User\n\n> /cost\n" in note  # a slash command is a prompt
    assert "Total cost" not in note  # its output is not
    assert "Caveat:" not in note  # meta lines are not
    assert "2 unreadable lines skipped" in note
    assert note.endswith("> Done: https://github.com/me/shop-app/pull/7\n")
    assert note.count("Done: https://github.com") == 1  # the duplicated line is read once


def test_tool_calls_are_one_line_each_with_their_key_argument(note: str) -> None:
    tool_lines = [line for line in note.split("\n") if line.startswith("- tool: ")]
    assert tool_lines == [
        "- tool: Read `src/pricing.py`",
        "- tool: Grep `round\\(`",
        "- tool: Bash `pytest -q tests/test_pricing.py …` (error)",
        "- tool: Edit `src/pricing.py`",
        "- tool: Task `Check other rounding sites`",
        "- tool: Write `src/cart.py`",
        "- tool: Read `docs/screenshot.png`",
    ]


def test_huge_tool_result_is_cut_to_a_few_lines(note: str) -> None:
    block = note.split("- tool: Read `src/pricing.py`\n", 1)[1].split("\n- tool:", 1)[0]
    assert block.split("\n") == [
        "  ```text",
        "       1→line 1 of pricing.py",
        "       2→line 2 of pricing.py",
        "       3→line 3 of pricing.py",
        "  … (1997 more lines)",
        "  ```",
    ]
    assert "line 4 of pricing.py" not in note


def test_error_results_shown_quiet_tool_results_not(note: str) -> None:
    assert "1 failed, 12 passed" in note
    assert "has been updated" not in note  # a successful Edit's result is noise
    assert "File created successfully" not in note


def test_image_result_becomes_a_placeholder(session: Session, note: str) -> None:
    assert "  [image: image/png, 2 KB]" in note
    assert "base64" not in note
    longest_word = max(len(w) for w in note.split())
    assert longest_word < 200


def test_thinking_is_not_rendered(note: str) -> None:
    assert "SECRET THOUGHTS" not in note


def test_sidechain_is_summarised_in_one_line(note: str) -> None:
    assert (
        "- subagent: `Search the codebase for other uses of round() on money values.` "
        "(4 messages; tools: Grep ×1)"
    ) in note
    # The subagent's own messages are not quoted; its report shows as the Task result.
    assert "> Two more sites" not in note
    assert "  Two more sites: src/cart.py:17 and src/invoice.py:88." in note


def test_compaction_summary_is_its_own_section(note: str) -> None:
    assert "### 09:30 Context compacted\n\n> This session is being continued" in note
    assert "> 2. Patched src/cart.py." in note


def test_unicode_and_cjk_prompt_kept_and_contained(note: str) -> None:
    assert "> 谢谢！请也修复 cart.py 里的问题 🙏" in note
    # Its heading, rule and unclosed fence stay inside the quote:
    assert "> # Not a heading\n> ---\n> ```python\n> print('unclosed fence')\n\n### 09:20" in note


def test_unchanged_reimport_is_byte_identical(session: Session, note: str) -> None:
    assert render_note(session, note) == note
    assert render_note(read_transcript(FIXTURE), note) == note


# ---- robustness -----------------------------------------------------------------------


def test_malformed_lines_never_fatal(write_transcript: WriteTranscript, tmp_path: Path) -> None:
    path = write_transcript(
        [
            user("first prompt"),
            "",
            "   ",
            "[1, 2, 3]",
            '"just a string"',
            "{bad json",
            "[" * 100_000 + "]" * 100_000,
            {"type": "user", "uuid": "no-message", "message": "not an object"},
            {"type": "assistant", "uuid": "x", "message": {"content": 42}},
            {"type": "user", "uuid": "y", "message": {"content": [None, 3, {"type": "text"}]}},
            {"type": "brand-new-type", "foo": 1},
            assistant("still here", ts="not a timestamp"),
        ]
    )
    with path.open("ab") as fh:
        fh.write(b"\xff\xfe invalid utf-8 \x00 bytes\n")
        fh.write(json.dumps(user("last prompt", ts="2025-06-01T11:00:00Z")).encode())  # no \n
    session = read_transcript(path)
    assert session.malformed_lines == 6
    assert session.turns == 2
    note = render_note(session)
    assert "> still here" in note and "> last prompt" in note
    assert "\x00" not in note
    assert_only_our_headings(note)


def test_oversized_line_is_skipped_unread(write_transcript: WriteTranscript) -> None:
    path = write_transcript(
        [
            user("before"),
            user("x" * 5000, ts="2025-06-01T10:01:00Z"),
            user("after", ts="2025-06-01T10:02:00Z"),
        ]
    )
    session = read_transcript(path, max_line_bytes=1000)
    assert session.oversized_lines == 1
    assert [e.text for e in session.events] == ["before", "after"]
    assert "1 unreadable line skipped" in render_note(session)


def test_long_prompt_is_cut(write_transcript: WriteTranscript) -> None:
    session = read_transcript(write_transcript([user("word " * 40_000)]))
    note = render_note(session)
    assert "more characters)" in note
    assert len(note) < 40_000


def test_missing_and_non_file_transcripts(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        read_transcript(tmp_path / "nope.jsonl")
    with pytest.raises(RefusedError):
        read_transcript(tmp_path)


def test_empty_transcript_renders(write_transcript: WriteTranscript) -> None:
    session = read_transcript(write_transcript([], name="deadbeef-0000"))
    note = render_note(session)
    parsed = parse_note(note_path(session), note)
    assert parsed.title == "Session deadbeef"
    assert parsed.problems == ()
    assert note_path(session) == "sessions/unknown/undated Session deadbeef deadbeef.md"


def test_user_text_cannot_break_the_note_structure(write_transcript: WriteTranscript) -> None:
    nasty = (
        "---\ntitle: hijacked\n---\n## Transcript\n# Heading\nSetext\n======\n"
        "<!-- unclosed comment\n<script>\n```\nunclosed fence\n~~~~"
    )
    path = write_transcript(
        [
            user(nasty),
            assistant(
                [
                    {"type": "text", "text": nasty},
                    tool_use("t1", "Bash", command="echo '```' `date` #notatag [[NotALink]]"),
                ]
            ),
            tool_result("t1", "````\n## not a heading\n```\n<!--"),
            user("second prompt", ts="2025-06-01T10:05:00Z"),
            assistant("second answer", ts="2025-06-01T10:05:05Z"),
        ]
    )
    note = render_note(read_transcript(path))
    parsed = parse_note("sessions/x/n.md", note)
    assert parsed.title.startswith("title: hijacked --- ## Transcript")  # a title, not YAML
    assert_only_our_headings(note)
    assert [s.text for s in parsed.sections][3:] == [
        "10:00 User",
        "10:00 Assistant",
        "10:05 User",
        "10:05 Assistant",
    ]
    assert "- tool: Bash ``echo '```' `date` #notatag [[NotALink]]``" not in note  # longer ticks
    assert "- tool: Bash ````echo '```' `date` #notatag [[NotALink]]````" in note
    assert "  `````text\n  ````\n  ## not a heading\n  ```\n  … (1 more line)\n  `````" in note
    assert parsed.tags == ("claude-code",)  # no tag or link out of tool lines
    assert parsed.links == ()
    assert "> second answer" in note


def test_paths_outside_the_project_stay_absolute(write_transcript: WriteTranscript) -> None:
    path = write_transcript(
        [
            user("go"),
            assistant(
                [
                    tool_use("a", "Read", file_path="/etc/hosts"),
                    tool_use("b", "Edit", file_path=CWD + "/pkg/mod.py"),
                    tool_use("c", "NotebookEdit", notebook_path=CWD + "/nb.ipynb"),
                    tool_use("d", "Bash", command="x" * 500),
                    tool_use("e", "WebFetch", url="https://example.com/a"),
                    tool_use("f", "mcp__markvault__search", query="decisions"),
                    tool_use("g", "TodoWrite", todos=[{"content": "a"}, {"content": "b"}]),
                    tool_use("h", "Weird", nothing=1),
                ]
            ),
        ]
    )
    session = read_transcript(path)
    note = render_note(session)
    assert session.files_read == ("/etc/hosts",)
    assert session.files_modified == ("nb.ipynb", "pkg/mod.py")
    lines = [line for line in note.split("\n") if line.startswith("- tool: ")]
    assert lines[0] == "- tool: Read `/etc/hosts`"
    assert (
        lines[3].startswith("- tool: Bash `xxx")
        and len(lines[3]) <= len("- tool: Bash ``") + ARG_CHARS
    )
    assert lines[4:] == [
        "- tool: WebFetch `https://example.com/a`",
        "- tool: mcp__markvault__search `decisions`",
        "- tool: TodoWrite `2 items`",
        "- tool: Weird",
    ]


# ---- redaction and private spans ------------------------------------------------------

SECRETS = {
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd",
    "openai": "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github_pat": "ghp_1234567890abcdefghijABCDEFGHIJ123456",
    "github_oauth": "gho_1234567890abcdefghijABCDEFGHIJ123456",
    "github_fine": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "jwt": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ),
}
ASSIGNMENTS = {
    "PASSWORD=hunter2-plain": "hunter2-plain",
    "API_KEY: plainvalue123": "plainvalue123",
    "export SECRET=s3cr3t-value": "s3cr3t-value",
    "TOKEN=tok_abcdef": "tok_abcdef",
    'DB_PASSWORD="quoted pass phrase"': "quoted pass phrase",
    '{"api_key": "json-secret-1"}': "json-secret-1",
    "client_secret = 'single-quoted'": "single-quoted",
    "Authorization: Bearer abcdefghij0123456789xyz": "abcdefghij0123456789xyz",
    "git clone https://me:hunter3@github.com/x/y.git": "hunter3",
}
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9qwerty\nZXhhbXBsZWtleWRhdGE=\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_every_token_pattern_is_redacted(name: str) -> None:
    secret = SECRETS[name]
    out = redact(f"key {secret} end")
    assert secret not in out and out == f"key {REDACTED} end"


@pytest.mark.parametrize("text", sorted(ASSIGNMENTS))
def test_assignments_lose_their_values(text: str) -> None:
    out = redact(text)
    assert ASSIGNMENTS[text] not in out
    assert REDACTED in out


def test_pem_blocks_are_redacted_even_when_cut() -> None:
    assert redact(f"a\n{PEM}\nb") == f"a\n{REDACTED}\nb"
    assert redact("x -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg") == f"x {REDACTED}"


def test_ordinary_text_is_not_redacted() -> None:
    text = (
        "max_tokens=4096 input_tokens: 10 the token budget, a bearer responsibility, "
        "task-sk-runner, AKIA, Bearer $TOKEN, sk-short, SECRET="
    )
    assert redact(text) == text
    assert redact(redact("TOKEN=abc")) == "TOKEN=[REDACTED]"  # idempotent


def test_secrets_never_reach_the_note(write_transcript: WriteTranscript) -> None:
    everything = " ".join(SECRETS.values()) + "\n" + "\n".join(ASSIGNMENTS) + "\n" + PEM
    token = SECRETS["github_pat"]
    path = write_transcript(
        [
            user(
                f"Use {SECRETS['anthropic']} please",
                gitBranch=f"feature/{token}",
                cwd=f"/home/me/{SECRETS['aws']}/proj",
            ),
            assistant(
                [
                    {"type": "text", "text": everything},
                    tool_use("t1", "Bash", command=f"export API_KEY={SECRETS['openai']} && run"),
                    tool_use("t2", "Read", file_path=f"/tmp/{SECRETS['slack']}.txt"),
                ]
            ),
            tool_result("t1", everything),
            {"type": "summary", "summary": f"Title with {SECRETS['google']}", "leafUuid": "z"},
        ]
    )
    session = read_transcript(path)
    note = render_note(session)
    for secret in [*SECRETS.values(), *ASSIGNMENTS.values(), "MIIEowIBAAKCAQEA7bq9qwerty"]:
        assert secret not in note, secret
        assert all(secret not in str(v) for v in vars(session).values()), secret
    assert parse_note("n.md", note).metadata["git_branch"] == "feature/[REDACTED]"
    assert "- tool: Bash `export API_KEY=[REDACTED] && run`" in note
    assert session.redactions > len(SECRETS)
    assert parse_note("n.md", note).problems == ()


def test_private_spans_are_dropped_entirely(write_transcript: WriteTranscript) -> None:
    path = write_transcript(
        [
            user("keep <private>my pin is 4321</private> this and <PRIVATE>x9</Private> that"),
            assistant(
                [
                    {"type": "text", "text": "answer <private>line one\nline two</private> done"},
                    tool_use("t1", "Bash", command="echo <private>hidden-arg</private>visible"),
                ]
            ),
            tool_result("t1", "out <private>hidden-result"),
            user("tail <private>never closed\nsecond line\n\nthird", ts="2025-06-01T10:01:00Z"),
            user("next message survives", ts="2025-06-01T10:02:00Z"),
            user("<private>all of it</private>", ts="2025-06-01T10:03:00Z"),
        ]
    )
    session = read_transcript(path)
    note = render_note(session)
    for hidden in ("4321", "x9", "line one", "line two", "hidden", "never closed", "third"):
        assert hidden not in note, hidden
    assert "private" not in note.lower()
    assert REDACTED not in note
    assert "> keep  this and  that" in note
    assert "> answer  done" in note
    assert "- tool: Bash `echo visible`" in note
    assert "> tail" in note and "> next message survives" in note
    assert session.turns == 3  # the all-private prompt is not a turn
    assert sanitize("a<private>b") == "a"


# ---- re-import ------------------------------------------------------------------------


def _partial(tmp_path: Path, count: int) -> Path:
    lines = FIXTURE.read_text(encoding="utf-8").split("\n")
    path = tmp_path / "projects" / "-home-me-work-shop-app" / FIXTURE.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines[:count]) + "\n", encoding="utf-8")
    return path


def test_grown_session_gives_the_longer_transcript_at_the_same_path(tmp_path: Path) -> None:
    early = read_transcript(_partial(tmp_path, 12))
    first = render_note(early)
    full = read_transcript(FIXTURE)
    second = render_note(full, first)
    assert second == render_note(full)  # the same as importing the whole session at once
    assert len(second) > len(first)
    assert "谢谢" not in first and "谢谢" in second
    assert note_path(early) == note_path(full)
    assert parse_note("n.md", first).metadata["turns"] == 1
    assert parse_note("n.md", second).metadata["turns"] == 4


def test_summary_and_personal_edits_survive_reimport(tmp_path: Path) -> None:
    early = read_transcript(_partial(tmp_path, 12))
    summary = SessionSummary(
        overview="Fixed the one-cent checkout error.",
        decisions=("Use Decimal for money.",),
        outcomes=("src/pricing.py patched.",),
        open_items=("Check invoices.",),
        tags=("money",),
    )
    note = set_summary(render_note(early), summary)
    note = note.replace("tags: [claude-code, money]", "tags: [claude-code, money, mine]")
    note = note.replace("kind: session\n", "kind: session\nreviewed: yes  # by me\n")
    note = note.replace(f"title: '{early.title}'", "title: My better title")
    note += "\n## My notes\n\nRemember the invoices.\n"
    summary_block = note[note.index("## Summary") : note.index("## Transcript")]

    updated = render_note(read_transcript(FIXTURE), note)
    assert updated[updated.index("## Summary") : updated.index("## Transcript")] == summary_block
    assert "reviewed: yes  # by me\n" in updated
    assert "title: My better title\n" in updated
    assert "tags: [claude-code, money, mine]\n" in updated
    assert updated.endswith("\n## My notes\n\nRemember the invoices.\n")
    assert "谢谢" in updated
    parsed = parse_note("n.md", updated)
    assert parsed.metadata["turns"] == 4
    assert parsed.title == "My better title"
    assert read_summary(updated) == SessionSummary(
        overview=summary.overview,
        decisions=summary.decisions,
        outcomes=summary.outcomes,
        open_items=summary.open_items,
        tags=("claude-code", "money", "mine"),
    )
    assert render_note(read_transcript(FIXTURE), updated) == updated


def test_reimport_keeps_crlf_and_bom(session: Session, note: str) -> None:
    crlf = "\ufeff" + note.replace("\n", "\r\n")
    assert render_note(session, crlf) == crlf


def test_reimport_restores_owned_keys_and_a_lost_transcript(session: Session, note: str) -> None:
    damaged = note.replace("turns: 4\n", "turns: 99\n").split("## Transcript")[0]
    damaged = damaged.replace("project: shop-app\n", "")
    repaired = render_note(session, damaged)
    meta = parse_note("n.md", repaired).metadata
    assert meta["turns"] == 4 and meta["project"] == "shop-app"
    assert repaired.count("## Transcript") == 1


def test_reimport_refuses_broken_frontmatter(session: Session) -> None:
    with pytest.raises(RefusedError):
        render_note(session, "---\ntitle: [unclosed\n---\n# x\n")


def test_reimport_into_a_note_without_frontmatter(session: Session) -> None:
    out = render_note(session, "# Hand made\n\nSome words.\n")
    parsed = parse_note("n.md", out)
    assert parsed.id == f"session-{SID}" and parsed.metadata["turns"] == 4
    assert "# Hand made\n\nSome words.\n\n## Transcript" in out


# ---- summaries ------------------------------------------------------------------------


def test_summary_roundtrip_and_has_summary(note: str) -> None:
    assert not has_summary(note)
    assert read_summary(note) is None
    summary = SessionSummary(
        overview="We fixed rounding.\n\nA second paragraph.",
        decisions=("Use Decimal, not float.", "Round half up at the end."),
        outcomes=("Tests pass.",),
        open_items=("Audit invoices.",),
        tags=("Money", "#rounding", "money"),
    )
    out = set_summary(note, summary)
    assert has_summary(out)
    assert "## Summary\n\nWe fixed rounding.\n\nA second paragraph.\n\n### Decisions\n\n" in out
    assert "- Use Decimal, not float.\n- Round half up at the end.\n\n### Outcomes" in out
    back = read_summary(out)
    assert back is not None
    assert back.overview == summary.overview
    assert back.decisions == summary.decisions
    assert back.outcomes == summary.outcomes
    assert back.open_items == summary.open_items
    assert back.tags == ("claude-code", "Money", "rounding")
    assert out[out.index("## Transcript") :] == note[note.index("## Transcript") :]
    headings = sections(out)
    assert headings[1:5] == [(2, "Summary"), (3, "Decisions"), (3, "Outcomes"), (3, "Open items")]
    assert parse_note("n.md", out).tags == ("claude-code", "Money", "rounding")


def test_summary_replaces_the_previous_one(note: str) -> None:
    first = set_summary(note, SessionSummary(overview="One.", decisions=("A",)))
    second = set_summary(first, SessionSummary(overview="Two.", outcomes=("B",)))
    assert "One." not in second and "### Decisions" not in second
    back = read_summary(second)
    assert back is not None and back.overview == "Two." and back.outcomes == ("B",)
    assert second[second.index("## Transcript") :] == note[note.index("## Transcript") :]


def test_summary_text_cannot_break_structure(note: str) -> None:
    summary = SessionSummary(
        overview="## Transcript\n```\n<!-- x",
        decisions=(
            "# heading",
            "- nested",
            "```",
            f"key {SECRETS['aws']}",
            "<private>no</private>ok",
        ),
    )
    out = set_summary(note, summary)
    found = sections(out)
    assert found[1:4] == [(2, "Summary"), (3, "Decisions"), (2, "Transcript")]
    assert SECRETS["aws"] not in out and ">no<" not in out
    back = read_summary(out)
    assert back is not None
    assert back.overview == "## Transcript ``` <!-- x"
    assert back.decisions == ("# heading", "- nested", "```", f"key {REDACTED}", "ok")


def test_summary_inserted_when_the_section_is_missing(session: Session, note: str) -> None:
    without = note.replace(note[note.index("## Summary") : note.index("## Transcript")], "")
    out = set_summary(without, SessionSummary(overview="Inserted."))
    assert sections(out)[1:3] == [(2, "Summary"), (2, "Transcript")]
    assert read_summary(out) == SessionSummary(overview="Inserted.", tags=("claude-code",))


def test_summary_validation() -> None:
    with pytest.raises(UsageError):
        set_summary("# x\n", SessionSummary())
    with pytest.raises(UsageError):
        SessionSummary.from_dict({"overview": "x", "verdict": "y"})
    with pytest.raises(UsageError):
        SessionSummary.from_dict({"decisions": [1, 2]})
    data = {"overview": "o", "decisions": "one", "outcomes": [], "open_items": ["x"], "tags": []}
    summary = SessionSummary.from_dict(data)
    assert summary.decisions == ("one",)
    assert SessionSummary.from_dict(summary.to_dict()) == summary


def test_a_hand_written_summary_is_read_back() -> None:
    text = (
        "# T\n\n## Summary\n\nFirst line\nsame paragraph.\n\n### Decisions\n\n"
        "* Alpha\n  continued\n1. Beta\n\n### Other\n\n- ignored\n\n## Transcript\n"
    )
    back = read_summary(text)
    assert back == SessionSummary(
        overview="First line same paragraph.", decisions=("Alpha continued", "Beta")
    )


# ---- discovery and paths --------------------------------------------------------------


def test_find_transcripts_in_the_fixture_tree() -> None:
    found = find_transcripts(PROJECTS)
    assert [t.session_id for t in found] == [SID]
    assert found[0].project_folder == "-home-me-work-shop-app"
    assert find_transcripts(PROJECTS, project=CWD)[0].path == FIXTURE
    assert find_transcripts(PROJECTS, project=CWD + "/")[0].path == FIXTURE


def test_find_transcripts_filters(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    folder = root / "-home-me-my-app-v2"  # the newer encoding of /home/me/my_app.v2
    folder.mkdir(parents=True)
    old, new = folder / "old.jsonl", folder / "new.jsonl"
    for path in (old, new, folder / "agent-1234abcd.jsonl", folder / "notes.txt"):
        path.write_text("{}\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.jsonl").write_text("{}\n")
    long_ago = dt.datetime(2024, 1, 1).timestamp()
    os.utime(old, (long_ago, long_ago))
    assert [t.path.name for t in find_transcripts(root)] == ["old.jsonl", "new.jsonl"]
    assert [t.path.name for t in find_transcripts(root, since=dt.date(2025, 1, 1))] == ["new.jsonl"]
    since = dt.datetime(2023, 12, 31, tzinfo=dt.UTC)
    assert len(find_transcripts(root, since=since)) == 2
    assert len(find_transcripts(root, project="/home/me/my_app.v2")) == 2
    with pytest.raises(NotFoundError):
        find_transcripts(root, project="/somewhere/else")
    with pytest.raises(NotFoundError):
        find_transcripts(tmp_path / "missing")


def test_project_folder_names() -> None:
    assert project_folder_names("/home/me/proj") == ["-home-me-proj"]
    assert project_folder_names("/home/me/my_app.v2") == [
        "-home-me-my_app-v2",
        "-home-me-my-app-v2",
    ]


def test_claude_projects_dir(tmp_path: Path) -> None:
    assert claude_projects_dir(tmp_path, env={}) == tmp_path / ".claude" / "projects"
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    assert claude_projects_dir(tmp_path, env=env) == tmp_path / "cfg" / "projects"


def test_note_path_is_stable_and_safe(session: Session, tmp_path: Path) -> None:
    path = note_path(session)
    assert path == (
        "sessions/shop-app/2025-03-04 The checkout total is off by one cent for some 5f0c2a9e.md"
    )
    odd = Session(
        session_id="../../etc/passwd",
        project=".hidden:proj",
        cwd="",
        git_branch="",
        started=None,
        ended=None,
        turns=1,
        models=(),
        tools={},
        files_read=(),
        files_modified=(),
        events=(),
        titles=("100%25 done: a/b #tag [[x]] ^y?",),
    )
    odd_path = note_path(odd)
    assert odd_path.startswith("sessions/hidden proj/undated 100 25 done a b tag x y ")
    files = VaultFiles(tmp_path)
    for rel in (path, odd_path):
        files.safe_path(rel)  # raises when the vault would refuse the path


def test_cjk_title_path(write_transcript: WriteTranscript) -> None:
    session = read_transcript(write_transcript([user("修复购物车里的四舍五入问题" * 5)]))
    assert note_path(session).startswith("sessions/shop-app/2025-06-01 修复购物车")
    assert len(session.title) <= 80


# ---- living with markvault's own edits ------------------------------------------------


def test_edits_through_markvault_survive_reimport(session: Session, note: str) -> None:
    from markvault.markdown.edit import apply_edit
    from markvault.types.edits import Edit

    # markvault writes frontmatter keys the way the importer does: setting a key to its
    # current value changes nothing.
    for key in ("turns", "tools", "tool_calls", "models", "files_read", "started", "tags"):
        value = parse_note("n.md", note).metadata[key]
        assert apply_edit(note, Edit("set_key", key=key, value=value)) == note, key
    edited = apply_edit(
        note, Edit("replace_section", heading="## Summary", text="Written by an agent.\n")
    )
    edited = apply_edit(edited, Edit("set_key", key="tags", value=["claude-code", "agent"]))
    assert has_summary(edited)
    again = render_note(session, edited)
    assert again == edited
    assert read_summary(again) == SessionSummary(
        overview="Written by an agent.", tags=("claude-code", "agent")
    )


def test_base64_blobs_collapse_but_long_plain_runs_stay() -> None:
    import base64

    blob = base64.b64encode(bytes(range(256)) * 3).decode()
    assert sanitize(f"see data:image/png;base64,{blob} ok") == "see [base64 data, 1046 chars] ok"
    assert sanitize("x" * 300) == "x" * 300
    assert sanitize("ab01" * 100) == "ab01" * 100
    assert sanitize("\x1b[31mred\x1b[0m\r\nnext\u2028line\ud800") == "red\nnext\nline\ufffd"


def test_summaries_written_from_the_session_template_are_read() -> None:
    # templates/session.md keeps the lists in level-2 sections beside ## Summary
    text = (
        "---\ntitle: Hand-written\ntags: [search, design]\n---\n\n# Hand-written\n\n"
        "## Summary\n\nWorked out how search ranks.\n\n"
        "## Decisions\n\n<!-- One bullet per decision. -->\n\n"
        "- **Hybrid is the default.** Keyword and vector\n  ranks are fused.\n"
        "- Bigrams for CJK.\n\n"
        "## Outcomes\n\n- Knowledge notes written.\n\n"
        "## Open items\n\n<!-- What is left. -->\n\n## Transcript\n\n<!-- Optional -->\n"
    )
    assert read_summary(text) == SessionSummary(
        overview="Worked out how search ranks.",
        decisions=(
            "**Hybrid is the default.** Keyword and vector ranks are fused.",
            "Bigrams for CJK.",
        ),
        outcomes=("Knowledge notes written.",),
        tags=("search", "design"),
    )
    placeholders_only = "# T\n\n## Summary\n\n<!-- x -->\n\n## Decisions\n\n<!-- y -->\n"
    assert read_summary(placeholders_only) is None
    assert not has_summary(placeholders_only)
