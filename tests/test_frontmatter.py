"""The frontmatter rules: keys set and removed line by line, templates filled as YAML."""

from __future__ import annotations

import pytest

from markvault.errors import RefusedError
from markvault.frontmatter import fill_template, key_spans, read_frontmatter, set_keys

NOTE = "---\n# a comment\ntitle: 'Quoted'\ntags:\n  - a\n  - b\n\nstatus: draft\n---\nbody\n"


def test_a_key_keeps_its_place_and_every_other_line_its_bytes() -> None:
    after = set_keys(NOTE, {"tags": ["a", "b", "c"]})
    assert after == NOTE.replace("tags:\n  - a\n  - b\n", "tags: [a, b, c]\n")


def test_new_keys_go_last_and_none_removes() -> None:
    after = set_keys(NOTE, {"status": None, "owner": "ann"})
    assert (
        after == "---\n# a comment\ntitle: 'Quoted'\ntags:\n  - a\n  - b\n\nowner: ann\n---\nbody\n"
    )


def test_a_repeated_key_is_written_once() -> None:
    text = "---\ntags: [a]\ntitle: T\ntags: [b]\n---\n"
    assert set_keys(text, {"tags": ["c"]}) == "---\ntags: [c]\ntitle: T\n---\n"
    assert set_keys(text, {"tags": None}) == "---\ntitle: T\n---\n"


def test_only_missing_keys_are_added_and_line_endings_kept() -> None:
    text = "---\r\nid: x\r\n---\r\nbody\r\n"
    after = set_keys(text, {}, only_missing={"id": "y", "kind": "session"})
    assert after == "---\r\nid: x\r\nkind: session\r\n---\r\nbody\r\n"


def test_a_note_without_frontmatter_gets_a_block_in_order() -> None:
    after = set_keys("# T\n", {"tags": ["t"], "id": "n-1"}, order=("id", "tags"))
    assert after == "---\nid: n-1\ntags: [t]\n---\n# T\n"
    assert set_keys("# T\n", {"tags": None}) == "# T\n"


def test_bad_yaml_is_refused_with_the_callers_hint() -> None:
    with pytest.raises(RefusedError, match="key by key") as caught:
        set_keys("---\n- a\n---\n", {"x": 1}, where="n.md", hint="Fix it, then import.")
    assert caught.value.hint == "Fix it, then import."


def test_list_items_are_no_keys() -> None:
    lines = ["items:\n", "- a: 1\n", "- b: 2\n", "other: x\n"]
    assert key_spans(lines) == {"items": [(0, 3)], "other": [(3, 4)]}


def test_templates_fill_frontmatter_as_yaml_and_the_body_as_text() -> None:
    template = '---\ntitle: "{{title}}"\ntags: {{tags}}\ncount: {{n}}\n---\n# {{title}}\n'
    values = {"title": 'He said: "no" # really', "tags": ["a b", "c"], "n": "007"}
    filled = fill_template(template, values)
    assert read_frontmatter(filled) == {
        "title": 'He said: "no" # really',
        "tags": ["a b", "c"],
        "count": "007",
    }
    assert filled.endswith('# He said: "no" # really\n')
