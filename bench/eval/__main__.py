"""Evaluate markvault's retrieval: ``python -m bench.eval`` from the repository root.

    python -m bench.eval                                   # everything (see README.md)
    python -m bench.eval --sets cacm --modes keyword       # one set, no model: seconds
    python -m bench.eval --experiments --workdir bench/out/eval --json-out results.json
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

from bench.machine import machine_line

import markvault.search.fusion
from markvault.index import keyword

from . import experiments as exps
from . import report, runner, sets
from .metrics import paired_p_value, per_query
from .reference import DenseReference, ReferenceBM25, ReferenceSetup, load_model, rrf
from .smart import Gains, QueryIds, load_collection
from .variants import __doc__ as VARIANTS_DOC

ALL_MODES = ("keyword", "vector", "hybrid", "deep")
DEFAULT_SETS = (*sets.CATALOG, *sets.OWN_SETS)
DEEP_KINDS = ("collection",)  # deep's mechanical variants are written for collection queries


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.eval", description=__doc__.split("\n")[0])
    p.add_argument(
        "--sets",
        nargs="+",
        default=list(DEFAULT_SETS),
        choices=list(DEFAULT_SETS),
        help="collections and sets to evaluate (default: all)",
    )
    p.add_argument("--docs", type=Path, help="also a SMART collection: its documents file")
    p.add_argument("--queries", type=Path, help="... its queries file")
    p.add_argument("--qrels", type=Path, help="... its judgments file")
    p.add_argument(
        "--query-ids",
        choices=[q.value for q in QueryIds],
        default=QueryIds.LABEL.value,
        help="how its judgments name queries: position in the query file or .I label",
    )
    p.add_argument(
        "--gains",
        choices=[g.value for g in Gains],
        default=Gains.BINARY.value,
        help="its grade -> gain: cranfield (5 - grade for 1..4), binary, graded (TREC)",
    )
    p.add_argument("--name", help="that collection's name in the report (default: its folder)")
    p.add_argument("--modes", nargs="+", choices=ALL_MODES, default=list(ALL_MODES))
    p.add_argument("--max-queries", type=int, help="evaluate this many queries, evenly spread")
    p.add_argument("--workdir", type=Path, help="keep vaults, indexes and vectors here")
    p.add_argument("--no-references", action="store_true", help="skip bm25s, dense and RRF")
    p.add_argument(
        "--experiments",
        nargs="*",
        metavar="WORD",
        help="also run the experiments (those whose name contains a WORD, if given)",
    )
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
        "machine": machine_line(),  # the CPU, its flags and the encoder chosen on it
    }


class Evaluator:
    """Runs references, modes and experiments on sets, and collects the figures."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self._model: Any = None

    def model(self) -> Any:
        if self._model is None:
            self._model = load_model()
        return self._model

    def references(self, s: sets.EvalSet) -> dict[str, dict[str, list[str]]]:
        """Each reference system's ranking per query (one document per note)."""
        if self.args.no_references or not s.reference_levels or not s.documents:
            return {}
        runs = {
            "bm25s": ReferenceBM25(s.documents, ReferenceSetup()).run(s.queries, runner.LIMIT),
            "bm25s unstemmed": ReferenceBM25(s.documents, ReferenceSetup(stemmed=False)).run(
                s.queries, runner.LIMIT
            ),
        }
        if set(self.args.modes) - {"keyword"}:
            dense = DenseReference(s.documents, self.workdir / s.name, self.model())
            runs["dense"] = dense.run(s.queries, runner.LIMIT)
            runs["RRF(bm25s, dense)"] = rrf([runs["bm25s"], runs["dense"]])
        return runs

    def evaluate(self, s: sets.EvalSet) -> dict[str, Any]:
        print(f"{s.name}: {s.description}", flush=True)
        queries = runner.subset(s.queries, self.args.max_queries)
        keys = {q.key for q in queries}
        levels = {
            level: {k: v for k, v in rel.items() if k in keys} for level, rel in s.levels.items()
        }
        rows: list[dict[str, Any]] = []
        for system, ranked in self.references(s).items():
            for level in s.reference_levels:
                rows += self._rows(system, "reference", ranked, levels[level], level, s, 0.0)
        modes = [m for m in self.args.modes if m != "deep" or s.kind in DEEP_KINDS]
        built = runner.build_files(s.files, self.workdir / s.name, vectors=modes != ["keyword"])
        print(f"  indexed {built.notes} notes, {built.chunks} chunks", flush=True)
        baselines: dict[str, runner.ModeRun] = {}
        try:
            for mode in modes:
                run = runner.run_mode(built.vault, queries, mode)
                baselines[mode] = run
                for level, rel in levels.items():
                    ranked = run.keys(level, s.judge)
                    rows += self._rows(f"markvault {mode}", mode, ranked, rel, level, s, run)
            found = self._experiments(s, built.vault, queries, levels, baselines)
        finally:
            built.vault.close()
        for row in rows:
            if row["group"] == "all":
                print(
                    f"  {row['system']:24} {row['level']:10} nDCG@10 {row['ndcg@10']:.4f} "
                    f"MRR@10 {row['mrr@10']:.4f}",
                    flush=True,
                )
        return {
            "name": s.name,
            "kind": s.kind,
            "description": s.description,
            "levels": list(levels),
            "groups": sorted(s.groups),
            "notes": built.notes,
            "chunks": built.chunks,
            "runs": rows,
            "experiments": found,
        }

    def _rows(
        self,
        system: str,
        mode: str,
        ranked: dict[str, list[str]],
        relevant: dict[str, dict[str, int]],
        level: str,
        s: sets.EvalSet,
        run: runner.ModeRun | float,
    ) -> list[dict[str, Any]]:
        groups = {"all": list(relevant), **s.groups} if s.groups else {"all": list(relevant)}
        out = []
        for group, members in groups.items():
            rel = {k: relevant[k] for k in members if k in relevant}
            if not rel:
                continue
            scores = report.scores_of(ranked, rel)
            row: dict[str, Any] = {
                "system": system,
                "mode": mode,
                "level": level,
                "group": group,
                **scores,
            }
            if isinstance(run, runner.ModeRun):
                row.update(
                    seconds=round(run.seconds, 2),
                    errors=run.errors,
                    shortcuts=run.shortcuts,
                    warnings=run.warnings,
                )
            out.append(row)
        return out

    def _experiments(
        self,
        s: sets.EvalSet,
        vault: Any,
        queries: Sequence[Any],
        levels: dict[str, dict[str, dict[str, int]]],
        baselines: dict[str, runner.ModeRun],
    ) -> list[dict[str, Any]]:
        if self.args.experiments is None:
            return []
        out = []
        for exp in [*exps.default_experiments(), *exps.memory_experiments()]:
            if self.args.experiments and not any(w in exp.name for w in self.args.experiments):
                continue
            for mode in exp.modes:
                if mode not in baselines:
                    continue
                with exp.patch():
                    run = runner.run_mode(vault, queries, mode)
                for level, rel in levels.items():
                    base = per_query(baselines[mode].keys(level, s.judge), rel)
                    now = per_query(run.keys(level, s.judge), rel)
                    order = sorted(base)
                    a = [now[k][0] for k in order]
                    b = [base[k][0] for k in order]
                    out.append(
                        {
                            "name": exp.name,
                            "kind": exp.kind,
                            "mode": mode,
                            "level": level,
                            "ndcg@10": round(sum(a) / len(a), 4),
                            "mrr@10": round(sum(now[k][2] for k in order) / len(order), 4),
                            "delta": round((sum(a) - sum(b)) / len(a), 4),
                            "p": round(paired_p_value(a, b), 3),
                            "groups": report.group_scores(run.keys(level, s.judge), rel, s.groups),
                        }
                    )
            print(f"  experiment {exp.name}: done", flush=True)
        return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(machine_line(), flush=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="markvault-eval-"))
    chosen: list[sets.EvalSet] = []
    for name in args.sets:
        if name in sets.CATALOG:
            if not sets.collection_available(name):
                print(f"{name}: not found under {sets.SHARED_EVAL}, skipped", file=sys.stderr)
                continue
            chosen.append(sets.from_collection(sets.load_catalogued(name)))
        else:
            chosen.append(sets.OWN_SETS[name]())
    if args.docs and args.queries and args.qrels:
        collection = load_collection(
            args.docs,
            args.queries,
            args.qrels,
            query_ids=QueryIds(args.query_ids),
            gains=Gains(args.gains),
            name=args.name,
        )
        chosen.append(sets.from_collection(collection))
    started = time.perf_counter()
    evaluator = Evaluator(args, workdir)
    figures: dict[str, Any] = {"sets": []}
    try:
        for s in chosen:
            figures["sets"].append(evaluator.evaluate(s))
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    figures["setup"] = {
        "markvault": (
            f"all-MiniLM-L6-v2, BM25 k1 {keyword.BM25_K1} b {keyword.BM25_B} "
            f"per note, hybrid keyword weight {markvault.search.fusion.KEYWORD_WEIGHT}"
        ),
        "reference": ReferenceSetup().describe() + "; dense all-MiniLM-L6-v2 per document; "
        "RRF k 60 of bm25s and dense",
        "deep": VARIANTS_DOC.strip().split("\n")[0],
        "seconds": round(time.perf_counter() - started),
    }
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
