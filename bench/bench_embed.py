"""Vector indexing: markvault's encoder against plain sentence-transformers, same chunks.

    python bench/bench_embed.py                          # a generated 300-note vault, 3 pairs
    python bench/bench_embed.py --vault /path/to/notes   # any folder of notes (copied)
    python bench/bench_embed.py --ndcg                   # + nDCG@10, Cranfield and CACM (~15 min)
    python bench/bench_embed.py --search                 # + one-shot hybrid vs keyword search

The baseline is what the issue names: ``SentenceTransformer.encode`` of the packaged model
in torch fp32, batch 32, of exactly the texts markvault embeds (the missing vectors of
a keyword-only index). The markvault side is a vector reindex of that keyword-only index
(a local vault's ``reindex(vectors=True)``: finding the missing chunks, encoding them
with the configured backend, writing the vectors). Model load, and the one-time ONNX export, are
off the clock on both sides. The two are timed pair by pair (A B, then B A, ...) in one
process, so machine load hits both alike; the ratio of each pair is printed and their
median is the figure. Also printed: the cosine between markvault's stored vectors and
the baseline's, and the load average.

``--ndcg`` runs the retrieval evaluation (``python -m bench.eval --modes vector``) on
Cranfield and CACM once per backend (``MARKVAULT_ENCODER=torch`` and the default) and
prints nDCG@10 side by side; ``bench/out/embed-eval`` keeps those indexes between runs.

``--search`` then times `vault search` as typed, in new processes, on the vault just
embedded: hybrid against keyword alternately, without an owner and with `vault watch`
owning the index, and prints the ratio and the difference of the medians.

Every output starts with the machine line (``machine.py``: CPU, flags, encoder verdict).
Measures and prints; never asserts. The table goes to ``bench/out/embed.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import gen_vault
from machine import machine_line
from markvault.config import DEFAULT_MODEL, Settings
from markvault.core.lifecycle import chunk_fingerprint
from markvault.embed.embedder import SentenceEmbedder, model_path
from markvault.embed.encoder import backend_choice, stay_offline
from markvault.index import Index
from markvault.runtime.local_host import open_local

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT_DIR = HERE / "out"
SHARED_EVAL = Path(os.environ.get("MARKVAULT_SHARED_EVAL") or REPO.parent / "shared" / "eval")
BASELINE_BATCH = 32


def log(message: str) -> None:
    print(f"[bench_embed] {message}", file=sys.stderr, flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def plain_model() -> Any:
    """The packaged model in sentence-transformers, as before this backend existed."""
    stay_offline()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_path(DEFAULT_MODEL), device="cpu")


def keyword_index(source: Path | None, notes: int, workdir: Path) -> tuple[Path, Path, Path]:
    """(vault, index folder, saved copy of the keyword-only index file)."""
    vault = workdir / "vault"
    if source is None:
        gen_vault.generate(vault, notes, 7)
    else:
        shutil.copytree(source, vault, symlinks=True)
    index = workdir / "index"
    with open_local(vault, index) as v:
        v.reindex(vectors=False)
    db = Settings.load(vault=vault, index=index).db_path
    saved = workdir / "keyword-only.duckdb"
    shutil.copy2(db, saved)
    return vault, index, saved


def texts_to_embed(vault: Path, index: Path) -> list[tuple[str, str]]:
    settings = Settings.load(vault=vault, index=index)
    idx = Index.open(settings, write=False, chunk_fingerprint=chunk_fingerprint(settings.chunk))
    try:
        return idx.vectors.missing(settings.model)
    finally:
        idx.close()


def stored_vectors(db: Path, hashes: list[str]) -> np.ndarray:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        rows = dict(con.execute("SELECT hash, vec FROM embeddings").fetchall())
    return np.array([rows[h] for h in hashes], np.float32)


def speed(args: argparse.Namespace, workdir: Path) -> list[str]:
    vault, index, saved = keyword_index(args.vault, args.notes, workdir)
    pending = texts_to_embed(vault, index)
    hashes, texts = [h for h, _ in pending], [t for _, t in pending]
    tokens = sum(len(t.split()) for t in texts)
    log(f"{len(texts)} chunk texts to embed ({tokens / len(texts):.0f} words on average)")

    baseline = plain_model()
    baseline.encode(texts[:16], batch_size=BASELINE_BATCH)  # warm, off the clock
    # The embedder a vault makes for itself: the verdict and exports in the user's cache
    # (the `vault` commands timed below read the same).
    embedder = SentenceEmbedder(DEFAULT_MODEL)
    embedder.encode(texts[:16])  # loads (measures the first time on a machine), off the clock
    log(f"markvault backend: {embedder.backend}: {embedder.reason or ''}")

    def run_baseline() -> tuple[float, np.ndarray]:
        started = time.perf_counter()
        vectors = baseline.encode(texts, batch_size=BASELINE_BATCH, normalize_embeddings=True)
        return time.perf_counter() - started, np.asarray(vectors, np.float32)

    def run_markvault() -> float:
        db = Settings.load(vault=vault, index=index).db_path
        shutil.copy2(saved, db)
        with open_local(vault, index, embedder=embedder) as v:
            started = time.perf_counter()
            report = v.reindex(vectors=True)
            seconds = time.perf_counter() - started
        assert report.embedded == len(texts), (report.embedded, len(texts))
        return seconds

    load_start = load_average()
    pairs: list[tuple[float, float]] = []
    reference = np.zeros(0)
    for turn in range(args.pairs):
        if turn % 2 == 0:
            plain, reference = run_baseline()
            ours = run_markvault()
        else:
            ours = run_markvault()
            plain, reference = run_baseline()
        pairs.append((plain, ours))
        log(f"pair {turn + 1}: plain {plain:.1f} s, markvault {ours:.1f} s: {plain / ours:.2f}x")
    db = Settings.load(vault=vault, index=index).db_path
    cosine = (stored_vectors(db, hashes) * reference).sum(axis=1)
    ratios = [p / o for p, o in pairs]
    plain_s = statistics.median(p for p, _ in pairs)
    ours_s = statistics.median(o for _, o in pairs)
    where = args.vault or f"generated vault ({args.notes} notes, seed 7)"
    search_lines = one_shot_search(vault, index, args.search_rounds) if args.search else []
    return [
        f"Vector indexing of {len(texts):,} chunk texts of {where}; "
        f"{os.cpu_count()} cores, load average {load_start} at start, {load_average()} at end.",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| plain sentence-transformers (torch fp32, batch {BASELINE_BATCH}), median | "
        f"{plain_s:.1f} s ({len(texts) / plain_s:.1f} chunks/s) |",
        f"| markvault vector reindex ({embedder.backend}), median | "
        f"{ours_s:.1f} s ({len(texts) / ours_s:.1f} chunks/s) |",
        f"| speed-up, median of {len(pairs)} pairs (each pair) | "
        f"**{statistics.median(ratios):.2f}x** ({', '.join(f'{r:.2f}' for r in ratios)}) |",
        f"| cosine of markvault's vectors to plain ones: mean / 1st percentile / min | "
        f"{cosine.mean():.5f} / {np.percentile(cosine, 1):.5f} / {cosine.min():.5f} |",
        *search_lines,
    ]


SEARCH_QUERY = "how do I keep the index in step with my notes"


def vault_argv(vault: Path, index: Path, *args: str) -> list[str]:
    """The `vault` command as a user types it (the one installed beside this Python)."""
    script = Path(sys.executable).with_name("vault")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "markvault.cli"]
    return [*head, "--vault", str(vault), "--index", str(index), *args]


def timed_call(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr[-1000:]}")
    return seconds


def one_shot_search(vault: Path, index: Path, rounds: int) -> list[str]:
    """One-shot `vault search` (hybrid, as typed) against `--mode keyword`, alternately,
    without an owner and with `vault watch` owning the index."""
    keyword = vault_argv(vault, index, "search", SEARCH_QUERY, "--mode", "keyword")
    hybrid = vault_argv(vault, index, "search", SEARCH_QUERY)
    lines = ["", f'One-shot `vault search "{SEARCH_QUERY}"`, median of {rounds} alternating:', ""]
    lines += ["| owner | keyword | hybrid | hybrid / keyword | hybrid - keyword |"]
    lines += ["| --- | --- | --- | --- | --- |"]
    for owner_running in (False, True):
        owner = None
        if owner_running:
            owner = subprocess.Popen(
                vault_argv(vault, index, "watch"), stderr=subprocess.PIPE, text=True
            )
            assert owner.stderr is not None
            for line in owner.stderr:  # "Watching ..." once it owns the index
                if line.startswith("Watching"):
                    break
        try:
            timed_call(hybrid)  # warm the file cache, off the clock
            kw, hy = [], []
            for turn in range(rounds):
                first, second = (keyword, hybrid) if turn % 2 == 0 else (hybrid, keyword)
                a, b = timed_call(first), timed_call(second)
                kw.append(a if first is keyword else b)
                hy.append(b if first is keyword else a)
        finally:
            if owner is not None:
                owner.terminate()
                owner.wait()
        k, h = statistics.median(kw), statistics.median(hy)
        lines.append(
            f"| {'`vault watch`' if owner_running else 'none'} | {k:.3f} s | {h:.3f} s | "
            f"{h / k:.2f}x | {h - k:+.3f} s |"
        )
        log(f"search, owner {owner_running}: keyword {k:.3f} s, hybrid {h:.3f} s")
    return lines


def eval_collection(name: str, backend: str) -> float | None:
    """nDCG@10 of markvault's vector mode on one collection with one backend."""
    out = OUT_DIR / "embed-eval"
    out.mkdir(parents=True, exist_ok=True)
    result = out / f"{name}-{backend}.json"
    argv = [sys.executable, "-m", "bench.eval", "--sets", name, "--modes", "vector"]
    argv += ["--no-references", "--workdir", str(out / f"{name}-{backend}")]
    argv += ["--json-out", str(result)]
    log(f"nDCG: {name} with {backend}")
    env = {**os.environ, "MARKVAULT_ENCODER": backend}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        log(f"bench.eval failed: {done.stderr[-2000:]}")
        return None
    data = json.loads(result.read_text(encoding="utf-8"))
    runs = data["sets"][0]["runs"]
    run = next(
        r
        for r in runs
        if r["system"] == "markvault vector"
        and r.get("group", "all") == "all"
        and r.get("level", "documents") == "documents"
    )
    return float(run["ndcg@10"])


