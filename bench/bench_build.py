"""Cold keyword index, this tree against a baseline tree, pair by pair in one run.

    python bench/bench_build.py /path/to/notes --baseline-src /tmp/base/src --pairs 3
    python bench/bench_build.py /path/to/notes --baseline-src /work/main/src --again 5

``--again N`` times instead the re-index of a built index as a new process, N pairs:
nothing changed (no-op), then one note edited (a paragraph appended to the mid-sized
note, as ``../shared/peers/bench.py`` picks it), each tree on a fresh copy of the index
it built itself, wall and CPU; then one in-process edit of each tree, twice, split into
its phases; then the tables whose rows differ between the two trees' edited indexes.

Each pair runs ``vault --vault COPY --index EMPTY reindex --no-vectors`` once with the
baseline's ``src/`` first on ``PYTHONPATH`` and once with this tree's (order alternating
from pair to pair), under ``/usr/bin/time -v``: wall seconds and the peak RSS of the
largest process (the parent; workers are smaller), and the CPU seconds (user + system)
of the parent alone (the workers are not its children: forkserver), which holds the
writes and the keyword rebuild; steadier than wall on a busy machine. "all CPU" adds
the forkserver's and the workers' CPU: this script is the child subreaper (Linux), so
it waits for the forkserver the build leaves behind and counts its rusage, which holds
its workers' (elsewhere sampled from /proc every 0.1 s): on 2 cores the parent and
two workers share the cores, so work moved from the parent to the workers shortens
the wall only as far as it shrinks this sum.
Prints each pair, the median of the ratios (this tree / baseline) and the load average,
then the tables whose columns or rows (each with its row id: the stored order) differ
between the two trees' indexes ("none": the same index). Measures and prints; never
asserts.

Get a baseline tree with ``git archive <commit> src | tar -x -C /tmp/base``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

HERE = Path(__file__).resolve().parent.parent
T = TypeVar("T")


def run_once(
    vault_bin: str, src: Path, vault: Path, work: Path, index: Path
) -> tuple[float, float, float, float, float]:
    """(wall s, peak RSS MB, index MB, parent CPU s, workers' CPU s) of one cold keyword
    build into ``index``."""
    shutil.rmtree(index, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(src), "HOME": str(work / "home")}
    cmd = ["/usr/bin/time", "-v", vault_bin, "--vault", str(vault), "--index", str(index)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(
        [*cmd, "reindex", "--no-vectors"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    others = descendants_cpu(proc)
    stdout, stderr = proc.communicate()
    if reaped_orphans():  # every process of the build waited for: its whole rusage
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        parent_cpu = sum(
            map(float, re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", stderr))
        )
        others = max(0.0, spent - parent_cpu)
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if out.returncode != 0:
        sys.exit(f"reindex failed under {src}:\n{out.stdout}\n{out.stderr}")
    wall_m = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", out.stderr)
    rss_m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    cpu_m = re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", out.stderr)
    assert wall_m and rss_m and len(cpu_m) == 2, out.stderr
    h, m, s = wall_m.groups()
    wall = int(h or 0) * 3600 + int(m) * 60 + float(s)
    size = sum(p.stat().st_size for p in index.rglob("*.duckdb*") if p.is_file())
    return wall, int(rss_m.group(1)) / 1024, size / 2**20, sum(map(float, cpu_m)), others


def adopt_orphans() -> bool:
    """Become the child subreaper (Linux): the forkserver a build leaves behind is then
    this process's to wait for, and its rusage (which holds its workers') is counted."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


ADOPTING = False


def reaped_orphans() -> bool:
    """Wait for the build's orphaned processes; whether they were adopted at all."""
    if not ADOPTING:
        return False
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return True


