"""LongMemEval (issue 33): conversational memory, one vault per question.

    python -m bench.eval.longmemeval --modes keyword --workdir bench/out/longmemeval
    python -m bench.eval.longmemeval --workdir bench/out/longmemeval --json-out lme.json
    python -m bench.eval.longmemeval --experiments "diverse" --workdir bench/out/longmemeval

LongMemEval (Wu et al., ICLR 2025) gives each question its own haystack of about 48
chat sessions; the gold is the session or sessions that hold the evidence. The
developers' split (50 questions, every type) is read from
``../shared/eval/longmemeval-dev`` (its README: format and metrics). As the field
measures it:

- one note per session, in markvault's session layout (``session_note``): frontmatter
  ``id`` (the session's opaque handle), ``title`` (its first user line, as markvault's
  own session import titles a session), ``kind: session``, ``created`` (the session's
  day) and ``started`` (its time); a ``### User`` / ``### Assistant`` heading per turn,
  the turn quoted beneath it (``sessions.quote``: a turn's Markdown cannot reach the
  note's structure);
- one vault per question (``<workdir>/<question id>/``), its haystack's sessions;
- the question searched as written, through ``Vault.search`` in each mode at the
  user's default limit of 10, with the question's date as the "asked at" date
  (``as_of``);
- per question: recall_any@5 (a gold session in the top 5), recall_all@5 and
  recall_all@10 (every gold session in the top 5 or 10) and nDCG@10 (gain 1 per gold
  session), averaged per question type and over all.

Next to markvault, in the same run (``reference.py``): stemmed and unstemmed bm25s, plain
dense (one all-MiniLM-L6-v2 vector per session) and their RRF, each over the same
haystack, one document per session (its title and turns).

``--workdir`` keeps every vault, index and dense vector: embedding 50 haystacks takes a
long while on 2 cores, and a later run (or one with other modes) reuses them. Run
keyword mode first (seconds a question); the model's modes embed each haystack once.
``--experiments`` reruns the modes each of ``experiments.py``'s and this module's
experiments affects (``EXPERIMENTS``), as ``python -m bench.eval`` does for the other
sets.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import lzma
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markvault import Vault
from markvault.sessions.session_note import quote
from markvault.types.search import SearchRequest

from . import report, runner
from .metrics import paired_p_value
from .reference import DenseReference, ReferenceBM25, ReferenceSetup, load_model, rrf
from .sets import SHARED_EVAL
from .smart import Document, Query

DATA = SHARED_EVAL / "longmemeval-dev" / "longmemeval_s_dev.json.xz"
LIMIT = 10  # the user's default: what an agent's search returns
TITLE_CHARS = 80
ALL_MODES = ("keyword", "vector", "hybrid")
METRICS = ("recall_any@5", "recall_all@5", "recall_all@10", "ndcg@10")
TYPES = (
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
)


@dataclass(frozen=True)
class Question:
    qid: str
    qtype: str
    text: str
    asked: dt.datetime  # when the question is asked
    haystack: tuple[str, ...]  # session handles, in the dataset's order
    dates: tuple[dt.datetime, ...]  # each session's date
    gold: frozenset[str]


@dataclass(frozen=True)
class Data:
    questions: list[Question]
    sessions: dict[str, list[dict[str, str]]]  # handle -> turns {role, content}


def parse_date(text: str) -> dt.datetime:
    """The dataset's "2023/05/20 (Sat) 02:21" as a datetime."""
    day, _, clock = text.partition(" (")
    clock = clock.partition(") ")[2] or "00:00"
    return dt.datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M")


def available(path: Path = DATA) -> bool:
    return path.is_file()


def load(path: Path = DATA) -> Data:
    with lzma.open(path, "rt", encoding="utf-8") as f:
        raw = json.load(f)
    questions = [
        Question(
            qid=q["question_id"],
            qtype=q["question_type"],
            text=q["question"],
            asked=parse_date(q["question_date"]),
            haystack=tuple(q["haystack"]),
            dates=tuple(parse_date(d) for d in q["haystack_dates"]),
            gold=frozenset(q["gold"]),
        )
        for q in raw["questions"]
    ]
    return Data(questions, raw["sessions"])


