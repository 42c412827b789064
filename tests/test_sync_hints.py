"""Syncing only the paths a watcher reports: files, folders, renames, deletions."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from markvault.types.search import SearchRequest

from .conftest import OpenVault, WriteNotes


def paths(v: object, word: str) -> set[str]:
    from markvault import Vault

    assert isinstance(v, Vault)
    return {h.path for h in v.search(SearchRequest(word, mode="keyword")).hits}


def test_only_hinted_files_are_looked_at(write: WriteNotes, open_vault: OpenVault) -> None:
    vault = write({"a.md": "apple", "b.md": "banana"})
    v = open_vault()
    v.reindex(vectors=False)
    (vault / "a.md").write_text("apricot")
    (vault / "b.md").write_text("blueberry")
    report = v.reindex(vectors=False, paths=["a.md"])
    assert report.updated == 1
    assert paths(v, "apricot") == {"a.md"} and paths(v, "blueberry") == set()
    assert v.pending()["changed"] == 1  # b.md waits for its own hint or a reconcile


def test_renames_and_deletions_through_hints(write: WriteNotes, open_vault: OpenVault) -> None:
    vault = write({"notes/a.md": "apple pie", "notes/sub/b.md": "banana split", "c.md": "cherry"})
    v = open_vault()
    v.reindex(vectors=False)
    (vault / "notes").rename(vault / "archive")  # a folder rename: one event for the folder
    (vault / "c.md").unlink()
    report = v.reindex(vectors=False, paths=["notes", "archive", "c.md"])
    assert (report.renamed, report.removed, report.added) == (2, 1, 0)
    assert paths(v, "apple") == {"archive/a.md"}
    assert paths(v, "banana") == {"archive/sub/b.md"}
    assert paths(v, "cherry") == set()
    assert v.pending() == {"new": 0, "changed": 0, "deleted": 0}


def test_hints_in_another_unicode_form_and_ignored_paths(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    vault = write({"Café.md": "coffee", ".obsidian/x.md": "hidden", "notes/.draft.md": "secret"})
    v = open_vault()
    v.reindex(vectors=False)
    nfd = unicodedata.normalize("NFD", "Café.md")
    (vault / "Café.md").write_text("espresso")
    report = v.reindex(vectors=False, paths=[nfd, ".obsidian/x.md", "notes/.draft.md", "../x.md"])
    assert report.updated == 1 and paths(v, "espresso") == {"Café.md"}
    assert paths(v, "hidden") == set() and paths(v, "secret") == set()


def test_a_root_hint_is_a_full_scan(write: WriteNotes, open_vault: OpenVault) -> None:
    vault = write({"a.md": "apple"})
    v = open_vault()
    v.reindex(vectors=False)
    Path(vault / "d").mkdir()
    (vault / "d/n.md").write_text("nectarine")
    assert v.reindex(vectors=False, paths=[""]).added == 1
