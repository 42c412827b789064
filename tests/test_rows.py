"""A note's rows as a worker packs them (Arrow tables, ``rows.RowBlock``) are the rows
built here, also when a write takes some of each (workers that broke mid-way)."""

from __future__ import annotations

import pickle
from pathlib import Path

from markvault.config import Settings
from markvault.files.vault_files import VaultFiles
from markvault.index.rows import NoteRows, RowBlock, row_tables
from markvault.indexing import note_reading
from markvault.types.notes import NoteRecord

from .conftest import WriteNotes

NOTES: dict[str, str | bytes] = {
    "a.md": "---\ntags: [One, two]\naliases: [Alpha]\ncreated: 2024-01-02\n---\n# A\n\n"
    "Text [[b]] and ![[c.png]].\n\n## Part\n\nMore [x](b.md#Head).\n",
    "b.md": "# B\n\nNo links, one chunk.\n",
    "c.md": "",  # no chunk, no link
    "d.md": "---\ntags: [unclosed\n---\n# D\n\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> b\n",
}


def built(vault: Path) -> list[NoteRecord]:
    settings = Settings.load(vault, vault.parent / "index", env={})
    files = VaultFiles(settings.vault_dir, settings.index_dir)
    stats = sorted(files.scan_all().notes.values(), key=lambda st: st.path)
    out = [note_reading._build_file(files, settings, st, None) for st in stats]
    assert [outcome for outcome, _ in out] == ["record"] * len(NOTES)
    return [value for _, value in out]  # type: ignore[misc]


def test_rows_from_a_workers_block_are_the_rows_built_here(write: WriteNotes) -> None:
    records = built(write(NOTES))
    here = [NoteRows.of(rec) for rec in records]
    block: RowBlock = pickle.loads(pickle.dumps(RowBlock.of(records[1:3])))
    there = block.records()
    assert [r.chunk_count for r in there] == [r.chunk_count for r in here[1:3]]
    assert [r._replace(note=(), chunks=(), links=(), block=None, slot=0) for r in there] == [
        r._replace(note=(), chunks=(), links=()) for r in here[1:3]
    ]
    want = [t.to_pylist() for t in row_tables(here)]
    assert want[1][0]["heading_path"] == ["A"] and want[2]  # chunks and links to compare
    for mixed in (here[:1] + there + here[3:], there, there[:1] + there[1:]):
        got = [t.to_pylist() for t in row_tables(mixed)]
        assert got == [t.to_pylist() for t in row_tables(list(mixed_here(mixed, here)))]
    assert [t.to_pylist() for t in row_tables(here[:1] + there + here[3:])] == want


def mixed_here(mixed: list[NoteRows], here: list[NoteRows]) -> list[NoteRows]:
    by_path = {r.path: r for r in here}
    return [by_path[r.path] for r in mixed]