def title_of(turns: Sequence[Mapping[str, str]]) -> str:
    """The first user turn's first line, cut at a word (markvault's session import
    titles a session by its first prompt the same way)."""
    first = next((t["content"] for t in turns if t["role"] == "user" and t["content"].strip()), "")
    line = next((ln.strip() for ln in first.splitlines() if ln.strip()), "") or "Chat"
    line = line.lstrip("#>*+-`~ ").strip() or "Chat"
    if len(line) > TITLE_CHARS:
        line = line[:TITLE_CHARS].rsplit(" ", 1)[0] + "…"
    return line


def session_note(handle: str, turns: Sequence[Mapping[str, str]], when: dt.datetime) -> str:
    """One session as a markvault session note (see the module docstring)."""
    title = title_of(turns)
    lines = [
        "---",
        f"id: {handle}",
        f"title: {json.dumps(title, ensure_ascii=False)}",
        "kind: session",
        f"created: {when.date().isoformat()}",
        f"started: {when.strftime('%Y-%m-%dT%H:%M:%S')}",
        "---",
        "",
        f"# {title}",
        "",
        "## Transcript",
    ]
    for turn in turns:
        label = "User" if turn["role"] == "user" else "Assistant"
        lines += ["", f"### {label}", "", quote(turn["content"].strip() or "…")]
    return "\n".join(lines) + "\n"


def vault_files(q: Question, sessions: Mapping[str, list[dict[str, str]]]) -> dict[str, str]:
    return {
        f"sessions/{handle}.md": session_note(handle, sessions[handle], when)
        for handle, when in zip(q.haystack, q.dates, strict=True)
    }


def documents(q: Question, sessions: Mapping[str, list[dict[str, str]]]) -> list[Document]:
    """The haystack as the reference systems read it: one document per session."""
    return [
        Document(
            handle,
            title_of(sessions[handle]),
            "\n".join(f"{t['role']}: {t['content']}" for t in sessions[handle]),
        )
        for handle in q.haystack
    ]


# ---- metrics ---------------------------------------------------------------------------


def question_scores(ranked: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    """recall_any@5, recall_all@5, recall_all@10 and nDCG@10 (binary gains) of one ranking."""
    gold = set(gold)
    top5, top10 = set(ranked[:5]), set(ranked[:10])
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), 10)))
    return {
        "recall_any@5": float(bool(top5 & gold)),
        "recall_all@5": float(gold <= top5),
        "recall_all@10": float(gold <= top10),
        "ndcg@10": dcg / ideal if ideal else 0.0,
    }


def summary(
    rankings: Mapping[str, Sequence[str]], questions: Sequence[Question]
) -> dict[str, dict[str, float]]:
    """{group: {metric: mean}} over "all" and each question type; groups with no
    question in ``rankings``... still report (a missing ranking scores 0)."""
    groups: dict[str, list[Question]] = {"all": list(questions)}
    for q in questions:
        groups.setdefault(q.qtype, []).append(q)
    out: dict[str, dict[str, float]] = {}
    for group, members in groups.items():
        rows = [question_scores(rankings.get(q.qid, []), q.gold) for q in members]
        out[group] = {m: round(sum(r[m] for r in rows) / len(rows), 4) for m in METRICS}
        out[group]["questions"] = len(rows)
    return out


# ---- running ---------------------------------------------------------------------------


def search(vault: Vault, q: Question, mode: str, limit: int = LIMIT) -> list[str]:
    """The question through ``Vault.search`` as the faces call it: its text unchanged,
    its date as the "asked at" date. Note ids, best first."""
    request = SearchRequest(q.text, mode=mode, limit=limit, as_of=q.asked.isoformat())
    return [hit.id for hit in vault.search(request).hits]


@dataclass
class QuestionRun:
    """One question's rankings per system, and what building its vault cost."""

    rankings: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    index_seconds: float = 0.0
    search_seconds: dict[str, float] = field(default_factory=dict)


Patch = Callable[[], Any]


