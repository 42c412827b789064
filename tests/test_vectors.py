"""Vector and hybrid search with the real packaged model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from markvault import Vault
from markvault.embed.embedder import Embedder, SentenceEmbedder
from markvault.runtime.local_host import open_local
from markvault.types.search import SearchRequest

from .conftest import WriteNotes

pytestmark = pytest.mark.model


@pytest.fixture(scope="session")
def embedder(encoder_cache: Path) -> Embedder:
    e = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache)
    assert e.dim == 384
    return e


@pytest.fixture
def vault_with(embedder: Embedder, vault_dir: Path) -> Iterator[Vault]:
    v = open_local(vault_dir, vault_dir.parent / "index", embedder=embedder)
    yield v
    v.close()


NOTES = {
    "cars.md": "# Vehicle upkeep\n\nWhen an automobile will not turn over, check the battery "
    "terminals and the starter motor before calling a mechanic.",
    "errors.md": "# Error catalogue\n\nERR_7731 means the upstream gateway closed the socket; "
    "retry with backoff.",
    "baking.md": "# Bread\n\nKnead the dough for ten minutes, then let it rise until doubled.",
    "garden.md": "# Tomatoes\n\nWater tomato plants deeply twice a week and stake them early.",
    "network.md": "# Timeouts\n\nA request that hangs usually means a firewall drops packets.",
    "music.md": "# Guitar\n\nTune the low E string first, then tune the others relative to it.",
}
QUERIES = {  # query -> the one relevant note
    "my car won't start in the morning": "cars.md",
    "ERR_7731": "errors.md",
    "how long should dough be kneaded": "baking.md",
    "connection hangs forever": "network.md",
}


def mrr(v: Vault, mode: str) -> float:
    total = 0.0
    for query, relevant in QUERIES.items():
        found = [h.path for h in v.search(SearchRequest(query, mode=mode, limit=10)).hits]
        total += 1 / (found.index(relevant) + 1) if relevant in found else 0
    return total / len(QUERIES)


def test_vector_search_finds_meaning_without_shared_words(
    write: WriteNotes, vault_with: Vault
) -> None:
    write(NOTES)
    report = vault_with.reindex()
    assert report.embedded == report.chunks == len(NOTES)
    hit = vault_with.search(SearchRequest("my car won't start in the morning", mode="vector")).hits[
        0
    ]
    assert hit.path == "cars.md"
    assert set(hit.ranks) == {"vector"}


def test_hybrid_beats_the_weaker_single_mode(write: WriteNotes, vault_with: Vault) -> None:
    write(NOTES)
    vault_with.reindex()
    keyword, vector, hybrid = (mrr(vault_with, m) for m in ("keyword", "vector", "hybrid"))
    assert hybrid >= max(keyword, vector) - 1e-9
    assert hybrid > min(keyword, vector)
    hit = vault_with.search(SearchRequest("ERR_7731 socket")).hits[0]
    assert hit.path == "errors.md" and set(hit.ranks) == {"keyword", "vector"}


def test_rename_and_unchanged_text_are_never_re_embedded(
    write: WriteNotes, vault_with: Vault
) -> None:
    vault = write({"a.md": "# A\n\n## One\n\nalpha text\n\n## Two\n\nbeta text", "b.md": "gamma"})
    first = vault_with.reindex()
    assert first.embedded == 3
    (vault / "a.md").rename(vault / "moved.md")
    (vault / "b.md").write_text("gamma changed", encoding="utf-8")
    report = vault_with.reindex()
    assert (report.renamed, report.updated, report.embedded) == (1, 1, 1)
    index = vault_with.host.core().keeper.open_index(write=False)
    assert index.vectors.counts("all-MiniLM-L6-v2") == (3, 3)
    assert vault_with.search(SearchRequest("alpha", mode="vector")).hits[0].path == "moved.md"


def test_multilingual_notes_are_found_by_hybrid_search(
    write: WriteNotes, vault_with: Vault
) -> None:
    write(
        {
            "zh.md": "# 机器学习\n\n机器学习是人工智能的一个分支。",
            "ja.md": "# 東京\n\n今日の東京は晴れです。",
            "ru.md": "# Поиск\n\nПоиск по заметкам работает быстро.",
            "de.md": "# Straße\n\nDie Straße ist für Fußgänger gesperrt.",
            **NOTES,
        }
    )
    vault_with.reindex()
    chinese = vault_with.search(SearchRequest("机器学习"))
    assert set(chinese.hits[0].ranks) == {"keyword"}
    assert any("reads English only" in w for w in chinese.warnings)
    assert (
        "vector" in vault_with.search(SearchRequest("Fußgänger")).hits[0].ranks
    )  # Latin script: fused
    for query, path in [
        ("机器学习", "zh.md"),
        ("東京", "ja.md"),
        ("поиск заметок", "ru.md"),
        ("Fußgänger", "de.md"),
    ]:
        assert vault_with.search(SearchRequest(query)).hits[0].path == path, query


def test_a_rebuild_keeps_the_vectors_of_unchanged_text(
    write: WriteNotes, vault_with: Vault
) -> None:
    import duckdb

    write({"a.md": "# A\n\nalpha text", "b.md": "# B\n\nbeta text"})
    assert vault_with.reindex().embedded == 2
    vault_with.close()
    con = duckdb.connect(str(vault_with.settings.db_path))
    con.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    con.close()
    report = vault_with.reindex()
    assert report.embedded == 0 and report.reused == 2
    assert any("Kept 2 vectors" in n for n in report.notices)


def test_a_search_never_embeds_the_whole_vault(write: WriteNotes, vault_with: Vault) -> None:
    write({"a.md": "alpha"})
    result = vault_with.search(SearchRequest("alpha"))  # no index yet: built keyword-only
    assert [h.path for h in result.hits] == ["a.md"]
    assert any("no vectors" in w for w in result.warnings)


def test_a_server_answers_from_keywords_while_the_model_loads(
    write: WriteNotes, vault_dir: Path, embedder: Embedder, encoder_cache: Path
) -> None:
    write({"a.md": "# A\n\nalpha words"})
    with open_local(vault_dir, vault_dir.parent / "index", embedder=embedder) as v:
        v.reindex()  # vectors built with the shared, loaded model
    # Not loaded yet, as in a server just started.
    fresh = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache)
    with open_local(vault_dir, vault_dir.parent / "index", embedder=fresh) as v:
        v.host.model_wait = 0.0
        early = v.search(SearchRequest("alpha"))
        assert [h.path for h in early.hits] == ["a.md"]
        assert set(early.hits[0].ranks) == {"keyword"}
        assert any("still loading" in w for w in early.warnings)
        fresh.start_loading()
        assert fresh.wait(120)
        late = v.search(SearchRequest("alpha"))
        assert set(late.hits[0].ranks) == {"keyword", "vector"}


def test_the_batch_model_is_ready_once_opened(encoder_cache: Path) -> None:
    """What a write's refresh asks before embedding inline (lifecycle.refresh): loaded
    for a query is not enough; a background load's warm-up, or an embedding, opens it."""
    loaded = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache)
    loaded.encode_query("alpha")
    assert loaded.loaded and not loaded.batch_ready
    loaded.encode(["alpha words"])
    assert loaded.batch_ready
    warmed = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache)
    warmed.start_loading()
    assert warmed.wait(120)
    assert warmed._batch_open.wait(120)  # the load's thread goes on to warm it up
    assert warmed.batch_ready
