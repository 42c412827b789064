"""The Core issue's figures: indexing speed, query latency, embedding overhead, vector search.

    python bench/bench_core.py                  # 1k and 10k notes (vectors on the 1k vault)
    python bench/bench_core.py --quick          # 1k notes only
    python bench/bench_core.py --skip-vectors   # keyword figures only: no model load
    python bench/bench_core.py --full-vectors   # embed the largest vault too (slow on CPU)

Measures and prints; never asserts. Every line carries the machine's core count,
because every figure here scales with it. The final Markdown table is printed and
written to ``bench/out/core.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import pstats
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

import gen_vault
from markvault.config import DEFAULT_MODEL, Settings
from markvault.embed.embedder import SentenceEmbedder, model_path
from markvault.embed.encoder import stay_offline
from markvault.index import Index
from markvault.markdown.fingerprint import chunk_fingerprint
from markvault.runtime.local_host import open_local
from markvault.types.search import SearchRequest
from markvault.vault import Vault

CORES = os.cpu_count() or 1
HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "out"
TOP_K = 50  # what Searcher asks the vector side for at limit 10: max(50, 5 * limit)


# ---- reporting -------------------------------------------------------------------------------


@dataclass
class Figure:
    name: str
    value: str
    target: str
    size: str


@dataclass
class Report:
    figures: list[Figure] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def add(self, name: str, value: str, target: str, size: str) -> None:
        self.figures.append(Figure(name, value, target, size))
        print(f"[{CORES} cores] {size} · {name}: {value}  (target: {target})", flush=True)

    def detail(self, text: str) -> None:
        """A supporting number: printed, and listed under the table."""
        self.details.append(text)
        print(f"[{CORES} cores]     {text}", flush=True)

    def markdown(self) -> str:
        lines = [
            "| figure | value | target | size | cores |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {f.name} | {f.value} | {f.target} | {f.size} | {CORES} |" for f in self.figures
        ]
        if self.details:
            lines += ["", "Details:", ""] + [f"- {d}" for d in self.details]
        return "\n".join(lines) + "\n"


def log(message: str) -> None:
    print(f"· {message}", file=sys.stderr, flush=True)


def ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:.2f} ms" if value < 1 else f"{value:.1f} ms"


def pcts(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) of ``samples`` in seconds."""
    arr = np.asarray(samples)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def size_label(notes: int, chunks: int | None = None) -> str:
    label = f"{notes // 1000}k notes" if notes % 1000 == 0 else f"{notes} notes"
    return f"{label} / {chunks:,} chunks" if chunks is not None else label


