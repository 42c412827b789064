"""markvault against a peer (qmd), figure by figure, in alternating pairs in one run.

    python bench/bench_peer_pairs.py hub --pairs 5          # the peers harness's hub corpus
    python bench/bench_peer_pairs.py big --pairs 5
    python bench/bench_peer_pairs.py ~/notes --pairs 3      # any folder of notes

The peers harness (``../shared/peers/bench.py``) times one peer's whole run, then the
other's: each figure of a peer comes from its own few seconds of the machine, so a slow
spell (another process, the kernel writing back the previous peer's files) lands on one
side only and moves the ratio by more than the difference it measures. Here every figure
is taken from the two tools back to back, the one that goes first alternating from pair
to pair: the cold index (and its peak RSS), a no-op re-index, a re-index after one edit
(a new marker appended to the harness's note each pair), and the twenty searches, one
call per query per tool, interleaved. Each pair gives a ratio (markvault / peer); the
table prints their median and range and how many pairs meet the issue's target.

The commands, environments and queries are the harness's own (its module is loaded from
``--harness``), with ``MARKVAULT_BIN`` or ``--bin`` for markvault; the peer must be set
up as for the harness (``../shared/peers/setup.sh qmd``). Both tools index one copy of
the corpus (neither writes to it: checked at the end), each into a fresh index and HOME
per pair. ``sync`` runs before each pair, so the writeback of one pair's files does not
land on the next. Measures and prints; never asserts. The table also goes to
``bench/out/peer_pairs-<corpus>.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from bench_build import edited_note

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "out"
DEFAULT_HARNESS = HERE.parent.parent / "shared" / "peers" / "bench.py"
US = "markvault"

# figure -> (label, the target for markvault / peer); a ratio at or under it meets it
FIGURES: dict[str, tuple[str, float]] = {
    "index_s": ("cold index", 1 / 2),
    "noop_s": ("no-op re-index", 1 / 3),
    "edit_s": ("one-edit re-index", 1 / 3),
    "q_p50_ms": ("`search` p50, new process", 1.0),
    "rss_mb": ("peak RSS while indexing", 1.0),
}


def log(message: str) -> None:
    print(f"[bench_peer_pairs] {message}", file=sys.stderr, flush=True)


def load_harness(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("peers_harness", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no peers harness at {path}: pass --harness")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_dir(harness: ModuleType, corpus: str) -> Path:
    """A folder as given, else the harness's prepared copy of a named corpus (a harness
    run on it leaves ``run/<name>/_corpus``)."""
    given = Path(corpus).expanduser()
    if given.is_dir():
        return given.resolve()
    prepared = Path(harness.WORK) / "run" / corpus / "_corpus"
    if prepared.is_dir():
        return prepared
    raise SystemExit(
        f"no corpus {corpus!r}: give a folder, or run `python3 ../shared/peers/bench.py "
        f"{corpus} --peers qmd,markvault` once to prepare it"
    )


class Peer:
    """One tool as the harness runs it: its command templates and environment, with a
    fresh index and HOME per pair."""

    def __init__(self, harness: ModuleType, name: str, vault: Path, work: Path) -> None:
        self.harness = harness
        self.name = name
        self.spec = harness.PEERS[name]
        self.vault = vault
        self.work = work / name

    def fresh(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
        (self.work / "index").mkdir(parents=True)
        seed = self.spec.get("home_seed")
        if seed and Path(seed).is_dir():
            shutil.copytree(seed, self.work / "home")
        else:
            (self.work / "home").mkdir()
        self.ctx = {
            "vault": str(self.vault),
            "index": str(self.work / "index"),
            "home": str(self.work / "home"),
            "bin": self.spec["bin"],
            "query": "",
        }
        self.env = {**os.environ, **self.harness.fill(self.spec["env"], self.ctx)}

    def run(self, key: str, query: str | None = None, rss: bool = False) -> dict[str, Any]:
        ctx = dict(self.ctx, query=query or "")
        cmd = self.harness.fill(self.spec[key], ctx)
        result: dict[str, Any] = self.harness.run_timed(
            cmd, self.env, str(self.work), timeout=1800, measure_rss=rss
        )
        if result["rc"] != 0:
            tail = (result["stderr"] or result["stdout"] or "").strip().splitlines()[-3:]
            raise SystemExit(f"{self.name} {key} failed (rc {result['rc']}): {' | '.join(tail)}")
        return result


def one_pair(
    pair: int, peers: dict[str, Peer], queries: list[str], note: Path, marker: str
) -> dict[str, dict[str, float]]:
    """Every figure of one pair, each taken from both tools back to back."""
    figures: dict[str, dict[str, float]] = {name: {} for name in peers}

    order = [US, *[n for n in peers if n != US]]
    if pair % 2:
        order.reverse()

    def in_order(step: Callable[[Peer], None]) -> None:
        for name in order:
            step(peers[name])

    def cold(peer: Peer) -> None:
        peer.fresh()
        result = peer.run("index_cold", rss=True)
        figures[peer.name]["index_s"] = result["wall_s"]
        figures[peer.name]["rss_mb"] = (result["rss_kb"] or 0) / 1024

    def again(key: str) -> Callable[[Peer], None]:
        def step(peer: Peer) -> None:
            figures[peer.name][key] = peer.run("index_again")["wall_s"]

        return step

    os.sync()
    in_order(cold)
    in_order(again("noop_s"))
    with note.open("a", encoding="utf-8") as out:
        out.write(f"\n\nBench edit {pair}: the {marker} paragraph.\n")
    in_order(again("edit_s"))

    def warm_up(peer: Peer) -> None:  # not counted
        peer.run("query", queries[0])

    in_order(warm_up)
    times: dict[str, list[float]] = {name: [] for name in peers}
    for i, query in enumerate(queries):
        for name in order if i % 2 == 0 else order[::-1]:
            times[name].append(peers[name].run("query", query)["wall_s"] * 1000)
    for name in peers:
        figures[name]["q_p50_ms"] = statistics.median(times[name])
    return figures


def table(corpus: str, peer: str, pairs: list[dict[str, dict[str, float]]]) -> str:
    rows = [
        f"| figure | {peer} (median) | {US} (median) | ratio per pair | median ratio "
        "| target | met |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key, (label, target) in FIGURES.items():
        theirs = [p[peer][key] for p in pairs]
        ours = [p[US][key] for p in pairs]
        ratios = [o / t for o, t in zip(ours, theirs, strict=True) if t]
        met = sum(r <= target for r in ratios)
        rows.append(
            f"| {label} | {_fmt(key, statistics.median(theirs))} "
            f"| {_fmt(key, statistics.median(ours))} "
            f"| {' / '.join(f'{r:.2f}' for r in ratios)} | {statistics.median(ratios):.2f} "
            f"| ≤ {target:.2f} | {met} of {len(ratios)} |"
        )
    return f"#### {corpus}: {US} and {peer}, {len(pairs)} alternating pairs\n\n" + "\n".join(rows)


def _fmt(key: str, value: float) -> str:
    if key.endswith("_ms"):
        return f"{value:.0f} ms"
    if key.endswith("_mb"):
        return f"{value:.0f} MB"
    return f"{value:.2f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("corpus", help="hub, big (the harness's corpora) or a folder")
    parser.add_argument("--pairs", type=int, default=5, help="pairs per figure (default 5)")
    parser.add_argument("--peer", default="qmd", help="the peer, as the harness names it")
    parser.add_argument("--bin", help="markvault's `vault` (default: MARKVAULT_BIN, else PATH)")
    parser.add_argument("--harness", type=Path, default=DEFAULT_HARNESS)
    args = parser.parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    if args.bin:
        os.environ["MARKVAULT_BIN"] = args.bin  # read by the harness as it loads
    harness = load_harness(args.harness)
    if args.peer not in harness.PEERS or args.peer == US:
        raise SystemExit(f"unknown peer {args.peer!r}: one of {sorted(harness.PEERS)}")
    for tool in (US, args.peer):
        if shutil.which(harness.PEERS[tool]["bin"]) is None:
            raise SystemExit(
                f"{tool}: no {harness.PEERS[tool]['bin']} (set the peer up with "
                f"`bash ../shared/peers/setup.sh {args.peer}`; markvault with --bin)"
            )
    source = corpus_dir(harness, args.corpus)
    name = source.parent.name if source.name == "_corpus" else source.name
    work = Path(harness.WORK) / "pairs" / name
    shutil.rmtree(work, ignore_errors=True)
    vault = work / "vault"
    log(f"copying {source} to {vault}")
    shutil.copytree(source, vault, symlinks=True)
    queries = harness.make_queries(vault)
    note = edited_note(vault)
    before = harness.checksums(vault)
    peers = {n: Peer(harness, n, vault, work) for n in (US, args.peer)}
    pairs = []
    for pair in range(args.pairs):
        log(f"pair {pair + 1} of {args.pairs} (load {os.getloadavg()[0]:.2f})")
        pairs.append(one_pair(pair, peers, queries, note, harness.EDIT_MARKER))
    edited = str(note.relative_to(vault))
    changed = [p for p in harness.diff_sums(before, harness.checksums(vault)) if p != edited]
    report = table(name, args.peer, pairs)
    report += f"\n\nLoad average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
    report += f"files either tool changed in the corpus: {len(changed)}.\n"
    print(report)
    OUT_DIR.mkdir(exist_ok=True)
    (OUT_DIR / f"peer_pairs-{name}.md").write_text(report, encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
