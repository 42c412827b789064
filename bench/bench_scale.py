"""Scale (issue 12): a large generated vault, and where exact vector search stops paying.

    python bench/bench_scale.py --workdir /tmp/mv-scale                  # 50k notes + crossover
    python bench/bench_scale.py --workdir /tmp/mv-scale --notes 20000    # a smaller vault
    python bench/bench_scale.py --crossover-only --sizes 10000 50000 150000 500000

**The vault** (``gen_vault.py``, seeded; ~13 chunks a note): a cold keyword index as a
new `vault reindex --no-vectors` process (wall time, its peak RSS, the index file's
size); warm keyword p50 through ``Vault.search`` (``bench_query.py``'s queries and worker,
with its postings / fetching split); then every distinct chunk text gets a random unit
vector of 384 dimensions, written through the index's own ``VectorIndex.add`` (the model
would take hours at this size; for timing a vector is a vector), and the vector side is
timed as ``Searcher`` runs it: the matrix read from the index once (time, RSS after), then
the query's cosine with every chunk and the top 50 (``matrix @ q``, ``argpartition``),
query embedding left out (it does not depend on the vault's size).

**The crossover**: exact cosine against the vss extension's HNSW index, built in memory
from the vectors (``LOAD vss``; the extension file from its PyPI package), at each of
``--sizes`` chunks: p50 of a top-50 query, the index's build time, and recall@10 of HNSW
against exact. Synthetic vectors are clustered (random centres plus noise, cosine ~0.8 to
their centre) because uniformly random vectors are HNSW's worst case (``bench_core.py``
measured recall near zero on them) and real chunk vectors are clustered by topic.

Measures and prints; never asserts. The tables go to ``bench/out/scale.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "out"
DIM = 384
TOP_K = 50
QUERIES = 50


def log(message: str) -> None:
    print(f"[bench_scale] {message}", file=sys.stderr, flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MiB"


# ---- the vault -------------------------------------------------------------------------------


def cold_index(vault: Path, index: Path) -> tuple[float, int]:
    """(wall seconds, peak RSS in bytes) of a cold `vault reindex --no-vectors` process."""
    argv = [
        sys.executable,
        "-m",
        "markvault.cli",
        "--vault",
        str(vault),
        "--index",
        str(index),
    ]
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
        "print(time.perf_counter() - t, rss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv, "reindex", "--no-vectors", "--quiet"],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, rss = done.stdout.split()
    return float(seconds), int(rss)


def add_random_vectors(vault: Path, index: Path, seed: int) -> int:
    """A random unit vector for every distinct chunk text, through ``VectorIndex.add``."""
    import numpy as np

    from markvault.config import DEFAULT_MODEL
    from markvault.runtime.local_host import open_local

    opened = open_local(vault, index)
    try:
        idx = opened.host.core().keeper.open_index(write=True)  # type: ignore[attr-defined]
        idx.vectors.ensure_table(DEFAULT_MODEL, DIM)
        missing = [h for h, _ in idx.vectors.missing(DEFAULT_MODEL)]
        rng = np.random.default_rng(seed)
        for start in range(0, len(missing), 50_000):
            batch = missing[start : start + 50_000]
            vecs = rng.standard_normal((len(batch), DIM), dtype=np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            idx.vectors.add(DEFAULT_MODEL, batch, vecs)
        return len(missing)
    finally:
        opened.close()


def vector_worker(vault: Path, index: Path) -> None:
    """In a child: the matrix read as ``Searcher`` reads it, then top-50 queries."""
    import numpy as np

    from markvault.config import DEFAULT_MODEL
    from markvault.runtime.local_host import open_local

    opened = open_local(vault, index)
    try:
        idx = opened.host.core().keeper.reader()  # type: ignore[attr-defined]
        started = time.perf_counter()
        ids, matrix = idx.vectors.matrix(DEFAULT_MODEL)
        load = time.perf_counter() - started
        rng = np.random.default_rng(7)
        queries = rng.standard_normal((QUERIES, DIM), dtype=np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        samples = []
        for qv in queries:
            began = time.perf_counter()
            scores = matrix @ qv
            top = np.argpartition(-scores, TOP_K - 1)[:TOP_K]
            top = top[np.argsort(-scores[top], kind="stable")]
            samples.append(time.perf_counter() - began)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    finally:
        opened.close()
    out = {"load": load, "p50": statistics.median(samples), "rss": rss, "rows": len(ids)}
    print(json.dumps(out))


def vault_figures(args: argparse.Namespace, workdir: Path) -> list[str]:
    sys.path.insert(0, str(HERE))
    import bench_query

    vault, queries_file = bench_query.prepare(workdir, args.notes, args.seed, args.queries)
    index = workdir / f"index-{args.notes}"
    db = index / f"{vault.resolve().name}.duckdb"
    lines = [f"### {args.notes:,} generated notes", ""]
    if not db.exists():
        log(f"cold keyword index of {args.notes:,} notes")
        seconds, rss = cold_index(vault, index)
        lines.append(f"- cold keyword index (`vault reindex --no-vectors`, new process): "
                     f"{seconds:.1f} s, peak RSS {mib(rss)}")  # fmt: skip
    else:
        lines.append("- cold keyword index: reused from an earlier run (delete it to time it)")
    tree = bench_query.Tree("this tree", None, index)
    log("warm keyword queries")
    tree.round(vault, queries_file)
    lines.append(
        f"- keyword query, warm: p50 {tree.median('wall'):.1f} ms (postings "
        f"{tree.median('postings'):.1f} ms, fetching hits {tree.median('fetch'):.1f} ms), "
        f"p95 {tree.p95('wall'):.1f} ms, {args.queries} queries"
    )
    lines.append(f"- index size, keyword only: {mib(db.stat().st_size)}")
    log("random vectors for every chunk")
    added = add_random_vectors(vault, index, args.seed)
    lines.append(f"- index size with {added:,} vectors of {DIM} floats: {mib(db.stat().st_size)}")
    done = subprocess.run(
        [sys.executable, __file__, "--vector-worker", str(vault), str(index)],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    lines.append(
        f"- vector query, exact cosine over {got['rows']:,} chunks: p50 {got['p50'] * 1000:.1f} "
        f"ms (query embedding excluded); the matrix read once per process in "
        f"{got['load']:.1f} s; peak RSS of that process {mib(got['rss'])}"
    )
    return lines


# ---- the crossover ---------------------------------------------------------------------------


def clustered(rng: Any, count: int, centres: Any) -> Any:
    """``count`` unit vectors around random ``centres`` (cosine ~0.8 to their centre)."""
    import numpy as np

    picks = centres[rng.integers(0, len(centres), count)]
    vecs = picks + rng.standard_normal((count, DIM), dtype=np.float32) * 0.035
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs.astype(np.float32)


def crossover_row(size: int, workdir: Path, seed: int) -> str:
    import numpy as np

    sys.path.insert(0, str(HERE))
    from bench_core import memory_db, numpy_topk, sql_vector

    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(size // 200, 10), DIM), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    matrix = clustered(rng, size, centres)
    queries = clustered(rng, QUERIES, centres)
    ids = np.arange(1, size + 1, dtype=np.int64)
    exact_ms, exact = [], []
    for qv in queries:
        began = time.perf_counter()
        exact.append(numpy_topk(matrix, ids, qv, TOP_K))
        exact_ms.append((time.perf_counter() - began) * 1000)
    con = memory_db(workdir, ids, matrix)
    try:
        began = time.perf_counter()
        con.execute("CREATE INDEX vecs_hnsw ON vecs USING HNSW (vec) WITH (metric = 'cosine')")
        build = time.perf_counter() - began
        sql = "SELECT id FROM vecs ORDER BY array_cosine_distance(vec, {q}) LIMIT {k}"
        explain = "EXPLAIN " + sql.format(q=sql_vector(queries[0]), k=TOP_K)
        plan = str(con.execute(explain).fetchall())
        hnsw_ms, recall = [], []
        for qv, best in zip(queries, exact, strict=True):
            began = time.perf_counter()
            rows = con.execute(sql.format(q=sql_vector(qv), k=TOP_K)).fetchall()
            hnsw_ms.append((time.perf_counter() - began) * 1000)
            recall.append(len({r[0] for r in rows[:10]} & set(best[:10].tolist())) / 10)
    finally:
        con.close()
    used = "" if "HNSW_INDEX_SCAN" in plan else " (plan did NOT use the index)"
    return (
        f"| {size:,} | {statistics.median(exact_ms):.1f} ms | {mib(matrix.nbytes)} | "
        f"{statistics.median(hnsw_ms):.1f} ms{used} | {build:.1f} s | "
        f"{float(np.mean(recall)):.2f} |"
    )


def crossover(sizes: list[int], workdir: Path, seed: int) -> list[str]:
    lines = [
        f"### Exact cosine vs in-memory HNSW (vss), top-{TOP_K}, {DIM} dims, clustered "
        "synthetic vectors",
        "",
        "| chunks | exact (numpy) p50 | matrix | HNSW p50 | HNSW build | HNSW recall@10 |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for size in sizes:
        log(f"crossover at {size:,} chunks")
        lines.append(crossover_row(size, workdir, seed))
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 150_000])
    p.add_argument("--crossover-only", action="store_true")
    p.add_argument("--vault-only", action="store_true")
    p.add_argument("--workdir", type=Path, required=True, help="vaults and indexes (reused)")
    args = p.parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    args.workdir.mkdir(parents=True, exist_ok=True)
    lines = [f"Scale bench; {os.cpu_count()} cores, load average {load_average()} at start.", ""]
    if not args.crossover_only:
        lines += [*vault_figures(args, args.workdir), ""]
    if not args.vault_only:
        lines += crossover(args.sizes, args.workdir, args.seed)
    lines.append(f"\nLoad average at end: {load_average()}.")
    text = "\n".join(lines)
    print(text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "scale.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--vector-worker":
        vector_worker(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        sys.exit(main())