def ndcg(backend: str) -> list[str]:
    lines = [
        "",
        f"nDCG@10 of vector mode (`python -m bench.eval --modes vector`), torch vs {backend}:",
        "",
        f"| collection | torch (plain sentence-transformers) | {backend} | difference |",
        "| --- | --- | --- | --- |",
    ]
    for name in ("cranfield", "cacm"):
        before, after = eval_collection(name, "torch"), eval_collection(name, backend)
        if before is None or after is None:
            lines.append(f"| {name} | {before} | {after} | (failed) |")
            continue
        lines.append(f"| {name} | {before:.4f} | {after:.4f} | {after - before:+.4f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vault", type=Path, help="a folder of notes (default: generated)")
    p.add_argument("--notes", type=int, default=300, help="size of the generated vault")
    p.add_argument("--pairs", type=int, default=3, help="timed pairs (plain, markvault)")
    p.add_argument("--ndcg", action="store_true", help="also nDCG@10 on Cranfield and CACM")
    p.add_argument("--skip-speed", action="store_true", help="only the nDCG comparison")
    p.add_argument("--search", action="store_true", help="also one-shot hybrid vs keyword")
    p.add_argument("--search-rounds", type=int, default=7, help="alternating search pairs")
    args = p.parse_args(argv)
    lines: list[str] = [machine_line(), ""]
    if not args.skip_speed:
        with tempfile.TemporaryDirectory(prefix="mv-embed-") as tmp:
            lines += speed(args, Path(tmp))
    if args.ndcg or args.skip_speed:
        lines += ndcg(backend_choice())
    text = "\n".join(lines)
    print(text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "embed.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
