"""The index: incremental reindex, rebuilds, and never touching the vault."""

from __future__ import annotations

import math
import os
from pathlib import Path

import duckdb
import pytest

from markvault.index import Index, keyword
from markvault.index.keyword import BM25_B, BM25_K1
from markvault.markdown.tokens import tokenize
from markvault.runtime.local_host import open_local
from markvault.types.search import Filters, SearchRequest

from .conftest import OpenVault, WriteNotes, checksums


def test_reindex_counts_and_noop(write: WriteNotes, open_vault: OpenVault) -> None:
    write({"a.md": "# A\n\nalpha", "sub/b.md": "---\nid: b\n---\nbeta", "c.txt": "not a note"})
    v = open_vault()
    report = v.reindex(vectors=False)
    assert (report.notes, report.added, report.errors) == (2, 2, [])
    again = v.reindex(vectors=False)
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 2)


def test_edit_add_delete_are_picked_up(write: WriteNotes, open_vault: OpenVault) -> None:
    vault = write({"a.md": "apple", "b.md": "banana"})
    v = open_vault()
    v.reindex(vectors=False)
    (vault / "a.md").write_text("cherry", encoding="utf-8")
    os.utime(vault / "a.md", ns=(1, 1))  # a different mtime even on coarse clocks
    (vault / "b.md").unlink()
    write({"c.md": "date"})
    report = v.reindex(vectors=False)
    assert (report.updated, report.removed, report.added) == (1, 1, 1)
    found = {
        h.path
        for h in v.search(SearchRequest("cherry OR date OR banana OR apple", mode="keyword")).hits
    }
    assert found == {"a.md", "c.md"}


def test_touch_without_change_does_not_reparse(write: WriteNotes, open_vault: OpenVault) -> None:
    vault = write({"a.md": "apple"})
    v = open_vault()
    v.reindex(vectors=False)
    os.utime(vault / "a.md", ns=(5, 5))
    report = v.reindex(vectors=False)
    assert (report.updated, report.unchanged) == (0, 1)


def test_rename_keeps_chunk_ids(write: WriteNotes, open_vault: OpenVault) -> None:
    vault = write({"old.md": "# Title\n\nsome unchanged text"})
    v = open_vault()
    v.reindex(vectors=False)
    before = v.search(SearchRequest("unchanged", mode="keyword")).hits[0].chunk_id
    (vault / "old.md").rename(vault / "new.md")
    report = v.reindex(vectors=False)
    assert (report.renamed, report.removed, report.added) == (1, 0, 0)
    hit = v.search(SearchRequest("unchanged", mode="keyword")).hits[0]
    assert (hit.path, hit.chunk_id) == ("new.md", before)


