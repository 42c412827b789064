"""Frontmatter, title, tag and link forms of the vault format."""

from __future__ import annotations

import pytest

from markvault.markdown.parse import parse_note


def test_recognised_keys_and_unknown_metadata() -> None:
    note = parse_note(
        "notes/a.md",
        "---\n"
        "id: n-1\ntitle: Alpha\nkind: knowledge\ntype: Decision\ntags: [x, '#y']\n"
        "aliases: [First]\ntopic: search\nproject: mv\ncreated: 2024-01-01\n"
        "updated: 2024-02-03T04:05:06\nsource: https://e.com\nfiles: [src/a.py]\n"
        "concepts: bm25, rrf\nstatus: draft\nvalid_until: 2030-01-01\nsuperseded_by: n-2\n"
        "reviewed: true\nowner: {name: ann}\n"
        "---\nbody\n",
    )
    assert note.id == "n-1"
    assert note.title == "Alpha"
    assert note.kind == "knowledge"
    assert note.type == "decision"
    assert note.tags == ("x", "y")
    assert note.aliases == ("First",)
    f = note.fields
    assert (f["topic"], f["project"], f["source"], f["status"]) == (
        "search",
        "mv",
        "https://e.com",
        "draft",
    )
    assert f["created"] == "2024-01-01"
    assert f["updated"] == "2024-02-03T04:05:06"
    assert f["files"] == ["src/a.py"]
    assert f["concepts"] == ["bm25", "rrf"]
    assert f["valid_until"] == "2030-01-01"
    assert f["superseded_by"] == "n-2"
    assert note.metadata["reviewed"] is True
    assert note.metadata["owner"] == {"name": "ann"}
    assert note.problems == ()


def test_yaml_oddities_keep_what_people_meant() -> None:
    note = parse_note("a.md", "---\ndate: 2024-01-01\ndraft: no\nid: 0123\nn: 010\nok: yes\n---\nx")
    assert note.metadata == {
        "date": "2024-01-01",
        "draft": "no",
        "id": "0123",
        "n": "010",
        "ok": "yes",
    }
    assert note.id == "0123"


def test_tags_as_comma_string() -> None:
    assert parse_note("a.md", "---\ntags: a, b ,#c\n---\n").tags == ("a", "b", "c")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\n- a\n- b\n---\nbody", "not a mapping"),
        ("---\njust a string\n---\nbody", "not a mapping"),
        ("---\nx: [unclosed\n---\nbody", "invalid YAML"),
        ('---\nx: !!python/object/apply:os.system ["echo pwned"]\n---\nbody', "invalid YAML"),
        ("---\ntitle: t\nno closing fence\n", "no closing"),
    ],
)
def test_bad_frontmatter_is_reported_not_fatal(text: str, problem: str) -> None:
    note = parse_note("notes/bad.md", text)
    assert any(problem in p for p in note.problems)
    assert note.title  # still indexable


def test_unclosed_frontmatter_is_body() -> None:
    note = parse_note("a.md", "---\ntitle: t\n# Real title\nmore")
    assert note.body.startswith("---")
    assert note.title == "Real title"


def test_alias_bomb_refused_quickly() -> None:
    rows = ["a: &a [" + ",".join(['"lol"'] * 9) + "]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        rows.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    note = parse_note("a.md", "---\n" + "\n".join(rows) + "\n---\nbody")
    assert any("unsafe" in p for p in note.problems)
    assert note.metadata == {}


def test_small_anchors_are_fine() -> None:
    note = parse_note("a.md", "---\nbase: &b [1, 2]\ncopy: *b\n---\n")
    assert note.metadata == {"base": [1, 2], "copy": [1, 2]}


def test_title_falls_back_to_h1_then_file_name() -> None:
    assert parse_note("x/My Note.md", "# Heading One\n\ntext").title == "Heading One"
    assert parse_note("x/My Note.md", "Setext\n======\n").title == "Setext"
    assert parse_note("x/My Note.md", "## only h2\ntext").title == "My Note"
    assert parse_note("x/My Note.md", "---\ntitle: FM\n---\n# H1").title == "FM"


def test_identity_is_id_else_path() -> None:
    assert parse_note("notes/a.md", "text").id == "notes/a.md"
    assert parse_note("notes/a.md", "---\nid: abc\n---\n").id == "abc"


def test_kind_from_folder_and_topic_from_knowledge_folder() -> None:
    note = parse_note("knowledge/duckdb/fts.md", "text")
    assert (note.kind, note.fields["topic"]) == ("knowledge", "duckdb")
    assert parse_note("sessions/p/s.md", "x").kind == "session"
    assert parse_note("documents/d.md", "x").kind == "document"
    assert parse_note("elsewhere/d.md", "x").kind == "note"
    assert "unknown kind" in parse_note("a.md", "---\nkind: recipe\n---\n").problems[0]


def test_inline_tags_rules() -> None:
    text = (
        "# Heading #nottag\n\n"
        "Text #plain and #nested/deep, #标签, #under_score #dash-ed.\n"
        "Not: https://example.com/page#fragment, a#b, [x](#anchor), #123, `#code`\n\n"
        "```\n#infence\n```\n\n"
        "    #indented code\n"
    )
    assert parse_note("a.md", text).tags == (
        "plain",
        "nested/deep",
        "标签",
        "under_score",
        "dash-ed",
    )


def test_all_link_forms() -> None:
    text = (
        "See [[Note]], [[Other|shown]], [[Deep#Heading]], [[Deep#^blk]], [[Blk^id2]],\n"
        "![[embedded.png]] and ![[Embedded note]], [[#Local heading]],\n"
        "[md](../sub/Target.md#part) and [enc](<My%20Note.md>) and [web](https://x.com/a.md).\n\n"
        "`[[not a link]]`\n\n```\n[[nor this]]\n```\n"
    )
    links = parse_note("notes/a.md", text).links
    got = [(lk.target, lk.heading, lk.block, lk.alias, lk.embed, lk.style) for lk in links]
    assert got == [
        ("Note", None, None, None, False, "wiki"),
        ("Other", None, None, "shown", False, "wiki"),
        ("Deep", "Heading", None, None, False, "wiki"),
        ("Deep", None, "blk", None, False, "wiki"),
        ("Blk", None, "id2", None, False, "wiki"),
        ("embedded.png", None, None, None, True, "wiki"),
        ("Embedded note", None, None, None, True, "wiki"),
        ("", "Local heading", None, None, False, "wiki"),
        ("sub/Target.md", "part", None, None, False, "markdown"),
        ("notes/My Note.md", None, None, None, False, "markdown"),
    ]
    assert links[0].line == 1 and links[5].line == 2 and links[8].line == 3


def test_line_numbers_count_frontmatter_and_bom() -> None:
    note = parse_note("a.md", "\ufeff---\nid: x\n---\n\n# Title\n\n```\ncode\n```\n")
    assert note.body_line == 4
    assert note.sections[0].line == 5
    assert sorted(note.code_lines) == [7, 8, 9]
