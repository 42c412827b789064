"""Cold keyword index, this tree against a baseline tree, pair by pair in one run.

    python bench/bench_build.py /path/to/notes --baseline-src /tmp/base/src --pairs 3

Each pair runs ``vault --vault COPY --index EMPTY reindex --no-vectors`` once with the
baseline's ``src/`` first on ``PYTHONPATH`` and once with this tree's (order alternating
from pair to pair), under ``/usr/bin/time -v``: wall seconds and the peak RSS of the
largest process (the parent; workers are smaller), and the CPU seconds (user + system)
of the parent alone (the workers are not its children: forkserver), which holds the
writes and the keyword rebuild; steadier than wall on a busy machine.
Prints each pair, the median of the ratios (this tree / baseline) and the load average.
Measures and prints; never asserts.

Get a baseline tree with ``git archive <commit> src | tar -x -C /tmp/base``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def run_once(
    vault_bin: str, src: Path, vault: Path, work: Path
) -> tuple[float, float, float, float]:
    """(wall s, peak RSS MB, index MB, CPU s) of one cold keyword build."""
    index = work / "index"
    shutil.rmtree(index, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(src), "HOME": str(work / "home")}
    cmd = ["/usr/bin/time", "-v", vault_bin, "--vault", str(vault), "--index", str(index)]
    out = subprocess.run(
        [*cmd, "reindex", "--no-vectors"], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        sys.exit(f"reindex failed under {src}:\n{out.stdout}\n{out.stderr}")
    wall_m = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", out.stderr)
    rss_m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    cpu_m = re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", out.stderr)
    assert wall_m and rss_m and len(cpu_m) == 2, out.stderr
    h, m, s = wall_m.groups()
    wall = int(h or 0) * 3600 + int(m) * 60 + float(s)
    size = sum(p.stat().st_size for p in index.rglob("*.duckdb*") if p.is_file())
    return wall, int(rss_m.group(1)) / 1024, size / 2**20, sum(map(float, cpu_m))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("corpus", type=Path, help="a folder of Markdown notes (copied first)")
    p.add_argument("--baseline-src", type=Path, required=True, help="the baseline's src/")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--bin", default=str(HERE / ".venv" / "bin" / "vault"))
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mv-build-"))
    try:
        vault = work / "vault"
        shutil.copytree(args.corpus, vault, symlinks=True)
        (work / "home").mkdir()
        trees = {"baseline": args.baseline_src.resolve(), "this": (HERE / "src").resolve()}
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"cold keyword index of {args.corpus}, {args.pairs} pairs (load average {load})")
        ratios: dict[str, list[float]] = {"wall": [], "rss": [], "cpu": []}
        for i in range(args.pairs):
            order = ["baseline", "this"] if i % 2 == 0 else ["this", "baseline"]
            got = {name: run_once(args.bin, trees[name], vault, work) for name in order}
            (bw, br, bs, bc), (tw, tr, ts, tc) = got["baseline"], got["this"]
            ratios["wall"].append(tw / bw)
            ratios["rss"].append(tr / br)
            ratios["cpu"].append(tc / bc)
            print(
                f"  pair {i + 1}: wall {bw:6.2f} -> {tw:6.2f} s ({tw / bw:.2f}x)   "
                f"peak RSS {br:6.0f} -> {tr:6.0f} MB ({tr / br:.2f}x)   "
                f"CPU {bc:6.2f} -> {tc:6.2f} s ({tc / bc:.2f}x)   "
                f"index {bs:5.1f} -> {ts:5.1f} MB   load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"median this/baseline: wall {statistics.median(ratios['wall']):.2f}x, "
            f"peak RSS {statistics.median(ratios['rss']):.2f}x, "
            f"CPU {statistics.median(ratios['cpu']):.2f}x "
            f"(load average {load} at start, {load_end} at end; {os.cpu_count()} cores)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
