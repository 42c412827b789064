"""Vector, hybrid and deep search and background embedding, without the model: the
deterministic stand-in (``fakes.HashEmbedder``) reads "automobile" as "car", so meaning
and keywords find different notes, and the fusion around them can be checked exactly."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from markvault import Vault
from markvault.config import Settings
from markvault.core.runtime_context import RuntimeContext
from markvault.errors import UsageError
from markvault.runtime.local_host import LocalHost, open_local
from markvault.search import feedback, fusion
from markvault.search.fusion import KEYWORD_WEIGHT, RRF_K
from markvault.search.searcher import FUSED_CANDIDATES, ORIGINAL_WEIGHT
from markvault.types.search import Filters, SearchRequest

from .conftest import WriteNotes
from .fakes import NAME, HashEmbedder

NOTES = {
    "car.md": "# Car repair\n\nCar repair.",
    "automobile.md": "# Automobile\n\nMend the automobile engine at home.",
    "walrus.md": "# Walrus\n\nA walrus census counts every walrus on the ice.",
    "census.md": "# Census\n\nThe census of pens, taken each spring.",
}


@pytest.fixture
def fake() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def vault(write: WriteNotes, vault_dir: Path, fake: HashEmbedder) -> Iterator[Vault]:
    write(NOTES)
    with open_local(vault_dir, vault_dir.parent / "index", model=NAME, embedder=fake) as v:
        report = v.reindex()
        assert (report.embedded, report.notes) == (4, 4)
        yield v


def paths(result: object) -> list[str]:
    return [h.path for h in result.hits]  # type: ignore[attr-defined]


def test_vector_search_finds_meaning_without_shared_words(vault: Vault) -> None:
    assert paths(vault.search(SearchRequest("car repair", mode="keyword"))) == ["car.md"]
    found = vault.search(SearchRequest("car repair", mode="vector"))
    assert paths(found)[:2] == ["car.md", "automobile.md"]
    assert found.hits[0].scores["vector"] == pytest.approx(1.0, abs=1e-6)


def test_hybrid_fuses_the_normalized_scores_of_both_lists(vault: Vault, fake: HashEmbedder) -> None:
    """Each side's score from what an unrelated note scores (BM25 0, the median cosine)
    to its best, weighted (fusion.convex): the note first on both sides scores 1, a note
    only the vector side found its share of the best cosine's lead over the median. The
    vector side is that of hybrid's second look: cosines with the query's vector moved
    toward the chunks the first fusion's top two notes show (search/feedback.py)."""
    result = vault.search(SearchRequest("car repair", mode="hybrid"))
    assert paths(result)[:2] == ["car.md", "automobile.md"]
    top, meaning_only = result.hits[0], result.hits[1]
    assert top.ranks == {"keyword": 1, "vector": 1}
    assert top.score == pytest.approx(1.0)
    assert meaning_only.ranks == {"vector": 2}
    assert len(result.hits) == len(NOTES)  # one chunk a note, every one on the vector side
    stored = vault.host.core().keeper.open_index(write=False).vectors
    chunk_vectors = stored.vectors_of(NAME, [h.chunk_id for h in result.hits])
    shown = chunk_vectors[:2].mean(axis=0)
    moved = fake.encode_query("car repair") + feedback.FEEDBACK_WEIGHT * shown
    moved /= np.linalg.norm(moved)
    cosines = [h.scores["vector"] for h in result.hits]
    assert cosines == pytest.approx(list(chunk_vectors @ moved), abs=1e-6)
    typical = max(float(np.median(cosines)), 0.0)
    assert 0 < typical < meaning_only.scores["vector"]
    share = (meaning_only.scores["vector"] - typical) / (top.scores["vector"] - typical)
    assert meaning_only.score == pytest.approx((1 - KEYWORD_WEIGHT) * share)
    assert result.counts["keyword"] == 1 and result.counts["vector"] >= 2


GARDEN = {
    "plants.md": "# Plants\n\nI bought three plants: a fern, a cactus and an orchid.",
    "more-plants.md": "# More plants\n\nBought two more plants at the market today.",
    "balcony.md": "# Balcony\n\nThe fern and the orchid sit on the balcony beside the cactus.",
    **{
        f"aside-{n}.md": f"# Aside {n}\n\n{text}"
        for n, text in enumerate(
            [
                "Filed the tax return on time.",
                "The train to Lyon left late again.",
                "Renewed the passport at the town hall.",
                "Fixed the leaking kitchen tap.",
                "Booked a dentist appointment for March.",
            ]
        )
    },
}


