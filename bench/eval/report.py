"""The figures as Markdown tables: printed by the harness, pasted into RESULTS.md.

The harness writes its figures as JSON (``--json-out``); ``python -m bench.eval.report
FILE.json`` prints the same tables again from that file, so RESULTS.md's tables can be
regenerated without rerunning anything.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .metrics import evaluate, per_query

MODES = ("keyword", "vector", "hybrid", "deep")
REFERENCES = ("bm25s", "bm25s unstemmed", "dense", "RRF(bm25s, dense)")


def scores_of(
    ranked: Mapping[str, Sequence[str]], relevant: Mapping[str, Mapping[str, int]]
) -> dict[str, Any]:
    return evaluate(ranked, relevant).as_dict()


def group_scores(
    ranked: Mapping[str, Sequence[str]],
    relevant: Mapping[str, Mapping[str, int]],
    groups: Mapping[str, Sequence[str]],
) -> dict[str, dict[str, float]]:
    """{group: {nDCG@10, MRR@10}} over each group's queries."""
    rows = per_query(ranked, relevant)
    out = {}
    for group, members in groups.items():
        got = [rows[k] for k in members if k in rows]
        if got:
            out[group] = {
                "ndcg@10": round(sum(r[0] for r in got) / len(got), 4),
                "mrr@10": round(sum(r[2] for r in got) / len(got), 4),
            }
    return out


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


def _signed(value: float | None) -> str | None:
    return None if value is None else f"{value:+.4f}"


def _find(s: dict[str, Any], system: str, level: str, group: str = "all") -> dict[str, Any] | None:
    for r in s["runs"]:
        if r["system"] == system and r["level"] == level and r["group"] == group:
            return r
    return None


def _value(s: dict[str, Any], system: str, level: str, key: str, group: str = "all") -> Any:
    row = _find(s, system, level, group)
    return None if row is None else row[key]


def overview(figs: Sequence[dict[str, Any]], key: str = "ndcg@10") -> str:
    """One row per set and level: every system's figure, and the goals' margins."""
    header = ["set", "level", *REFERENCES, *MODES, "hybrid − best of k, v", "hybrid − RRF"]
    rows = []
    for s in figs:
        for level in s["levels"]:
            values = [_value(s, name, level, key) for name in REFERENCES]
            modes = [_value(s, f"markvault {m}", level, key) for m in MODES]
            kw, vec, hyb = modes[0], modes[1], modes[2]
            best = max(v for v in (kw, vec) if v is not None) if kw or vec else None
            margin = None if hyb is None or best is None else round(hyb - best, 4)
            rrf = values[3]
            over = None if hyb is None or rrf is None else round(hyb - rrf, 4)
            rows.append([s["name"], level, *values, *modes, _signed(margin), _signed(over)])
    return table(header, rows)


def _by_group(
    figs: Sequence[dict[str, Any]], kind: str
) -> Iterator[tuple[dict[str, Any], str, str, Any]]:
    """(set, level, group, queries) of every group of every set of ``kind``."""
    for s in figs:
        if s["kind"] != kind:
            continue
        for level in s["levels"]:
            for group in s["groups"]:
                yield s, level, group, _value(s, "markvault keyword", level, "queries", group)


def known_items(figs: Sequence[dict[str, Any]]) -> str:
    """MRR@10 per language (group) of the known-item sets."""
    rows = []
    for s, level, group, n in _by_group(figs, "known-item"):
        k, v, h = (_value(s, f"markvault {m}", level, "mrr@10", group) for m in MODES[:3])
        gap = None if k is None or h is None else round(h - k, 4)
        rows.append([s["name"], level, group, n, k, v, h, _signed(gap)])
    header = ["set", "level", "language", "queries", "keyword", "vector", "hybrid", "h − k"]
    return table(header, rows)


