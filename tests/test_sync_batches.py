"""A first build writes its notes batch by batch as they are read (sync.APPLY_BATCH):
the index it makes is the one a single write makes, and so is its report."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from markvault import sync
from markvault.host import open_local
from markvault.model import ReindexReport

from .conftest import WriteNotes

TABLES = {
    "notes": "SELECT path, title, aliases, problems, hash FROM notes ORDER BY path",
    "chunks": "SELECT id, path, seq, hash, fts_text FROM chunks ORDER BY id",
    "links": "SELECT source, target, target_path, line FROM links ORDER BY source, line, target",
    "postings": "SELECT v.term, p.chunk_id, p.tf, p.dl FROM postings p JOIN vocab v "
    "USING (termid) ORDER BY v.term, p.chunk_id",
    "vocab": "SELECT term, df FROM vocab ORDER BY term",
}


def notes(count: int) -> dict[str, str | bytes]:
    """Notes that link forward and back across any batch boundary, one with an alias,
    one whose frontmatter is broken (a problem the report must carry)."""
    files: dict[str, str | bytes] = {}
    for i in range(count):
        files[f"notes/n{i:03}.md"] = (
            f"# Note {i}\n\nwombat {i} see [[n{(i + 1) % count:03}]] and [[Alias {i // 2}]]\n"
        )
    files["notes/n010.md"] = "---\naliases: [Alias 3]\n---\n# Ten\n\nquokka [[n000]]\n"
    files["notes/n011.md"] = "---\ntags: [unclosed\n---\n# Eleven\n\nquokka\n"
    return files


def build(vault: Path, index: Path) -> tuple[dict[str, list[tuple[object, ...]]], ReindexReport]:
    with open_local(vault, index) as v:
        report = v.reindex(vectors=False)
        db = v.settings.db_path
    with duckdb.connect(str(db), read_only=True) as con:
        return {name: con.execute(sql).fetchall() for name, sql in TABLES.items()}, report


def test_a_batched_first_build_equals_one_write(
    write: WriteNotes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = write(notes(40))
    whole, whole_report = build(vault, tmp_path / "whole")
    monkeypatch.setattr(sync, "APPLY_BATCH", 7)
    batched, batched_report = build(vault, tmp_path / "batched")
    for name in TABLES:
        assert batched[name] == whole[name], name
    assert batched_report.added == whole_report.added == 40
    assert batched_report.warnings == whole_report.warnings
    assert any(w["path"] == "notes/n011.md" for w in batched_report.warnings)
    resolved = {(s, t): p for s, t, p, _ in batched["links"]}
    assert resolved[("notes/n039.md", "n000")] == "notes/n000.md"  # across batches
    assert resolved[("notes/n006.md", "Alias 3")] == "notes/n010.md"  # alias, later batch


def test_renames_in_a_large_sync_keep_their_chunk_ids(
    write: WriteNotes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a note removed, nothing is streamed: a rename finds its old chunk ids."""
    vault = write(notes(20))
    monkeypatch.setattr(sync, "APPLY_BATCH", 3)
    with open_local(vault, tmp_path / "index") as v:
        v.reindex(vectors=False)
        before = {h.chunk_id for h in v.search("quokka", mode="keyword").hits}
        (vault / "notes/n010.md").rename(vault / "notes/renamed.md")
        for i in range(12):  # more new notes than a batch holds
            (vault / f"notes/new{i}.md").write_text(f"# New {i}\n\nnumbat\n")
        report = v.reindex(vectors=False)
        after = {h.path: h.chunk_id for h in v.search("quokka", mode="keyword").hits}
    assert (report.renamed, report.added, report.removed) == (1, 12, 0)
    assert after["notes/renamed.md"] in before