def test_hybrid_finds_what_its_first_notes_resemble(write: WriteNotes, vault_dir: Path) -> None:
    """A note that answers in its own words (the balcony's fern, cactus and orchid, not
    "plants bought") is found by neither list from the query alone; hybrid's second look
    finds it through the two notes it ranks first, above every unrelated note."""
    write(GARDEN)
    fake = HashEmbedder()
    with open_local(vault_dir, vault_dir.parent / "index", model=NAME, embedder=fake) as v:
        v.reindex()
        query = "plants bought"
        assert "balcony.md" not in paths(v.search(SearchRequest(query, mode="keyword")))
        alone = {h.path: h.score for h in v.search(SearchRequest(query, mode="vector")).hits}
        unrelated = [alone[p] for p in GARDEN if p.startswith("aside-")]
        assert alone["balcony.md"] <= max(unrelated) + 1e-6  # no closer than unrelated notes
        hybrid = paths(v.search(SearchRequest(query, mode="hybrid")))
        assert set(hybrid[:2]) == {"plants.md", "more-plants.md"}
        assert hybrid[2] == "balcony.md"
        # The second look's vector side keeps the search's filters.
        only = Filters(path_glob="*plants*")
        filtered = v.search(SearchRequest(query, mode="hybrid", filters=only))
        assert sorted(paths(filtered)) == ["more-plants.md", "plants.md"]


def test_the_second_look_moves_the_query_and_keeps_the_chunk_shown() -> None:
    """The moved query is a unit vector between the query and the shown chunks' mean;
    the notes take the second fusion's order, each showing the chunk the first fusion
    chose (what the query itself matches best)."""
    query = np.array([1.0, 0.0, 0.0], np.float32)
    shown = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    moved = feedback.moved_query(query, shown)
    half = feedback.FEEDBACK_WEIGHT / 2
    assert moved == pytest.approx(np.array([1.0, half, half]) / np.sqrt(1 + 2 * half**2))
    assert moved.dtype == query.dtype
    note_of = {1: "a.md", 2: "a.md", 3: "b.md", 4: "c.md", 5: "c.md"}.get
    first = [(1, 0.9, {}, {}), (2, 0.9, {}, {}), (3, 0.5, {}, {}), (4, 0.4, {}, {})]
    assert feedback.first_shown(first, note_of) == [1, 3]  # each note's first entry
    second = [(5, 0.8, {}, {}), (4, 0.8, {}, {}), (2, 0.7, {}, {}), (1, 0.7, {}, {})]
    kept = feedback.with_first_chunks(first, second, note_of)
    assert [(c, score) for c, score, _, _ in kept] == [(4, 0.8), (5, 0.8), (1, 0.7), (2, 0.7)]


def test_the_vector_side_is_scaled_from_the_typical_cosine() -> None:
    """A note below the typical cosine goes below 0 (its order kept, not tied at 0); a
    floor at or above the best cosine (every chunk alike) leaves cosine's own 0."""
    note_of = {1: "a.md", 2: "b.md", 3: "c.md"}
    vector = [(1, 0.8), (2, 0.5), (3, 0.2)]
    chunk_scores = dict(vector)

    def cosine(ids: Sequence[int]) -> dict[int, float]:
        return {c: chunk_scores[c] for c in ids}

    def scores(floor: float) -> dict[str, float]:
        fused = fusion.convex([], vector, note_of, cosine, {}, cosine_floor=floor)
        return {note_of[c]: score for c, score, _, _ in fused}

    assert scores(0.5) == pytest.approx({"a.md": 1.0, "b.md": 0.0, "c.md": -1.0})
    assert scores(0.0) == scores(0.8) == pytest.approx({"a.md": 1.0, "b.md": 0.625, "c.md": 0.25})
    assert fusion.typical_cosine(np.array([0.9, -np.inf, 0.1, 0.3])) == pytest.approx(0.3)
    assert fusion.typical_cosine(np.array([-0.2, -0.1, 0.4])) == 0.0  # never below 0
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 8, 1000, 1001):  # odd and even counts: numpy's median, exactly
        cosines = rng.uniform(-0.2, 0.9, n).astype(np.float32)
        assert fusion.typical_cosine(cosines) == pytest.approx(max(float(np.median(cosines)), 0))
    assert fusion.typical_cosine(np.array([])) == 0.0
    # A large vault: an evenly strided sample, within a fraction of a percentile.
    many = np.random.default_rng(7).permutation(np.linspace(0.0, 1.0, 250_001))
    assert fusion.typical_cosine(many) == pytest.approx(0.5, abs=0.01)