class Harness:
    def __init__(
        self,
        data: Data,
        workdir: Path,
        modes: Sequence[str],
        references: bool = True,
        limit: int = LIMIT,
    ) -> None:
        self.data = data
        self.workdir = workdir
        self.modes = list(modes)
        self.references = references
        self.limit = limit
        self._model: Any = None

    def model(self) -> Any:
        if self._model is None:
            self._model = load_model()
        return self._model

    def reference_rankings(self, q: Question) -> dict[str, list[str]]:
        docs = documents(q, self.data.sessions)
        query = [Query(q.qid, q.qid, q.text)]
        runs = {
            "bm25s": ReferenceBM25(docs, ReferenceSetup()).run(query, self.limit),
            "bm25s unstemmed": ReferenceBM25(docs, ReferenceSetup(stemmed=False)).run(
                query, self.limit
            ),
        }
        if set(self.modes) - {"keyword"}:
            dense = DenseReference(docs, self.workdir / q.qid, self.model())
            runs["dense"] = dense.run(query, self.limit)
            runs["RRF(bm25s, dense)"] = rrf([runs["bm25s"], runs["dense"]])
        return {name: run[q.qid][: self.limit] for name, run in runs.items()}

    def run_question(
        self, q: Question, experiments: Sequence[tuple[str, Sequence[str], Patch]] = ()
    ) -> QuestionRun:
        out = QuestionRun()
        if self.references:
            out.rankings.update(self.reference_rankings(q))
        vectors = self.modes != ["keyword"]
        started = time.perf_counter()
        built = runner.build_files(
            vault_files(q, self.data.sessions), self.workdir / q.qid, vectors=vectors
        )
        out.index_seconds = time.perf_counter() - started
        try:
            for mode in self.modes:
                self._one(built.vault, q, mode, f"markvault {mode}", out)
            for name, modes, patch in experiments:
                for mode in modes:
                    if mode in self.modes:
                        with patch():
                            self._one(built.vault, q, mode, f"{name} | {mode}", out)
        finally:
            built.vault.close()
        return out

    def _one(self, vault: Vault, q: Question, mode: str, system: str, out: QuestionRun) -> None:
        started = time.perf_counter()
        try:
            out.rankings[system] = search(vault, q, mode, self.limit)
        except Exception as exc:  # a refused question is a figure (0), not a crash
            out.errors[system] = f"{type(exc).__name__}: {exc}"
            out.rankings[system] = []
        out.search_seconds[system] = time.perf_counter() - started


# ---- report ----------------------------------------------------------------------------

SYSTEM_ORDER = (
    "bm25s",
    "bm25s unstemmed",
    "dense",
    "RRF(bm25s, dense)",
    "markvault keyword",
    "markvault vector",
    "markvault hybrid",
)


def systems_of(results: Mapping[str, Mapping[str, Any]]) -> list[str]:
    seen: list[str] = []
    for run in results.values():
        for name in run["rankings"]:
            if name not in seen:
                seen.append(name)
    known = [s for s in SYSTEM_ORDER if s in seen]
    return known + [s for s in seen if s not in known]


def tables(results: Mapping[str, Mapping[str, Any]], questions: Sequence[Question]) -> str:
    """Markdown: every system's four metrics over all questions, then each metric by type."""
    asked = [q for q in questions if q.qid in results]
    systems = systems_of(results)
    sums = {
        s: summary({qid: r["rankings"].get(s, []) for qid, r in results.items()}, asked)
        for s in systems
    }
    types = [t for t in TYPES if any(q.qtype == t for q in asked)]
    counts = {t: sum(1 for q in asked if q.qtype == t) for t in types}
    parts = [
        f"### LongMemEval, {len(asked)} questions: every system\n\n"
        + report.table(
            ["system", *METRICS, "errors"],
            [[s, *(sums[s]["all"][m] for m in METRICS), _errors(results, s)] for s in systems],
        )
    ]
    for metric in METRICS:
        parts.append(
            f"### {metric} by question type\n\n"
            + report.table(
                ["system", *(f"{t} ({counts[t]})" for t in types)],
                [[s, *(sums[s][t][metric] for t in types)] for s in systems],
            )
        )
    exp = _experiment_table(results, asked, systems)
    if exp:
        parts.append(exp)
    return "\n\n".join(parts)


def _errors(results: Mapping[str, Mapping[str, Any]], system: str) -> int:
    return sum(1 for r in results.values() if system in r.get("errors", {}))


