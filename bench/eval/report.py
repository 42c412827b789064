"""The figures as Markdown tables: printed by the harness, pasted into RESULTS.md.

The harness writes its figures as JSON (``--json-out``); ``python -m bench.eval.report
FILE.json`` prints the same tables again from that file, so RESULTS.md's tables can be
regenerated without rerunning anything.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table whose columns line up in a terminal too."""
    cells = [[str(h) for h in header]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    lines.insert(1, "| " + " | ".join("-" * w for w in widths) + " |")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "—" if value is None else str(value)


def collection_table(fig: dict[str, Any]) -> str:
    runs = fig["runs"]
    ref = next((r for r in runs if r["system"].startswith("bm25s")), None)
    rows = []
    for r in runs:
        delta = None if ref is None or r is ref else round(r["ndcg@10"] - ref["ndcg@10"], 4)
        rows.append(
            [
                r["system"],
                r["ndcg@10"],
                _signed(delta),
                r["recall@100"],
                r["mrr@10"],
                r["queries"],
                _ms(1000 * r["seconds"] / max(r["queries"], 1)),
                _run_note(r),
            ]
        )
    return table(
        [
            "system",
            "nDCG@10",
            "vs bm25s",
            "Recall@100",
            "MRR@10",
            "queries",
            "ms/query",
            "note",
        ],
        rows,
    )


def _run_note(run: dict[str, Any]) -> str:
    notes = []
    if run.get("errors"):
        notes.append(f"{len(run['errors'])} queries failed")
    if run.get("mode") == "deep":
        notes.append(f"variants skipped on {run.get('shortcuts', 0)} queries")
    return ", ".join(notes)


def _ms(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def _signed(value: float | None) -> str | None:
    return None if value is None else f"{value:+.4f}"


def experiments_table(fig: dict[str, Any]) -> str:
    rows = [
        [
            e["name"],
            e["mode"],
            e["ndcg@10"],
            _signed(e["delta_ndcg@10"]),
            f"{e['p_value']:.3f}",
            e["recall@100"],
            e["mrr@10"],
        ]
        for e in fig.get("experiments", [])
    ]
    return table(
        ["experiment", "mode", "nDCG@10", "Δ vs mode's baseline", "p", "Recall@100", "MRR@10"],
        rows,
    )


def multilingual_table(ml: dict[str, Any], languages: dict[str, Any]) -> str:
    modes = ml["modes"]
    rows = []
    for lang, s in languages.items():
        rows.append(
            [lang, s["notes"]]
            + [s["mrr@10"][m] for m in modes]
            + [" ".join(f"{m[0]}:{s['top1'][m]:.2f}" for m in modes)]
        )
    return table(["language", "queries", *(f"{m} MRR@10" for m in modes), "found at rank 1"], rows)


def markdown(fig: dict[str, Any]) -> str:
    """Every table of one harness run, with the setup they were measured with."""
    parts = []
    if "collection" in fig:
        c = fig["collection"]
        parts.append(
            f"### {c['name']}: {c['documents']} documents, {c['evaluated_queries']} of "
            f"{c['queries']} queries\n\n{collection_table(fig)}"
        )
        parts.append("Setup: " + "; ".join(f"{k}: {v}" for k, v in fig["setup"].items()))
    if fig.get("experiments"):
        parts.append("### Experiments\n\n" + experiments_table(fig))
    if "multilingual" in fig:
        ml = fig["multilingual"]
        parts.append(
            "### Multilingual known-item check\n\n" + multilingual_table(ml, ml["languages"])
        )
        for e in ml.get("experiments", []):
            parts.append(
                f"#### Multilingual, experiment: {e['name']}\n\n"
                + multilingual_table(ml, e["languages"])
            )
    m = fig.get("machine", {})
    if m:
        parts.append("Machine: " + ", ".join(f"{k} {v}" for k, v in m.items()))
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m bench.eval.report FIGURES.json", file=sys.stderr)
        return 2
    print(markdown(json.loads(Path(args[0]).read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
