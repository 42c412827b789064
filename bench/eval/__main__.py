"""Evaluate markvault's retrieval: ``python -m bench.eval`` from the repository root.

    python -m bench.eval                                   # Cranfield, all modes, multilingual
    python -m bench.eval --modes keyword --skip-multilingual  # no model load: ~30 s
    python -m bench.eval --experiments --json-out bench/eval/results.json
    python -m bench.eval --docs D --queries Q --qrels R --query-ids label --gains binary

Prints Markdown tables; ``--json-out`` also writes the figures (see ``report.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import markvault
import markvault.index.keyword
import markvault.query
import markvault.search

from . import experiments as exps
from . import known_item, report, runner
from .reference import ReferenceBM25, ReferenceSetup
from .smart import Collection, Gains, QueryIds, load_collection
from .variants import __doc__ as VARIANTS_DOC

# ../shared/eval/cranfield beside the repository (where CI puts it), unless set.
CRANFIELD = Path(
    os.environ.get("MARKVAULT_CRANFIELD")
    or Path(__file__).resolve().parents[2].parent / "shared/eval/cranfield"
)
ALL_MODES = ("keyword", "vector", "hybrid", "deep")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.eval", description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=Path, default=CRANFIELD / "cran.all.1400")
    p.add_argument("--queries", type=Path, default=CRANFIELD / "cran.qry")
    p.add_argument("--qrels", type=Path, default=CRANFIELD / "cranqrel")
    p.add_argument(
        "--query-ids",
        choices=[q.value for q in QueryIds],
        default=QueryIds.ORDINAL.value,
        help="how the qrels name queries: position in the query file (Cranfield) or .I label",
    )
    p.add_argument(
        "--gains",
        choices=[g.value for g in Gains],
        default=Gains.CRANFIELD.value,
        help="grade -> gain: cranfield (5 - grade for 1..4), binary, graded (TREC)",
    )
    p.add_argument("--name", help="the collection's name in the report (default: its folder)")
    p.add_argument("--modes", nargs="+", choices=ALL_MODES, default=list(ALL_MODES))
    p.add_argument("--max-queries", type=int, help="evaluate this many queries, evenly spread")
    p.add_argument("--workdir", type=Path, help="keep vaults and indexes here (reused next run)")
    p.add_argument(
        "--experiments",
        nargs="*",
        metavar="WORD",
        help="also run the ranking experiments (those whose name contains a WORD, if given)",
    )
    p.add_argument("--skip-multilingual", action="store_true")
    p.add_argument("--skip-collection", action="store_true", help="multilingual check only")
    p.add_argument("--json-out", type=Path, help="write the figures to this JSON file")
    return p.parse_args(argv)


def machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "date": dt.date.today().isoformat(),
        "cores": os.cpu_count(),
        "load at end": " ".join(f"{x:.2f}" for x in load) if load else None,
        "python": platform.python_version(),
        "markvault": importlib.metadata.version("markvault"),
    }


def run_row(
    system: str, run: runner.ModeRun, relevant: dict[str, dict[str, int]]
) -> dict[str, Any]:
    return {
        "system": system,
        "mode": run.mode,
        **run.scores(relevant).as_dict(),
        "seconds": round(run.seconds, 2),
        "errors": run.errors,
        "shortcuts": run.shortcuts,
        "warnings": run.warnings,
    }


def evaluate_collection(
    collection: Collection, args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    """bm25s and every requested markvault mode (and experiments) on one collection."""
    queries = runner.subset(collection.judged_queries(), args.max_queries)
    relevant = runner.relevant_for(collection, queries)
    print(
        f"{collection.name}: {len(collection.documents)} documents, {len(collection.queries)} "
        f"queries ({len(queries)} evaluated), grades {collection.grades}",
        flush=True,
    )
    modes = [m for m in args.modes if m in markvault.search.MODES]
    skipped = [m for m in args.modes if m not in modes]
    setup = ReferenceSetup()
    ref = ReferenceBM25(collection.documents, setup)
    started = time.perf_counter()
    ref_run = runner.ModeRun("bm25s", ref.run(queries, runner.LIMIT), 0.0)
    ref_run.seconds = time.perf_counter() - started
    rows = [run_row("bm25s (reference)", ref_run, relevant)]
    print(f"bm25s: {ref_run.scores(relevant)}", flush=True)

    built = runner.build(collection, workdir / "collection", vectors=modes != ["keyword"])
    print(
        f"indexed {built.notes} notes, {built.chunks} chunks in {built.seconds:.1f} s "
        f"({built.embedded} embedded)",
        flush=True,
    )
    baselines: dict[str, runner.ModeRun] = {}
    for mode in modes:
        baselines[mode] = runner.run_mode(built.vault, queries, mode)
        rows.append(run_row(f"markvault {mode}", baselines[mode], relevant))
        print(f"{mode}: {baselines[mode].scores(relevant)}", flush=True)

    results = []
    if args.experiments is not None:
        for exp in exps.default_experiments():
            if exp.mode not in baselines or not exp.available():
                continue
            if args.experiments and not any(w in exp.name for w in args.experiments):
                continue
            res = exps.run_experiment(
                exp, built.vault, collection, queries, baselines[exp.mode], workdir
            )
            results.append(res.as_dict())
            print(
                f"experiment {exp.name} [{exp.mode}]: {res.scores} "
                f"Δ {res.delta_ndcg10:+.4f} p {res.p_value:.3f}",
                flush=True,
            )
    built.vault.close()
    return {
        "collection": {
            "name": collection.name,
            "documents": len(collection.documents),
            "queries": len(collection.queries),
            "evaluated_queries": len(queries),
            "grades": collection.grades,
            "gains": args.gains,
            "query_ids": args.query_ids,
        },
        "setup": {
            "markvault": (
                f"{built.settings['model']}, max_pieces {built.settings['max_pieces']}, "
                f"BM25 k1 {markvault.index.keyword.BM25_K1} b {markvault.index.keyword.BM25_B}, "
                f"RRF k {markvault.search.RRF_K}; {built.notes} notes, {built.chunks} chunks, "
                f"indexed in {built.seconds:.1f} s"
            ),
            "reference": setup.describe(),
            "deep": "Vault.search(mode='deep', variants=variants.variants(query))"
            if "deep" in modes
            else "not run",
            "modes not available in src": ", ".join(skipped) or "none",
        },
        "runs": rows,
        "experiments": results,
        "variants": VARIANTS_DOC,
    }


def evaluate_multilingual(workdir: Path, experiments: bool) -> dict[str, Any]:
    """The known-item check as it stands, and with each query-side experiment."""
    where = workdir / "multilingual"
    scores = known_item.run(where)
    out: dict[str, Any] = {
        "modes": list(known_item.MODES),
        "goal": known_item.GOAL,
        "languages": {lang: s.as_dict() for lang, s in scores.items()},
        "experiments": [],
    }
    if not experiments:
        return out
    trials: list[tuple[str, dict[str, Any], Any]] = [
        ("split_words", {}, exps.split_words),
        ("embed the query as written", {"parse": exps.parse_keeping_text}, runner.plain_query),
        ("both", {"parse": exps.parse_split_keeping_text}, runner.plain_query),
    ]
    for name, patches, rewrite in trials:
        with runner.patched(markvault.query, **patches):
            scores = known_item.run(where, rewrite=rewrite)
        out["experiments"].append(
            {"name": name, "languages": {lang: s.as_dict() for lang, s in scores.items()}}
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="markvault-eval-"))
    figures: dict[str, Any] = {}
    try:
        if not args.skip_collection:
            collection = load_collection(
                args.docs,
                args.queries,
                args.qrels,
                query_ids=QueryIds(args.query_ids),
                gains=Gains(args.gains),
                name=args.name,
            )
            figures.update(evaluate_collection(collection, args, workdir))
        if not args.skip_multilingual:
            figures["multilingual"] = evaluate_multilingual(workdir, args.experiments is not None)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    figures["machine"] = machine()
    print()
    print(report.markdown(figures))
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n")
        print(f"\nfigures written to {args.json_out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
