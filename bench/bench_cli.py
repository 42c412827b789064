"""Every CLI call as a new process: `vault --help` and a keyword `vault search`, without
and with an owner (`vault watch`) holding the index, wall time per call.

    python bench/bench_cli.py                           # a generated 2,000-note vault
    python bench/bench_cli.py --vault /path/to/notes    # any folder (indexed elsewhere)
    python bench/bench_cli.py --vault notes --index dir  # its index, built already
    python bench/bench_cli.py --baseline-src /tmp/old/src   # A/B against another tree
    python bench/bench_cli.py --vault big --index big-index \
        --query-file /tmp/peers-work/results-big.json   # the peers harness's queries

Each figure is the median of ``--runs`` calls. With ``--baseline-src`` every call is made
twice, once with this tree and once with that one (``PYTHONPATH``; same interpreter,
same environment, same index), alternating which goes first, so machine load hits both
alike; the ratio of each pair is taken and their median printed. Also printed: what
``import markvault.cli.main`` and each call import (``python -X importtime``, summed by
package), the load average, and where a search without an owner spends its time, phase
by phase (interpreter start, imports, the freshness check, DuckDB's connect, the query,
closing, the exit; median of ``--runs`` calls per tree), and the CPU time of a search
without an owner (user + system, which machine load disturbs less than wall time). Each
tree compiles its own bytecode into a cache of its own once, before anything is timed
(even with ``PYTHONDONTWRITEBYTECODE`` set, which would recompile every changed module on
every call). The owner never loads a model (``MARKVAULT_MODEL`` names a missing folder), so it
takes no CPU from the calls. Measures and prints; never asserts. The table goes to
``bench/out/cli.md``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gen_vault

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "out"
QUERIES = ["project notes", "search index", "error handling", "meeting", "design review"]


def log(message: str) -> None:
    print(f"[bench_cli] {message}", file=sys.stderr, flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Tree:
    """One source tree's way of running `vault` (this one, or a baseline's src)."""

    def __init__(
        self, name: str, src: Path | None, site: list[str], env: dict[str, str], cache: Path
    ):
        self.name = name
        self.env = dict(env)
        if src is not None:
            self.env["PYTHONPATH"] = str(src)
        # Bytecode of its own, written once: neither tree pays for compiling on each call.
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["PYTHONPYCACHEPREFIX"] = str(cache)
        self.site = site
        self.prefix: list[str] = []  # `chrt -f 10` with --fifo
        self.last_cpu = 0.0

    def argv(self, *args: str) -> list[str]:
        return [*self.prefix, sys.executable, "-m", "markvault.cli", *self.site, *args]

    def time_call(self, *args: str) -> float:
        """Wall seconds of one call; its CPU seconds (user + system) go to ``last_cpu``."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(self.argv(*args), capture_output=True, env=self.env, check=False)
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.last_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode not in (0, 1):  # 1: nothing found
            raise RuntimeError(f"{self.name} {args}: {done.stderr.decode()[-800:]}")
        return seconds

    def imports(self, *args: str) -> str:
        """Import time summed by top-level package (the five largest), and the total."""
        code = (
            "import sys; from markvault.cli.main import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        )
        argv = [sys.executable, "-X", "importtime", "-c", code, *self.site, *args]
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, check=False)
        spent: collections.Counter[str] = collections.Counter()
        for line in done.stderr.splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                own, _, name = line.split("|")
                spent[name.strip().split(".")[0]] += int(own.split(":")[1])
        top = ", ".join(f"{k} {v / 1000:.0f}" for k, v in spent.most_common(5))
        return f"{sum(spent.values()) / 1000:.0f} ms ({top})"

    def phases(self, *args: str) -> dict[str, float]:
        """Milliseconds per phase of one call (``PHASES``), made as `vault` makes it."""
        started = time.time()
        done = subprocess.run(
            [*self.prefix, sys.executable, "-c", PHASE_PROBE, *self.site, *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=False,
        )
        ended = time.time()
        stamps = [line for line in done.stderr.splitlines() if line.startswith("{")]
        if not stamps:
            raise RuntimeError(f"{self.name} phases: {done.stderr[-800:]}")
        marks = json.loads(stamps[-1])
        spent = {"interpreter start": marks.pop("start") - started}
        spent.update(marks.pop("spent"))
        spent["exit"] = ended - marks.pop("end")
        spent["the rest"] = ended - started - sum(spent.values())
        times = {k: v * 1000 for k, v in spent.items()}
        times[MAIN_CPU] = marks.pop("main_cpu", 0.0) * 1000
        return times


# Times each phase of one `vault` call in the child, through wrappers put on the functions
# that do them (names both trees have); the index layer's own after it is imported. The
# stamps are written by an exit handler: the interpreter's teardown after it is "exit".
PHASE_PROBE = """
import atexit, json, os, sys, time
marks = {"start": time.time(), "spent": {}}
t = time.time()
import markvault.cli.main as cli
marks["spent"]["import markvault.cli.main"] = time.time() - t
import markvault.runtime.shared_host as shared

def timed(owner, attr, label):
    inner = getattr(owner, attr, None)
    if inner is None:  # a tree without it
        return
    def wrapper(*a, **k):
        t = time.time()
        try:
            return inner(*a, **k)
        finally:
            marks["spent"][label] = marks["spent"].get(label, 0.0) + time.time() - t
    setattr(owner, attr, wrapper)

become_owner = shared.SharedHost._become_owner
def own(self):
    t = time.time()
    done = become_owner(self)  # imports the index layer (the freshness look may start first)
    import markvault.core, markvault.runtime.local_host, markvault.search.searcher
    import markvault.core.disk_look
    import markvault.core.freshness
    import markvault.index.store, markvault.runtime.owner
    marks["spent"]["import the index layer (DuckDB)"] = time.time() - t
    timed(markvault.core.freshness.Freshness, "before_call", "freshness check")
    look = getattr(markvault.core.disk_look, "LookAhead", None)  # the check beside the search
    if look is not None:
        timed(look, "join", "freshness check: waiting on the look")
        timed(markvault.core.freshness.Freshness, "_settle", "freshness check: settling")
    timed(markvault.index.store, "connect", "DuckDB connect")
    timed(markvault.search.searcher.Searcher, "search", "the search")
    timed(markvault.runtime.owner.IndexOwner, "close", "closing the index")
    return done
shared.SharedHost._become_owner = own

def report():
    marks["end"] = time.time()
    marks["main_cpu"] = time.thread_time()  # the main thread's own CPU, other threads not
    os.write(2, (json.dumps(marks) + "\\n").encode())
atexit.register(report)
sys.argv[0] = "vault"
cli.run()
"""
PHASES = [
    "interpreter start",
    "import markvault.cli.main",
    "import the index layer (DuckDB)",
    "freshness check",
    "freshness check: waiting on the look",
    "freshness check: settling",
    "DuckDB connect",
    "the search",
    "closing the index",
    "exit",
    "the rest",
]
# What a quiet machine's wall time would be made of, once work moved to other threads
# and processes runs on a free core: the main thread's CPU from its start to the exit.
MAIN_CPU = "CPU of the main thread alone (interpreter start to exit)"


def phase_table(trees: list[Tree], calls: list[list[str]], runs: int) -> list[str]:
    """Median milliseconds per phase of a call, per tree (alternating and rotating
    ``calls``, as ``measure``)."""
    args = calls[0]
    samples: list[list[dict[str, float]]] = [[] for _ in trees]
    for turn in range(runs):
        order = list(range(len(trees)))
        if turn % 2:
            order.reverse()
        for i in order:
            samples[i].append(trees[i].phases(*calls[turn % len(calls)]))
    lines = [
        "",
        f"Where `vault {' '.join(args[:1])}` (keyword, no owner) spends its time, median ms "
        f"of {runs} calls:",
        "",
        "| phase | " + " | ".join(t.name for t in trees) + " |",
        "| --- | " + " | ".join("---" for _ in trees) + " |",
    ]
    for phase in [*PHASES, MAIN_CPU]:
        cells = [f"{statistics.median(s.get(phase, 0.0) for s in tree):.0f}" for tree in samples]
        lines.append(f"| {phase} | " + " | ".join(cells) + " |")
    return lines


def measure(
    trees: list[Tree], args: list[list[str]], runs: int, cpu: list[list[float]] | None = None
) -> list[list[float]]:
    """Seconds per call, per tree; calls alternate between trees and rotate ``args``. The
    CPU seconds of each call go to ``cpu`` when given: on a loaded machine they vary less
    than wall time."""
    samples: list[list[float]] = [[] for _ in trees]
    for turn in range(runs):
        order = list(range(len(trees)))
        if turn % 2:
            order.reverse()
        for i in order:
            samples[i].append(trees[i].time_call(*args[turn % len(args)]))
            if cpu is not None:
                cpu[i].append(trees[i].last_cpu)
    return samples


def row(label: str, trees: list[Tree], samples: list[list[float]]) -> str:
    # The fastest call beside the median: on a shared machine, the one least disturbed.
    cells = [f"{statistics.median(s) * 1000:.0f} ms (min {min(s) * 1000:.0f})" for s in samples]
    if len(samples) == 2:
        ratios = [a / b for a, b in zip(samples[0], samples[1], strict=True)]
        cells.append(f"{statistics.median(ratios):.2f}x")
    return f"| {label} | " + " | ".join(cells) + " |"


def own_indexes(trees: list[Tree], vault: Path, index: Path, work: Path) -> None:
    """A copy of the index per tree for the calls without an owner: each keeps the
    freshness check's state beside its index, and two trees that record it differently
    would each find the other's and compare every file on every call."""
    for k, t in enumerate(trees):
        copy = work / f"index-{k}"
        shutil.copytree(index, copy, ignore=shutil.ignore_patterns("*.lock", "*.sock"))
        t.site = ["--vault", str(vault), "--index", str(copy)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vault", type=Path, help="a folder of notes (default: generated)")
    p.add_argument(
        "--index", type=Path, help="an index folder of --vault, built already: reused as is"
    )
    p.add_argument("--notes", type=int, default=2000, help="size of the generated vault")
    p.add_argument("--runs", type=int, default=15, help="calls per figure and tree")
    p.add_argument("--baseline-src", type=Path, help="another tree's src/ to compare with")
    p.add_argument(
        "--query-file",
        type=Path,
        help="the searches' queries: a JSON list of strings, or the peers harness's results "
        "file (its `queries`)",
    )
    p.add_argument(
        "--fifo",
        action="store_true",
        help="run the timed calls under `chrt -f 10` (root): ahead of other work on a shared "
        "machine, so that a call's threads and child processes find a free core as on a "
        "quiet one",
    )
    return p.parse_args(argv)


def queries(args: argparse.Namespace) -> list[str]:
    if args.query_file is None:
        return QUERIES
    loaded = json.loads(args.query_file.read_text(encoding="utf-8"))
    return list(loaded["queries"] if isinstance(loaded, dict) else loaded)


def header(trees: list[Tree], vault: Path, args: argparse.Namespace) -> list[str]:
    names = " | ".join(t.name for t in trees)
    pair = len(trees) == 2
    return [
        f"CLI calls as new processes on {vault} ({args.runs} calls each); "
        f"{os.cpu_count()} cores, load average {load_average()} at start"
        + (", calls under SCHED_FIFO (`--fifo`)." if args.fifo else "."),
        "",
        f"| call | {names} |" + (" speed-up (baseline / this tree) |" if pair else ""),
        "| --- | " + " | ".join("---" for _ in trees) + (" | --- |" if pair else ""),
    ]


def start_owner(tree: Tree) -> subprocess.Popen[str]:
    """`vault watch` holding the index (at the normal priority), once it owns it."""
    argv = tree.argv("watch")[len(tree.prefix) :]
    owner = subprocess.Popen(argv, env=tree.env, stderr=subprocess.PIPE, text=True)
    assert owner.stderr is not None
    for line in owner.stderr:  # "Watching ..." once it owns the index
        if line.startswith("Watching"):
            break
    return owner


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    work = Path(tempfile.mkdtemp(prefix="mv-cli-"))
    owner = None
    try:
        vault = args.vault
        if vault is None:
            vault = work / "vault"
            gen_vault.generate(vault, args.notes, 7)
        index = args.index or work / "index"
        site = ["--vault", str(vault), "--index", str(index)]
        env = {**os.environ, "MARKVAULT_MODEL": str(work / "no-model-here")}
        trees = [Tree("this tree", None, site, env, work / "pycache-this")]
        if args.baseline_src:
            base = args.baseline_src.resolve()
            trees.insert(0, Tree("baseline", base, site, env, work / "pycache-baseline"))
        if args.index is None:
            log("building the keyword index")
            trees[-1].time_call("reindex", "--no-vectors", "--quiet")
        searches = [["search", q, "--mode", "keyword", "--json"] for q in queries(args)]
        if len(trees) == 2:
            own_indexes(trees, vault, index, work)
        for t in trees:
            t.prefix = ["chrt", "-f", "10"] if args.fifo else []
        for t in trees:  # writes each tree's bytecode before anything is timed
            t.time_call(*searches[0])
        lines = header(trees, vault, args)
        log("--help")
        lines.append(row("`vault --help`", trees, measure(trees, [["--help"]], args.runs)))
        log("search, no owner")
        cpu: list[list[float]] = [[] for _ in trees]
        lines.append(
            row(
                "`vault search` (keyword), no owner",
                trees,
                measure(trees, searches, args.runs, cpu),
            )
        )
        lines.append(row("CPU (user + system) of that search", trees, cpu))
        log("phases of a search, no owner")
        phases = phase_table(trees, searches, args.runs)
        imports = {t.name: (t.imports("--help"), t.imports(*searches[0])) for t in trees}
        log("search, with `vault watch` owning the index")
        for t in trees:  # one index, for the owner to hold
            t.site = site
        owner = start_owner(trees[-1])
        lines.append(
            row("`vault search` (keyword), owner running", trees, measure(trees, searches, 10))
        )
        for t in trees:
            owned = t.imports(*searches[0])
            help_imports, search_imports = imports[t.name]
            lines.append("")
            lines.append(
                f"Imports, {t.name}: `--help` {help_imports}; `search` {search_imports}; "
                f"`search` with an owner {owned}."
            )
        lines.extend(phases)
        lines.append(f"\nLoad average at end: {load_average()}.")
    finally:
        if owner is not None:
            owner.terminate()
            owner.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines)
    print(text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "cli.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