@pytest.mark.parametrize("kept", [20_000, 0], ids=["details-kept", "details-by-key"])
def test_warm_search_sees_a_rename_and_an_edit(
    write: WriteNotes, open_vault: OpenVault, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that searches again keeps each chunk's note in arrays, and in a small
    vault what hits show of the notes (reads.py): a rename keeps the chunk ids but moves
    them to another note, an edit changes the note's length and hash; the searches after
    them read them again."""
    monkeypatch.setattr("markvault.index.reads.NOTE_DETAILS_KEPT", kept)
    vault = write({"old.md": "# Title\n\nsome unchanged text", "b.md": "unchanged words"})
    v = open_vault()
    v.reindex(vectors=False)
    keyword = v.host.core().keeper.open_index(write=True).keyword
    keyword.arrays = True
    for _ in range(2):  # looked up by key, then every chunk's note read into arrays
        assert {h.path for h in v.search(SearchRequest("unchanged", mode="keyword")).hits} == {
            "old.md",
            "b.md",
        }
    (vault / "old.md").rename(vault / "new.md")
    (vault / "b.md").write_text("unchanged words, and many more words besides these")
    v.reindex(vectors=False)
    warm = [v.search(SearchRequest("unchanged", mode="keyword")).hits for _ in range(3)]
    keyword.arrays = False
    cold = v.search(SearchRequest("unchanged", mode="keyword")).hits
    assert {h.path for h in cold} == {"new.md", "b.md"}
    for hits in warm:
        shown = [(h.path, h.id, h.title, h.hash, h.chunk_id, h.snippet) for h in cold]
        assert [(h.path, h.id, h.title, h.hash, h.chunk_id, h.snippet) for h in hits] == shown
        assert [h.score for h in hits] == pytest.approx([h.score for h in cold], abs=1e-9)
    # Fusion's chunk -> note lookups answer from the same arrays while they are current.
    reads = v.host.core().keeper.open_index(write=True).reads
    assert reads._chunk_notes is not None and reads._chunk_notes[0] == reads.store.changes
    ids = [h.chunk_id for h in cold] + [-1]  # -1: no such chunk
    in_sql = {int(r[0]): r[1] for r in reads.chunk_rows(ids, "path")}
    assert in_sql == {h.chunk_id: h.path for h in cold}
    assert reads.chunk_paths(ids) == in_sql


def test_indexer_never_writes_the_vault(bundled_copy: Path, tmp_path: Path) -> None:
    before = checksums(bundled_copy)
    with open_local(bundled_copy, tmp_path / "index") as v:
        v.reindex(vectors=False)
        v.search(SearchRequest("markvault", mode="keyword"))
        v.status()
        v.get("notes/Welcome.md")
    assert checksums(bundled_copy) == before


def test_corrupt_index_is_rebuilt_with_a_notice(write: WriteNotes, open_vault: OpenVault) -> None:
    write({"a.md": "apple"})
    v = open_vault()
    v.reindex(vectors=False)
    v.close()
    db = v.settings.db_path
    db.write_bytes(b"this is not a duckdb file at all" * 100)
    v2 = open_vault()
    result = v2.search(SearchRequest("apple", mode="keyword"))
    assert [h.path for h in result.hits] == ["a.md"]
    assert sum("rebuil" in w.lower() for w in result.warnings) == 1, result.warnings


def test_truncated_index_is_rebuilt(write: WriteNotes, open_vault: OpenVault) -> None:
    write({"a.md": "apple"})
    v = open_vault()
    v.reindex(vectors=False)
    v.close()
    db = v.settings.db_path
    db.write_bytes(db.read_bytes()[:5000])
    report = open_vault().reindex(vectors=False)
    assert report.notes == 1
    assert report.notices


def test_schema_or_fingerprint_change_rebuilds(write: WriteNotes, open_vault: OpenVault) -> None:
    write({"a.md": "apple"})
    v = open_vault()
    v.reindex(vectors=False)
    v.close()
    con = duckdb.connect(str(v.settings.db_path))
    con.execute("UPDATE meta SET value = 'old' WHERE key = 'chunk_fingerprint'")
    con.close()
    report = open_vault().reindex(vectors=False)
    assert report.added == 1
    assert any("chunking" in n for n in report.notices)


def test_an_outdated_index_is_rebuilt_on_the_read_path(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    write({"a.md": "apple"})
    v = open_vault()
    v.reindex(vectors=False)
    v.close()
    con = duckdb.connect(str(v.settings.db_path))
    con.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    con.close()
    reader = open_vault()
    first = reader.search(SearchRequest("apple", mode="keyword"))
    reader.close()
    assert [h.path for h in first.hits] == ["a.md"]
    # Said once, with its reason: not once by the reader and again by the rebuild.
    rebuilt = [w for w in first.warnings if "rebuil" in w.lower()]
    assert len(rebuilt) == 1 and "schema version" in rebuilt[0], first.warnings
    v2 = open_vault()
    assert v2.get("a.md")["text"] == "apple"
    result = v2.search(SearchRequest("apple", mode="keyword"))
    assert [h.path for h in result.hits] == ["a.md"]
    assert not result.warnings


def test_deleting_the_index_loses_nothing(write: WriteNotes, open_vault: OpenVault) -> None:
    write({"a.md": "apple"})
    v = open_vault()
    v.reindex(vectors=False)
    v.close()
    v.settings.db_path.unlink()
    assert [h.path for h in open_vault().search(SearchRequest("apple", mode="keyword")).hits] == [
        "a.md"
    ]


@pytest.mark.parametrize("arrays", [False, True], ids=["sql", "numpy"])
def test_bm25_matches_a_reference_implementation(
    bundled_copy: Path, tmp_path: Path, arrays: bool
) -> None:
    """BM25 over the fts postings equals Lucene's BM25 computed here from the tokens,
    scored in SQL and in numpy (index/bm25.py)."""
    with open_local(bundled_copy, tmp_path / "index") as v:
        v.reindex(vectors=False)
        index = v.host.core().keeper.open_index(write=True)
        index.keyword.arrays = arrays
        ids = [r[0] for r in index.store.con.execute("SELECT id FROM chunks").fetchall()]
        docs = index.keyword.chunk_tokens(ids)
        tokens = {cid: text.split() for cid, text in docs.items()}
        n = len(tokens)
        avgdl = sum(len(t) for t in tokens.values()) / n
        for query in ["search index", "vault note link", "duckdb fts", "机器学习", "поиск"]:
            terms = list(dict.fromkeys(tokenize(query)))
            expected: dict[int, float] = {}
            for term in terms:
                df = sum(1 for t in tokens.values() if term in t)
                idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
                for cid, t in tokens.items():
                    tf = t.count(term)
                    if tf:
                        norm = tf + BM25_K1 * (1 - BM25_B + BM25_B * len(t) / avgdl)
                        expected[cid] = expected.get(cid, 0) + idf * tf * (BM25_K1 + 1) / norm
            ours = dict(index.keyword.bm25(terms, Filters(include_expired=True), 1000))
            assert ours.keys() == expected.keys(), query
            for cid, score in expected.items():
                assert abs(ours[cid] - score) < 1e-9, query


@pytest.mark.parametrize("expired_inline", [20_000, 0], ids=["few-expired", "many-expired"])
def test_numpy_and_sql_scoring_give_the_same_hits(
    bundled_copy: Path, tmp_path: Path, expired_inline: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process's first search scores in SQL, later ones in numpy (index/bm25.py): the
    same hits in the same order with the same scores, for every kind of query; with
    many expired chunks SQL joins each candidate with its note, numpy drops them."""
    monkeypatch.setattr("markvault.index.keyword.EXPIRED_INLINE_MAX", expired_inline)
    (bundled_copy / "notes" / "expired.md").write_text(
        "---\nvalid_until: 2020-01-01\n---\n# Search index\n\nsearch index vault note\n",
        encoding="utf-8",
    )
    queries = [
        "search index",
        "vault note link note",
        '"keyword search"',
        "+vault -link note",
        "sea* index",
        "duckdb OR watcher",
        "机器学习",
        "zzqxv",
    ]
    with open_local(bundled_copy, tmp_path / "index") as v:
        v.reindex(vectors=False)
        keyword = v.host.core().keeper.open_index(write=True).keyword
        found = []
        for query in queries:
            got = {}
            for arrays in (False, True):
                keyword.arrays = arrays
                hits = v.search(SearchRequest(query, mode="keyword", limit=20)).hits
                got[arrays] = [(h.path, h.chunk_id, h.snippet, h.more_chunks) for h in hits]
                got[arrays, "scores"] = [h.score for h in hits]
            assert got[False] == got[True], query
            assert got[True, "scores"] == pytest.approx(got[False, "scores"], abs=1e-9), query
            found.append(bool(got[True]))
        assert found == [True] * (len(queries) - 1) + [False]
        keyword.arrays = True
        hits = v.search(SearchRequest("search index", mode="keyword", limit=50)).hits
        assert hits and "notes/expired.md" not in {h.path for h in hits}


def test_vector_scores_in_sql_and_from_the_matrix_agree(bundled_copy: Path, tmp_path: Path) -> None:
    """A process's first vector query is scored in DuckDB, later ones from the matrix it
    then loads (index/vectors.py): the same chunks, in id order, the same scores."""
    import numpy as np

    with open_local(bundled_copy, tmp_path / "index") as v:
        v.reindex(vectors=False)
        vectors = v.host.core().keeper.open_index(write=True).vectors
        hashes = [h for h, _ in vectors.missing("test-model")]
        rng = np.random.default_rng(7)
        rows = rng.normal(size=(len(hashes), 16)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        vectors.ensure_table("test-model", 16)
        vectors.add("test-model", hashes, rows)
        query = rows[3]
        first_ids, first = vectors.scores("test-model", query)
        assert vectors._matrix is None  # scored without loading every vector
        # Hybrid's second look in the same search is no second query: SQL again.
        follow_ids, follow = vectors.scores("test-model", rows[4], follow_up=True)
        assert vectors._matrix is None and list(follow_ids) == list(first_ids)
        wanted = [int(first_ids[9]), -1, int(first_ids[2])]  # -1: no such chunk
        from_sql = vectors.vectors_of("test-model", wanted)
        assert from_sql.shape == (2, 16) and vectors._matrix is None
        second_ids, second = vectors.scores("test-model", query)
        assert vectors._matrix is not None
        assert len(first_ids) > len(hashes) // 2 and list(first_ids) == sorted(first_ids)
        assert list(first_ids) == list(second_ids)
        assert first == pytest.approx(second, abs=1e-6)
        assert float(first.max()) == pytest.approx(1.0, abs=1e-6)
        assert float(follow.max()) == pytest.approx(1.0, abs=1e-6)
        from_matrix = vectors.vectors_of("test-model", wanted)
        assert from_matrix == pytest.approx(from_sql, abs=1e-6)
        assert from_matrix @ query == pytest.approx(first[[9, 2]], abs=1e-6)
        # After a change the next query is scored in SQL again, with the new vectors.
        vectors.forget()
        assert vectors.scores("other-model", query)[0].size == 0


def test_numpy_top_chunks_break_ties_by_id_whatever_the_ids() -> None:
    """Chunks tied at the cut are kept by id, as SQL's ORDER BY score DESC, chunk_id
    does; dense ids (counted), few rows among many ids and sparse ids (both summed by
    sorting) give the same."""
    import numpy as np

    from markvault.index import bm25

    found = {"a": (1, 3, 3), "b": (2, 1, 1)}
    for base in (0, 100, 10**9):
        rows = {
            "termid": np.array([1, 1, 1, 1, 2], dtype=np.int32),
            "chunk_id": np.array([9, 4, 7, 2, 7], dtype=np.int64) + base,
            "tf": np.array([1, 1, 1, 2, 1], dtype=np.int32),
            "dl": np.array([5, 5, 5, 5, 5], dtype=np.int32),
        }
        top = bm25.top_chunks(found, ["a", "b"], rows, (10, 50), (1.2, 0.75, 3, [base + 2]))
        assert [cid - base for cid, _ in top] == [7, 4, 9]
        assert top[1][1] == top[2][1] < top[0][1]


def test_index_lives_outside_the_vault(vault_dir: Path) -> None:
    import pytest

    from markvault.errors import ConfigError

    with pytest.raises(ConfigError, match="inside the vault"):
        open_local(vault_dir, vault_dir / "index")


def test_ignored_files_and_folders(write: WriteNotes, open_vault: OpenVault) -> None:
    write(
        {
            "keep.md": "kept",
            "UPPER.MD": "kept too",
            ".obsidian/workspace.md": "x",
            ".trash/old.md": "x",
            ".git/notes.md": "x",
            ".hidden/secret.md": "x",
            "drafts/private-1.md": "x",
            "drafts/public.md": "kept",
            "notes/.swp.md": "x",
            "notes/readme.txt": "x",
            ".markvaultignore": "# private drafts\ndrafts/private-*\nscratch/\n",
            "scratch/a.md": "x",
        }
    )
    v = open_vault()
    v.reindex(vectors=False)
    assert set(v.host.core().keeper.open_index(write=False).writes.file_states()) == {
        "keep.md",
        "UPPER.MD",
        "drafts/public.md",
    }


def test_nfd_and_nfc_names_are_one_note(write: WriteNotes, open_vault: OpenVault) -> None:
    import unicodedata

    nfd = unicodedata.normalize("NFD", "Café.md")
    write({nfd: "coffee"})
    v = open_vault()
    v.reindex(vectors=False)
    hit = v.search(SearchRequest("coffee", mode="keyword")).hits[0]
    assert hit.path == unicodedata.normalize("NFC", "Café.md")
    assert v.get("Café.md")["text"] == "coffee"  # found by its NFC name, read from the NFD file


def test_case_only_rename_keeps_one_entry(write: WriteNotes, open_vault: OpenVault) -> None:
    vault = write({"Note.md": "words"})
    v = open_vault()
    v.reindex(vectors=False)
    (vault / "Note.md").rename(vault / "note.md")
    report = v.reindex(vectors=False)
    assert report.notes == 1 and report.renamed == 1
    assert [h.path for h in v.search(SearchRequest("words", mode="keyword")).hits] == ["note.md"]


def test_vault_config_file(write: WriteNotes, vault_dir: Path) -> None:
    from markvault import Settings

    write({".markvault.toml": 'index_dir = "../elsewhere"\n[chunk]\nmax_pieces = 120\n'})
    settings = Settings.load(vault=vault_dir, env={})
    assert settings.index_dir == (vault_dir.parent / "elsewhere").resolve()
    assert settings.chunk.max_pieces == 120
    write({".markvault.toml": "[chunk]\nbogus = 1\n"})
    from markvault import ConfigError

    with pytest.raises(ConfigError, match="max_pieces"):
        Settings.load(vault=vault_dir, env={})


def _keyword_state(
    index: Index,
) -> tuple[set[tuple[str, int, int, int]], dict[str, tuple[int, int]], tuple]:
    postings = set(
        index.store.con.execute(
            "SELECT v.term, p.chunk_id, p.tf, p.dl FROM postings p JOIN vocab v USING (termid)"
        ).fetchall()
    )
    vocab = index.store.con.execute("SELECT term, df, ndf FROM vocab").fetchall()
    df = {r[0]: (r[1], r[2]) for r in vocab}
    stats = index.store.con.execute("SELECT n, total FROM kw_stats").fetchone()
    return postings, df, tuple(stats or ())


@pytest.mark.parametrize("literal_chunks", [500, 0], ids=["literals", "arrow"])
def test_keyword_index_updated_in_place_equals_a_full_rebuild(
    bundled_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, literal_chunks: int
) -> None:
    """Edits, new notes, deletions and renames update postings, document frequencies and
    collection statistics in place, their postings moved as SQL literals or as Arrow
    tables; the rankings equal those of a rebuild from nothing."""
    monkeypatch.setattr(keyword, "KW_LITERAL_CHUNKS", literal_chunks)
    index_dir = tmp_path / "index"
    with open_local(bundled_copy, index_dir) as v:
        v.reindex(vectors=False)
        welcome = bundled_copy / "notes/Welcome.md"
        welcome.write_text(welcome.read_text() + "\nA new paragraph about zebrafish search.\n")
        (bundled_copy / "notes/New.md").write_text("# New\n\nzebrafish and search, 搜索引擎\n")
        (bundled_copy / "notes/Tags.md").unlink()
        (bundled_copy / "notes/Linking.md").rename(bundled_copy / "notes/Links moved.md")
        report = v.reindex(vectors=False)
        assert (report.added, report.updated, report.removed, report.renamed) == (1, 1, 1, 1)
        index = v.host.core().keeper.open_index(write=True)
        assert not index.keyword.dirty()  # applied in place, not rebuilt
        assert int(index.meta()["kw_appended"]) > 0
        queries = ["search index", "zebrafish", "vault note link", "搜索", "поиск", "tags"]
        in_place = {
            q: index.keyword.bm25(
                list(dict.fromkeys(tokenize(q))), Filters(include_expired=True), 1000
            )
            for q in queries
        }
        state = _keyword_state(index)
        index.keyword.rebuild()
        rebuilt = {
            q: index.keyword.bm25(
                list(dict.fromkeys(tokenize(q))), Filters(include_expired=True), 1000
            )
            for q in queries
        }
        assert _keyword_state(index) == state
        for q in queries:
            assert [cid for cid, _ in in_place[q]] == [cid for cid, _ in rebuilt[q]], q
            for (_, a), (_, b) in zip(in_place[q], rebuilt[q], strict=True):
                assert abs(a - b) < 1e-9, q
        assert in_place["zebrafish"], "the new words are searchable"


def test_each_kind_of_change_alone_updates_the_keyword_index_as_a_rebuild(
    bundled_copy: Path, tmp_path: Path
) -> None:
    """Chunks taken out and put back in one net update of the vocabulary and statistics:
    a removal alone, an edit alone (words gone, words new), a note emptied of every
    chunk, and a new note each leave what a rebuild from the chunks gives."""
    welcome, tags = bundled_copy / "notes/Welcome.md", bundled_copy / "notes/Tags.md"
    steps = [
        lambda: tags.unlink(),
        lambda: welcome.write_text("# Welcome\n\nonly quokka words now, quokka and numbat\n"),
        lambda: welcome.write_text(""),
        lambda: (bundled_copy / "notes/Fresh.md").write_text("# Fresh\n\nnumbat quokka\n"),
    ]
    with open_local(bundled_copy, tmp_path / "index") as v:
        v.reindex(vectors=False)
        for step in steps:
            step()
            v.reindex(vectors=False)
            index = v.host.core().keeper.open_index(write=True)
            assert not index.keyword.dirty()
            state = _keyword_state(index)
            index.keyword.rebuild()
            assert _keyword_state(index) == state


def test_compaction_keeps_the_keyword_index_identical(bundled_copy: Path, tmp_path: Path) -> None:
    with open_local(bundled_copy, tmp_path / "index") as v:
        v.reindex(vectors=False)
        (bundled_copy / "notes/More.md").write_text("# More\n\nwalrus colony\n")
        v.reindex(vectors=False)
        index = v.host.core().keeper.open_index(write=True)
        before = _keyword_state(index)
        ranked = index.keyword.bm25(["walrus"], Filters(), 10)
        index.keyword.compact()
        assert index.meta()["kw_appended"] == "0"
        assert _keyword_state(index) == before
        assert index.keyword.bm25(["walrus"], Filters(), 10) == ranked


def _contents(index_dir: Path) -> dict[str, list[tuple[object, ...]]]:
    """What an index holds, free of what differs between equal indexes (chunk and term
    ids, which an edit reuses or appends, write times, and whether a note was racy when
    written: its ctime, racy.py)."""
    con = duckdb.connect(str(index_dir / "vault.duckdb"), read_only=True)
    try:
        note_cols = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'notes' "
                "AND column_name NOT IN ('indexed_at', 'ctime_ns') ORDER BY ordinal_position"
            ).fetchall()
        ]
        queries = {
            "notes": f"SELECT {', '.join(note_cols)} FROM notes",
            "chunks": "SELECT * EXCLUDE (id) FROM chunks",
            "links": "SELECT * FROM links",
            "attachments": "SELECT * FROM attachments",
            "vocab": "SELECT term, df, ndf FROM vocab",
            "postings": "SELECT v.term, c.path, c.seq, p.tf, p.dl FROM postings p "
            "JOIN vocab v USING (termid) JOIN chunks c ON c.id = p.chunk_id",
            "kw_stats": "SELECT * FROM kw_stats",
        }
        return {name: sorted(con.execute(sql).fetchall()) for name, sql in queries.items()}
    finally:
        con.close()