def _many_sections(seed: int, notes: int = 90, sections: int = 6) -> dict[str, str | bytes]:
    """Notes of several sections each, the query's words spread unevenly among them:
    a note's chunks fill a list faster than notes do, so a list's depth matters."""
    rng = np.random.default_rng(seed)
    words = ["walrus", "census", "engine", "repair", "ice", "spring", "pens", "home"]
    filler = ["the", "count", "taken", "each", "morning", "shore", "north", "table"]
    files: dict[str, str | bytes] = {}
    for n in range(notes):
        body = [f"# Note {n}"]
        for s in range(sections):
            picked = rng.choice(words, size=int(rng.integers(0, 4))).tolist()
            text = " ".join(picked + rng.choice(filler, size=12).tolist())
            body.append(f"## Part {s}\n\n{text}.")
        files[f"n{n:03}.md"] = "\n\n".join(body) + "\n"
    return files


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid", "deep"])
def test_pages_are_slices_of_one_ranking(
    write: WriteNotes, vault_dir: Path, fake: HashEmbedder, mode: str
) -> None:
    # An agent pages with offset: each page must continue the one before, not re-rank
    # a deeper list (hybrid fused 5 chunks per hit asked for: pages overlapped).
    write(_many_sections(seed=3))
    query = "walrus census on the ice, engine repair"
    with open_local(vault_dir, vault_dir.parent / "index", model=NAME, embedder=fake) as v:
        v.reindex()

        def ids(limit: int, offset: int = 0) -> list[str]:
            request = SearchRequest(query, mode=mode, limit=limit, offset=offset)
            return [h.path for h in v.search(request).hits]

        # The first search scores vectors in SQL, later ones from the matrix: the same
        # cosines up to float rounding, which may order the fake's many ties otherwise.
        ids(1)
        depth = FUSED_CANDIDATES // 5  # the hits one ranking holds (candidate_depth)
        whole = ids(depth)
        assert len(whole) == depth
        for size in (4, 10):
            pages = [p for start in range(0, depth, size) for p in ids(size, start)]
            assert pages == whole, size


def test_deep_search_weighs_the_query_above_its_variants(vault: Vault) -> None:
    # No note holds both words: the keywords decide nothing, so the variants run.
    variants = ["lex: repair", "vec: walrus on the ice"]
    result = vault.search(SearchRequest("census engine", mode="deep", variants=variants))
    assert set(result.counts) == {"keyword", "vector", "v1:keyword", "v2:vector"}
    assert not result.shortcut
    # Each list adds its weight over (k + rank): the query's own lists count double.
    weight = {"keyword": ORIGINAL_WEIGHT, "vector": ORIGINAL_WEIGHT}
    for hit in result.hits:
        expected = sum(weight.get(name, 1.0) / (RRF_K + r) for name, r in hit.ranks.items())
        assert hit.score == pytest.approx(expected)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    hits = {h.path: h for h in result.hits}
    assert {"census.md", "automobile.md"} <= set(paths(result)[:3])
    assert hits["car.md"].ranks["v1:keyword"] == 1  # a variant's own keywords
    assert "keyword" not in hits["car.md"].ranks
    assert hits["walrus.md"].ranks["v2:vector"] == 1


def test_deep_search_skips_variants_when_the_keywords_decide(
    write: WriteNotes, vault: Vault, fake: HashEmbedder
) -> None:
    result = vault.search(
        SearchRequest("census walrus ice", mode="deep", variants=["vec: automobile"])
    )
    assert result.shortcut and "v1:vector" not in result.counts
    assert any("variants skipped" in w for w in result.warnings)
    assert "automobile" not in fake.encoded  # the variant was never embedded


