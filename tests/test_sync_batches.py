"""A large sync writes its notes batch by batch as they are read (sync.APPLY_BATCH):
the index it makes is the one a single write makes, and so are its report and what it
tells the change feed; an interrupted one is finished by the next sync."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import duckdb
import pytest

from markvault.index import keyword, store
from markvault.indexing import note_reading
from markvault.indexing import reconcile as sync
from markvault.indexing.feed_items import FeedItem
from markvault.markdown import chunk
from markvault.runtime.local_host import open_local
from markvault.types.progress import NoProgress
from markvault.types.reindex import ReindexReport
from markvault.types.search import SearchRequest
from markvault.vault import Vault

from .conftest import WriteNotes

# Chunks by note and place, not by id: a large read hands out ids in its own order.
TABLES = {
    "notes": "SELECT path, title, aliases, problems, hash FROM notes ORDER BY path",
    "chunks": "SELECT path, seq, hash, note_len FROM chunks ORDER BY path, seq",
    "links": "SELECT source, target, target_path, line FROM links ORDER BY source, line, target",
    "postings": "SELECT v.term, c.path, c.seq, p.tf, p.dl FROM postings p JOIN vocab v "
    "USING (termid) JOIN chunks c ON c.id = p.chunk_id ORDER BY v.term, c.path, c.seq",
    "vocab": "SELECT term, df, ndf FROM vocab ORDER BY term",
    "kw_stats": "SELECT n, total FROM kw_stats",
}


def notes(count: int) -> dict[str, str | bytes]:
    """Notes that link forward and back across any batch boundary, one with an alias,
    one whose frontmatter is broken (a problem the report must carry)."""
    files: dict[str, str | bytes] = {}
    for i in range(count):
        files[f"notes/n{i:03}.md"] = (
            f"# Note {i}\n\nwombat {i} see [[n{(i + 1) % count:03}]] and [[Alias {i // 2}]]\n"
        )
    files["notes/n010.md"] = "---\naliases: [Alias 3]\n---\n# Ten\n\nquokka [[n000]]\n"
    files["notes/n011.md"] = "---\ntags: [unclosed\n---\n# Eleven\n\nquokka\n"
    files["notes/n012.md"] = "# Twelve\n\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> b\n"
    return files


def tables(v: Vault) -> dict[str, list[tuple[object, ...]]]:
    db = v.settings.db_path
    v.close()
    with duckdb.connect(str(db), read_only=True) as con:
        return {name: con.execute(sql).fetchall() for name, sql in TABLES.items()}


def assert_same_tables(
    got: dict[str, list[tuple[object, ...]]], want: dict[str, list[tuple[object, ...]]]
) -> None:
    for name in TABLES:
        assert got[name] == want[name], name


def build(vault: Path, index: Path) -> tuple[dict[str, list[tuple[object, ...]]], ReindexReport]:
    with open_local(vault, index) as v:
        report = v.reindex(vectors=False)
        return tables(v), report


def built_both_ways(
    vault: Path,
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
    module: object,
    name: str,
    value: int,
) -> tuple[
    tuple[dict[str, list[tuple[object, ...]]], ReindexReport],
    tuple[dict[str, list[tuple[object, ...]]], ReindexReport],
]:
    """A first build of ``vault`` as it is, and one with ``module.name`` set to
    ``value``; both must make the same tables."""
    whole = build(vault, work / "whole")
    monkeypatch.setattr(module, name, value)
    changed = build(vault, work / "changed")
    assert_same_tables(changed[0], whole[0])
    return whole, changed


def put(vault: Path, files: Mapping[str, str | bytes]) -> Path:
    for rel, content in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        (vault / rel).write_bytes(data)
    return vault


def first_build_then_more(
    work: Path,
) -> tuple[dict[str, list[tuple[object, ...]]], ReindexReport, list[FeedItem]]:
    """A first build of ``notes(40)``, then a sync of 31 new notes (one in conflict) and
    an alias change, heard by a change feed listener."""
    vault = put(work / "vault", notes(40))
    heard: list[FeedItem] = []
    with open_local(vault, work / "index") as v:
        v.reindex(vectors=False)
        link = "numbat [[n{:03}]] [[Alias 9]]"
        more = {f"more/m{i:02}.md": f"# M{i}\n\n{link.format(i)}\n" for i in range(30)}
        more["notes/n018.md"] = "---\naliases: [Alias 9]\n---\n# Eighteen\n\nquokka\n"
        more["more/pulled.md"] = "# Pulled\n\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> b\n"
        put(vault, more)
        v.host.watch_changes(heard.append)
        report = v.reindex(vectors=False)
        return tables(v), report, heard


def test_a_batched_first_build_equals_one_write(
    write: WriteNotes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = write(notes(40))
    (_, whole_report), (batched, batched_report) = built_both_ways(
        vault, tmp_path, monkeypatch, sync, "APPLY_BATCH", 7
    )
    assert batched_report.added == whole_report.added == 40
    assert batched_report.warnings == whole_report.warnings
    assert any(w["path"] == "notes/n011.md" for w in batched_report.warnings)
    resolved = {(s, t): p for s, t, p, _ in batched["links"]}
    assert resolved[("notes/n039.md", "n000")] == "notes/n000.md"  # across batches
    assert resolved[("notes/n006.md", "Alias 3")] == "notes/n010.md"  # alias, later batch


def test_renames_in_a_large_sync_keep_their_chunk_ids(
    write: WriteNotes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a note removed, nothing is streamed: a rename finds its old chunk ids."""
    vault = write(notes(20))
    monkeypatch.setattr(sync, "APPLY_BATCH", 3)
    with open_local(vault, tmp_path / "index") as v:
        v.reindex(vectors=False)
        before = {h.chunk_id for h in v.search(SearchRequest("quokka", mode="keyword")).hits}
        (vault / "notes/n010.md").rename(vault / "notes/renamed.md")
        for i in range(12):  # more new notes than a batch holds
            (vault / f"notes/new{i}.md").write_text(f"# New {i}\n\nnumbat\n")
        report = v.reindex(vectors=False)
        after = {h.path: h.chunk_id for h in v.search(SearchRequest("quokka", mode="keyword")).hits}
    assert (report.renamed, report.added, report.removed) == (1, 12, 0)
    assert after["notes/renamed.md"] in before