class StderrProgress:
    """markvault's Progress protocol, reporting every tenth on stderr (long embeddings)."""

    def __init__(self) -> None:
        self._label, self._total, self._done, self._next = "", 0, 0, 0
        self._started = 0.0

    def start(self, label: str, total: int) -> None:
        self._label, self._total, self._done = label, total, 0
        self._next = max(1, total // 10)
        self._started = time.perf_counter()

    def advance(self, n: int) -> None:
        self._done += n
        if self._total >= 500 and self._done >= self._next:
            rate = self._done / max(1e-9, time.perf_counter() - self._started)
            log(f"{self._label}: {self._done}/{self._total} ({rate:.1f}/s)")
            self._next += max(1, self._total // 10)

    def finish(self) -> None:
        pass


# ---- vaults ----------------------------------------------------------------------------------


@dataclass
class Site:
    """One generated vault and its index folder."""

    notes: int
    vault: Path
    index: Path
    chunks: int = 0

    @property
    def db(self) -> Path:
        return self.index / f"{self.vault.name}.duckdb"

    def open(self) -> Vault:
        return open_local(self.vault, self.index)


def _generator_stamp(notes: int, seed: int) -> str:
    source = Path(gen_vault.__file__).read_bytes()
    return json.dumps({"notes": notes, "seed": seed, "gen": hashlib.sha1(source).hexdigest()})


def prepare_site(workdir: Path, notes: int, seed: int) -> Site:
    """A generated vault, reused from an earlier run in the same workdir when identical."""
    root = workdir / f"n{notes}-s{seed}"
    vault, stamp = root / "vault", root / "vault" / ".bench-stamp"  # hidden: not a note
    want = _generator_stamp(notes, seed)
    if not (stamp.is_file() and stamp.read_text() == want):
        shutil.rmtree(root, ignore_errors=True)
        log(f"generating {notes} notes (seed {seed}) in {vault}")
        started = time.perf_counter()
        gen_vault.generate(vault, notes, seed)
        stamp.write_text(want)
        log(f"generated in {time.perf_counter() - started:.1f} s")
    return Site(notes, vault, root / "index")


def chunk_count(site: Site) -> int:
    with duckdb.connect(str(site.db), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM chunks").fetchone()
    return int(row[0]) if row else 0


@contextmanager
def maybe_profile(enabled: bool, name: str) -> Iterator[None]:
    """cProfile the block; the top functions go to bench/out/profile-NAME.txt."""
    if not enabled:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        path = OUT_DIR / f"profile-{name}.txt"
        with path.open("w") as fh:
            pstats.Stats(profiler, stream=fh).sort_stats("cumulative").print_stats(40)
        log(f"profile written to {path}")


# ---- indexing --------------------------------------------------------------------------------


def cold_reindex(site: Site, report: Report, profile: bool) -> None:
    """Keyword-only build of a fresh index (the vault's files are in the page cache)."""
    shutil.rmtree(site.index, ignore_errors=True)
    log(f"cold keyword reindex of {site.notes} notes")
    with maybe_profile(profile, f"cold-reindex-{site.notes}"), site.open() as vault:
        started = time.perf_counter()
        result = vault.reindex(full=True, vectors=False)
        seconds = time.perf_counter() - started
    site.chunks = result.chunks
    report.add(
        "keyword-only cold reindex",
        f"{result.notes / seconds:,.0f} notes/s ({seconds:.1f} s)"
        + (" (under cProfile: slower)" if profile else ""),
        "≥ 1,000 notes/s at 10k",
        size_label(site.notes, site.chunks),
    )


def noop_reindex(site: Site, report: Report, vectors: bool, runs: int = 3) -> None:
    """A second reindex with nothing changed, in a new ``Vault`` each time (as a CLI run)."""
    samples, changed = [], 0
    for _ in range(runs):
        with site.open() as vault:
            started = time.perf_counter()
            result = vault.reindex(vectors=vectors)
            samples.append(time.perf_counter() - started)
        changed += result.added + result.updated + result.removed + result.embedded
    if changed:
        report.detail(f"no-op reindex was not a no-op: {changed} notes or chunks changed")
    label = "no-op reindex" + (" (vectors on: plain `vault reindex`)" if vectors else "")
    report.add(
        label,
        f"{statistics.median(samples):.2f} s (median of {runs}, in-process)",
        "≤ 1 s at 10k",
        size_label(site.notes, site.chunks),
    )


def one_note_edit(site: Site, report: Report) -> None:
    """Reindex after one note changed: what every save costs an agent or a watcher."""
    path = next(p for p in sorted(site.vault.rglob("*.md")) if p.stat().st_size > 2000)
    original, stat = path.read_bytes(), path.stat()
    try:
        path.write_bytes(original + b"\nOne more line about cache latency.\n")
        with site.open() as vault:
            started = time.perf_counter()
            result = vault.reindex(vectors=False)
            seconds = time.perf_counter() - started
    finally:
        # Put the generated file back as it was, and the index in step with it.
        path.write_bytes(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        with site.open() as vault:
            vault.reindex(vectors=False)
    report.add(
        "reindex after editing one note (vectors off)",
        f"{seconds:.2f} s ({result.updated} updated)",
        "—",
        size_label(site.notes, site.chunks),
    )


# ---- queries ---------------------------------------------------------------------------------


def _prose_words(site: Site, rng: random.Random, samples: int = 40) -> list[list[str]]:
    """Runs of plain lowercase words from English prose lines of the vault."""
    files = sorted(site.vault.rglob("*.md"))
    runs: list[list[str]] = []
    for path in rng.sample(files, min(samples, len(files))):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line[:1].isalpha() and line.isascii() and len(line) > 40:
                words = re.findall(r"(?<![\w`#\[|*])[a-z]{3,}(?![\w`\]|*])", line)
                if len(words) >= 4:
                    runs.append(words)
    return runs


def build_queries(site: Site, seed: int, total: int = 200) -> list[tuple[str, str]]:
    """(class, query) pairs: words of every frequency, phrases, prefixes, boolean, CJK."""
    rng = random.Random(f"queries-{seed}")
    vocab = gen_vault.build_vocab(seed)
    english = vocab.english.words
    runs = _prose_words(site, rng)

    def band(lo: int, hi: int) -> str:
        return english[rng.randrange(lo, min(hi, len(english)))]

    def phrase() -> str:
        words = rng.choice(runs)
        start = rng.randrange(len(words) - 2)
        return '"' + " ".join(words[start : start + rng.choice((2, 2, 3))]) + '"'

    makers: list[tuple[str, float, Callable[[], str]]] = [
        ("single word, frequent", 0.08, lambda: band(20, 300)),
        ("single word, mid", 0.12, lambda: band(300, 3000)),
        ("single word, rare", 0.08, lambda: band(3000, 8000)),
        ("2-4 words", 0.30, lambda: " ".join(band(100, 5000) for _ in range(rng.randint(2, 4)))),
        ("phrase", 0.12, phrase),
        ("prefix*", 0.10, lambda: band(300, 4000)[: rng.randint(3, 5)] + "*"),
        ("boolean", 0.08, lambda: f"{band(100, 2000)} AND {band(100, 2000)} -{band(100, 2000)}"),
        ("CJK", 0.12, lambda: rng.choice(vocab.chinese.words[:400] + vocab.katakana.words)),
    ]
    queries: list[tuple[str, str]] = []
    for name, share, make in makers:
        queries += [(name, make()) for _ in range(round(total * share))]
    rng.shuffle(queries)
    return queries


def _timed_searches(
    vault: Vault, queries: list[tuple[str, str]], mode: str
) -> tuple[dict[str, list[float]], dict[str, list[float]], int]:
    """(seconds by query class, stage ms by stage, queries with no hit)."""
    by_class: dict[str, list[float]] = {}
    stages: dict[str, list[float]] = {}
    empty = 0
    for name, query in queries:
        started = time.perf_counter()
        result = vault.search(SearchRequest(query, mode=mode, limit=10))
        by_class.setdefault(name, []).append(time.perf_counter() - started)
        for stage, value in result.timings_ms.items():
            stages.setdefault(stage, []).append(value)
        empty += not result.hits
    return by_class, stages, empty


def query_latency(
    site: Site, report: Report, queries: list[tuple[str, str]], mode: str, size: str
) -> None:
    """p50/p95 in a warm process: the index open and, for vectors, the model loaded."""
    with site.open() as vault:
        started = time.perf_counter()
        vault.search(SearchRequest(queries[0][1], mode=mode, limit=10))
        first = time.perf_counter() - started
        for _, query in queries[1:10]:
            vault.search(SearchRequest(query, mode=mode, limit=10))
        by_class, stages, empty = _timed_searches(vault, queries, mode)
    every = [s for samples in by_class.values() for s in samples]
    p50, p95 = pcts(every)
    target = "p50 ≤ 10 ms" if mode == "keyword" else "p50 ≤ 30 ms"
    extra = " (query embedding included)" if mode == "vector" else ""
    report.add(
        f"{mode} query latency, warm{extra}",
        f"p50 {ms(p50)} / p95 {ms(p95)} ({len(every)} queries)",
        target,
        size,
    )
    # In-process: torch is already imported and the model files are in the OS cache,
    # so this is not a fresh process's first query (see the fresh-process figures).
    what = "model (re)load and index open" if mode == "vector" else "index open"
    report.detail(
        f"{size}, {mode}: first query of a new Vault in this process ({what}) {ms(first)}"
    )
    for name, samples in sorted(by_class.items()):
        c50, c95 = pcts(samples)
        report.detail(f"{size}, {mode}: {name}: p50 {ms(c50)} / p95 {ms(c95)} (n={len(samples)})")
    stage_text = ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in stages.items())
    report.detail(f"{size}, {mode}: median stage ms: {stage_text}; {empty} queries had no hit")


# ---- fresh processes -------------------------------------------------------------------------


def vault_command() -> list[str]:
    """The installed ``vault`` script of this interpreter's environment."""
    script = Path(sys.executable).parent / "vault"
    if script.is_file():
        return [str(script)]
    found = shutil.which("vault")
    return [found] if found else [sys.executable, "-m", "markvault.cli"]


def _wall(argv: list[str], runs: int) -> tuple[float, int]:
    """(median wall seconds, last exit code) of running ``argv`` ``runs`` times."""
    samples, code = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, check=False)
        samples.append(time.perf_counter() - started)
        code = done.returncode
    return statistics.median(samples), code


def cli_figures(site: Site, report: Report, query: str, runs: int) -> None:
    base = [*vault_command(), "--vault", str(site.vault), "--index", str(site.index)]
    size = size_label(site.notes, site.chunks)
    seconds, code = _wall([*base, "search", "--mode", "keyword", query], runs)
    report.add(
        f"`vault search --mode keyword '{query}'`, fresh process",
        f"{seconds:.2f} s (median of {runs}; exit {code})",
        "≤ 0.8 s",
        size,
    )
    seconds, _ = _wall([*base, "reindex", "--no-vectors", "-q"], runs)
    report.add(
        "`vault reindex --no-vectors` with nothing changed, fresh process",
        f"{seconds:.2f} s (median of {runs})",
        "≤ 1 s at 10k",
        size,
    )
    heavy = heavy_modules_after_keyword_search(site, query)
    report.add(
        "heavy modules imported by a keyword search (CLI path)",
        ", ".join(heavy) or "none (torch not imported)",
        "no torch",
        size,
    )


def cli_vector(site: Site, report: Report, query: str, runs: int) -> None:
    """A vector search as a fresh process: imports torch and loads the model each time."""
    base = [*vault_command(), "--vault", str(site.vault), "--index", str(site.index)]
    runs = min(runs, 3)  # each run pays the model load
    seconds, code = _wall([*base, "search", "--mode", "vector", query], runs)
    report.add(
        f"`vault search --mode vector '{query}'`, fresh process (model load included)",
        f"{seconds:.2f} s (median of {runs}; exit {code})",
        "—",
        size_label(site.notes, site.chunks),
    )


_PROBE = """
import sys
from markvault.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = ("torch", "transformers", "sentence_transformers", "scipy", "sklearn", "pandas")
print("HEAVY=" + ",".join(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


def heavy_modules_after_keyword_search(site: Site, query: str) -> list[str]:
    """Which heavy libraries are in ``sys.modules`` after the CLI ran a keyword search."""
    argv = [sys.executable, "-c", _PROBE, "--vault", str(site.vault), "--index", str(site.index)]
    done = subprocess.run(
        [*argv, "search", "--mode", "keyword", query], capture_output=True, text=True, check=False
    )
    found = re.search(r"^HEAVY=(.*)$", done.stderr, re.MULTILINE)
    if not found:
        return [f"(probe failed: {done.stderr.strip()[-200:]})"]
    return [m for m in found.group(1).split(",") if m]


def import_times(report: Report) -> None:
    """Import time of the CLI module and the modules that cost most (-X importtime)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import markvault.cli.main"],
        capture_output=True,
        text=True,
        check=False,
    )
    rows: list[tuple[int, int, str]] = []  # (self us, cumulative us, module)
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[0].isdigit():
            rows.append((int(parts[0]), int(parts[1]), parts[2]))
    total = next((cum for _, cum, name in rows if name == "markvault.cli"), 0)
    heavy = ", ".join(f"{name} {us / 1000:.0f} ms" for us, _, name in sorted(rows)[::-1][:6])
    report.detail(f"`import markvault.cli.main`: {total / 1000:.0f} ms; most self time: {heavy}")


# ---- embeddings ------------------------------------------------------------------------------


def load_sentence_transformer(name: str = DEFAULT_MODEL) -> Any:
    """The model as ``embed.Embedder`` loads it: local files, CPU, offline."""
    stay_offline()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_path(name), device="cpu")


