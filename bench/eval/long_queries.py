"""Long queries in keyword mode: ``python -m bench.eval.long_queries``.

Issue 11's goal: a CACM query of 40-60 words costs at most 60 ms warm (p50) in
``vault search --batch``, keyword mode. This script

1. writes CACM as a vault (``--workdir``, reused between runs) and indexes it without
   vectors;
2. runs ``vault search --batch - --mode keyword --format json`` once, as a user would,
   with every CACM query of 40-60 words and every one of at most 8 words, each
   ``--rounds`` times in turn; the first round is the cold one and is left out; the
   figure is each query's ``timings_ms.total`` (the search itself, as the command
   reports it);
3. measures the same long queries in this process with issue 6's keyword search
   (``experiments``: no stop words, no query term frequency, chunks alone) against
   today's, alternating the two query by query, and prints the ratio of medians.

Timings on shared machines are noisy: the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from markvault import Vault
from markvault.runtime.local_host import open_local
from markvault.types.search import SearchRequest

from . import experiments as exps
from . import runner, sets
from .smart import Query

LONG = (40, 60)
SHORT = 8


def pick(queries: Sequence[Query]) -> tuple[list[str], list[str]]:
    texts = [q.text for q in queries]
    long = [t for t in texts if LONG[0] <= len(t.split()) <= LONG[1]]
    short = [t for t in texts if 0 < len(t.split()) <= SHORT]
    return long, short


def batch(vault_dir: Path, index_dir: Path, queries: list[tuple[str, str]]) -> dict[str, float]:
    """Each query's ``timings_ms.total`` from one ``vault search --batch`` run."""
    lines = "".join(json.dumps({"id": i, "query": q}) + "\n" for i, q in queries)
    vault = Path(sys.executable).with_name("vault")
    done = subprocess.run(
        [
            str(vault),
            "--vault",
            str(vault_dir),
            "--index",
            str(index_dir),
            "search",
            "--batch",
            "-",
            "--mode",
            "keyword",
            "--format",
            "json",
        ],
        input=lines,
        capture_output=True,
        text=True,
        check=False,
    )
    out = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        if "timings_ms" in row:
            out[row["id"]] = row["timings_ms"]["total"]
    return out


def in_process(vault: Vault, long: list[str], rounds: int) -> tuple[list[float], list[float]]:
    """(issue 6's ms, today's ms) per long query, alternating, warm."""
    before: list[float] = []
    now: list[float] = []
    issue6 = next(e for e in exps.default_experiments() if e.name.startswith("issue 6"))
    for text in long:  # warm both paths
        vault.search(SearchRequest(text, mode="keyword"))
    for _ in range(rounds):
        for text in long:
            with issue6.patch():
                started = time.perf_counter()
                vault.search(SearchRequest(text, mode="keyword"))
                before.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            vault.search(SearchRequest(text, mode="keyword"))
            now.append((time.perf_counter() - started) * 1000)
    return before, now


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.eval.long_queries", description=__doc__)
    p.add_argument("--workdir", type=Path, default=Path("bench/out/eval"))
    p.add_argument("--rounds", type=int, default=6)
    args = p.parse_args(argv)
    s = sets.from_collection(sets.load_catalogued("cacm"))
    long, short = pick(sets.load_catalogued("cacm").queries)
    where = args.workdir / "cacm-keyword"
    built = runner.build_files(s.files, where, vectors=False)
    built.vault.close()
    queries = [
        (f"{kind}{i}-{r}", text)
        for r in range(args.rounds)
        for kind, group in (("L", long), ("S", short))
        for i, text in enumerate(group)
    ]
    took = batch(where / "vault", where / "index", queries)
    warm = {k: v for k, v in took.items() if not k.endswith("-0")}
    long_ms = [v for k, v in warm.items() if k.startswith("L")]
    short_ms = [v for k, v in warm.items() if k.startswith("S")]
    words = [len(t.split()) for t in long]
    print(f"CACM, {s.description}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"vault search --batch, keyword, warm ({args.rounds - 1} rounds): "
        f"{len(long)} queries of {min(words)}-{max(words)} words p50 "
        f"{statistics.median(long_ms):.1f} ms, p95 {_p95(long_ms):.1f} ms; "
        f"{len(short)} of at most {SHORT} words p50 {statistics.median(short_ms):.1f} ms"
    )
    with open_local(where / "vault", where / "index") as vault:
        before, now = in_process(vault, long, args.rounds)
    print(
        f"in process, same long queries, alternating: issue 6 p50 "
        f"{statistics.median(before):.1f} ms, now {statistics.median(now):.1f} ms "
        f"(ratio {statistics.median(before) / statistics.median(now):.2f})"
    )
    return 0


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


if __name__ == "__main__":
    raise SystemExit(main())
