"""Link resolution as Obsidian resolves links."""

from __future__ import annotations

from markvault.links import LinkResolver

NOTES = [
    ("notes/Alpha.md", ["First letter"]),
    ("notes/sub/Beta.md", []),
    ("archive/Beta.md", []),
    ("knowledge/x/Gamma.md", []),
    ("Top.md", []),
]


def test_exact_path_then_unique_name_case_insensitive_then_alias() -> None:
    r = LinkResolver(NOTES)
    assert r.resolve("Top.md", "notes/Alpha", "wiki") == "notes/Alpha.md"
    assert r.resolve("Top.md", "notes/Alpha.md", "wiki") == "notes/Alpha.md"
    assert r.resolve("Top.md", "alpha", "wiki") == "notes/Alpha.md"
    assert r.resolve("Top.md", "GAMMA", "wiki") == "knowledge/x/Gamma.md"
    assert r.resolve("Top.md", "first letter", "wiki") == "notes/Alpha.md"


def test_relative_path_from_the_linking_folder() -> None:
    assert LinkResolver(NOTES).resolve("notes/Alpha.md", "sub/Beta", "wiki") == "notes/sub/Beta.md"


def test_ambiguous_name_prefers_the_same_folder_else_stays_unresolved() -> None:
    r = LinkResolver(NOTES)
    assert r.resolve("archive/Other.md", "Beta", "wiki") == "archive/Beta.md"
    assert r.resolve("Top.md", "Beta", "wiki") is None


def test_unresolved_and_self_links() -> None:
    r = LinkResolver(NOTES)
    assert r.resolve("Top.md", "Missing note", "wiki") is None
    assert r.resolve("Top.md", "", "wiki") == "Top.md"


def test_markdown_links_are_paths() -> None:
    r = LinkResolver(NOTES)
    assert r.resolve("notes/Alpha.md", "notes/sub/Beta.md", "markdown") == "notes/sub/Beta.md"
    assert r.resolve("notes/Alpha.md", "Beta.md", "markdown") is None