def descendants_cpu(proc: subprocess.Popen[str]) -> float:
    """CPU seconds (user + system) of the processes below ``proc``'s child other than
    that child itself (the forkserver and its worker processes), sampled from /proc
    every 0.1 s until ``proc`` ends: the workers are not waited for by the parent, so
    its rusage does not hold them (each may lose its last 0.1 s)."""
    tick = os.sysconf("SC_CLK_TCK")
    last: dict[int, float] = {}
    child: int | None = None
    while proc.poll() is None:
        parents: dict[int, int] = {}
        spent: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            spent[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
        tree = {proc.pid}
        while grown := {p for p, pp in parents.items() if pp in tree and p not in tree}:
            tree |= grown
        if child is None:
            child = next((p for p, pp in parents.items() if pp == proc.pid), None)
        for pid in tree - {proc.pid, child}:
            last[pid] = spent.get(pid, last.get(pid, 0.0))
        time.sleep(0.1)
    return sum(last.values())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("corpus", type=Path, help="a folder of Markdown notes (copied first)")
    p.add_argument("--baseline-src", type=Path, help="the baseline's src/ (required)")
    p.add_argument("--phases", type=Path, metavar="INDEX", help=argparse.SUPPRESS)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--bin", default=str(HERE / ".venv" / "bin" / "vault"))
    p.add_argument("--again", type=int, default=0, metavar="N", help="time N no-op/edit pairs")
    args = p.parse_args(argv)
    global ADOPTING
    ADOPTING = adopt_orphans()
    if args.phases:
        return phases(args.corpus, args.phases)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    if args.baseline_src is None:
        p.error("--baseline-src is required")
    if args.again:
        return again_main(args)
    work = Path(tempfile.mkdtemp(prefix="mv-build-"))
    try:
        vault = work / "vault"
        shutil.copytree(args.corpus, vault, symlinks=True)
        (work / "home").mkdir()
        trees = {"baseline": args.baseline_src.resolve(), "this": (HERE / "src").resolve()}
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"cold keyword index of {args.corpus}, {args.pairs} pairs (load average {load})")
        ratios: dict[str, list[float]] = {"wall": [], "rss": [], "cpu": [], "all": []}
        for i, got in alternating(
            args.pairs,
            lambda name: run_once(args.bin, trees[name], vault, work, work / f"index-{name}"),
        ):
            (bw, br, bs, bc, bo), (tw, tr, ts, tc, to) = got["baseline"], got["this"]
            ratios["wall"].append(tw / bw)
            ratios["rss"].append(tr / br)
            ratios["cpu"].append(tc / bc)
            ratios["all"].append((tc + to) / (bc + bo))
            print(
                f"  pair {i + 1}: wall {bw:6.2f} -> {tw:6.2f} s ({tw / bw:.2f}x)   "
                f"peak RSS {br:6.0f} -> {tr:6.0f} MB ({tr / br:.2f}x)   "
                f"parent CPU {bc:6.2f} -> {tc:6.2f} s ({tc / bc:.2f}x)   "
                f"all CPU {bc + bo:6.2f} -> {tc + to:6.2f} s ({(tc + to) / (bc + bo):.2f}x)   "
                f"index {bs:5.1f} -> {ts:5.1f} MB   load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"median this/baseline: wall {statistics.median(ratios['wall']):.2f}x, "
            f"peak RSS {statistics.median(ratios['rss']):.2f}x, "
            f"parent CPU {statistics.median(ratios['cpu']):.2f}x, "
            f"all CPU {statistics.median(ratios['all']):.2f}x "
            f"(load average {load} at start, {load_end} at end; {os.cpu_count()} cores)"
        )
        differing = differing_tables(work / "index-baseline", work / "index-this")
        print(f"tables differing from the baseline's index: {differing or 'none'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


# Columns that differ from build to build whatever the code: when it ran.
VOLATILE = {"notes": ["indexed_at"], "meta": []}


def differing_tables(baseline: Path, this: Path) -> list[str]:
    """The tables of two index folders whose columns (names, types) or rows differ, in
    both directions, rows compared as multisets and in their stored order; the time a
    note was indexed and the ``last_sync`` meta row are left out."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{baseline / 'vault.duckdb'}' AS a (READ_ONLY)")
        con.execute(f"ATTACH '{this / 'vault.duckdb'}' AS b (READ_ONLY)")
        tables = {
            db: {
                r[0]: r[1]
                for r in con.execute(
                    "SELECT table_name, list(column_name || ' ' || data_type ORDER BY "
                    "column_index) FROM duckdb_columns() WHERE database_name = ? "
                    "GROUP BY table_name",
                    [db],
                ).fetchall()
            }
            for db in ("a", "b")
        }
        differing = sorted(set(tables["a"]) ^ set(tables["b"]))
        for name in sorted(set(tables["a"]) & set(tables["b"])):
            if tables["a"][name] != tables["b"][name] or not _same_rows(con, name):
                differing.append(name)
        return differing
    finally:
        con.close()


def _same_rows(con: object, table: str) -> bool:
    """Whether ``a.table`` and ``b.table`` hold the same rows in the same order."""
    where = "WHERE key <> 'last_sync'" if table == "meta" else ""
    drop = VOLATILE.get(table, [])
    cols = f"* EXCLUDE ({', '.join(drop)})" if drop else "*"
    one, two = (f"SELECT rowid AS r, {cols} FROM {db}.{table} {where}" for db in ("a", "b"))
    row = con.execute(  # type: ignore[attr-defined]
        f"SELECT (SELECT count(*) FROM ({one} EXCEPT ALL {two})) + "
        f"(SELECT count(*) FROM ({two} EXCEPT ALL {one}))"
    ).fetchone()
    return bool(row) and row[0] == 0


# ---- re-index of a built index: no-op and one edit ------------------------------------

EDIT = "\n\nBench edit: the zebra-marker paragraph was appended by the peers benchmark.\n"


def alternating(pairs: int, run: Callable[[str], T]) -> Iterator[tuple[int, dict[str, T]]]:
    """``pairs`` runs of each tree ("baseline", "this"), pair by pair, the first of each
    pair alternating so that neither tree always meets a warmer cache."""
    for i in range(pairs):
        order = ["baseline", "this"] if i % 2 == 0 else ["this", "baseline"]
        yield i, {name: run(name) for name in order}


def edited_note(vault: Path) -> Path:
    """The peers harness's pick: the middle of the notes sorted by (size, path)."""
    notes = sorted((p.stat().st_size, str(p)) for p in vault.rglob("*.md") if p.is_file())
    return Path(notes[len(notes) // 2][1])


def reindex_s(
    vault_bin: str, src: Path, vault: Path, index: Path, home: Path
) -> tuple[float, float]:
    """(wall s, CPU s) of one `vault reindex --no-vectors` as a new process. CPU (user +
    system of the process; a re-index this small starts no workers) moves less than wall
    with other work on the machine."""
    env = {**os.environ, "PYTHONPATH": str(src), "HOME": str(home)}
    cmd = [vault_bin, "--vault", str(vault), "--index", str(index), "reindex", "--no-vectors"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run([*cmd, "-q"], env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"reindex failed under {src}:\n{out.stdout}\n{out.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def again_once(
    bin_: str, src: Path, vault: Path, work: Path, note: Path, built: Path
) -> tuple[tuple[float, float], tuple[float, float]]:
    """((wall, CPU) of the no-op, (wall, CPU) of the one edit) on a fresh copy of the
    built index, the note restored."""
    index = work / "index"
    copy_index(built, index)
    shutil.copy2(work / "note.orig", note)
    noop = reindex_s(bin_, src, vault, index, work / "home")
    with note.open("a", encoding="utf-8") as fh:
        fh.write(EDIT)
    return noop, reindex_s(bin_, src, vault, index, work / "home")


def copy_index(built: Path, index: Path) -> None:
    """A fresh copy of a built index, on disk before it is timed: the copy's pages are
    otherwise still to be written, and the edit's checkpoint (its fsync) would write the
    whole file, where after a real build DuckDB had synced it already."""
    shutil.rmtree(index, ignore_errors=True)
    shutil.copytree(built, index)
    for path in index.glob("*.duckdb*"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def again_main(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="mv-again-"))
    try:
        vault = work / "vault"
        shutil.copytree(args.corpus, vault, symlinks=True)
        (work / "home").mkdir()
        note = edited_note(vault)
        shutil.copy2(note, work / "note.orig")
        trees = {"baseline": args.baseline_src.resolve(), "this": (HERE / "src").resolve()}
        # Each tree re-indexes the index it built itself: how it lays the file out (row
        # groups) is part of what it pays for an edit.
        for name, src in trees.items():
            reindex_s(args.bin, src, vault, work / f"built-{name}", work / "home")
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"re-index of {args.corpus} as a new process, {args.again} pairs (load {load})")
        print(f"  edited note: {note.relative_to(vault)}")
        ratios: dict[str, list[float]] = {"noop": [], "edit": [], "edit_cpu": []}
        for i, got in alternating(
            args.again,
            lambda name: again_once(
                args.bin, trees[name], vault, work, note, work / f"built-{name}"
            ),
        ):
            ((bn, _), (be, bec)), ((tn, _), (te, tec)) = got["baseline"], got["this"]
            ratios["noop"].append(tn / bn)
            ratios["edit"].append(te / be)
            ratios["edit_cpu"].append(tec / bec)
            print(
                f"  pair {i + 1}: no-op {bn:5.2f} -> {tn:5.2f} s ({tn / bn:.2f}x)   "
                f"edit {be:5.2f} -> {te:5.2f} s ({te / be:.2f}x), "
                f"CPU {bec:5.2f} -> {tec:5.2f} s ({tec / bec:.2f}x)   "
                f"load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        sizes = {
            n: sum(f.stat().st_size for f in (work / f"built-{n}").glob("*.duckdb")) for n in trees
        }
        load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"median this/baseline: no-op {statistics.median(ratios['noop']):.2f}x, "
            f"edit {statistics.median(ratios['edit']):.2f}x, "
            f"edit CPU {statistics.median(ratios['edit_cpu']):.2f}x; index file "
            f"{sizes['baseline'] / 2**20:.1f} -> {sizes['this'] / 2**20:.1f} MiB "
            f"(load average {load} at start, {load_end} at end; {os.cpu_count()} cores)"
        )
        for _, _ in alternating(2, lambda name: phases_of(name, trees[name], vault, work, note)):
            pass
        for name, src in trees.items():  # each tree's index after the edit, kept
            copy_index(work / f"built-{name}", work / f"edited-{name}")
            reindex_s(args.bin, src, vault, work / f"edited-{name}", work / "home")
        differing = differing_tables(work / "edited-baseline", work / "edited-this")
        print(f"tables differing from the baseline's index after the edit: {differing or 'none'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def phases_of(name: str, src: Path, vault: Path, work: Path, note: Path) -> None:
    """One edit by ``src``'s tree on a fresh copy of the index it built, by phase."""
    copy_index(work / f"built-{name}", work / "index")
    shutil.copy2(work / "note.orig", note)
    with note.open("a", encoding="utf-8") as fh:
        fh.write(EDIT)
    env = {**os.environ, "PYTHONPATH": str(src), "HOME": str(work / "home")}
    me = [sys.executable, __file__, str(vault), "--phases", str(work / "index")]
    print(f"{name}:", flush=True)
    subprocess.run(me, env=env, check=True)


def phases(vault: Path, index: Path) -> int:
    """One edit's re-index in this process (``vault``'s note already edited), by phase:
    wall ms of what the command does, from its imports to closing the index."""
    spent: dict[str, float] = {}

    def timed(owner: object, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def wrapper(*a: object, **k: object) -> object:
            started = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - started

        setattr(owner, name, wrapper)

    started = time.perf_counter()
    import markvault.cli.main  # noqa: F401  (what the command imports before it runs)

    spent["import the CLI"] = time.perf_counter() - started
    # As the command does, once it owns the index: GNU find's walk of the vault started
    # before the index layer is imported, its listing the sync's scan (a tree without
    # it walks in Python).
    walk = None
    with contextlib.suppress(ImportError):
        from markvault.files.find_walk import FindWalk

        walk = FindWalk.start(str(vault), str(index))
        timed(FindWalk, "listing", "wait for find")
    started = time.perf_counter()
    from markvault.config import Settings
    from markvault.core.lifecycle import IndexKeeper
    from markvault.core.runtime_context import RuntimeContext
    from markvault.files.vault_files import VaultFiles
    from markvault.index import Index, keyword, writes

    spent["import the CLI"] += time.perf_counter() - started
    t = time.perf_counter()
    import markvault.indexing.reconcile as sync

    spent["import the sync"] = time.perf_counter() - t
    timed(Index, "open", "open the index")
    timed(VaultFiles, "scan_all", "stat scan")
    if walk is not None:
        timed(VaultFiles, "scan_listing", "scan find's listing")
    timed(writes.NoteWrites, "file_states", "the index's file states")
    timed(sync, "read_file", "read and parse the note")
    timed(writes.NoteWrites, "apply", "write the note (rows, postings)")
    timed(keyword.KeywordIndex, "remove_postings", "  of which postings out")
    timed(keyword.KeywordIndex, "add_postings", "  of which postings in")
    timed(sync.Syncer, "_resolve_links", "resolve links")
    timed(Index, "close", "close the index")
    settings = Settings.load(vault=vault, index=index, model=None)
    keeper = IndexKeeper(RuntimeContext(settings, walk=walk))
    t = time.perf_counter()
    report = keeper.reindex(vectors=False)
    keeper.close()
    total = time.perf_counter() - t + spent["import the CLI"] + spent["import the sync"]
    assert report.updated == 1, report
    print("one-edit re-index in one process, by phase (wall ms):")
    for label, sec in spent.items():
        print(f"  {label:34s} {sec * 1000:7.1f}")
    nested = sum(v for k, v in spent.items() if k.startswith(" "))
    print(f"  {'other':34s} {(total - sum(spent.values()) + nested) * 1000:7.1f}")
    print(f"  {'total':34s} {total * 1000:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