def test_min_score_and_vector_mode_filters(vault: Vault) -> None:
    result = vault.search(SearchRequest("car", mode="vector", min_score=0.5))
    assert result.hits and all(h.score >= 0.5 for h in result.hits)
    assert "walrus.md" not in paths(result)
    kinds = vault.search(SearchRequest("car", mode="vector", limit=1))
    assert len(kinds.hits) == 1


def test_keywords_answer_while_the_model_loads(
    write: WriteNotes, vault_dir: Path, fake: HashEmbedder
) -> None:
    write(NOTES)
    index = vault_dir.parent / "index"
    with open_local(vault_dir, index, model=NAME, embedder=fake) as v:
        v.reindex()
    release = threading.Event()
    slow = HashEmbedder(release=release)  # loads only when released
    with open_local(vault_dir, index, model=NAME, embedder=slow) as v:
        v.host.model_wait = 0.0
        slow.start_loading()
        early = v.search(SearchRequest("car repair"))
        assert paths(early) == ["car.md"] and set(early.hits[0].ranks) == {"keyword"}
        assert any("still loading" in w for w in early.warnings)
        with pytest.raises(UsageError, match="still loading"):
            v.search(SearchRequest("car repair", mode="vector"))
        release.set()
        assert slow.wait(10)
        late = v.search(SearchRequest("car repair"))
        assert set(late.hits[0].ranks) == {"keyword", "vector"}


def test_the_owner_embeds_a_keyword_only_index_in_the_background(
    write: WriteNotes, vault_dir: Path, fake: HashEmbedder
) -> None:
    write(NOTES)
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index", model=NAME)
    host = LocalHost(RuntimeContext(settings, fake), owner=True)
    vault = Vault(host)
    try:
        vault.reindex(vectors=False)
        assert vault.index_status()["vectors"] == {"embedded": 0, "total": 4, "ready": False}
        host.start_background(watch=False)
        assert host.backfill_idle.wait(30), "the background embedding did not finish"
        assert vault.index_status()["vectors"]["ready"]
        assert sorted(fake.encoded) == sorted(set(fake.encoded))  # each text once
        # A write wakes it again; the new note has its vector when it is idle once more.
        host.backfill_idle.clear()
        vault.new_note("note", "Sedan care", content="Mend the sedan.")
        assert host.backfill_idle.wait(30)
        assert vault.index_status()["vectors"]["ready"]
        assert paths(vault.search(SearchRequest("automobile", mode="vector")))[0] in {
            "automobile.md",
            "notes/Sedan care.md",
        }
    finally:
        vault.close()


def test_a_write_leaves_vectors_to_the_backfill_while_the_model_opens(
    write: WriteNotes, vault_dir: Path, fake: HashEmbedder
) -> None:
    """A write's refresh holds the index for every caller: it never opens the model
    there (seconds on a busy machine, where a waiting read answers "busy" after 3 s),
    and embeds inline once the model is open."""
    write(NOTES)
    index = vault_dir.parent / "index"
    with open_local(vault_dir, index, model=NAME, embedder=fake) as v:
        v.reindex(vectors=False)
        fake.load()  # loaded (a hybrid search's query model), the batch model not open
        v.new_note("note", "Sedan care", content="Mend the sedan.")
        assert fake.encoded == []
        assert v.index_status()["vectors"]["embedded"] == 0
        v.reindex()  # embeds, so opens the batch model
        v.new_note("note", "Walrus count", content="Count the walruses.")
        assert any("walruses" in text for text in fake.encoded)
        assert v.index_status()["vectors"]["ready"]


def test_inline_embedding_gives_the_index_back_within_seconds_on_a_slow_cpu(
    write: WriteNotes, vault_dir: Path
) -> None:
    """However slow the CPU, a sync embeds inline only about INLINE_EMBED_SECONDS, group
    by group, and says what it left to the background."""
    write({f"n{i}.md": f"# Note {i}\n\nWords of note {i}." for i in range(24)})
    slow = HashEmbedder(seconds_per_encode=0.6)
    index = vault_dir.parent / "index"
    with open_local(vault_dir, index, model=NAME, embedder=slow) as v:
        v.reindex(vectors=False)
        slow.encode(["open the batch model"])
        report = v.refresh()
        assert report.embedded == 16  # two groups of 8 started within the second
        assert "8 chunks wait for vectors (embedded later)" in report.notices
        assert v.index_status()["vectors"]["embedded"] == 16