def _experiment_table(
    results: Mapping[str, Mapping[str, Any]], asked: Sequence[Question], systems: Sequence[str]
) -> str:
    rows = []
    for s in systems:
        if " | " not in s:
            continue
        mode = s.rsplit(" | ", 1)[1]
        base = f"markvault {mode}"
        if base not in systems:
            continue
        a = [question_scores(results[q.qid]["rankings"].get(s, []), q.gold) for q in asked]
        b = [question_scores(results[q.qid]["rankings"].get(base, []), q.gold) for q in asked]
        cells = []
        for m in METRICS:
            x, y = [r[m] for r in a], [r[m] for r in b]
            delta = (sum(x) - sum(y)) / len(x)
            cells.append(f"{sum(x) / len(x):.4f} ({delta:+.4f}, p {paired_p_value(x, y):.2f})")
        rows.append([s, *cells])
    if not rows:
        return ""
    return "### Experiments (Δ against the same mode, paired p)\n\n" + report.table(
        ["experiment | mode", *METRICS], rows
    )


# ---- command line ----------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.eval.longmemeval", description=__doc__.split("\n")[0]
    )
    p.add_argument("--data", type=Path, default=DATA, help="the xz-compressed JSON (see README)")
    p.add_argument("--modes", nargs="+", choices=ALL_MODES, default=list(ALL_MODES))
    p.add_argument("--max-questions", type=int, help="this many questions, evenly spread")
    p.add_argument("--questions", nargs="+", metavar="ID", help="only these question ids")
    p.add_argument("--types", nargs="+", choices=TYPES, help="only these question types")
    p.add_argument("--workdir", type=Path, default=Path("bench/out/longmemeval"))
    p.add_argument("--limit", type=int, default=LIMIT, help="hits asked for (default 10)")
    p.add_argument("--no-references", action="store_true", help="skip bm25s, dense and RRF")
    p.add_argument(
        "--experiments",
        nargs="*",
        metavar="WORD",
        help="also run the experiments (those whose name contains a WORD, if given)",
    )
    p.add_argument("--json-out", type=Path, help="write every ranking and figure here")
    return p.parse_args(argv)


def chosen_questions(data: Data, args: argparse.Namespace) -> list[Question]:
    qs = data.questions
    if args.questions:  # in the order given: the first embedded first
        by_id = {q.qid: q for q in qs}
        qs = [by_id[qid] for qid in args.questions if qid in by_id]
    if args.types:
        qs = [q for q in qs if q.qtype in set(args.types)]
    if args.max_questions:
        step = len(qs) / args.max_questions
        qs = [qs[int(i * step)] for i in range(min(args.max_questions, len(qs)))]
    return qs


def experiments_chosen(words: Sequence[str] | None) -> list[tuple[str, Sequence[str], Patch]]:
    if words is None:
        return []
    from . import experiments as exps

    found = [(e.name, e.modes, e.patch) for e in exps.default_experiments()]
    found += [(e.name, e.modes, e.patch) for e in exps.memory_experiments()]
    return [e for e in found if not words or any(w in e[0] for w in words)]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not available(args.data):
        print(f"no LongMemEval data at {args.data} (set MARKVAULT_SHARED_EVAL)", file=sys.stderr)
        return 2
    data = load(args.data)
    questions = chosen_questions(data, args)
    harness = Harness(data, args.workdir, args.modes, not args.no_references, args.limit)
    exps = experiments_chosen(args.experiments)
    results: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for i, q in enumerate(questions, start=1):
        run = harness.run_question(q, exps)
        results[q.qid] = {
            "type": q.qtype,
            "gold": sorted(q.gold),
            "rankings": run.rankings,
            "errors": run.errors,
            "index_seconds": round(run.index_seconds, 2),
        }
        if args.json_out:  # after every question: a long run's figures so far
            _write(args, [q for q in questions if q.qid in results], results)
        hit = {
            s.removeprefix("markvault "): "".join(
                "+" if d in q.gold else "." for d in run.rankings.get(s, [])[:5]
            )
            for s in run.rankings
            if s.startswith("markvault ")
        }
        print(
            f"[{i}/{len(questions)}] {q.qid} {q.qtype:26} gold {len(q.gold)} "
            f"index {run.index_seconds:5.1f}s {hit}",
            flush=True,
        )
    text = tables(results, questions)
    print()
    print(text)
    print(f"\n{len(questions)} questions in {time.perf_counter() - started:.0f} s", flush=True)
    if args.json_out:
        _write(args, questions, results)
    return 0


def _write(
    args: argparse.Namespace, questions: Sequence[Question], results: Mapping[str, Any]
) -> None:
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "questions": {q.qid: {"type": q.qtype} for q in questions},
        "results": results,
        "modes": args.modes,
        "limit": args.limit,
    }
    args.json_out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