@pytest.mark.parametrize("literal_rows", [256, 0], ids=["literals", "arrow"])
def test_edits_leave_what_a_full_rebuild_gives(
    write: WriteNotes, open_vault: OpenVault, monkeypatch: pytest.MonkeyPatch, literal_rows: int
) -> None:
    """Small writes go in as SQL literals, large ones through Arrow: either way an edited
    index holds what a rebuild of the same files holds (quotes, lists, nulls, links)."""
    from markvault.index import store

    monkeypatch.setattr(store, "LITERAL_ROWS_MAX", literal_rows)
    long = "\n\n".join(f"## Part {i}\n\n" + f"word{i} " * 300 for i in range(40))
    vault = write(
        {
            "a.md": "---\ntitle: It's a 'quoted' title\ntags: [x, \"y's\"]\naliases: [Ay]\n"
            "---\n# A\n\nsee [[b]] and [[nowhere|gone]] ünïcode 中文",
            "b.md": "---\nfiles: []\n---\nbeta [[a#A]]",
            "img.png": b"\x89PNG",
            "long.md": long,
        }
    )
    v = open_vault()
    v.reindex(vectors=False)
    (vault / "a.md").write_text("# A\n\nalpha, now linking [[c]] and ![[img.png]]\n", "utf-8")
    (vault / "c.md").write_text("---\naliases: [Ay, 'Cee']\n---\ncharlie [[Ay]]", "utf-8")
    (vault / "long.md").write_text(long + "\n\nappended paragraph", "utf-8")
    (vault / "b.md").unlink()
    (vault / "doc.pdf").write_bytes(b"%PDF")
    report = v.reindex(vectors=False)
    assert (report.updated, report.added, report.removed) == (2, 1, 1)
    v.close()
    edited = _contents(vault.parent / "index")
    v = open_vault()
    v.reindex(full=True, vectors=False)
    v.close()
    assert edited == _contents(vault.parent / "index")


