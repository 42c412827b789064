"""The parse stage (frontmatter, outline, tags and links) against another tree's, pair by pair.

    python bench/bench_parse.py /path/to/notes --baseline-src ../main/src [--rounds 3]

Reads every note of the folder once (read only), then parses all of them with the
baseline tree's ``parse_note`` and with this tree's, alternately, ``--rounds`` times each,
in this one process (CPU seconds: the work itself). Prints each pair, the median ratio
(this tree / baseline), and how many notes' ``ParsedNote`` differ between the two trees
(0: the same output). With ``--split`` it also times this tree's parts separately
(frontmatter, outline, tags and links). Measures and prints; never asserts.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import astuple, fields
from pathlib import Path
from typing import Any

from markvault.config import Settings
from markvault.files.vault_files import VaultFiles
from profile_index import load_baseline


def load_parse(src: Path) -> Any:
    """The parse module of the markvault package under ``src``, as ``markvault_baseline``."""
    load_baseline(src)
    return importlib.import_module("markvault_baseline.parse")


def read_notes(corpus: Path) -> tuple[list[tuple[str, str]], int]:
    """(path, text) of every note, and the frontmatter cap, read as a sync reads them."""
    with tempfile.TemporaryDirectory() as index_dir:
        settings = Settings.load(corpus, Path(index_dir), env={})
        files = VaultFiles(settings.vault_dir, settings.index_dir, settings.max_note_bytes)
        on_disk, _ = files.scan()
        notes = [
            (st.path, files.read(st.file, settings.max_note_bytes)[1]) for st in on_disk.values()
        ]
    return notes, settings.max_frontmatter_bytes


def cpu(work: Callable[[], object]) -> float:
    gc.collect()
    started = time.process_time()
    work()
    return time.process_time() - started


def parse_all(parse_note: Callable[..., Any], notes: list[tuple[str, str]], cap: int) -> None:
    """Every note parsed, each result dropped as soon as made: a worker keeps a batch of
    64 notes, not the vault (keeping them all would time the garbage collector's walks)."""
    for path, text in notes:
        parse_note(path, text, max_frontmatter_bytes=cap)


def split_times(notes: list[tuple[str, str]]) -> None:
    """This tree's parse stage part by part (each part once, on its own)."""
    from markvault.markdown import frontmatter, outline, parse

    bodies = [frontmatter.split_frontmatter(t.lstrip("\ufeff")) for _, t in notes]
    shapes: list[Any] = []
    parts: list[tuple[str, Callable[[], object]]] = [
        ("split frontmatter", lambda: [frontmatter.split_frontmatter(t) for _, t in notes]),
        ("load frontmatter", lambda: [frontmatter.load_frontmatter(f) for f, _, _ in bodies if f]),
        ("outline", lambda: shapes.extend(outline.outline(b, n) for _, b, n in bodies)),
        ("tags and links", lambda: [parse._tags_and_links(s, "a/b.md") for s in shapes]),
    ]
    for label, work in parts:
        print(f"  part: {label:<20} cpu {cpu(work):6.2f} s", flush=True)


def comparable(note: Any) -> dict[str, Any]:
    """A ``ParsedNote``'s fields and properties by name, as plain tuples (the two trees'
    Link classes never compare equal as objects; a field one tree derives on demand, as
    ``code_lines``, is compared all the same)."""
    named = dict(zip((f.name for f in fields(note)), astuple(note), strict=True))
    named["code_lines"] = note.code_lines
    return named


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("corpus", type=Path)
    p.add_argument("--baseline-src", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--split", action="store_true", help="also time this tree's parts")
    args = p.parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    from markvault.markdown import parse

    base = load_parse(args.baseline_src)
    notes, cap = read_notes(args.corpus)
    size = sum(len(t) for _, t in notes) / 2**20
    print(f"{args.corpus.name}: {len(notes)} notes, {size:.1f} M chars; load {os.getloadavg()}")
    ways = (("baseline", base.parse_note), ("this tree", parse.parse_note))
    ratios = []
    for n in range(args.rounds):
        times = [cpu(lambda f=f: parse_all(f, notes, cap)) for _, f in ways]
        ratios.append(times[1] / times[0])
        print(
            f"  pair {n + 1}: baseline {times[0]:6.2f} s  this tree {times[1]:6.2f} s  "
            f"ratio {ratios[-1]:.2f}",
            flush=True,
        )
    print(f"  median ratio (this tree / baseline): {statistics.median(ratios):.2f}")
    differing = [
        a
        for a, t in notes
        if comparable(base.parse_note(a, t, max_frontmatter_bytes=cap))
        != comparable(parse.parse_note(a, t, max_frontmatter_bytes=cap))
    ]
    print(f"  notes whose ParsedNote differs from the baseline's: {len(differing)}")
    for path in differing[:10]:
        print(f"    differs: {path}")
    if args.split:
        split_times(notes)


if __name__ == "__main__":
    main()
