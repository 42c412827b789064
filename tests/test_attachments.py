"""Files that are not notes (images, PDFs, canvases) in the index: links and embeds to
them resolve, they are nodes of the link graph, counted in status, never notes."""

from __future__ import annotations

from pathlib import Path

from markvault import Vault
from markvault.types.search import SearchRequest

from .conftest import OpenVault, WriteNotes, checksums

PNG = b"\x89PNG\r\n\x1a\n fake image bytes"


def unresolved(v: Vault) -> list[tuple[str, str]]:
    info = v.vault_map(top=100)
    return [(link["source"], link["target"]) for link in info["broken_links"]]


def test_embeds_and_links_to_files_resolve_and_indexing_adds_no_file(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    vault = write(
        {
            "Attachments/Engelbart.jpg": PNG,
            "Attachments/icons/lucide-send.svg": "<svg/>",
            "Maps/Project.canvas": "{}",
            "papers/Paper one.pdf": PNG,
            "Notes/Embeds.md": "# Embeds\n\n![[Engelbart.jpg|100]] ![[lucide-send.svg#icon]]\n"
            "![a chart](Engelbart.jpg) [[Project.canvas]] [paper](../papers/Paper%20one.pdf)\n"
            "[[Missing note]] ![[missing.png]]\n",
        }
    )
    before = checksums(vault)
    v = open_vault()
    v.reindex(vectors=False)
    assert checksums(vault) == before  # nothing written into the vault

    info = v.index_status()
    assert (info["notes"], info["files"]) == (1, 4)
    assert (info["links"], info["links_to_files"], info["links_to_notes"]) == (7, 5, 0)
    assert info["unresolved_links"] == 2
    assert unresolved(v) == [
        ("Notes/Embeds.md", "Missing note"),
        ("Notes/Embeds.md", "missing.png"),
    ]
    assert (
        v.search(SearchRequest("Engelbart", mode="keyword")).total == 1
    )  # only the note: files are no notes
    note = v.get("Notes/Embeds.md")
    assert [link["target_path"] for link in note["links"]][:2] == [
        "Attachments/Engelbart.jpg",
        "Attachments/icons/lucide-send.svg",
    ]


def test_files_that_come_and_go_resolve_and_unresolve_links(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    vault = write({"a.md": "![[pic.png]] ![](pic.png) [[Later]]", "b.md": "[[a]]"})
    v = open_vault()
    v.reindex(vectors=False)
    assert len(unresolved(v)) == 3

    write({"img/pic.png": PNG})
    v.reindex(vectors=False, paths=["img/pic.png"])  # a watcher's hint for a new file
    assert unresolved(v) == [("a.md", "Later")]
    assert v.index_status()["files"] == 1

    write({"Later.md": "# Later"})  # a new note resolves the links naming it
    v.reindex(vectors=False, paths=["Later.md"])
    assert unresolved(v) == []

    (vault / "img/pic.png").rename(vault / "pic.png")  # a closer file of the same name
    v.reindex(vectors=False, paths=["img/pic.png", "pic.png"])
    assert {link["target_path"] for link in v.get("a.md")["links"]} == {"pic.png", "Later.md"}

    (vault / "pic.png").unlink()
    v.reindex(vectors=False)  # a full reconcile notices the file went
    assert unresolved(v) == [("a.md", "pic.png"), ("a.md", "pic.png")]
    assert v.index_status()["files"] == 0


def test_aliases_that_change_re_resolve_the_links_using_them(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    vault = write(
        {"Alpha.md": "---\naliases: [First]\n---\n# Alpha", "b.md": "[[First]] [[Second]]"}
    )
    v = open_vault()
    v.reindex(vectors=False)
    assert unresolved(v) == [("b.md", "Second")]
    (vault / "Alpha.md").write_text("---\naliases: [Second]\n---\n# Alpha", encoding="utf-8")
    v.reindex(vectors=False, paths=["Alpha.md"])
    assert unresolved(v) == [("b.md", "First")]


def test_files_are_nodes_of_the_link_graph(write: WriteNotes, open_vault: OpenVault) -> None:
    write(
        {
            "pics/chart.png": PNG,
            "pics/unused.png": PNG,
            "Report.md": "# Report\n\n![[chart.png]] [[Summary]]",
            "Summary.md": "# Summary\n\n![[chart.png]]",
        }
    )
    v = open_vault()
    v.reindex(vectors=False)
    who = v.related("chart.png")  # who embeds it: asked by the file's name
    assert who["note"]["kind"] == "file" and who["note"]["path"] == "pics/chart.png"
    assert [(r["path"], r["direction"]) for r in who["related"]] == [
        ("Report.md", "in"),
        ("Summary.md", "in"),
    ]
    near = v.related("Report.md")
    assert {(r["path"], r["kind"]) for r in near["related"]} == {
        ("pics/chart.png", "file"),
        ("Summary.md", "note"),
    }
    chain = v.link_path("pics/chart.png", "Summary")
    assert [s["path"] for s in chain["path"]] == ["pics/chart.png", "Summary.md"]
    shape = v.vault_map()
    assert (shape["files"], shape["orphan_files"], shape["orphan_file_count"]) == (
        2,
        ["pics/unused.png"],
        1,
    )
    assert shape["most_linked_files"] == [{"path": "pics/chart.png", "backlinks": 2}]
    assert {f["folder"]: f["files"] for f in shape["folders"]} == {".": 0, "pics": 2}
    assert shape["orphans"] == []  # a note that only embeds a file is linked


def test_hidden_ignored_and_editor_files_are_no_attachments(
    write: WriteNotes, open_vault: OpenVault, vault_dir: Path
) -> None:
    write(
        {
            ".markvaultignore": "private/\n",
            ".obsidian/app.json": "{}",
            ".trash/old.png": PNG,
            "private/secret.pdf": PNG,
            "notes/a.md": "# A\n\n![[old.png]] ![[secret.pdf]]",
            "notes/a.md~": "backup",
            "notes/#a.md#": "autosave",
            "notes/.mv-tmp-0123": "temp",
            "notes/diagram.excalidraw": "{}",
        }
    )
    v = open_vault()
    v.reindex(vectors=False)
    assert v.vault_map()["orphan_files"] == ["notes/diagram.excalidraw"]
    assert len(unresolved(v)) == 2