def test_the_index_layer_uses_the_engine_the_duckdb_package_exports() -> None:
    """store.py imports DuckDB's engine module, not the package: what it uses of it must be
    the very objects ``import duckdb`` gives (a DuckDB upgrade that changes that fails
    here), and importing the index layer must not import the package (whose ``__init__``
    opens DuckDB's default database)."""
    import subprocess
    import sys

    code = (
        "import sys, markvault.index.store as store\n"
        "spared = 'duckdb' not in sys.modules\n"
        "import duckdb\n"
        "names = ('connect', 'Error', 'CatalogException', 'DuckDBPyConnection')\n"
        "same = all(getattr(store.duckdb, n) is getattr(duckdb, n) for n in names)\n"
        "print(spared, same)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"], out.stdout + out.stderr


def test_a_second_open_of_the_index_in_one_process_is_busy_not_a_rebuild(
    vault_dir: Path, tmp_path: Path
) -> None:
    """The file is attached to a database of each connection's own: a second one in this
    process is refused by DuckDB, which must read as busy, never as a broken index."""
    import dataclasses

    from markvault import Settings
    from markvault.errors import IndexBusyError
    from markvault.index.store import Store

    settings = Settings.load(vault=vault_dir, index=tmp_path / "index")
    settings = dataclasses.replace(settings, index_lock_wait=0.2)
    first = Store.open(settings, write=True, chunk_fingerprint="fp", ready=lambda _: None)
    try:
        with pytest.raises(IndexBusyError):
            Store.open(settings, write=True, chunk_fingerprint="fp", ready=lambda _: None)
        assert first.meta()["chunk_fingerprint"] == "fp"
        assert not settings.db_path.with_name(settings.db_path.name + ".old").exists()
    finally:
        first.close()


