"""Sessions wired into the vault: import, re-import, listing, reading, summaries, scopes,
timelines. Transcripts are in Claude Code's format (the fixture, and ones built here)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from markvault import Vault
from markvault.errors import ConflictError, NotFoundError, RefusedError, UsageError
from markvault.runtime.local_host import local_vault, open_local
from markvault.runtime.shared_host import connect
from markvault.sessions.session_summary import SessionSummary, read_summary
from markvault.types.search import Filters, SearchRequest
from markvault.types.sessions import SessionQuery

from .conftest import checksums
from .test_sessions import FIXTURE, SID, assistant, user

SHORT = SID[:8]
OTHER_SID = "9d8e7f60-aaaa-4bbb-8ccc-000000000002"


def transcripts(root: Path, fixture_lines: int | None = None) -> Path:
    """A projects folder: the fixture (its first ``fixture_lines`` lines) and a second
    project with one session built here."""
    shop = root / "-home-me-work-shop-app"
    shop.mkdir(parents=True, exist_ok=True)
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    (shop / FIXTURE.name).write_text("\n".join(lines[:fixture_lines]) + "\n", encoding="utf-8")
    other = root / "-home-me-work-kiosk"
    other.mkdir(exist_ok=True)
    kiosk = [
        user("Why does the kiosk printer jam on receipts?", "2025-04-01T08:00:00Z", cwd=K_CWD),
        assistant("The driver sends a form feed after every line.", "2025-04-01T08:00:09Z"),
        user("Switch to the ESC/POS driver then.", "2025-04-01T08:05:00Z", cwd=K_CWD),
        assistant("Done; receipts print in one piece now.", "2025-04-01T08:06:00Z"),
    ]
    text = "\n".join(json.dumps(x) for x in kiosk) + "\n"
    (other / f"{OTHER_SID}.jsonl").write_text(text, encoding="utf-8")
    return root


K_CWD = "/home/me/work/kiosk"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    return transcripts(tmp_path / "claude" / "projects")


@pytest.fixture
def vault(vault_dir: Path) -> Iterator[Vault]:
    v = open_local(vault_dir, vault_dir.parent / "index")
    yield v
    v.close()


def session_file(vault_dir: Path, sid: str = SID) -> Path:
    (path,) = [p for p in vault_dir.rglob("*.md") if f"session_id: {sid}" in p.read_text()]
    return path


def summary() -> dict[str, Any]:
    return {
        "overview": "Fixed the one-cent checkout error.",
        "decisions": ["Use Decimal for money values", "Round once, at the end"],
        "outcomes": ["src/pricing.py and src/cart.py patched"],
        "open_items": ["invoice.py still rounds floats"],
        "tags": ["money"],
    }


# ---- import ---------------------------------------------------------------------------


def test_import_creates_one_note_per_session_and_is_idempotent(
    vault: Vault, vault_dir: Path, projects: Path
) -> None:
    report = vault.import_sessions(projects)
    assert (report.read, report.new, report.updated, report.unchanged) == (2, 2, 0, 0)
    assert report.malformed_lines == 2 and report.failed == 0 and report.index == "refreshed"
    paths = sorted(s["path"] for s in report.sessions)
    assert paths[0].startswith("sessions/kiosk/2025-04-01 Why does the kiosk printer jam")
    assert paths[1].startswith("sessions/shop-app/2025-03-04 The checkout total")
    assert vault.status()["by_kind"]["session"] == 2
    before = checksums(vault_dir)
    again = vault.import_sessions(projects)
    assert (again.new, again.updated, again.unchanged, again.index) == (0, 0, 2, "unchanged")
    assert checksums(vault_dir) == before


def test_unchanged_transcripts_are_not_read_again(
    vault: Vault, vault_dir: Path, projects: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert vault.import_sessions(projects).read == 2
    again = vault.import_sessions(projects)
    assert (again.transcripts, again.read, again.unchanged) == (2, 0, 2)
    assert {s["path"] for s in again.sessions} == {
        str(session_file(vault_dir).relative_to(vault_dir)),
        str(session_file(vault_dir, OTHER_SID).relative_to(vault_dir)),
    }
    # A note changed since (a summary, a person's edit) is read again and re-rendered:
    # the import restores the transcript section and keys it owns.
    note = session_file(vault_dir)
    note.write_text(note.read_text().replace("turns: 4", "turns: 40"))
    vault.reindex(vectors=False)
    fixed = vault.import_sessions(projects)
    assert (fixed.read, fixed.updated) == (1, 1) and "turns: 4\n" in note.read_text()
    assert vault.import_sessions(projects).read == 0
    # Another renderer (a new markvault) reads everything again.
    monkeypatch.setattr("markvault.core.session_import.renderer_fingerprint", lambda: "another")
    assert vault.import_sessions(projects).read == 2


def test_a_grown_session_updates_its_note_and_keeps_the_summary(
    vault: Vault, vault_dir: Path, tmp_path: Path
) -> None:
    root = transcripts(tmp_path / "projects", fixture_lines=12)
    assert vault.import_sessions(root).new == 2
    note = session_file(vault_dir)
    assert "谢谢" not in note.read_text()
    read = vault.read_session(SHORT)
    assert read["has_summary"] is False and read["session"]["turns"] == 1
    saved = vault.save_session_summary(SHORT, summary(), read["hash"])
    assert saved["changed"] and saved["hash"] != read["hash"]
    summary_block = note.read_text().split("## Summary")[1].split("## Transcript")[0]

    transcripts(root)  # the whole session now
    report = vault.import_sessions(root)
    assert (report.new, report.updated, report.unchanged) == (0, 1, 1)
    text = note.read_text()
    assert "谢谢" in text and text.split("## Summary")[1].split("## Transcript")[0] == summary_block
    assert read_summary(text) == SessionSummary.from_dict(
        {**summary(), "tags": ["claude-code", "money"]}
    )
    assert vault.read_session(SID)["session"]["turns"] == 4


def test_a_moved_note_is_found_by_its_session_id(
    vault: Vault, vault_dir: Path, projects: Path
) -> None:
    vault.import_sessions(projects)
    note = session_file(vault_dir)
    target = vault_dir / "archive" / "checkout.md"
    target.parent.mkdir()
    note.rename(target)
    vault.reindex(vectors=False)
    report = vault.import_sessions(projects)
    assert report.new == 0 and not note.exists()
    moved = vault.list_sessions(SessionQuery(project="shop-app"))["sessions"][0]
    assert moved["path"] == "archive/checkout.md"


def test_notes_the_index_has_not_seen_are_not_duplicated(
    vault: Vault, vault_dir: Path, projects: Path
) -> None:
    vault.import_sessions(projects)
    note = session_file(vault_dir)
    moved = vault_dir / "elsewhere.md"
    note.rename(moved)  # not reindexed: only the files know where it is
    report = vault.import_sessions(projects)
    assert report.new == 0 and report.unchanged == 2
    assert [p.name for p in vault_dir.rglob("*.md") if SID in p.read_text()] == ["elsewhere.md"]


def test_a_deleted_note_comes_back(vault: Vault, vault_dir: Path, projects: Path) -> None:
    vault.import_sessions(projects)
    note = session_file(vault_dir)
    note.unlink()
    assert vault.import_sessions(projects).new == 1
    assert note.is_file()


def test_bad_transcripts_are_counted_never_fatal(
    vault: Vault, vault_dir: Path, projects: Path
) -> None:
    folder = projects / "-home-me-work-shop-app"
    (folder / "empty-session.jsonl").write_text('{"type": "summary", "summary": "x"}\n')
    (folder / "garbage.jsonl").write_bytes(b"\xff\xfe not json\n{]\n")
    (folder / "agent-1234.jsonl").write_text(json.dumps(user("okapi stripes")) + "\n")
    report = vault.import_sessions(projects)
    assert (report.read, report.new, report.empty, report.failed) == (4, 2, 2, 0)
    assert report.malformed_lines == 2 + 2
    assert not [p for p in vault_dir.rglob("*.md") if "okapi" in p.read_text()]


def test_an_edit_made_meanwhile_is_never_overwritten(
    vault: Vault, vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = transcripts(tmp_path / "projects", fixture_lines=12)
    vault.import_sessions(root)
    transcripts(root)
    note = session_file(vault_dir)
    real_replace = vault.host.core().keeper.files.replace

    def person_edits_first(rel: str, text: str, expected_hash: str) -> str:
        note.write_text(note.read_text() + "\nmy own line\n")
        return real_replace(rel, text, expected_hash)

    monkeypatch.setattr(vault.host.core().keeper.files, "replace", person_edits_first)
    report = vault.import_sessions(root)
    assert report.failed == 1 and "changed since it was read" in report.errors[0]["message"]
    assert note.read_text().endswith("\nmy own line\n") and "谢谢" not in note.read_text()


def test_conflict_markers_and_git_operations_are_refused(
    vault: Vault, vault_dir: Path, tmp_path: Path
) -> None:
    root = transcripts(tmp_path / "projects", fixture_lines=12)
    vault.import_sessions(root)
    transcripts(root)
    note = session_file(vault_dir)
    note.write_text(note.read_text() + "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> b\n")
    report = vault.import_sessions(root)
    assert report.failed == 1 and "conflict" in report.errors[0]["message"].lower()
    (vault_dir / ".git").mkdir()
    (vault_dir / ".git" / "MERGE_HEAD").write_text("abc\n")
    with pytest.raises(RefusedError):
        vault.import_sessions(root)


def test_source_forms_and_bad_arguments(vault: Vault, projects: Path, tmp_path: Path) -> None:
    one = projects / "-home-me-work-kiosk" / f"{OTHER_SID}.jsonl"
    assert vault.import_sessions(one).new == 1
    assert vault.import_sessions(one.parent).unchanged == 1  # a project's folder
    assert vault.import_sessions(projects, project=K_CWD).transcripts == 1
    assert vault.import_sessions(projects, since="2999-01-01").transcripts == 0
    with pytest.raises(NotFoundError):
        vault.import_sessions(tmp_path / "nowhere")
    with pytest.raises(NotFoundError):
        vault.import_sessions(projects, project="/not/a/project")
    with pytest.raises(UsageError):
        vault.import_sessions(one, project=K_CWD)
    with pytest.raises(UsageError):
        vault.import_sessions(projects, since="yesterday")
    text_file = tmp_path / "notes.txt"
    text_file.write_text("x")
    with pytest.raises(UsageError):
        vault.import_sessions(text_file)


def test_default_source_is_claude_codes_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcripts(tmp_path / "cfg" / "projects")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert vault.import_sessions().new == 2


BUSY_HOLDER = textwrap.dedent(
    """
    import sys
    from markvault.runtime.local_host import open_local
    v = open_local(sys.argv[1], sys.argv[2])
    v.host.core().keeper.open_index(write=True)
    print("ready", flush=True)
    sys.stdin.read()  # hold the index until the test is done with it
    """
)


def test_a_busy_index_still_imports_and_says_so(
    vault: Vault, vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = transcripts(tmp_path / "projects", fixture_lines=12)
    vault.import_sessions(root)
    vault.close()
    transcripts(root)
    holder = subprocess.Popen(
        [sys.executable, "-c", BUSY_HOLDER, str(vault_dir), str(vault_dir.parent / "index")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        hurried = dataclasses.replace(vault.settings, index_lock_wait=0.2)
        with local_vault(hurried) as waits_little:
            report = waits_little.import_sessions(root)
        assert (report.new, report.updated, report.unchanged) == (0, 1, 1)
        assert report.index == "busy" and "another markvault process" in report.notices[0]
    finally:
        holder.kill()
        holder.wait()
    assert "谢谢" in session_file(vault_dir).read_text()
    vault.reindex(vectors=False)
    assert vault.read_session(SID)["session"]["turns"] == 4


# ---- listing, reading, summaries ------------------------------------------------------


@pytest.fixture
def imported(vault: Vault, projects: Path) -> Vault:
    vault.import_sessions(projects)
    return vault


def test_list_sessions_filters_and_pages(imported: Vault) -> None:
    everything = imported.list_sessions(SessionQuery())
    assert everything["total"] == 2 and everything["next_offset"] is None
    first, second = everything["sessions"]
    assert first["session_id"] == OTHER_SID and second["session_id"] == SID  # newest first
    assert second["turns"] == 4 and second["cwd"] == "/home/me/work/shop-app"
    assert second["has_summary"] is False and second["uri"].startswith("vault://note/session-")
    page = imported.list_sessions(SessionQuery(limit=1))
    assert page["next_offset"] == 1 and len(page["sessions"]) == 1
    assert imported.list_sessions(SessionQuery(offset=5))["sessions"] == []
    assert [
        s["session_id"]
        for s in imported.list_sessions(SessionQuery(project="SHOP-APP"))["sessions"]
    ] == [SID]
    assert (
        imported.list_sessions(SessionQuery(cwd=K_CWD + "/"))["sessions"][0]["session_id"]
        == OTHER_SID
    )
    assert imported.list_sessions(SessionQuery(since="2025-03-06"))["total"] == 1
    assert imported.list_sessions(SessionQuery(until="2025-03-04"))["total"] == 1
    assert (
        imported.list_sessions(SessionQuery(since="2025-03-05", until="2025-03-05"))["total"] == 1
    )
    imported.save_session_summary(SID, summary(), imported.read_session(SID)["hash"])
    assert [
        s["session_id"] for s in imported.list_sessions(SessionQuery(has_summary=True))["sessions"]
    ] == [SID]
    assert (
        imported.list_sessions(SessionQuery(has_summary=False))["sessions"][0]["session_id"]
        == OTHER_SID
    )
    with pytest.raises(UsageError):
        imported.list_sessions(SessionQuery(limit=0))
    with pytest.raises(UsageError):
        imported.list_sessions(SessionQuery(since="last week"))


def test_hand_written_session_notes_are_listed_and_summaries_recognised(
    imported: Vault, vault_dir: Path
) -> None:
    path = vault_dir / imported.new_note("session", "Pairing on the kiosk", project="kiosk")["path"]
    listed = imported.list_sessions(SessionQuery(project="kiosk"))["sessions"]
    assert {s["title"] for s in listed} >= {"Pairing on the kiosk"}
    mine = next(s for s in listed if s["title"] == "Pairing on the kiosk")
    assert mine["has_summary"] is False  # the template's comments are no summary
    text = path.read_text().replace(
        "## Decisions\n\n<!--", "## Decisions\n\n- Keep the old driver as a fallback\n\n<!--"
    )
    path.write_text(text)
    imported.reindex(vectors=False)
    mine = next(
        s
        for s in imported.list_sessions(SessionQuery(project="kiosk"))["sessions"]
        if s["id"] == mine["id"]
    )
    assert mine["has_summary"] is True


def test_projects_overview(imported: Vault) -> None:
    imported.new_note("note", "Kiosk wiring", project="kiosk")
    projects = {p["project"]: p for p in imported.session_projects()["projects"]}
    assert projects["kiosk"]["sessions"] == 1 and projects["kiosk"]["notes"] == 1
    assert projects["shop-app"]["cwds"] == ["/home/me/work/shop-app"]
    assert projects["shop-app"]["last_active"].startswith("2025-03-05")
    assert projects["shop-app"]["summarized"] == 0


def test_read_session_pages_like_get(imported: Vault) -> None:
    whole = imported.read_session(SID)
    assert whole["path"].startswith("sessions/shop-app/") and "chunks" not in whole
    assert whole["session"]["session_id"] == SID and whole["summary"] is None
    page = imported.read_session(SHORT, max_chars=800)
    assert len(page["text"]) <= 800 and page["next_lines"]
    start = int(page["next_lines"].split(":")[0])
    rest = imported.read_session(SHORT, lines=(start, 10**9))
    assert rest["lines"][0] == start and "Done: https://github.com" in rest["text"]
    by_path = imported.read_session(whole["path"])
    by_uri = imported.read_session(whole["uri"])
    assert by_path["hash"] == by_uri["hash"] == whole["hash"]


def test_read_session_finds_turns_by_query(imported: Vault) -> None:
    found = imported.read_session(SHORT, query="Decimal rounding")
    assert found["match"] == "all" and found["total_matches"] == 2
    first = found["matches"][0]
    assert first["under"] == "09:15 Assistant" and "switch to `Decimal`" in first["text"]
    start, end = (int(x) for x in first["read"].split(":"))
    turn = imported.read_session(SHORT, lines=(start, end))
    assert turn["text"].startswith("### 09:15 Assistant") and "Decimal" in turn["text"]
    # Stemmed and folded like search; Chinese by bigrams.
    assert imported.read_session(SHORT, query="ROUNDED")["total_matches"] >= 1
    cjk = imported.read_session(SHORT, query="修复")["matches"]
    assert cjk[0]["under"] == "09:20 User"
    some = imported.read_session(SHORT, query="decimal zeppelin")
    assert some["match"] == "some" and some["total_matches"] >= 1
    assert imported.read_session(SHORT, query="zeppelin")["matches"] == []
    assert imported.read_session(SHORT, query="fix/rounding")["matches"] != []
    assert all(m["line"] > 20 for m in imported.read_session(SHORT, query="fix")["matches"])
    limited = imported.read_session(SHORT, query="line", max_matches=1)
    assert len(limited["matches"]) == 1
    within = imported.read_session(SHORT, query="Decimal", lines=(80, 200))
    assert all(m["line"] >= 80 for m in within["matches"])


def test_read_session_errors(imported: Vault) -> None:
    imported.new_note("note", "Plain note")
    with pytest.raises(UsageError, match="not a session note"):
        imported.read_session("notes/Plain note.md")
    with pytest.raises(NotFoundError, match="No session or note"):
        imported.read_session("nothing-like-this")
    with pytest.raises(UsageError):
        imported.read_session(SID, query="  ")
    with pytest.raises(UsageError):
        imported.read_session(SID, query="!!!")


def test_save_summary_keeps_the_transcript_and_needs_the_hash(
    imported: Vault, vault_dir: Path
) -> None:
    note = session_file(vault_dir)
    transcript = note.read_text().split("## Transcript")[1]
    first = imported.read_session(SID)
    with pytest.raises(UsageError, match="hash"):
        imported.save_session_summary(SID, summary(), "")
    with pytest.raises(ConflictError):
        imported.save_session_summary(SID, summary(), "0" * 32)
    with pytest.raises(UsageError):
        imported.save_session_summary(SID, {"overview": ""}, first["hash"])
    with pytest.raises(UsageError):
        imported.save_session_summary(SID, {"verdict": "good"}, first["hash"])
    saved = imported.save_session_summary(SID, summary(), first["hash"])
    assert saved["changed"] and saved["summary"]["decisions"] == summary()["decisions"]
    assert note.read_text().split("## Transcript")[1] == transcript
    same = imported.save_session_summary(SID, summary(), saved["hash"])
    assert same["changed"] is False and same["hash"] == saved["hash"]
    with pytest.raises(ConflictError):
        imported.save_session_summary(SID, {"overview": "Again."}, first["hash"])
    read = imported.read_session(SID)
    assert read["has_summary"] and read["summary"]["open_items"] == summary()["open_items"]
    assert "money" in read["tags"]


# ---- search scopes and timelines ------------------------------------------------------


def test_search_scopes(imported: Vault) -> None:
    imported.save_session_summary(SID, summary(), imported.read_session(SID)["hash"])
    imported.new_note("note", "Decimal notes", content="## Decisions\n\n- Decimal everywhere")

    def hits(query: str, scope: str | None) -> list[tuple[str, list[str], str]]:
        result = imported.search(SearchRequest(query, mode="keyword", filters=Filters(scope=scope)))
        return [(h.kind, h.heading_path[1:], h.snippet) for h in result.hits]

    everywhere = hits("decimal", None)
    assert {kind for kind, _, _ in everywhere} == {"session", "note"}
    assert {kind for kind, _, _ in hits("decimal", "sessions")} == {"session"}
    decisions = hits("decimal", "decisions")
    assert decisions == [
        ("session", ["Summary", "Decisions"], "- Use **Decimal** for money values")
    ]
    assert hits("invoice", "open_items")[0][1] == ["Summary", "Open items"]
    assert hits("pricing", "outcomes")[0][1] == ["Summary", "Outcomes"]
    prompts = hits("fix", "prompts")
    assert [h[1] for h in prompts] == [["Transcript", "09:15 User"]]
    assert hits("printer", "prompts")[0][1] == ["Transcript", "08:00 User"]
    assert hits("ESC POS driver", "prompts")[0][1] == ["Transcript", "08:05 User"]
    assert [h[1] for h in hits("receipts", "prompts")] == [["Transcript", "08:00 User"]]
    with pytest.raises(UsageError, match="scope"):
        imported.search(SearchRequest("x", mode="keyword", filters=Filters(scope="everything")))


def test_scopes_restrict_the_vector_side_too(imported: Vault) -> None:
    """The vector side keeps the chunks ``chunk_ids_matching`` returns; checked on the
    index directly (no model load): prompts only, decisions only."""
    imported.save_session_summary(SID, summary(), imported.read_session(SID)["hash"])
    index = imported.host.core().keeper.reader()
    details = index.reads.chunk_details(
        list(index.reads.chunk_ids_matching(Filters(scope="prompts")))
    )
    assert details and all(d["heading_path"][-1].endswith("User") for d in details.values())
    assert len({d["path"] for d in details.values()}) == 2
    details = index.reads.chunk_details(
        list(index.reads.chunk_ids_matching(Filters(scope="decisions")))
    )
    assert [d["heading_path"][1:] for d in details.values()] == [["Summary", "Decisions"]]


def test_timelines_show_session_decisions(imported: Vault) -> None:
    imported.save_session_summary(SID, summary(), imported.read_session(SID)["hash"])
    around = imported.timeline(SHORT, before=1, after=1)
    centre = around["anchor"]["note"]
    assert centre["kind"] == "session" and centre["decisions"] == summary()["decisions"]
    assert centre["open_items"] == summary()["open_items"]
    after = around["after"][0]
    assert after["path"].startswith("sessions/kiosk/") and "decisions" not in after
    scoped = imported.timeline(SID, before=0, after=0, filters=Filters(scope="decisions"))
    assert scoped["anchor"]["note"]["decisions"] == summary()["decisions"]
    recent = imported.recent(since="2000-01-01", filters=Filters(scope="prompts"))
    assert {n["kind"] for n in recent["notes"]} == {"session"}


def test_the_bundled_vault_still_reads_after_an_import(bundled_copy: Path, projects: Path) -> None:
    v = open_local(bundled_copy, bundled_copy.parent / "index")
    try:
        report = v.import_sessions(projects)
        assert report.new == 2
        sessions = v.list_sessions(SessionQuery(limit=100))["sessions"]
        assert {s["session_id"] for s in sessions} >= {SID, OTHER_SID}
        assert any(p["project"] == "markvault" for p in v.session_projects()["projects"])
    finally:
        v.close()
        shutil.rmtree(bundled_copy.parent / "index", ignore_errors=True)


def test_an_import_through_another_process_owning_the_index_reports(
    vault_dir: Path, projects: Path
) -> None:
    """The report of an import sent to the owner comes back whole (it did not: it was
    sent as its text)."""
    from markvault.config import Settings

    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    with connect(settings) as owner, connect(settings) as client:
        assert not client.host.owner_info()["this_process_owns"]
        report = client.import_sessions(projects)
        assert (report.new, report.index) == (2, "refreshed")
        assert owner.list_sessions(SessionQuery())["total"] == 2
