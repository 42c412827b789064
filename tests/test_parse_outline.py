"""The fast Markdown outline (pulldown-cmark) against markdown-it-py's, the reference.

``parse_note`` reads blocks, headings, tags and links from ``outline.outline``; these tests
hold it, and the ``ParsedNote`` it leads to, equal to markdown-it-py's reading of the same
text: hand-written tricky Markdown, generated documents, the bundled vault and a
generated benchmark vault. ``bench/profile_index.py --alternatives`` runs the same check
over a whole corpus.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markvault.markdown.frontmatter import split_frontmatter
from markvault.markdown.outline import Outline, _Doubt, _Walk, outline, outline_reference
from markvault.markdown.parse import parse_note

ROOT = Path(__file__).resolve().parent.parent


def canonical(shape: Outline) -> tuple[object, ...]:
    """An outline up to each source line's surrounding whitespace, which no tag or link
    pattern can see (a run is raw source: a list's continuation lines keep their indent)."""
    runs = [
        ("\n".join(line.strip() for line in text.split("\n")).strip(), first, in_heading)
        for text, first, in_heading in shape.inlines
    ]
    return shape.blocks, runs


def assert_same(text: str, path: str = "notes/n.md") -> None:
    _, body, _ = split_frontmatter(text[1:] if text.startswith("\ufeff") else text)
    assert canonical(outline(body)) == canonical(outline_reference(body)), body
    assert parse_note(path, text) == parse_note(path, text, reference=True), text


# Read by pulldown-cmark itself (no doubt): the fast path must match on its own.
FAST = {
    "paragraphs": "one #a [[B]]\ntwo [c](d.md)\n\nthree\n",
    "atx headings": "# One #x\n## Two ##\n### Three # \n#### #\n####### seven\n#not\n",
    "setext": "Title #t\n===\n\nSub [[x]]\nline two\n---\n\ntext\n",
    "nested lists": "- a #one\n  - b [[two]]\n    - c [l](x.md)\n- d\n\n1. e\n2. f #g\n",
    "loose list": "- a\n\n- b #x\n\n  more [[y]]\n\nafter\n",
    "lazy continuation": "- item #a\ncontinues #b\n  and [[c]]\n\nnext\n",
    "fence in list": "- a\n  ```\n  #not-a-tag [[no]]\n  ```\n- b #yes\n",
    "unclosed fence": "text\n```\ncode #x\n\n[[no]]\n",
    "indented code": "para\n\n    code #x [[y]]\n\n\n    more\n\nafter #z\n",
    "tabs": "-\titem #a\n\n\tcode [[b]]\n\n- x\n\t- y #c\n",
    "html blocks": "<div>\n#no [[x]]\n</div>\n\n<!--\n#c\n-->\ntext #yes\n<span>[[s]]</span>\n",
    "inline code": "a `#no [[x]]` #yes ``b ` c`` [[d]]\n`open\n#spans` lines\n",
    "escapes": "\\#no #yes \\[[x]] [[y]]\n\n\\# not heading\n",
    "hr and headings": "a\n\n***\n- - -\n# H [[l]]\n",
    "unicode": "é ü #ünï [[Ω|ω]] [ç](ça.md)\n\n# Überschrift #x\n\n- 日本 #日本語\n",
    "crlf": "# T\r\n\r\n- a #x\r\n  b [[y]]\r\n\r\ntext\r\n",
    "lone cr": "a #x\rb [[y]]\r\rc\r",
    "nul": "a\0b #x\n",
    "heading in list": "- # H #no [[yes]]\n- text #yes\n",
    "links over lines": "see [a](\n  b.md) and [c]\n(d.md)\n\n- x [e](\n  f.md)\n",
    "list end at eof": "- a\n- b #x\n\n\n",
    "trailing spaces": "- a  \n  b #x   \n   \n\n  c\n",
}

# Read by markdown-it-py after a doubt: the answer must still be the reference's.
DOUBT = {
    "block quote": "> q #a\n> r [[b]]\nlazy #c\n\n>#tight\n\n> > nested #d\n",
    "quote in list": "- > q #a\n  > [[b]]\n\n  after\n",
    "table": "| a #x | b [[c\\|d]] |\n|---|:-:|\n| [[e|f]] | g #h |\n",
    "table after paragraph": "text #a\n| x | y |\n| - | - |\n| 1 | 2 |\n",
    "definitions": "[ref]: /url\n    indented #x\n\n[r2]: <a b> 'title'\ntext [[y]]\n",
    "empty items": "- \n\n\n- item #t\n\n-\n\n---\n*\n  \n",
    "empty last item": "- a\n- \n\n## H\n",
    "lone surrogate": "a \udc80 #x [[y]]\n",
}


@pytest.mark.parametrize("text", FAST.values(), ids=FAST.keys())
def test_fast_path_equals_markdown_it(text: str) -> None:
    src = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
    assert canonical(_Walk(src).run()) == canonical(outline_reference(text))
    assert_same(text)


@pytest.mark.parametrize("text", DOUBT.values(), ids=DOUBT.keys())
def test_doubtful_notes_equal_markdown_it(text: str) -> None:
    assert_same(text)


def test_doubts_are_raised_where_pulldown_and_markdown_it_part() -> None:
    for text in (DOUBT["block quote"], DOUBT["empty items"], DOUBT["empty last item"]):
        with pytest.raises(_Doubt):
            _Walk(text).run()


def test_frontmatter_lines_and_problems_carry_over() -> None:
    text = "---\ntitle: T\ntags: [a]\n---\n# H1 #x\n\n- [[L]] #y\n"
    note = parse_note("notes/n.md", text)
    assert note == parse_note("notes/n.md", text, reference=True)
    assert note.tags == ("a", "y")
    assert [(link.target, link.line) for link in note.links] == [("L", 7)]
    assert note.sections[0].line == 5


LINES = [
    "",
    "",
    "text #tag [[Note|alias]] and [l](a.md)",
    "plain words",
    "- item #t",
    "  - nested [[x]]",
    "    - deep",
    "* star",
    "1. one",
    "2) two",
    "> quote #q",
    ">#tight",
    "```",
    "~~~",
    "    indented code #c",
    "\tTab code",
    "# H1 #",
    "## H2 ##",
    "#notheading",
    "===",
    "---",
    "| a | b |",
    "|---|---|",
    "a | b",
    "<div>",
    "</div>",
    "<!-- c -->",
    "<script>",
    "[ref]: /url",
    "\\#escaped #tag2",
    "`code #x` #y",
    "-",
    "- ",
    "  continuation",
    "é ü #ünï [[Ω]]",
    "- # heading in item #no",
    "- ```",
    "[a](",
    "b.md)",
    "  ",
    " \t- mixed",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(LINES), min_size=1, max_size=25),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
)
def test_generated_documents_equal_markdown_it(lines: list[str], sep: str, end: bool) -> None:
    assert_same(sep.join(lines) + (sep if end else ""))


def _notes(folder: Path) -> list[tuple[str, str]]:
    return [
        (p.relative_to(folder).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted(folder.rglob("*.md"))
    ]


def test_bundled_vault_equals_markdown_it() -> None:
    notes = _notes(ROOT / "vault")
    assert notes
    for path, text in notes:
        assert_same(text, path)


def test_generated_vault_equals_markdown_it(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    try:
        from bench.gen_vault import generate
    finally:
        sys.path.remove(str(ROOT))
    generate(tmp_path, 80, seed=3)
    notes = _notes(tmp_path)
    assert len(notes) >= 80
    for path, text in notes:
        assert_same(text, path)
