"""Where a cold keyword index spends its time and memory, stage by stage.

    python bench/profile_index.py /path/to/notes                 # stages of a cold build
    python bench/profile_index.py /path/to/notes --alternatives  # + the ways before, same run
    python bench/profile_index.py /path/to/notes --parse-check   # + markdown-it-py's parse
    python bench/profile_index.py /path/to/notes --hot parse     # cProfile of one stage
    python bench/profile_index.py /path/to/notes --baseline-src ../main/src
        # + chunk, tokenize and count terms with another tree's modules, pair by pair,
        #   and whether their chunks, tokens and postings are this tree's on every note

Runs the stages of ``vault reindex --no-vectors`` one after the other in this one process
(no worker processes, so CPU time is the work itself): scan, read, hash, parse, chunk,
tokenize, the worker-to-parent transfer (pickle), the DuckDB inserts, link resolution
and the postings/vocabulary build. For each stage it prints wall and CPU
seconds, the peak RSS reached during the stage (the kernel's high-water mark, reset
before each stage through ``/proc/self/clear_refs``) and the RSS after it.

CPU seconds are steadier than wall seconds on a shared machine; still, compare figures
from the same run. Measures and prints; never asserts. Only reads ``src/``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import io
import os
import pickle
import pstats
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from markvault.config import Settings
from markvault.core.lifecycle import chunk_fingerprint
from markvault.files.vault_files import VaultFiles, content_hash
from markvault.index import Index
from markvault.index.rows import RowBlock, note_terms
from markvault.markdown.chunk import chunk_note
from markvault.markdown.links import LinkResolver
from markvault.markdown.parse import parse_note
from markvault.markdown.tokens import chunk_words
from markvault.types.notes import NoteRecord


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> None:
    """Set the RSS high-water mark to the current RSS (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


@dataclass
class Stage:
    name: str
    wall: float
    cpu: float
    peak: float
    after: float
    note: str = ""


class Stages:
    def __init__(self, hot: str | None) -> None:
        self.rows: list[Stage] = []
        self.hot = hot
        self.profiles: dict[str, str] = {}

    @contextmanager
    def stage(self, name: str, note: str = "") -> Iterator[Stage]:
        gc.collect()
        reset_peak()
        row = Stage(name, 0.0, 0.0, 0.0, 0.0, note)
        profiler = cProfile.Profile() if self.hot and self.hot in name else None
        wall, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        try:
            yield row
        finally:
            if profiler:
                profiler.disable()
            row.wall = time.perf_counter() - wall
            row.cpu = time.process_time() - cpu
            row.peak = peak_mb()
            row.after = rss_mb()
            self.rows.append(row)
            print(
                f"  {name:<34} wall {row.wall:7.2f} s  cpu {row.cpu:7.2f} s  "
                f"peak {row.peak:7.0f} MB  after {row.after:7.0f} MB  {row.note}",
                flush=True,
            )
            if profiler:
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
                self.profiles[name] = out.getvalue()

    def markdown(self, title: str) -> str:
        total_wall = sum(r.wall for r in self.rows)
        total_cpu = sum(r.cpu for r in self.rows)
        lines = [
            f"#### {title}",
            "",
            "| stage | wall s | CPU s | share of CPU | peak RSS MB | RSS after MB | note |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in self.rows:
            share = f"{100 * r.cpu / total_cpu:.0f}%" if total_cpu else "-"
            lines.append(
                f"| {r.name} | {r.wall:.2f} | {r.cpu:.2f} | {share} | {r.peak:.0f} | "
                f"{r.after:.0f} | {r.note} |"
            )
        lines.append(f"| **total** | {total_wall:.2f} | {total_cpu:.2f} | | | | |")
        return "\n".join(lines)


def profile_build(
    corpus: Path,
    workdir: Path,
    stages: Stages,
    alternatives: bool,
    baseline: Path | None,
    parse_check: bool = False,
) -> None:
    vault_dir = workdir / "vault"
    if not vault_dir.exists():
        shutil.copytree(corpus, vault_dir, symlinks=True)
    index_dir = workdir / "index"
    shutil.rmtree(index_dir, ignore_errors=True)
    settings = Settings.load(vault_dir, index_dir, env={})
    files = VaultFiles(settings.vault_dir, settings.index_dir, settings.max_note_bytes)

    with stages.stage("scan (walk + stat)") as s:
        on_disk, _ = files.scan()
        s.note = f"{len(on_disk)} files"
    stats = list(on_disk.values())

    with stages.stage("read (bytes + UTF-8)") as s:
        raw = [(st, *files.read(st.file, settings.max_note_bytes)) for st in stats]
        s.note = f"{sum(len(d) for _, d, _ in raw) / 2**20:.1f} MiB"

    with stages.stage("content hash (blake2b)"):
        hashes = [content_hash(data) for _, data, _ in raw]

    with stages.stage("parse (frontmatter + outline)") as s:
        notes = [
            parse_note(st.path, text, max_frontmatter_bytes=settings.max_frontmatter_bytes)
            for st, _, text in raw
        ]
        s.note = f"{sum(len(n.links) for n in notes)} links"

    with stages.stage("chunk") as s:
        chunked = [
            chunk_note(note, note_lines(text), settings.chunk)
            for note, (_, _, text) in zip(notes, raw, strict=True)
        ]
        n_chunks = sum(len(c) for c in chunked)
        s.note = f"{n_chunks} chunks"

    with stages.stage("tokenize (tokens per chunk)") as s:
        words = [
            [chunk_words(note.title, c.context, c.text) for c in chunks]
            for note, chunks in zip(notes, chunked, strict=True)
        ]
        note_lens = [sum(map(len, note_words)) for note_words in words]
        s.note = f"{sum(note_lens) / 1e6:.1f} M tokens"

    with stages.stage("count terms (postings per note)") as s:
        counted = [note_terms(note_words) for note_words in words]
        pairs = sum(len(c) // 4 - len(ws) for (_, c), ws in zip(counted, words, strict=True))
        s.note = f"{pairs / 2e6:.1f} M postings"

    if baseline:
        texts = [text for _, _, text in raw]
        alternative_chunking(baseline, notes, texts, settings, (chunked, words), stages)
        alternative_note_build(raw, settings, stages)

    records = [
        NoteRecord(
            replace(note, body="", blocks=(), sections=()),
            chunks,
            note_len,
            st.file,
            h,
            st.mtime_ns,
            st.size,
            terms=terms,
            term_counts=counts,
        )
        for (st, _, _), note, chunks, note_len, h, (terms, counts) in zip(
            raw, notes, chunked, note_lens, hashes, counted, strict=True
        )
    ]
    del raw, notes, chunked, words, note_lens, counted
    gc.collect()

    with stages.stage("rows (worker side, Arrow blocks of 64 notes)"):
        blocks = [RowBlock.of(records[i : i + 64]) for i in range(0, len(records), 64)]
    del records
    gc.collect()

    with stages.stage("pickle round trip (workers -> parent)") as s:
        blobs = [pickle.dumps(block) for block in blocks]
        size = sum(len(b) for b in blobs)
        del blocks
        records = [r for b in blobs for r in pickle.loads(b).records()]
        del blobs
        s.note = f"{size / 2**20:.0f} MiB pickled"

    index = Index.open(settings, write=True, chunk_fingerprint=chunk_fingerprint(settings.chunk))
    timings: dict[str, float] = {"insert": 0.0}
    original_insert_rows = index.store.insert_rows

    def timed_insert_rows(name: str, columns: Any, extra: str | None = None) -> None:
        started = time.perf_counter()
        original_insert_rows(name, columns, extra)
        timings["insert"] += time.perf_counter() - started

    original_insert_table = index.store.insert_table

    def timed_insert_table(name: str, table: Any, extra: str | None = None) -> None:
        started = time.perf_counter()
        original_insert_table(name, table, extra)
        timings["insert"] += time.perf_counter() - started

    index.store.insert_rows = timed_insert_rows  # type: ignore[method-assign]
    index.store.insert_table = timed_insert_table  # type: ignore[method-assign]
    with stages.stage("apply (blocks -> one table -> INSERT, stage postings)") as s:
        index.writes.apply(records, [], [])
        s.note = f"of which INSERT {timings['insert']:.2f} s wall"
    n_records = len(records)
    del records
    gc.collect()

    with stages.stage("links (resolve)") as s:
        resolver = LinkResolver(index.writes.note_link_keys())
        rows = index.writes.links_to_resolve(None)
        index.writes.set_link_targets(
            [(rid, resolver.resolve(src, t, st)) for rid, src, t, st in rows]
        )
        s.note = f"{len(rows)} links"

    con = index.store.con
    with stages.stage("keyword rebuild (postings, vocab)") as s:
        index.keyword.rebuild()
        terms = con.execute("SELECT count(*) FROM vocab").fetchone()
        s.note = f"{terms[0] if terms else 0} terms"
    with stages.stage("checkpoint"):
        con.execute("CHECKPOINT")
    postings = con.execute("SELECT count(*) FROM postings").fetchone()
    print(f"  ({n_records} notes, {postings[0] if postings else 0} postings)", flush=True)

    if alternatives:
        alternative_postings(con, stages)
    if alternatives or parse_check:
        alternative_parse(files, stats, settings, stages)
    index.close()
    size = sum(p.stat().st_size for p in index_dir.glob("*.duckdb*"))
    print(f"  index file: {size / 2**20:.1f} MiB", flush=True)


def note_lines(text: str) -> list[str]:
    """The file's lines as the sync hands them to the chunker."""
    lines = (text[1:] if text.startswith("\ufeff") else text).split("\n")
    return [line.rstrip("\r") for line in lines]


def chunk_tokens(
    notes: list[Any], chunked: list[list[Any]], tokenizer: Any
) -> list[list[list[str]]]:
    """The tokens of every chunk, as the sync makes them."""
    return [
        [tokenizer(f"{note.title} {c.context}\n{c.text}") for c in chunks]
        for note, chunks in zip(notes, chunked, strict=True)
    ]


def load_baseline(src: Path) -> tuple[Any, Any]:
    """The chunk and text modules of the markvault package under ``src`` (another tree),
    imported as ``markvault_baseline`` beside this tree's."""
    name = "markvault_baseline"
    package = src.resolve() / "markvault"
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec and spec.loader, f"no markvault package under {src}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return importlib.import_module(f"{name}.chunk"), importlib.import_module(f"{name}.text")


def clear_caches(*modules: Any) -> None:
    """Empty the memo caches a worker starts without (the stems, the piece estimates)."""
    for module in modules:
        if hasattr(module, "_stems"):
            module._stems.clear()
        if hasattr(module, "_recent_pieces"):
            module._recent_pieces.cache_clear()
        if hasattr(module, "_known"):
            module._known.clear()


def alternative_chunking(
    baseline: Path,
    notes: list[Any],
    texts: list[str],
    settings: Settings,
    ours: tuple[list[list[Any]], list[list[list[str]]]],
    stages: Stages,
) -> None:
    """The chunk, tokenize and count terms stages with the baseline tree's modules and
    this tree's, pair by pair on the same parsed notes, each starting with empty caches (as a worker
    does); counts the notes whose chunks or tokens differ from this tree's (0: none)."""
    from markvault.markdown import chunk
    from markvault.markdown import tokens as text

    base_chunk, base_text = load_baseline(baseline)
    lines = [note_lines(t) for t in texts]
    ways = (("baseline", base_chunk, base_text), ("this tree", chunk, text))
    for label, chunker, tokenizer in ways * 2:
        clear_caches(chunker, tokenizer)
        with stages.stage(f"alt: chunk, {label}") as s:
            chunked = [
                chunker.chunk_note(n, ls, settings.chunk)
                for n, ls in zip(notes, lines, strict=True)
            ]
        with stages.stage(f"alt: tokenize, {label}") as t:
            tokens = chunk_tokens(notes, chunked, tokenizer.tokenize)
        alternative_counting(label, notes, chunked, tokenizer, stages)
        pairs = zip(chunked, ours[0], strict=True)
        s.note = (
            f"notes differing: {sum(list(map(vars, a)) != list(map(vars, b)) for a, b in pairs)}"
        )
        t.note = f"notes differing: {sum(a != b for a, b in zip(tokens, ours[1], strict=True))}"
        print(f"    {label}: chunk {s.note}, tokenize {t.note}", flush=True)


def alternative_counting(
    label: str, notes: list[Any], chunked: list[list[Any]], tokenizer: Any, stages: Stages
) -> None:
    """The count terms stage with the tree whose text module is ``tokenizer`` (its
    ``sync.note_terms``), on that tree's token lists; prints whether every note's terms
    and postings are those of this tree's ``note_terms`` on the same lists."""
    from markvault.indexing import note_reading as sync

    tree = importlib.import_module(tokenizer.__name__.rsplit(".", 1)[0] + ".sync")
    words = [
        [tokenizer.tokenize(f"{note.title} {c.context}\n{c.text}") for c in chunks]
        for note, chunks in zip(notes, chunked, strict=True)
    ]
    with stages.stage(f"alt: count terms, {label}") as s:
        counted = [tree.note_terms(note_words) for note_words in words]
    differing = sum(a != sync.note_terms(w) for a, w in zip(counted, words, strict=True))
    s.note = f"notes differing: {differing}"


def alternative_note_build(raw: list[Any], settings: Settings, stages: Stages) -> None:
    """A worker's whole work per note (parse, chunk, tokenize, count terms, rows: what
    ``sync.read_file`` does after reading) with the baseline tree's modules (loaded by
    ``alternative_chunking``) and this tree's, pair by pair, a batch of 64 notes at a
    time as a worker holds them; then counts the notes whose rows differ (0: none)."""
    from markvault.index import rows
    from markvault.indexing import note_reading as sync
    from markvault.markdown import chunk
    from markvault.markdown import tokens as text

    base = [importlib.import_module(f"markvault_baseline.{m}") for m in ("sync", "rows")]
    base_caches = [importlib.import_module(f"markvault_baseline.{m}") for m in ("chunk", "text")]
    ways = (("baseline", *base, base_caches), ("this tree", sync, rows, [chunk, text]))
    batches = [raw[i : i + 64] for i in range(0, len(raw), 64)]
    # The fields both trees' NoteRows have (this tree's adds a worker block's slot).
    fields = [f for f in base[1].NoteRows._fields if f in rows.NoteRows._fields]

    def build(builder: Any, row_module: Any, batch: list[Any]) -> list[tuple[Any, ...]]:
        built = (
            row_module.NoteRows.of(builder.build_record(st, data, text, settings))
            for st, data, text in batch
        )
        return [tuple(getattr(r, f) for f in fields) for r in built]

    for label, builder, row_module, caches in ways * 2:
        clear_caches(*caches)
        with stages.stage(f"alt: note build (parse .. rows), {label}") as s:
            for batch in batches:
                build(builder, row_module, batch)
        s.note = f"{len(raw)} notes"
    differing = sum(
        a != b
        for batch in batches
        for a, b in zip(build(*ways[0][1:3], batch), build(*ways[1][1:3], batch), strict=True)
    )
    print(f"    note build: notes whose rows differ from the baseline's: {differing}", flush=True)


def alternative_parse(
    files: VaultFiles, stats: list[Any], settings: Settings, stages: Stages
) -> None:
    """The parse stage with markdown-it-py's block parse (before) and pulldown-cmark's
    outline (now), pair by pair on the same notes; then how many notes' ParsedNote differ
    between the two (0: none; the reference is markdown-it-py)."""
    texts = [(st.path, files.read(st.file, settings.max_note_bytes)[1]) for st in stats]
    cap = settings.max_frontmatter_bytes
    for label, reference in (("markdown-it-py (before)", True), ("pulldown-cmark", False)) * 2:
        with stages.stage(f"alt: parse, {label}"):
            for path, text in texts:
                parse_note(path, text, max_frontmatter_bytes=cap, reference=reference)
    with stages.stage("alt: parse, both, compared") as s:
        differing = [
            path
            for path, text in texts
            if parse_note(path, text, max_frontmatter_bytes=cap)
            != parse_note(path, text, max_frontmatter_bytes=cap, reference=True)
        ]
        s.note = f"notes whose ParsedNote differs from markdown-it-py's: {len(differing)}"
    for path in differing[:20]:
        print(f"    differs: {path}", flush=True)


def alternative_postings(con: Any, stages: Stages) -> None:
    """The same postings built the way markvault built them before: the fts extension's
    create_fts_index (one row per token occurrence), then grouped (same run, same data)."""
    with stages.stage("alt: postings via the fts extension") as s:
        differing = differing_from_fts(con)
        s.note = f"rows differing from the SQL rebuild: {differing}"


def differing_from_fts(con: Any) -> int:
    """How many (term, chunk, tf, dl, df, ndf) rows of markvault's postings and of the
    fts extension's create_fts_index over the same token strings disagree (0: none).
    The fts extension is the reference the SQL rebuild is held to (tests/test_keyword)."""
    from markvault.index.store import load_extension

    load_extension(con, "fts")
    token_strings(con)
    con.execute(
        "PRAGMA create_fts_index('kw_reference', 'id', 'fts_text', stemmer='none', "
        "stopwords='none', ignore='\\s+', strip_accents=0, lower=0, overwrite=1)"
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE postings2 AS
        SELECT t.termid::INTEGER AS termid, d.name AS chunk_id,
               count(*)::INTEGER AS tf, any_value(d.len)::INTEGER AS dl
        FROM fts_main_kw_reference.terms t JOIN fts_main_kw_reference.docs d USING (docid)
        GROUP BY t.termid, d.name ORDER BY t.termid, d.name"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE vocab2 AS
        SELECT d.term, d.termid::INTEGER AS termid, d.df::INTEGER AS df,
               coalesce(n.ndf, 0)::INTEGER AS ndf
        FROM fts_main_kw_reference.dict d LEFT JOIN (
            SELECT p.termid, count(DISTINCT c.path) AS ndf
            FROM postings2 p JOIN chunks c ON c.id = p.chunk_id GROUP BY p.termid
        ) n ON n.termid = d.termid
        ORDER BY d.term"""
    )
    con.execute("PRAGMA drop_fts_index('kw_reference')")
    con.execute("DROP TABLE kw_reference")
    row = con.execute(
        """SELECT count(*) FROM (
            (SELECT v.term, p.chunk_id, p.tf, p.dl, v.df, v.ndf
             FROM postings p JOIN vocab v USING (termid)
             EXCEPT SELECT v.term, p.chunk_id, p.tf, p.dl, v.df, v.ndf
             FROM postings2 p JOIN vocab2 v USING (termid))
            UNION ALL
            (SELECT v.term, p.chunk_id, p.tf, p.dl, v.df, v.ndf
             FROM postings2 p JOIN vocab2 v USING (termid)
             EXCEPT SELECT v.term, p.chunk_id, p.tf, p.dl, v.df, v.ndf
             FROM postings p JOIN vocab v USING (termid)))"""
    ).fetchone()
    con.execute("DROP TABLE postings2")
    con.execute("DROP TABLE vocab2")
    return int(row[0]) if row else -1


def token_strings(con: Any) -> None:
    """``kw_reference(id, fts_text)``: each chunk's tokens (``text.chunk_words``) joined
    by spaces, the text the fts extension indexes for the comparison."""
    rows = con.execute(
        "SELECT c.id, n.title, c.context, c.text FROM chunks c JOIN notes n ON n.path = c.path"
    ).fetchall()
    import pyarrow as pa

    reference = pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "fts_text": [" ".join(chunk_words(*r[1:])) for r in rows],
        }
    )
    con.register("kw_incoming", reference)
    try:
        con.execute("CREATE OR REPLACE TABLE kw_reference AS SELECT * FROM kw_incoming")
    finally:
        con.unregister("kw_incoming")


def hot_profile(stages: Stages) -> None:
    for name, text in stages.profiles.items():
        print(f"\n---- cProfile: {name} ----\n{text}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("corpus", type=Path, help="a folder of Markdown notes (copied first)")
    p.add_argument("--workdir", type=Path, help="keep the copy and index here")
    p.add_argument(
        "--alternatives",
        action="store_true",
        help="also time other postings builds and markdown-it-py's parse (with a check)",
    )
    p.add_argument(
        "--parse-check",
        action="store_true",
        help="also time markdown-it-py's parse and count notes it reads otherwise",
    )
    p.add_argument("--hot", help="cProfile the stage whose name contains this word")
    p.add_argument(
        "--baseline-src",
        type=Path,
        help="also chunk and tokenize with the markvault package under this src/, pair by pair",
    )
    p.add_argument("--label", help="title of the printed table")
    args = p.parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mv-profile-"))
    workdir.mkdir(parents=True, exist_ok=True)
    stages = Stages(args.hot)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"profile of a cold keyword build of {args.corpus} (load average {load})", flush=True)
    try:
        profile_build(
            args.corpus,
            workdir,
            stages,
            args.alternatives,
            args.baseline_src,
            args.parse_check,
        )
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print()
    print(stages.markdown(args.label or str(args.corpus)))
    print(f"\nload average {load} at start, {load_end} at end; {os.cpu_count()} cores")
    hot_profile(stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