def question_types(figs: Sequence[dict[str, Any]]) -> str:
    """nDCG@10 per question type (group) of the sets judged by type: every system."""
    rows = []
    for s, level, group, n in _by_group(figs, "mixed"):
        systems = [*REFERENCES, *(f"markvault {m}" for m in MODES)]
        rows.append(
            [s["name"], level, group, n, *(_value(s, x, level, "ndcg@10", group) for x in systems)]
        )
    header = ["set", "level", "type", "queries", *REFERENCES, *MODES]
    return table(header, rows)


def details(s: dict[str, Any]) -> str:
    rows = []
    for r in s["runs"]:
        if r["group"] != "all":
            continue
        seconds = r.get("seconds")
        ms = None if seconds is None else round(1000 * seconds / max(r["queries"], 1))
        notes = []
        if r.get("errors"):
            notes.append(f"{len(r['errors'])} queries failed")
        if r.get("mode") == "deep":
            notes.append(f"variants skipped on {r.get('shortcuts', 0)}")
        rows.append(
            [
                r["system"],
                r["level"],
                r["ndcg@10"],
                r["recall@100"],
                r["mrr@10"],
                ms,
                ", ".join(notes),
            ]
        )
    header = ["system", "level", "nDCG@10", "Recall@100", "MRR@10", "ms/query", "note"]
    return table(header, rows)


def experiments(figs: Sequence[dict[str, Any]]) -> str:
    """Each experiment's nDCG@10 change per set and level (p-value in brackets)."""
    columns = [(s["name"], level) for s in figs for level in s["levels"]]
    found: dict[tuple[str, str], dict[tuple[str, str], str]] = {}
    kinds: dict[str, str] = {}
    for s in figs:
        for e in s.get("experiments", []):
            cell = f"{e['delta']:+.4f} ({e['p']:.2f})"
            found.setdefault((e["name"], e["mode"]), {})[(s["name"], e["level"])] = cell
            kinds[e["name"]] = e["kind"]
    if not found:
        return ""
    header = ["experiment", "mode", *(f"{n} {lv}" for n, lv in columns)]
    rows = [[name, mode, *(cells.get(c) for c in columns)] for (name, mode), cells in found.items()]
    return table(header, rows)


def experiment_languages(figs: Sequence[dict[str, Any]]) -> str:
    """Under each experiment: known-item MRR@10 per language, nDCG@10 per question type."""
    rows = []
    for s in figs:
        if s["kind"] not in ("known-item", "mixed") or len(s["groups"]) < 2:
            continue
        key = "mrr@10" if s["kind"] == "known-item" else "ndcg@10"
        for e in s.get("experiments", []):
            cells = " ".join(f"{g} {v[key]:.2f}" for g, v in e["groups"].items())
            rows.append([s["name"], e["name"], e["mode"], f"{key}: {cells}"])
    header = ["set", "experiment", "mode", "per language or question type"]
    return table(header, rows) if rows else ""


def markdown(fig: dict[str, Any]) -> str:
    """Every table of one harness run, with the setup they were measured with."""
    figs = fig.get("sets", [])
    parts = ["### nDCG@10, every set\n\n" + overview(figs)]
    if any(s["kind"] == "known-item" for s in figs):
        parts.append("### Known-item sets: MRR@10 per language\n\n" + known_items(figs))
    if any(s["kind"] == "mixed" for s in figs):
        parts.append("### Notes and sessions: nDCG@10 per question type\n\n" + question_types(figs))
    for s in figs:
        parts.append(
            f"### {s['name']}: {s['description']} ({s['notes']} notes, {s['chunks']} chunks)"
            f"\n\n{details(s)}"
        )
    exp = experiments(figs)
    if exp:
        parts.append("### Experiments: Δ nDCG@10 against the same mode (p)\n\n" + exp)
        langs = experiment_languages(figs)
        if langs:
            parts.append("### Experiments by language and question type\n\n" + langs)
    if fig.get("setup"):
        parts.append("Setup: " + "; ".join(f"{k}: {v}" for k, v in fig["setup"].items()))
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