def test_terms_of_an_index_without_its_keyword_tables_are_unknown(
    vault_dir: Path, tmp_path: Path
) -> None:
    """A new index has no vocabulary until its keyword rebuild: a search's term lookup
    finds nothing there, whether the tables were listed before or not (a one-shot search
    just tries the lookup), and the connection reads on afterwards."""
    from markvault import Settings
    from markvault.index.store import Store

    settings = Settings.load(vault=vault_dir, index=tmp_path / "index")
    Store.open(settings, write=True, chunk_fingerprint="fp", ready=lambda _: None).close()
    for listed in (False, True):
        store = Store.open(settings, write=False, chunk_fingerprint="fp", ready=lambda _: None)
        try:
            index = Index(store)
            if listed:
                assert not store.has_table("vocab")
            assert index.keyword.term_ids(["alpha"]) == {}
            assert index.keyword.bm25(["alpha"], Filters(), 10) == []
            assert store.meta()["chunk_fingerprint"] == "fp"
        finally:
            store.close()
    store = Store.open(settings, write=True, chunk_fingerprint="fp", ready=lambda _: None)
    try:
        with pytest.raises(duckdb.CatalogException):  # another table missing: not hidden
            store.rows_if_table("meta", "SELECT * FROM meta, no_such_table")
    finally:
        store.close()


def test_a_failed_table_insert_leaves_no_rows_and_no_registered_table(
    write: WriteNotes, tmp_path: Path
) -> None:
    """An Arrow batch whose insert fails is unregistered (its memory not held by the
    connection until the next batch) and adds no row."""
    import pyarrow as pa

    vault = write({"a.md": "# A\n\napple\n"})
    with open_local(vault, tmp_path / "index") as v:
        v.reindex(vectors=False)
        store = v.host.core().keeper.open_index(write=True).store
        before = store.con.execute("SELECT count(*) FROM links").fetchone()
        with pytest.raises(duckdb.Error):
            store.insert_table("links", pa.table({"no_such_column": [1]}))
        assert store.con.execute("SELECT count(*) FROM links").fetchone() == before
        registered = store.con.execute(
            "SELECT count(*) FROM duckdb_views() WHERE view_name = 'incoming'"
        ).fetchone()
        assert registered == (0,)
