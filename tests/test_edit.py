"""Edits touch only the bytes concerned: odd frontmatter, BOM, CRLF and no final newline,
comments and key order survive; conflict markers refuse writes."""

from __future__ import annotations

import difflib

import pytest

from markvault.errors import ConflictError, RefusedError, UsageError
from markvault.git.repo import check_writable
from markvault.markdown.edit import apply_edit, replace_section
from markvault.types.edits import Edit

NOTE = (
    "---\n"
    "# people keep comments here\n"
    "title: 'Quoted title'   # and here\n"
    "zeta: last-is-first\n"
    "date: 2024-01-01\n"
    "draft: no\n"
    "id: 0123\n"
    "tags:\n"
    "  - one\n"
    "  - two\n"
    "custom: {nested: true}\n"
    "---\n"
    "# Title\n"
    "\n"
    "Intro.\n"
    "\n"
    "## Decisions\n"
    "\n"
    "- keep it\n"
    "\n"
    "---\n"
    "\n"
    "## Open items\n"
    "\n"
    "- later\n"
)


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_set_one_key_changes_one_line() -> None:
    after = apply_edit(NOTE, Edit("set_key", key="tags", value=["one", "two", "three"]))
    assert changed_lines(NOTE, after) == [
        "-tags:",
        "-  - one",
        "-  - two",
        "+tags: [one, two, three]",
    ]


def test_set_a_new_key_adds_one_line_and_keeps_odd_values_byte_identical() -> None:
    after = apply_edit(NOTE, Edit("set_key", key="status", value="no"))
    assert changed_lines(NOTE, after) == ["+status: 'no'"]
    for line in (
        "date: 2024-01-01",
        "draft: no",
        "id: 0123",
        "# people keep comments here",
        "title: 'Quoted title'   # and here",
    ):
        assert line in after.splitlines()


def test_remove_key() -> None:
    after = apply_edit(NOTE, Edit("remove_key", key="custom"))
    assert changed_lines(NOTE, after) == ["-custom: {nested: true}"]


def test_body_rules_survive_an_edit_elsewhere() -> None:
    after = apply_edit(NOTE, Edit("append", "- new item"))
    assert after.startswith(NOTE)
    assert changed_lines(NOTE, after) == ["+- new item"]


def test_bom_crlf_and_missing_final_newline_are_preserved() -> None:
    text = "\ufeff---\r\nid: x\r\n---\r\n# T\r\n\r\nlast line"
    after = apply_edit(text, Edit("append", "added\nand more"))
    assert after == "\ufeff---\r\nid: x\r\n---\r\n# T\r\n\r\nlast line\r\nadded\r\nand more"


@pytest.mark.parametrize(
    ("edit", "expected_diff"),
    [
        (Edit("replace_section", "- done", heading="Open items"), ["-- later", "+- done"]),
        (Edit("insert_after", "- also", heading="Decisions"), ["+- also"]),
        (Edit("insert_before", "## New\n", heading="## Open items"), ["+## New"]),
        (Edit("prepend", "Top line."), ["+Top line."]),
        (Edit("replace_text", "Preface.", find="Intro."), ["-Intro.", "+Preface."]),
    ],
)
def test_section_and_text_edits(edit: Edit, expected_diff: list[str]) -> None:
    assert changed_lines(NOTE, apply_edit(NOTE, edit)) == expected_diff


def test_replace_text_requires_the_expected_count() -> None:
    with pytest.raises(ConflictError, match="found 2"):
        apply_edit("a x b x", Edit("replace_text", "y", find="x", count=1))
    assert apply_edit("a x b x", Edit("replace_text", "y", find="x", count=2)) == "a y b y"


def test_missing_heading_names_the_headings_there() -> None:
    with pytest.raises(UsageError, match="Decisions"):
        apply_edit(NOTE, Edit("replace_section", "x", heading="Nope"))


def test_unclosed_frontmatter_is_body_and_stays_byte_identical() -> None:
    text = "---\ntitle: never closed\n\n# Body\n\ntext\n"
    after = apply_edit(text, Edit("append", "more"))
    assert after == text + "more\n"


@pytest.mark.parametrize("front", ["---\n- a\n- b\n---\n", "---\njust words\n---\n"])
def test_non_mapping_frontmatter_preserved_on_body_edit_refused_for_keys(front: str) -> None:
    text = front + "body\n"
    assert apply_edit(text, Edit("append", "x")) == text + "x\n"
    with pytest.raises(RefusedError, match="key by key"):
        apply_edit(text, Edit("set_key", key="tags", value=["a"]))


def test_no_frontmatter_gets_one_when_a_key_is_set() -> None:
    assert (
        apply_edit("# T\n", Edit("set_key", key="tags", value=["a"]))
        == "---\ntags: [a]\n---\n# T\n"
    )


def test_conflict_markers_refuse_writes() -> None:
    text = "a\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> branch\n"
    with pytest.raises(RefusedError, match="conflict markers"):
        check_writable(text, "n.md")
    check_writable("a setext heading\n=======\n", "n.md")  # plain '=' rules are fine


def test_a_section_runs_to_the_next_heading_of_its_level_or_higher_for_every_editor() -> None:
    """The edit tools and session notes agree on where a section ends: not at a deeper
    heading, not at a ``#`` line inside a code fence, at the next one of its level."""
    text = "# T\n\n## A\n\nx\n\n### A1\n\n```\n## not a heading\n```\n\n## B\n\ny\n"
    expected = "# T\n\n## A\n\nnew\n\n## B\n\ny\n"
    assert apply_edit(text, Edit("replace_section", heading="## A", text="new\n")) == expected
    assert replace_section(text, "A", "## A\n\nnew\n") == expected
