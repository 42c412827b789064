"""Link resolution as Obsidian resolves links, to notes and to attachments."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from markvault.files.vault_files import VaultFiles
from markvault.markdown.links import LinkResolver
from markvault.markdown.parse import parse_note

NOTES = [
    ("notes/Alpha.md", ["First letter"]),
    ("notes/sub/Beta.md", []),
    ("archive/Beta.md", []),
    ("knowledge/x/Gamma.md", []),
    ("Top.md", []),
    ("notes/v1.2.md", []),
]
ATTACHMENTS = [
    "Attachments/Engelbart.jpg",
    "Attachments/icons/lucide-send.svg",
    "Maps/Project.canvas",
    "notes/Paper.pdf",
    "archive/Paper.pdf",
]


def test_exact_path_then_unique_name_case_insensitive_then_alias() -> None:
    r = LinkResolver(NOTES)
    assert r.resolve("Top.md", "notes/Alpha", "wiki") == "notes/Alpha.md"
    assert r.resolve("Top.md", "notes/Alpha.md", "wiki") == "notes/Alpha.md"
    assert r.resolve("Top.md", "alpha", "wiki") == "notes/Alpha.md"
    assert r.resolve("Top.md", "GAMMA", "wiki") == "knowledge/x/Gamma.md"
    assert r.resolve("Top.md", "first letter", "wiki") == "notes/Alpha.md"


def test_paths_from_the_root_and_from_the_linking_folder() -> None:
    r = LinkResolver(NOTES)
    assert r.resolve("notes/Alpha.md", "sub/Beta", "wiki") == "notes/sub/Beta.md"
    assert r.resolve("notes/sub/Beta.md", "../Alpha", "wiki") == "notes/Alpha.md"
    assert r.resolve("notes/sub/Beta.md", "./Beta", "wiki") == "notes/sub/Beta.md"
    assert r.resolve("notes/Alpha.md", "/Top", "wiki") == "Top.md"
    assert r.resolve("notes/Alpha.md", "/Alpha", "wiki") is None  # not at the root


def test_same_name_prefers_the_linking_folder_then_the_shortest_path() -> None:
    r = LinkResolver(NOTES)
    assert r.resolve("archive/Other.md", "Beta", "wiki") == "archive/Beta.md"
    assert r.resolve("notes/sub/Other.md", "Beta", "wiki") == "notes/sub/Beta.md"
    # Elsewhere a name that exists is never left unresolved: the shortest path wins.
    assert r.resolve("Top.md", "Beta", "wiki") == "archive/Beta.md"
    assert r.resolve("Top.md", "sub/Beta", "wiki") == "notes/sub/Beta.md"


def test_unresolved_and_self_links() -> None:
    r = LinkResolver(NOTES)
    assert r.resolve("Top.md", "Missing note", "wiki") is None
    assert r.resolve("Top.md", "", "wiki") == "Top.md"


def test_markdown_links_are_paths() -> None:
    r = LinkResolver(NOTES, ATTACHMENTS)
    assert r.resolve("notes/Alpha.md", "notes/sub/Beta.md", "markdown") == "notes/sub/Beta.md"
    assert r.resolve("notes/Alpha.md", "Beta.md", "markdown") is None
    assert r.resolve("notes/Alpha.md", "notes/Paper.pdf", "markdown") == "notes/Paper.pdf"
    # Not beside the note: by what was written, as Obsidian finds `![](picture.png)`.
    assert r.resolve("notes/Alpha.md", "notes/Engelbart.jpg", "markdown") == (
        "Attachments/Engelbart.jpg"
    )
    assert r.resolve("Top.md", "lucide-send.svg", "markdown") == "Attachments/icons/lucide-send.svg"
    assert r.resolve("notes/Alpha.md", "notes/Missing.png", "markdown") is None


def test_markdown_images_and_links_to_files_are_kept_as_links() -> None:
    note = parse_note(
        "notes/Alpha.md",
        "![a chart](chart.png) [the paper](../docs/Paper%20one.pdf#page=2) "
        "[beta](sub/Beta.md) [site](https://example.org/x.png) [up](../../outside.png) "
        "[here](#heading) `![code](x.png)`\n",
    )
    assert [(link.embed, link.target, link.heading) for link in note.links] == [
        (True, "notes/chart.png", None),
        (False, "docs/Paper one.pdf", "page=2"),
        (False, "notes/sub/Beta.md", None),
    ]


def test_attachments_resolve_by_name_anywhere_and_by_partial_path() -> None:
    r = LinkResolver(NOTES, ATTACHMENTS)
    assert r.resolve("Top.md", "Engelbart.jpg", "wiki") == "Attachments/Engelbart.jpg"
    assert r.resolve("notes/Alpha.md", "engelbart.JPG", "wiki") == "Attachments/Engelbart.jpg"
    assert r.resolve("Top.md", "icons/lucide-send.svg", "wiki") == (
        "Attachments/icons/lucide-send.svg"
    )
    assert r.resolve("Top.md", "Project.canvas", "wiki") == "Maps/Project.canvas"
    assert r.resolve("notes/sub/Beta.md", "Paper.pdf", "wiki") == "archive/Paper.pdf"
    assert r.resolve("notes/Alpha.md", "Paper.pdf", "wiki") == "notes/Paper.pdf"
    assert r.is_attachment("Maps/Project.canvas") and not r.is_attachment("Top.md")
    # Without an extension a target names a note, never an attachment.
    assert r.resolve("Top.md", "Engelbart", "wiki") is None
    # A dot in a note's name is not an extension when no such file exists.
    assert r.resolve("Top.md", "v1.2", "wiki") == "notes/v1.2.md"


def test_embeds_with_size_and_heading_suffixes_resolve_to_their_files() -> None:
    note = parse_note(
        "Linking/Embed files.md",
        "# Embeds\n\n![[Engelbart.jpg]] ![[Engelbart.jpg|100x145]] "
        "![[Engelbart.jpg#outline|100]]\n\nClick ![[lucide-send.svg#icon]] to send; "
        "[[Engelbart.jpg|see the picture]]; [[Alpha#Heading|the note]].\n\n"
        "```md\n![[Document.pdf]]\n```\n",
    )
    r = LinkResolver(NOTES, ATTACHMENTS)
    resolved = [(link.embed, r.resolve(note.path, link.target, link.style)) for link in note.links]
    assert resolved == [
        (True, "Attachments/Engelbart.jpg"),
        (True, "Attachments/Engelbart.jpg"),
        (True, "Attachments/Engelbart.jpg"),
        (True, "Attachments/icons/lucide-send.svg"),
        (False, "Attachments/Engelbart.jpg"),
        (False, "notes/Alpha.md"),
    ]  # the embed inside a code fence is no link


def test_vault_files_lists_attachments_as_obsidian_sees_them(tmp_path: Path) -> None:
    files = {
        "Note.md": "# n",
        "Attachments/Engelbart.jpg": "jpg",
        "Attachments/Fa\u0301bio.png": "nfd name",
        "Maps/Project.canvas": "{}",
        ".obsidian/app.json": "{}",
        ".trash/old.png": "gone",
        "private/secret.pdf": "ignored",
        ".markvaultignore": "private/\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    listed = VaultFiles(tmp_path).attachments()
    assert listed == [
        "Attachments/Engelbart.jpg",
        unicodedata.normalize("NFC", "Attachments/Fa\u0301bio.png"),
        "Maps/Project.canvas",
    ]
    r = LinkResolver([("Note.md", [])], listed)
    assert r.resolve("Note.md", "Fábio.png", "wiki") == listed[1]


def test_a_resolver_for_some_links_resolves_them_as_one_over_every_file() -> None:
    """An edit resolves its few links with a resolver holding only the files they could
    name: each link, alone or among others, resolves as with every file."""
    notes = [*NOTES, ("notes/Straße.md", ["Ünï"]), ("x/beta.MD", ["beta"]), ("y/Top.md", [])]
    links = [
        (source, target, style)
        for source in ("Top.md", "notes/Alpha.md", "notes/sub/Beta.md", "y/z/Deep.md")
        for style in ("wiki", "markdown")
        for target in (
            "",
            "Alpha",
            "beta",
            "Beta.md",
            "sub/Beta",
            "/archive/Beta",
            "./Beta",
            "../Top",
            "../../Top",
            "First letter",
            "FIRST LETTER",
            "strasse",
            "ünï",
            "Engelbart.jpg",
            "icons/lucide-send.svg",
            "notes/Paper.pdf",
            "Paper.pdf",
            "v1.2",
            "Missing",
            "notes/sub/Beta.md",
            "Top",
            "..",
            "./",
            "Project",
        )
    ]
    full = LinkResolver(notes, ATTACHMENTS)
    some = LinkResolver.for_links(links, notes, ATTACHMENTS)
    assert len(some.by_path) < len(full.by_path)
    assert [some.resolve(*link) for link in links] == [full.resolve(*link) for link in links]
    for link in links:
        alone = LinkResolver.for_links([link], notes, ATTACHMENTS)
        assert alone.resolve(*link) == full.resolve(*link), link
