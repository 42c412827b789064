"""The keyword stage's cost by query length (issue 33): pasted paragraphs, code, logs.

    python bench/bench_query_length.py                          # this tree
    python bench/bench_query_length.py --src /tmp/main/src --rounds 1   # another tree
    python bench/bench_query_length.py --workdir bench/out/query-length  # reuse the vault

Builds Cranfield (1,400 abstracts, one note each; ``bench/eval``'s reader and vault
writer, ``MARKVAULT_SHARED_EVAL`` as there) as a keyword-only vault, then asks queries
of every length up to the 4,000-character limit: 4, 16, 60, 200 and 600 consecutive
words of its own abstracts (every word known to the index: the worst case), code and
log lines made of its words (with the quotes, parentheses and operators they carry),
one word repeated, 600 distinct words of its vocabulary, and thousands of distinct
unknown terms (random words; Chinese characters, whose bigrams are terms).

Each figure is the search's own ``timings_ms.keyword`` (term lookup, BM25 over the
postings, the note-level rerank): warm, the median of ``--rounds`` rounds in one
process that searched before (numpy scoring), classes in a rotated order each round;
cold, each class's first search in a new process (SQL scoring, DuckDB's first reads).
Ratios are to the 4-word query's figure of the same run, so machine load hits both
alike. Goals: every query <= 250 ms and <= 3x the 4-word query, 60 words <= 60 ms warm.
Measures and prints; never asserts. The table goes to ``bench/out/query_length.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from markvault.types.search import SearchRequest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT_DIR = HERE / "out"
MAX_CHARS = 4000
WORDS = (4, 16, 60, 200, 600)


def log(message: str) -> None:
    print(f"[bench_query_length] {message}", file=sys.stderr, flush=True)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build(workdir: Path) -> tuple[Path, Path, list[str]]:
    """Cranfield as a keyword-only vault in ``workdir``; (vault, index, its words)."""
    sys.path.insert(0, str(ROOT))
    from bench.eval import runner, sets

    collection = sets.load_catalogued("cranfield")
    built = runner.build_files(sets.from_collection(collection).files, workdir, vectors=False)
    built.vault.close()
    words = " ".join(d.text for d in collection.documents).split()
    return workdir / "vault", workdir / "index", words


def queries(words: list[str]) -> dict[str, str]:
    """Each class's query (seeded)."""
    rng = random.Random(33)
    out: dict[str, str] = {}
    for n in WORDS:
        start = rng.randrange(len(words) - n)
        out[f"{n} words"] = " ".join(words[start : start + n])[:MAX_CHARS]
    known = [w for w in dict.fromkeys(words) if w.isalpha() and len(w) > 2]
    lines = []
    while sum(map(len, lines)) < MAX_CHARS:
        a, b, c, d = rng.sample(known, 4)
        lines.append(
            f'def {a}_{b}(self, {c}: float = 0.5, *args, **kw) -> "{d}":\n'
            f"    return self.{c} * ({a} - {b}) / max({d}, 1e-9)  # {c} AND {d} OR NOT -{a}\n"
        )
    out["code"] = "".join(lines)[:MAX_CHARS]
    lines = []
    while sum(map(len, lines)) < MAX_CHARS:
        a, b, c = rng.sample(known, 3)
        lines.append(
            f"2026-11-29T07:{rng.randrange(60):02d}:{rng.randrange(60):02d}."
            f"{rng.randrange(1000):03d}Z "
            f"ERROR [worker-{rng.randrange(8)}] {a}: {b} failed at x={rng.random():.3f} (mach "
            f'{rng.random() * 5:.1f}) - retry {rng.randrange(5)}/5 "{c}"\n'
        )
    out["log lines"] = "".join(lines)[:MAX_CHARS]
    out["one word repeated"] = ("wing " * (MAX_CHARS // 5)).strip()
    shuffled = known[:]
    rng.shuffle(shuffled)
    out["distinct known words"] = " ".join(shuffled)[:MAX_CHARS].rsplit(" ", 1)[0]
    letters = "abcdefghijklmnopqrstuvwxyz"
    unknown = " ".join("".join(rng.choices(letters, k=rng.randint(3, 7))) for _ in range(900))
    out["distinct unknown words"] = unknown[:MAX_CHARS].rsplit(" ", 1)[0]
    out["Chinese, 4,000 chars"] = "".join(
        chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(MAX_CHARS)
    )
    return out


def warm_worker(vault: Path, index: Path, path: Path, rounds: int) -> None:
    """In a child: warm up, then ``rounds`` rounds of every class; one JSON line."""
    from markvault.runtime.local_host import open_local

    asked: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    v = open_local(vault, index)
    for q in ("wing pressure", "boundary layer flow", "heat transfer", "shock wave"):
        v.search(SearchRequest(q, mode="keyword", limit=10))  # the SQL path, then numpy's imports
    names = list(asked)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            result = v.search(SearchRequest(asked[name], mode="keyword", limit=10))
            times[name].append(result.timings_ms["keyword"])
    v.close()
    print(json.dumps(times))


def cold_worker(vault: Path, index: Path, path: Path, name: str) -> None:
    """In a child: this class's query as the process's first search."""
    from markvault.runtime.local_host import open_local

    asked: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    v = open_local(vault, index)
    result = v.search(SearchRequest(asked[name], mode="keyword", limit=10))
    v.close()
    print(json.dumps(result.timings_ms["keyword"]))


def child(src: Path, *args: str, timeout: float) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(ROOT)]))
    done = subprocess.run(
        [sys.executable, __file__, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--src", type=Path, default=ROOT / "src", help="the tree's src to measure")
    p.add_argument("--workdir", type=Path, help="keep the vault and index here")
    p.add_argument("--rounds", type=int, default=15, help="warm rounds (median)")
    p.add_argument("--cold-rounds", type=int, default=3, help="new processes per class")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per child process")
    p.add_argument("--_warm", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--_cold", nargs=4, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._warm:
        vault, index, path = args._warm
        warm_worker(Path(vault), Path(index), Path(path), args.rounds)
        return
    if args._cold:
        vault, index, path, name = args._cold
        cold_worker(Path(vault), Path(index), Path(path), name)
        return

    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        log(f"building Cranfield in {workdir}")
        vault, index, words = build(workdir)
        asked = queries(words)
        path = Path(tmp) / "queries.json"
        path.write_text(json.dumps(asked), encoding="utf-8")
        log(f"warm: {args.rounds} rounds, load {load_average()}")
        warm = json.loads(
            child(
                args.src,
                "--rounds",
                str(args.rounds),
                "--_warm",
                str(vault),
                str(index),
                str(path),
                timeout=args.timeout,
            )
        )
        cold: dict[str, list[float]] = {name: [] for name in asked}
        for r in range(args.cold_rounds):
            for name in asked:
                log(f"cold {r + 1}/{args.cold_rounds}: {name}")
                out = child(
                    args.src,
                    "--_cold",
                    str(vault),
                    str(index),
                    str(path),
                    name,
                    timeout=args.timeout,
                )
                cold[name].append(float(out))
        load = load_average()

    sys.path.insert(0, str(args.src))
    from markvault.search.query import parse

    base_w = statistics.median(warm["4 words"])
    base_c = statistics.median(cold["4 words"]) if args.cold_rounds else 0.0
    rows = [
        f"CPU: {cpu_model()}; load average at the end {load}; tree {args.src}",
        "",
        "| query | words | chars | distinct terms | warm ms (median) | warm max | warm ratio "
        "| cold ms (median) | cold ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, text in asked.items():
        w = statistics.median(warm[name])
        c = statistics.median(cold[name]) if cold[name] else float("nan")
        rows.append(
            f"| {name} | {len(text.split())} | {len(text)} | {len(set(parse(text).terms))} "
            f"| {w:.1f} | {max(warm[name]):.1f} | {w / base_w:.2f}x "
            f"| {c:.1f} | {c / base_c if base_c else float('nan'):.2f}x |"
        )
    worst_w = max(statistics.median(t) for t in warm.values())
    rows += [
        "",
        f"Warm: slowest class {worst_w:.1f} ms ({worst_w / base_w:.2f}x the 4-word query); "
        f"60 words {statistics.median(warm['60 words']):.1f} ms. Goals: <= 250 ms and <= 3x; "
        "60 words <= 60 ms warm.",
    ]
    if args.cold_rounds:
        worst_c = max(statistics.median(t) for t in cold.values())
        rows.append(f"Cold: slowest class {worst_c:.1f} ms ({worst_c / base_c:.2f}x).")
    table = "\n".join(rows)
    print(table)
    OUT_DIR.mkdir(exist_ok=True)
    (OUT_DIR / "query_length.md").write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