def subset_site(source: Site, workdir: Path, chunks: int) -> Site:
    """A vault of the first notes (by path) of ``source`` that hold about ``chunks`` chunks."""
    with duckdb.connect(str(source.db), read_only=True) as con:
        rows = con.execute(
            "SELECT n.file, count(*) FROM chunks c JOIN notes n USING (path) "
            "GROUP BY n.file ORDER BY n.file"
        ).fetchall()
    root = workdir / f"subset-{source.notes}-{chunks}"
    shutil.rmtree(root, ignore_errors=True)
    site = Site(0, root / "vault", root / "index")
    total = 0
    for file, count in rows:
        if total >= chunks:
            break
        target = site.vault / file
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source.vault / file, target)
        site.notes += 1
        total += int(count)
    return site


def embed_inputs(site: Site) -> list[tuple[str, str]]:
    """(hash, text) of every chunk content without a vector: exactly what reindex embeds."""
    settings = Settings.load(vault=site.vault, index=site.index)
    index = Index.open(settings, write=False, chunk_fingerprint=chunk_fingerprint(settings.chunk))
    try:
        return index.vectors.missing(settings.model)
    finally:
        index.close()


def embedding_overhead(source: Site, workdir: Path, report: Report, chunks: int) -> None:
    """markvault's full vector reindex vs a bare ``encode`` of the same texts.

    Both sides exclude model load: each side's model is loaded, and warmed on a few
    texts, before its clock starts. The markvault side includes everything else a
    ``vault reindex --full`` does: scanning, parsing, chunking, the keyword index,
    batching, and writing the vectors.
    """
    site = subset_site(source, workdir, chunks)
    with site.open() as vault:
        started = time.perf_counter()
        vault.reindex(vectors=False)
        keyword_seconds = time.perf_counter() - started
    texts = [text for _, text in embed_inputs(site)]
    log(f"embedding overhead on {len(texts)} chunks ({site.notes} notes): plain encode first")
    model = load_sentence_transformer()
    model.encode(texts[:16], batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    started = time.perf_counter()
    model.encode(
        texts,
        batch_size=64,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    plain = time.perf_counter() - started
    del model

    log("embedding overhead: markvault full vector reindex")
    shutil.rmtree(site.index, ignore_errors=True)
    with site.open() as vault:
        # Loads and warms the model, off the clock.
        vault.host.core().keeper.embedder().encode(texts[:16])
        started = time.perf_counter()
        result = vault.reindex(full=True, vectors=True, progress=StderrProgress())
        markvault = time.perf_counter() - started
    size = (
        f"{result.embedded:,} chunks ({site.notes} notes of the {size_label(source.notes)} vault)"
    )
    overhead = (markvault - plain) / plain * 100
    report.add(
        "embedding overhead: full vector reindex vs bare encode (model load excluded)",
        f"{overhead:+.1f}% ({markvault:.1f} s vs {plain:.1f} s)",
        "≤ 15%",
        size,
    )
    report.add(
        "embedding throughput: markvault / bare encode",
        f"{result.embedded / markvault:.1f} / {len(texts) / plain:.1f} chunks/s",
        "—",
        size,
    )
    report.detail(
        f"embedding overhead: the same subset's keyword-only reindex takes {keyword_seconds:.2f} s"
        " of the markvault side"
    )


def embed_site(site: Site, report: Report) -> None:
    """Add vectors to an index that has its keyword part (incremental reindex)."""
    log(f"embedding every chunk of the {site.notes}-note vault ({site.chunks:,} chunks)")
    with site.open() as vault:
        started = time.perf_counter()
        result = vault.reindex(vectors=True, progress=StderrProgress())
        seconds = time.perf_counter() - started
    report.detail(
        f"{size_label(site.notes, site.chunks)}: vector reindex embedded {result.embedded:,} "
        f"chunks in {seconds:.0f} s ({result.embedded / seconds:.1f} chunks/s, model load "
        "included)"
    )


# ---- vector search strategies ----------------------------------------------------------------


def vectors_of(site: Site) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids, unit vectors) as markvault's ``Index.vector_matrix`` reads them."""
    with duckdb.connect(str(site.db), read_only=True) as con:
        table = con.execute(
            "SELECT c.id, e.vec FROM chunks c JOIN embeddings e ON e.hash = c.hash "
            "AND e.model = ? ORDER BY c.id",
            [DEFAULT_MODEL],
        ).to_arrow_table()
    ids = table.column("id").to_numpy().astype(np.int64)
    vec = table.column("vec").combine_chunks()
    return ids, vec.flatten().to_numpy().reshape(len(ids), -1).astype(np.float32)


def numpy_topk(matrix: np.ndarray, ids: np.ndarray, qv: np.ndarray, k: int) -> np.ndarray:
    """What ``Searcher._vector`` does without filters."""
    scores = matrix @ qv
    top = np.argpartition(-scores, k - 1)[:k]
    return ids[top[np.argsort(-scores[top], kind="stable")]]


def sql_vector(qv: np.ndarray) -> str:
    """A query vector as a DuckDB array literal."""
    return "[" + ",".join(f"{x:.7g}" for x in qv) + f"]::FLOAT[{len(qv)}]"


def _time_each(fn: Callable[[np.ndarray], Any], queries: np.ndarray) -> list[float]:
    fn(queries[0])  # first call: plan caches, page faults
    samples = []
    for qv in queries:
        started = time.perf_counter()
        fn(qv)
        samples.append(time.perf_counter() - started)
    return samples


def memory_db(workdir: Path, ids: np.ndarray, matrix: np.ndarray) -> Any:
    """An in-memory DuckDB with vss loaded and the vectors in table ``vecs``."""
    import pyarrow as pa
    from duckdb_extensions import import_extension  # as index.py loads fts: packaged file

    con = duckdb.connect(
        config={
            "extension_directory": str(workdir / "extensions"),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    import_extension("vss", con=con)
    con.execute("LOAD vss")
    dim = matrix.shape[1]
    flat = pa.array(np.ascontiguousarray(matrix).ravel())
    con.register(
        "incoming", pa.table({"id": ids, "vec": pa.FixedSizeListArray.from_arrays(flat, dim)})
    )
    con.execute(f"CREATE TABLE vecs AS SELECT id, vec::FLOAT[{dim}] AS vec FROM incoming")
    con.unregister("incoming")
    return con


def _numpy_strategy(
    report: Report, ids: np.ndarray, matrix: np.ndarray, queries: np.ndarray, size: str
) -> None:
    p50, p95 = pcts(_time_each(lambda qv: numpy_topk(matrix, ids, qv, TOP_K), queries))
    report.add(
        f"vector top-{TOP_K}: numpy exact cosine in process (markvault)",
        f"p50 {ms(p50)} / p95 {ms(p95)}",
        "—",
        size,
    )


def _sql_strategy(report: Report, con: Any, queries: np.ndarray, size: str, on_disk: bool) -> None:
    if on_disk:
        sql = (
            "SELECT c.id FROM chunks c JOIN embeddings e ON e.hash = c.hash AND e.model = '"
            + DEFAULT_MODEL
            + "' ORDER BY array_cosine_similarity(e.vec, {q}) DESC LIMIT {k}"
        )
        where = "the index file, chunks JOIN embeddings"
    else:
        sql = "SELECT id FROM vecs ORDER BY array_cosine_similarity(vec, {q}) DESC LIMIT {k}"
        where = "an in-memory table"
    samples = _time_each(
        lambda qv: con.execute(sql.format(q=sql_vector(qv), k=TOP_K)).fetchall(), queries
    )
    p50, p95 = pcts(samples)
    report.add(
        f"vector top-{TOP_K}: DuckDB array_cosine_similarity, query as SQL literal, on {where}",
        f"p50 {ms(p50)} / p95 {ms(p95)}",
        "—",
        size,
    )


def _hnsw_strategy(
    report: Report, con: Any, queries: np.ndarray, exact: list[np.ndarray], size: str
) -> None:
    started = time.perf_counter()
    con.execute("CREATE INDEX vecs_hnsw ON vecs USING HNSW (vec) WITH (metric = 'cosine')")
    build = time.perf_counter() - started
    sql = "SELECT id FROM vecs ORDER BY array_cosine_distance(vec, {q}) LIMIT {k}"
    plan = con.execute("EXPLAIN " + sql.format(q=sql_vector(queries[0]), k=TOP_K)).fetchall()
    uses_index = "HNSW_INDEX_SCAN" in str(plan)
    found: list[set[int]] = []

    def search(qv: np.ndarray) -> None:
        rows = con.execute(sql.format(q=sql_vector(qv), k=TOP_K)).fetchall()
        found.append({r[0] for r in rows[:10]})

    p50, p95 = pcts(_time_each(search, queries))
    # _time_each calls once before timing: drop that warm-up result.
    hits = [len(f & set(e[:10].tolist())) / 10 for f, e in zip(found[1:], exact, strict=True)]
    report.add(
        f"vector top-{TOP_K}: vss HNSW index in memory"
        + ("" if uses_index else " (the plan did NOT use the index)"),
        f"p50 {ms(p50)} / p95 {ms(p95)}; built in {build:.1f} s per process; "
        f"recall@10 {float(np.mean(hits)):.2f}",
        "—",
        size,
    )


def compare_strategies(
    report: Report,
    workdir: Path,
    ids: np.ndarray,
    matrix: np.ndarray,
    queries: np.ndarray,
    size: str,
    disk_db: Path | None,
) -> None:
    """numpy exact cosine vs DuckDB array_cosine_similarity vs an in-memory vss HNSW index.

    Query embedding is left out: it costs the same in all three.
    """
    exact = [numpy_topk(matrix, ids, qv, TOP_K) for qv in queries]
    _numpy_strategy(report, ids, matrix, queries, size)
    memory = memory_db(workdir, ids, matrix)
    try:
        if disk_db is not None:
            with duckdb.connect(str(disk_db), read_only=True) as con:
                _sql_strategy(report, con, queries, size, on_disk=True)
        else:
            _sql_strategy(report, memory, queries, size, on_disk=False)
        _hnsw_strategy(report, memory, queries, exact, size)
    finally:
        memory.close()


def query_vectors(queries: list[tuple[str, str]], count: int = 50) -> np.ndarray:
    """Query vectors made by markvault's own embedder, operators stripped."""
    texts = [q.replace('"', "").replace("*", "") for _, q in queries[:count]]
    return SentenceEmbedder(DEFAULT_MODEL).encode(texts)


def synthetic_strategies(
    report: Report,
    workdir: Path,
    site: Site,
    real: np.ndarray,
    queries: np.ndarray,
    seed: int,
) -> None:
    """The three strategies at a larger vault's chunk count, on resampled real vectors.

    Each synthetic vector is a random real one plus a little noise (cosine ~0.93 to
    its source), so that the set is clustered like real chunk vectors: uniformly
    random vectors are HNSW's worst case (build ~3x slower, recall near zero).
    """
    rng = np.random.default_rng(seed)
    matrix = real[rng.integers(0, len(real), site.chunks)]
    matrix += rng.standard_normal(matrix.shape, dtype=np.float32) * 0.02
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = np.arange(1, site.chunks + 1, dtype=np.int64)
    log(f"vector strategies on {site.chunks:,} resampled vectors (HNSW build takes minutes)")
    compare_strategies(
        report,
        workdir,
        ids,
        matrix,
        queries,
        size_label(site.notes, site.chunks) + ", resampled real vectors (timing only)",
        None,
    )


# ---- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--quick", action="store_true", help="1k notes only.")
    parser.add_argument("--skip-vectors", action="store_true", help="No embedding figures.")
    parser.add_argument(
        "--full-vectors", action="store_true", help="Embed the largest vault (slow on CPU)."
    )
    parser.add_argument("--embed-chunks", type=int, default=2000, help="Overhead subset size.")
    parser.add_argument("--queries", type=int, default=200, help="Queries per latency figure.")
    parser.add_argument("--cli-runs", type=int, default=5, help="Fresh-process runs (median).")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="Keep vaults and indexes here (reused).")
    parser.add_argument("--profile", action="store_true", help="cProfile cold reindexes.")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "core.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.notes = [1000]
    args.notes = sorted(set(args.notes))
    return args


def keyword_figures(site: Site, args: argparse.Namespace, report: Report) -> None:
    cold_reindex(site, report, args.profile)
    noop_reindex(site, report, vectors=False)
    one_note_edit(site, report)
    queries = build_queries(site, args.seed, args.queries)
    size = size_label(site.notes, site.chunks)
    query_latency(site, report, queries, "keyword", size)
    cli_figures(site, report, "cache latency", args.cli_runs)


def vector_figures(
    sites: dict[int, Site], workdir: Path, args: argparse.Namespace, report: Report
) -> None:
    # The 1k vault (always there unless --full-vectors) unless the largest is embedded.
    measured = sites[max(sites)] if args.full_vectors else sites[1000]
    embedding_overhead(sites.get(1000, measured), workdir, report, args.embed_chunks)
    embed_site(measured, report)
    noop_reindex(measured, report, vectors=True)
    queries = build_queries(measured, args.seed, args.queries)
    size = size_label(measured.notes, measured.chunks)
    query_latency(measured, report, queries, "vector", size)

    cli_vector(measured, report, "cache latency", args.cli_runs)

    qvecs = query_vectors(queries)
    ids, matrix = vectors_of(measured)
    log(f"vector strategies on {len(ids):,} real vectors")
    compare_strategies(report, workdir, ids, matrix, qvecs, size, measured.db)
    for site in sites.values():
        if site.chunks > len(ids):
            synthetic_strategies(report, workdir, site, matrix, qvecs, args.seed)


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"


def run(args: argparse.Namespace, workdir: Path) -> Report:
    report = Report()
    # Other work on the machine skews every figure; torch's threads suffer most.
    report.detail(f"load average at start: {load_average()}")
    import_times(report)
    sites: dict[int, Site] = {}
    for notes in args.notes:
        site = prepare_site(workdir, notes, args.seed)
        keyword_figures(site, args, report)
        sites[notes] = site
    if not args.skip_vectors:
        if not args.full_vectors and 1000 not in sites:
            # The vector figures are measured on the 1k vault unless --full-vectors.
            site = prepare_site(workdir, 1000, args.seed)
            cold_reindex(site, report, False)
            sites[1000] = site
        vector_figures(sites, workdir, args, report)
    report.detail(f"load average at end: {load_average()}")
    return report


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    temp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="markvault-bench-")) if temp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"markvault core benchmark · {CORES} cores · workdir {workdir}", flush=True)
    try:
        report = run(args, workdir)
    finally:
        if temp:
            shutil.rmtree(workdir, ignore_errors=True)
    table = report.markdown()
    print("\n" + table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table, encoding="utf-8")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
