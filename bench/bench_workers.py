"""A note-reading worker's CPU with the collector as Python sets it, and as the pool's
``worker_setup`` sets it, pair by pair, each run in a new process.

    python bench/bench_workers.py /tmp/peers-work/corpora/big --pairs 3 --notes 4000

Each run does what a worker of a cold build does, in one process and without a pool:
imports the worker's modules, then (in the "setup" runs) calls ``pool.worker_setup``,
then reads the corpus's notes ``READ_BATCH`` at a time through ``note_reading._read_batch`` and
pickles each batch's results as the pool sends them back. Prints the CPU seconds of the
reading loop per run, the ratio per pair and their median, and the load average.
Measures and prints; never asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def one_run(corpus: Path, setup: bool, notes: int) -> float:
    """CPU seconds of one worker-like loop over the first ``notes`` notes, in this
    process."""
    import pickle
    import tempfile
    import time

    from markvault.config import Settings
    from markvault.files.vault_files import VaultFiles
    from markvault.indexing import note_reading, pool

    for name in note_reading.WORKER_MODULES:
        __import__(name)
    with tempfile.TemporaryDirectory() as index:
        settings = Settings.load(corpus, Path(index), env={})
        files = VaultFiles(settings.vault_dir, settings.index_dir)
        stats = list(files.scan_all().notes.values())[: notes or None]
        if setup:
            pool.worker_setup()
        started = time.process_time()
        for i in range(0, len(stats), note_reading.READ_BATCH):
            batch = [(st, None) for st in stats[i : i + note_reading.READ_BATCH]]
            pickle.dumps(note_reading._read_batch(settings, batch), pickle.HIGHEST_PROTOCOL)
        return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("corpus", type=Path)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--notes", type=int, default=0, help="only the first N notes (0: all)")
    p.add_argument("--run", choices=("default", "setup"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.run:
        print(one_run(args.corpus, args.run == "setup", args.notes))
        return 0
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    env = {**os.environ, "PYTHONPATH": str(HERE / "src")}
    ratios = []
    for pair in range(args.pairs):
        order = ("default", "setup") if pair % 2 == 0 else ("setup", "default")
        cpu = {}
        for run in order:
            cmd = [sys.executable, __file__, str(args.corpus), "--notes", str(args.notes)]
            out = subprocess.run([*cmd, "--run", run], env=env, capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr)
            cpu[run] = float(out.stdout)
        ratios.append(cpu["setup"] / cpu["default"])
        print(
            f"pair {pair + 1}: collector as set by Python {cpu['default']:.2f} CPU s, "
            f"worker_setup {cpu['setup']:.2f} ({ratios[-1]:.3f}x), "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    print(f"median ratio {statistics.median(ratios):.3f}x over {args.pairs} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
