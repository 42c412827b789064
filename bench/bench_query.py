"""Warm keyword queries (issue 12): p50 in a process that has the index open, split into
finding and ranking the postings and fetching and formatting the hits.

    python bench/bench_query.py                                # 10k notes, this tree
    python bench/bench_query.py --baseline-src /tmp/main/src   # A/B against another tree
    python bench/bench_query.py --notes 1000 --workdir /tmp/mv-query   # reuse vaults
    python bench/bench_query.py --notes 50000 --workdir /tmp/mv-scale \
        --shared-index /tmp/mv-scale/index-50000 --baseline-src /tmp/main/src  # one index
    python bench/bench_query.py --vault /tmp/peers-work/corpora/hub \
        --query-file /tmp/peers-work/results-hub.json --baseline-src /tmp/main/src
    python bench/bench_query.py --mode hybrid --vault DIR --query-file Q.json \
        --baseline-src /tmp/main/src --workdir /tmp/mv-hybrid   # embeds once per tree

The vault is ``gen_vault.py``'s (seeded), the ~200 queries ``bench_core.py``'s (words of
every frequency, phrases, prefixes, boolean, CJK); or an existing vault (``--vault``)
with the queries of ``--query-file`` (a JSON list of strings, or the peers harness's
results file, whose ``queries`` are phrases of the corpus's titles). Each tree indexes
the vault with its own code (``vault reindex --no-vectors``) into its own index, then
runs in a new process per round:
10 warm-up queries, then every query once through ``Vault.search(mode="keyword",
limit=10)`` (``--mode hybrid``: each tree's index holds vectors too, and the split's
first part adds the query's embedding, the vector stage and fusion). With
``--baseline-src`` the two trees' rounds alternate (which goes first too), so machine
load hits both alike; the ratio of their medians per round is printed
with its median. Wall time is what a caller waits; CPU time (``time.process_time``) moves
less with other work on the machine. The split is the search's own ``timings_ms``:
``keyword`` (term lookup, BM25 over the postings, the note-level rerank) and ``fetch``
(collapsing to notes, reading the shown chunks and their notes, snippets). A process's
first search scores in SQL, later ones in numpy (index/bm25.py): the warm-up runs the
first, so the figures are the warm path's; `bench_cli.py` times the one-shot path. The
second and third warm-up queries are timed on their own: the first in numpy imports it,
the second reads every chunk's note into arrays (index/reads.py) that later searches
look up; after a write to the index, the second search after it reads them again.
Measures and prints; never asserts. The table goes to ``bench/out/query.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from markvault.types.search import SearchRequest

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "out"
WARMUP = 10


def log(message: str) -> None:
    print(f"[bench_query] {message}", file=sys.stderr, flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def worker(vault: Path, index: Path, queries_file: Path, mode: str) -> None:
    """Run in a child: every query once after a warm-up; prints one JSON line."""
    from markvault.runtime.local_host import open_local

    queries = json.loads(queries_file.read_text(encoding="utf-8"))
    opened = open_local(vault, index)
    try:
        second: list[float] = []  # the first two searches in numpy (see the docstring)
        third: list[float] = []
        for n, (_, query) in enumerate(queries[:WARMUP]):
            started = time.perf_counter()
            opened.search(SearchRequest(query, mode=mode, limit=10))
            if n in (1, 2):
                (second if n == 1 else third).append((time.perf_counter() - started) * 1000)
        wall, cpu, postings, fetch = [], [], [], []
        for _, query in queries:
            started, began_cpu = time.perf_counter(), time.process_time()
            result = opened.search(SearchRequest(query, mode=mode, limit=10))
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - began_cpu) * 1000)
            stages = ("keyword", "vector", "embed_query", "fuse")
            postings.append(sum(result.timings_ms.get(s, 0.0) for s in stages))
            fetch.append(result.timings_ms.get("fetch", 0.0))
    finally:
        opened.close()
    figures = {"wall": wall, "cpu": cpu, "postings": postings, "fetch": fetch}
    figures.update(second=second, third=third)
    print(json.dumps(figures))


class Tree:
    """One source tree: its environment, its own index of the vault."""

    def __init__(self, name: str, src: Path | None, index: Path, mode: str) -> None:
        self.name = name
        self.index = index
        self.mode = mode
        self.env = dict(os.environ)
        if src is not None:
            self.env["PYTHONPATH"] = str(src)
        self.rounds: list[dict[str, list[float]]] = []

    def reindex(self, vault: Path) -> None:
        vectors = self.mode != "keyword"  # a sync of an index that has them is quick
        if not vectors and (self.index / f"{vault.resolve().name}.duckdb").exists():
            return
        log(f"{self.name}: {'' if vectors else 'keyword '}index of {vault}")
        argv = [sys.executable, "-m", "markvault.cli", "--vault", str(vault)]
        argv += ["--index", str(self.index), "reindex", "--quiet"]
        argv += [] if vectors else ["--no-vectors"]
        subprocess.run(argv, env=self.env, check=True, capture_output=True)

    def round(self, vault: Path, queries_file: Path) -> None:
        argv = [sys.executable, __file__, "--worker", str(vault), str(self.index)]
        done = subprocess.run(
            [*argv, str(queries_file), self.mode],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: {done.stderr[-2000:]}")
        self.rounds.append(json.loads(done.stdout.strip().splitlines()[-1]))

    def median(self, key: str) -> float:
        return statistics.median(v for r in self.rounds for v in r[key])

    def p95(self, key: str) -> float:
        values = sorted(v for r in self.rounds for v in r[key])
        return values[int(0.95 * (len(values) - 1))]


def prepare(workdir: Path, notes: int, seed: int, queries: int) -> tuple[Path, Path]:
    """(the generated vault, a file of its (class, query) pairs), reused when present."""
    sys.path.insert(0, str(HERE))
    import bench_core
    import gen_vault

    vault = workdir / f"vault-{notes}-s{seed}"
    if not vault.exists():
        log(f"generating {notes:,} notes")
        gen_vault.generate(vault, notes, seed)
    queries_file = workdir / f"queries-{notes}-s{seed}-{queries}.json"
    if not queries_file.exists():
        site = bench_core.Site(notes, vault, workdir / "unused")
        chosen = bench_core.build_queries(site, seed, queries)
        queries_file.write_text(json.dumps(chosen), encoding="utf-8")
    return vault, queries_file


def given(workdir: Path, vault: Path, query_file: Path) -> tuple[Path, Path]:
    """(an existing vault, a file of (class, query) pairs from ``query_file``)."""
    loaded = json.loads(query_file.read_text(encoding="utf-8"))
    texts = loaded["queries"] if isinstance(loaded, dict) else loaded
    queries_file = workdir / f"queries-{vault.resolve().name}.json"
    queries_file.write_text(json.dumps([["given", q] for q in texts]), encoding="utf-8")
    return vault, queries_file


def table(trees: list[Tree], corpus: str) -> list[str]:
    names = " | ".join(t.name for t in trees)
    queries = len(trees[0].rounds[0]["wall"])
    lines = [
        f"Warm {trees[0].mode} queries on {corpus} ({queries} queries x {len(trees[0].rounds)} "
        f"rounds, after {WARMUP} warm-up queries each); {os.cpu_count()} cores.",
        "",
        f"| figure | {names} |" + (" ratio (this / baseline) |" if len(trees) == 2 else ""),
        "| --- | " + " | ".join("---" for _ in trees) + (" | --- |" if len(trees) == 2 else ""),
    ]
    figures = [
        ("p50, wall", "wall"),
        ("p50, CPU", "cpu"),
        (
            "ranking (term lookup, BM25, rerank; hybrid: + embedding, vectors, fusion), p50",
            "postings",
        ),
        ("fetching hits (notes, chunks, snippets), p50", "fetch"),
        ("a process's second search (imports numpy), median", "second"),
        ("its third (reads every chunk's note), median", "third"),
    ]
    for label, key in figures:
        cells = [f"{t.median(key):.2f} ms" for t in trees]
        if len(trees) == 2:
            ratios = [
                statistics.median(b[key]) / statistics.median(a[key])
                for a, b in zip(trees[0].rounds, trees[1].rounds, strict=True)
            ]
            cells.append(f"{statistics.median(ratios):.2f}x")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = [f"{t.p95('wall'):.2f} ms" for t in trees]
    lines.append("| p95, wall | " + " | ".join(cells) + (" | |" if len(trees) == 2 else " |"))
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3, help="new processes per tree")
    p.add_argument("--vault", type=Path, help="an existing vault instead of a generated one")
    p.add_argument("--query-file", type=Path, help="its queries (with --vault)")
    p.add_argument("--baseline-src", type=Path, help="another tree's src/ to compare with")
    p.add_argument("--workdir", type=Path, help="keep vaults and indexes here (reused)")
    p.add_argument("--mode", choices=("keyword", "hybrid"), default="keyword")
    p.add_argument(
        "--shared-index",
        type=Path,
        help="both trees query this one index (built by this tree if missing): for large "
        "vaults, when the trees' index schema is the same",
    )
    args = p.parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mv-query-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.vault and not args.query_file:
        p.error("--vault needs --query-file")
    if args.vault:
        vault, queries_file = given(workdir, args.vault, args.query_file)
    else:
        vault, queries_file = prepare(workdir, args.notes, args.seed, args.queries)
    shared = args.shared_index
    trees = [Tree("this tree", None, shared or workdir / "index-this", args.mode)]
    if args.baseline_src:
        base_index = shared or workdir / "index-base"
        trees.insert(0, Tree("baseline", args.baseline_src.resolve(), base_index, args.mode))
    for tree in trees[::-1]:  # this tree first: it builds a shared index
        tree.reindex(vault)
    load_start = load_average()
    for turn in range(args.rounds):
        for tree in trees if turn % 2 == 0 else trees[::-1]:
            log(f"round {turn + 1}: {tree.name}")
            tree.round(vault, queries_file)
    lines = table(trees, vault.name if args.vault else f"{args.notes:,} notes")
    if shared:
        lines.append(f"\nBoth trees queried one index, {shared}.")
    lines.append(f"\nLoad average at start {load_start}, at end {load_average()}.")
    if args.workdir is None:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    text = "\n".join(lines)
    print(text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "query.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5])
    else:
        sys.exit(main())
