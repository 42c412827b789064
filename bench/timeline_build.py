"""A cold `vault reindex --no-vectors` drawn as a timeline: when each phase starts and
ends, and how busy the build's processes and the machine's cores are, every 0.25 s.

    python bench/timeline_build.py /tmp/peers-work/corpora/hub
    python bench/timeline_build.py /tmp/peers-work/corpora/big --src /tmp/base/src

Runs the build in this process (``--src``: whose ``src/`` to import, this tree's by
default) with its phases wrapped to note their times: the index's open, the read (the
workers' first and last result, the parent's writes of each batch), link resolution,
the keyword rebuild and its postings, then the end of the sync (its checkpoint). A
thread reads /proc every 50 ms: CPU of this process ("parent") and of its descendants
("others": the forkserver and its workers), and how many of the machine's cores are
busy with anything (other work on a shared machine included). A core the build leaves
idle shows as parent + others below the number of cores while the machine is quiet.
Measures and prints; never asserts.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
HZ = os.sysconf("SC_CLK_TCK")
T0 = time.perf_counter()
Sample = tuple[float, tuple[int, int], list[tuple[int, int]]]


def now() -> float:
    return time.perf_counter() - T0


def tree_cpu(root: int) -> tuple[int, int]:
    """CPU ticks of ``root`` and of all its descendants."""
    stats: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    family, grew = {root}, True
    while grew:
        born = {pid for pid, (parent, _) in stats.items() if parent in family} - family
        family |= born
        grew = bool(born)
    mine = stats.get(root, (0, 0))[1]
    return mine, sum(stats[p][1] for p in family if p != root and p in stats)


def core_ticks() -> list[tuple[int, int]]:
    """(busy, total) ticks of each core."""
    out = []
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3].isdigit():
            v = list(map(int, line.split()[1:]))
            out.append((sum(v) - v[3] - v[4], sum(v)))
    return out


def sample(samples: list[Sample], stop: threading.Event) -> None:
    while not stop.is_set():
        samples.append((now(), tree_cpu(os.getpid()), core_ticks()))
        time.sleep(0.05)


def instrument(marks: list[tuple[float, str]]) -> None:
    """Wrap the build's phases to note when each starts (">") and ends ("<")."""
    from markvault.index import keyword
    from markvault.indexing import reconcile as sync
    from markvault.indexing import sync_changes

    def wrap(owner: Any, name: str) -> None:
        f = getattr(owner, name)

        @functools.wraps(f)
        def noted(*a: Any, **k: Any) -> Any:
            marks.append((now(), name + ">"))
            try:
                return f(*a, **k)
            finally:
                marks.append((now(), name + "<"))

        setattr(owner, name, noted)

    read_files = sync.read_files

    def results(*a: Any, **k: Any) -> Any:
        for n, result in enumerate(read_files(*a, **k)):
            if n == 0:
                marks.append((now(), "first worker result"))
            yield result
        marks.append((now(), "last worker result"))

    sync.read_files = results
    for owner, name in (
        (sync.Syncer, "run"),
        (sync.Syncer, "scan_changes"),
        (sync_changes.StoredNotes, "store"),
        (sync.Syncer, "_resolve_links"),
        (keyword.KeywordIndex, "rebuild"),
        (keyword._Staged, "write_postings"),
    ):
        wrap(owner, name)


def report(marks: list[tuple[float, str]], samples: list[Sample]) -> None:
    stores = [t for t, name in marks if name.startswith("store")]
    for t, name in marks:
        if not name.startswith("store"):
            print(f"{t:7.2f} {name}")
    spans = list(zip(stores[::2], stores[1::2], strict=True))
    print(f"batches written: {len(spans)}, {sum(b - a for a, b in spans):.2f} s in all")
    print("     t  parent  others  busy cores (any process)")
    last, step = samples[0], 0.25
    for s in samples[1:]:
        if s[0] - last[0] >= step:
            dt = s[0] - last[0]
            parent = (s[1][0] - last[1][0]) / HZ / dt
            others = max(0.0, (s[1][1] - last[1][1]) / HZ / dt)  # workers gone: negative
            cores = zip(s[2], last[2], strict=True)
            busy = sum((c[0] - b[0]) / max(1, c[1] - b[1]) for c, b in cores)
            print(f"{s[0]:6.2f}  {parent:6.2f}  {others:6.2f}  {busy:5.2f}")
            last = s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--src", type=Path, default=HERE / "src")
    args = ap.parse_args()
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    sys.path.insert(0, str(args.src))
    marks: list[tuple[float, str]] = []
    samples: list[Sample] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample, args=(samples, stop), daemon=True)
    sampler.start()
    instrument(marks)
    from markvault.cli.main import main as cli

    index = Path(tempfile.mkdtemp(prefix="timeline-")) / "index"
    try:
        marks.append((now(), "start"))
        cli.main(
            ["--vault", str(args.vault), "--index", str(index), "reindex", "--no-vectors", "-q"],
            standalone_mode=False,
        )
        marks.append((now(), "end"))
    finally:
        time.sleep(0.1)
        stop.set()
        sampler.join()
        shutil.rmtree(index.parent, ignore_errors=True)
    report(marks, samples)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":  # the forkserver imports this module as __mp_main__
    sys.exit(main())