def test_a_batched_update_equals_one_write_and_tells_the_feed_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, whole_report, whole_heard = first_build_then_more(tmp_path / "whole")
    monkeypatch.setattr(sync, "APPLY_BATCH", 4)
    batched, batched_report, batched_heard = first_build_then_more(tmp_path / "batched")
    assert_same_tables(batched, whole)
    assert (batched_report.added, batched_report.updated) == (31, 1)
    assert batched_report.to_json() == whole_report.to_json() | {
        "seconds": batched_report.to_json()["seconds"]
    }
    assert batched_heard == whole_heard
    told = [n.path for item in batched_heard for n in getattr(item, "notes", ())]
    assert len(told) == 32
    assert [getattr(item, "kind", None) for item in batched_heard].count("sync_conflict") == 1
    resolved = {(s, t): p for s, t, p, _ in batched["links"]}
    assert resolved[("more/m00.md", "Alias 9")] == "notes/n018.md"  # alias added meanwhile


class StopAfter(NoProgress):
    """Progress that stops a sync after ``count`` notes were read, as Ctrl-C would."""

    def __init__(self, count: int) -> None:
        self.count = count

    def advance(self, n: int) -> None:
        self.count -= n
        if self.count <= 0:
            raise KeyboardInterrupt


@pytest.mark.parametrize("rebuilt", [False, True], ids=["in-place", "rebuilt"])
def test_an_interrupted_batched_build_is_finished_by_the_next_sync(
    write: WriteNotes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rebuilt: bool
) -> None:
    """Also when the keyword index is rebuilt at the end (from the postings staged by
    both runs' batches, as a large first build's is)."""
    vault = write(notes(40))
    whole, _ = build(vault, tmp_path / "whole")
    if rebuilt:
        monkeypatch.setattr(keyword, "KW_DELTA_MIN", 0)
    monkeypatch.setattr(sync, "APPLY_BATCH", 5)
    with open_local(vault, tmp_path / "stopped") as v:
        with pytest.raises(KeyboardInterrupt):
            v.reindex(vectors=False, progress=StopAfter(25))
        assert 0 < v.index_status()["notes"] < 40  # some batches were written
        report = v.reindex(vectors=False)
        finished = tables(v)
    assert report.added + report.unchanged == 40
    assert_same_tables(finished, whole)  # links between notes of the first run are resolved too


