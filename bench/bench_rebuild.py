"""The keyword index rebuilt from the chunks alone, this tree against a baseline tree.

    python bench/bench_rebuild.py /path/to/notes --baseline-src /tmp/base/src --pairs 2

A first build sorts the postings its workers counted (``keyword._Staged``); a large change
to a built index (more than ``KW_DELTA_MIN`` chunks or ``KW_DELTA_SHARE`` of all) or a
build interrupted before its rebuild has no such counts, and rebuilds the postings from
the chunks (``KeywordIndex._postings_from_tokens``). Each tree builds its own index of a
copy of the notes (``vault reindex --no-vectors``), then, in a new process per run, opens
it and times ``KeywordIndex.rebuild()`` with nothing staged (wall and CPU seconds of
that process; DuckDB's threads count in its CPU), pair by pair, which tree first
alternating. Prints each pair, the median ratio this/baseline and the load average.
Measures and prints; never asserts.
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

HERE = Path(__file__).resolve().parent.parent


def rebuild_once(vault: Path, index: Path) -> None:
    """In a child: rebuild the keyword index with nothing staged; print one JSON line."""
    from markvault.config import Settings
    from markvault.core.lifecycle import chunk_fingerprint
    from markvault.index import Index

    settings = Settings.load(vault, index, env={})
    fingerprint = chunk_fingerprint(settings.chunk)
    db = Index.open(settings, write=True, chunk_fingerprint=fingerprint)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        db.keyword.rebuild()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        db.close()
    print(json.dumps({"wall": wall, "cpu": cpu}))


def run(src: Path, vault: Path, index: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    me = [sys.executable, __file__, str(vault), "--child", str(index)]
    out = subprocess.run(me, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"rebuild failed under {src}:\n{out.stderr}")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return float(got["wall"]), float(got["cpu"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("corpus", type=Path, help="a folder of Markdown notes (copied first)")
    p.add_argument("--baseline-src", type=Path, help="the baseline's src/ (required)")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--bin", default=str(HERE / ".venv" / "bin" / "vault"))
    p.add_argument("--child", type=Path, metavar="INDEX", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        rebuild_once(args.corpus, args.child)
        return 0
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    if args.baseline_src is None:
        p.error("--baseline-src is required")
    work = Path(tempfile.mkdtemp(prefix="mv-rebuild-"))
    try:
        vault = work / "vault"
        shutil.copytree(args.corpus, vault, symlinks=True)
        trees = {"baseline": args.baseline_src.resolve(), "this": (HERE / "src").resolve()}
        for name, src in trees.items():
            env = {**os.environ, "PYTHONPATH": str(src), "HOME": str(work)}
            cmd = [args.bin, "--vault", str(vault), "--index", str(work / name), "reindex"]
            subprocess.run([*cmd, "--no-vectors", "-q"], env=env, check=True)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"keyword rebuild from the chunks of {args.corpus}, {args.pairs} pairs")
        ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
        for i in range(args.pairs):
            order = list(trees) if i % 2 == 0 else list(trees)[::-1]
            got = {name: run(trees[name], vault, work / name) for name in order}
            (bw, bc), (tw, tc) = got["baseline"], got["this"]
            ratios["wall"].append(tw / bw)
            ratios["cpu"].append(tc / bc)
            print(
                f"  pair {i + 1}: wall {bw:5.2f} -> {tw:5.2f} s ({tw / bw:.2f}x)   "
                f"CPU {bc:5.2f} -> {tc:5.2f} s ({tc / bc:.2f}x)   load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"median this/baseline: wall {statistics.median(ratios['wall']):.2f}x, "
            f"CPU {statistics.median(ratios['cpu']):.2f}x "
            f"(load average {load} at start, {load_end} at end; {os.cpu_count()} cores)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
