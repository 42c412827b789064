"""The frontmatter rules: keys set and removed line by line, templates filled as YAML."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markvault.errors import RefusedError
from markvault.markdown.frontmatter import (
    _flat_mapping,
    _load_yaml,
    fill_template,
    key_spans,
    load_frontmatter,
    read_frontmatter,
    set_keys,
    split_frontmatter,
)

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


# Frontmatter that the flat path must read as PyYAML does, or leave to PyYAML.
FLAT_CASES = [
    "title: A note\ntags:\n- a\n- \n-\npublish: true\ndraft: no\nempty:\nnull: x",
    "title: v1.2 (draft)\nschema: 2.0.0\nms.date: 12/20/2016\nwhen: 2016-12-20\nn: 0123\nf: 1.5",
    "Module Name: Net\nurl: https://x.org/a?b=c&d#e\nbad: a #comment\nk: a: b\nend: x:",
    "a: 1\na: 2\nb: TRUE\nc: False\nd: NULL\ne: ~\nf: .inf\ng: ._x\nh: (x)\ni: /p",
    "key : v\n  indented: x\n- top item\nx: 'q'\ny: \"q\"\nz: [a]\nw: {a: 1}\nv: *a\nu: &a x",
    "k: a\tb\nk2: x\r\nk3: \u00a0x\nk4: caf\u00e9\nk5: \u65e5\u672c\nk6: x  \nk7:   y",
    "true: x\n1: y\n1_0: z\n# comment\n\n...\n---\nlist:\n - a\n-x\n- a: b\n- 'q'",
]


@pytest.mark.parametrize("fm_text", ["d: NULL\n- a", "e: ~\n- a", "n: null\n- a\n- b"])
def test_a_null_value_takes_no_list(fm_text: str) -> None:
    """Found by the property test below: a key whose value reads as null is not a key
    without a value, and a list under it is PyYAML's error, not a list."""
    assert _flat_mapping(fm_text) is None
    assert _load_yaml(fm_text)[1] is not None  # PyYAML's error, said as a warning


@pytest.mark.parametrize(
    "fm_text", ["tags:\n\n- a", "tags:\n- a\n\n- b\ntitle: x", "tags:\n- a\n \n- b"]
)
def test_a_blank_line_inside_a_list_keeps_its_key(fm_text: str) -> None:
    """Found by the property test below (in CI, 2026-11-30): a blank line made the list
    after it a list of the key "" instead of its own key's."""
    assert _flat_mapping(fm_text) == _load_yaml(fm_text)[0]
    assert "" not in (_flat_mapping(fm_text) or {})


def flat_lines() -> st.SearchStrategy[str]:
    pieces = [line for case in FLAT_CASES for line in case.split("\n")]
    return st.lists(st.sampled_from(pieces), min_size=1, max_size=8).map("\n".join)


@given(flat_lines())
@settings(max_examples=400, deadline=None)
def test_flat_frontmatter_reads_as_pyyaml_does(fm_text: str) -> None:
    flat = _flat_mapping(fm_text)
    if flat is not None:
        assert (flat, None) == _load_yaml(fm_text), fm_text


def test_the_flat_path_takes_common_frontmatter() -> None:
    for case in FLAT_CASES[:2]:
        for fm_text in case.split("\n"):
            assert load_frontmatter(fm_text) == _load_yaml(fm_text), fm_text
    common = "aliases:\n- Ann\ntags:\n- \npublish: true\nModule Name: X\nms.date: 12/20/2016"
    assert _flat_mapping(common) == {
        "aliases": ["Ann"],
        "tags": [None],
        "publish": True,
        "Module Name": "X",
        "ms.date": "12/20/2016",
    }
    for other in ("a: 1", "a: 'q'", "a: x #c", "a:\n  - x", "a: *b", "a: x\r"):
        assert _flat_mapping(other) is None, other


def split_by_lines(text: str) -> tuple[str | None, str, int]:
    """``split_frontmatter`` the plain way: every line of the note, one after the other."""
    lines = text.split("\n")
    if not text.startswith("---") or lines[0].rstrip("\r").rstrip(" \t") != "---":
        return None, text, 1
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r").rstrip(" \t") in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :]), i + 2
    return None, text, 1


@given(st.lists(st.sampled_from(["---", "--- \r", "...", "---x", "a: b", "", "\r", " ---"])))
@settings(max_examples=300, deadline=None)
def test_the_frontmatter_block_is_found_as_line_by_line(lines: list[str]) -> None:
    for text in ("\n".join(lines), "\n".join(["---", *lines]), "\r\n".join(["---", *lines])):
        assert split_frontmatter(text) == split_by_lines(text), text