def test_a_keyword_rebuild_in_slices_equals_one_in_one_go(
    write: WriteNotes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rebuild groups the tokens of a slice of the chunks at a time (memory)."""
    vault = write(notes(40))
    (whole, _), _ = built_both_ways(vault, tmp_path, monkeypatch, keyword, "KW_REBUILD_SLICE", 3)
    assert len(whole["vocab"]) > 40


def test_a_sync_caps_duckdbs_memory_only_while_it_writes(tmp_path: Path) -> None:
    """Rows written before the checkpoint are spilled past a cap of what DuckDB holds
    plus store.BUILD_MEMORY_BYTES instead of held; afterwards the connection has its own
    limit back, and the build left no spill files in the index folder."""
    vault = put(tmp_path / "vault", notes(20))
    with open_local(vault, tmp_path / "index") as v:
        v.reindex(vectors=False)
        con = v.host.core().keeper.open_index(write=True).store.con
        limit = _limit_mib(con)
        with v.host.core().keeper.open_index(write=True).store.deferred_checkpoints():
            capped = _limit_mib(con)
        assert 0.99 * store.BUILD_MEMORY_BYTES <= capped * 2**20 < 2 * store.BUILD_MEMORY_BYTES
        assert capped < limit == _limit_mib(con)
    assert not [p for p in (tmp_path / "index").iterdir() if p.name.endswith(".tmp")]


def _limit_mib(con: duckdb.DuckDBPyConnection) -> float:
    """The connection's memory_limit ("244.1 MiB", "18.8 GiB") in MiB."""
    row = con.execute("SELECT current_setting('memory_limit')").fetchone()
    number, unit = str(row[0] if row else "").split()
    return float(number) * {"KiB": 2**-10, "MiB": 1, "GiB": 2**10, "TiB": 2**20}[unit]


def test_a_first_build_from_the_counted_postings_equals_a_rebuild_from_the_tokens(
    write: WriteNotes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first build sorts the postings the readers counted (keyword.stage) instead of
    splitting every chunk's tokens again; a rebuild from the tokens gives the same rows."""
    files = notes(40)
    files["notes/mixed.md"] = "# Straße\n\nΚαλημέρα 東京 naïve repeat repeat, l'été\n\n## Empty\n"
    files["notes/blank.md"] = "---\ntitle: only a title\n---\n"
    vault = write(files)
    monkeypatch.setattr(keyword, "KW_DELTA_MIN", 0)  # rebuilt, as a large first build is
    monkeypatch.setattr(sync, "APPLY_BATCH", 7)
    from_tokens = keyword.KeywordIndex._postings_from_tokens
    calls: list[int] = []  # chunks each rebuild from the tokens found

    def counted(self: keyword.KeywordIndex) -> None:
        row = self.con.execute("SELECT count(*) FROM chunks").fetchone()
        calls.extend([row[0]] if row and row[0] else [])
        from_tokens(self)

    monkeypatch.setattr(keyword.KeywordIndex, "_postings_from_tokens", counted)
    with open_local(vault, tmp_path / "index") as v:
        v.reindex(vectors=False)
        staged = tables(v)
    assert not calls  # the staged rows were used (an empty index's rebuild aside)
    with open_local(vault, tmp_path / "index") as v:
        v.host.core().keeper.open_index(write=True).keyword.rebuild()
        rebuilt = tables(v)
    assert calls
    assert_same_tables(staged, rebuilt)
    assert len(staged["vocab"]) > 40


@pytest.mark.parametrize("rebuilt", [False, True], ids=["in-place", "rebuilt"])
def test_notes_read_in_workers_make_the_index_notes_read_here_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rebuilt: bool
) -> None:
    """Notes read in worker processes (their rows and counted postings pickled back, in
    batches that do not line up with the writes') make the index, the report and the
    feed of notes read here: a first build, then new notes, a changed one and an alias."""
    if rebuilt:
        monkeypatch.setattr(keyword, "KW_DELTA_MIN", 0)
    monkeypatch.setattr(sync, "APPLY_BATCH", 5)
    here, here_report, here_heard = first_build_then_more(tmp_path / "here")
    monkeypatch.setattr(note_reading, "PARALLEL_MIN_FILES", 10)
    monkeypatch.setattr(note_reading, "READ_BATCH", 8)
    there, there_report, there_heard = first_build_then_more(tmp_path / "there")
    assert_same_tables(there, here)
    assert there_report.to_json() == here_report.to_json() | {
        "seconds": there_report.to_json()["seconds"]
    }
    assert there_heard == here_heard


def test_a_long_lived_process_keeps_no_piece_estimates_after_a_sync(tmp_path: Path) -> None:
    """The chunker's estimates of lines and words it has seen are forgotten when a sync
    ends: a server that syncs every edit for weeks would otherwise keep them all (up to
    16 M characters)."""
    vault = put(tmp_path / "vault", notes(20))
    with open_local(vault, tmp_path / "index") as v:
        v.reindex(vectors=False)
        assert len(chunk._known) == 0
        (vault / "notes/n001.md").write_text("# One\n\nnumbat a line never seen before\n")
        v.reindex(vectors=False)
        assert len(chunk._known) == 0
        assert [h.path for h in v.search(SearchRequest("numbat", mode="keyword")).hits] == [
            "notes/n001.md"
        ]
