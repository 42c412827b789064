"""Load a test collection in SMART format: documents, queries and relevance judgments.

SMART files are records that start with ``.I <label>``, followed by fields that each
start with a line holding only a marker (``.T`` title, ``.A`` authors, ``.B`` source,
``.W`` text, ``.X``/``.K``/... in other collections) and run until the next marker.
Cranfield, CISI, CACM, MED and others are distributed this way, so nothing below is
specific to Cranfield except the defaults.

Real files have flaws the parser has to live with (Cranfield's are listed so the
choices can be checked):

- CRLF line ends (all Cranfield files);
- a marker repeated inside a record (documents 240, 576 and 578 have stray ``.A``,
  ``.B`` or ``.W`` lines in the middle of their text). A marker for a field the record
  already has is dropped and its lines continue the current field, so no text is lost
  and no field is overwritten;
- query labels that are not the numbers the judgments use: Cranfield's ``cranqrel``
  numbers queries by their position 1..225 in ``cran.qry``, while their ``.I`` labels
  run 001..365 with gaps (``QueryIds.ORDINAL``). Other collections use the labels
  (``QueryIds.LABEL``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_MARKER = re.compile(r"^\.([A-Z])(?:\s+(\S.*))?$")


@dataclass(frozen=True)
class Record:
    """One SMART record: its ``.I`` label and its fields' raw lines, by marker letter."""

    label: str
    fields: dict[str, list[str]]

    def field(self, letter: str) -> str:
        """The field's lines joined by newlines ("" when the record lacks it)."""
        return "\n".join(self.fields.get(letter, [])).strip("\n")


@dataclass(frozen=True)
class Document:
    doc_id: str  # the .I label, which the judgments use for documents
    title: str
    text: str  # the .W field, line breaks as in the file
    authors: str = ""
    source: str = ""


@dataclass(frozen=True)
class Query:
    key: str  # what the judgments call this query (ordinal or label, see QueryIds)
    label: str  # the .I label in the query file
    text: str


class QueryIds(enum.Enum):
    """How the judgments file names queries."""

    ORDINAL = "ordinal"  # position 1..n in the query file (Cranfield)
    LABEL = "label"  # the query's .I label (CISI, CACM, MED)


class Gains(enum.Enum):
    """How a judgment's grade becomes a gain for nDCG (0 = not relevant)."""

    # Cleverdon's grades: 1 complete answer, 2 high relevance, 3 useful background,
    # 4 minimum interest -> gain 4, 3, 2, 1. Grade 5 ("no interest") and -1 ("not
    # relevant", one pair per Cranfield query) get 0. Anything else is an error.
    CRANFIELD = "cranfield"
    # Every listed pair is relevant with gain 1, unless its grade is negative. For
    # collections whose judgments are pairs only (CISI and CACM write "q d 0 0").
    BINARY = "binary"
    # TREC style: the grade is the gain; 0 and below are not relevant.
    GRADED = "graded"


@dataclass(frozen=True)
class Collection:
    name: str
    documents: list[Document]
    queries: list[Query]
    # query key -> {document id -> gain}; only pairs with a gain above 0 are kept.
    relevant: dict[str, dict[str, int]]
    grades: dict[str, int]  # how often each grade occurs in the judgments file

    def judged_queries(self) -> list[Query]:
        """Queries with at least one relevant document: the others cannot be scored."""
        return [q for q in self.queries if self.relevant.get(q.key)]


def parse_records(lines: Iterable[str]) -> list[Record]:
    """Split SMART lines into records (see the module docstring for the flaws handled)."""
    records: list[Record] = []
    label: str | None = None
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        marker = _MARKER.match(line.rstrip())
        if marker and marker.group(1) == "I" and marker.group(2):
            if label is not None:
                records.append(Record(label, fields))
            label, fields, current = marker.group(2).strip(), {}, None
        elif marker and marker.group(2) is None and label is not None:
            if marker.group(1) not in fields:
                current = marker.group(1)
                fields[current] = []
            # else: a stray repeated marker; the current field goes on.
        elif current is not None:
            fields[current].append(line)
    if label is not None:
        records.append(Record(label, fields))
    return records


def _read_records(path: Path) -> list[Record]:
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        return parse_records(fh)


def one_line(text: str) -> str:
    """Collapse whitespace; Cranfield titles also lose their detached final " ."."""
    flat = " ".join(text.split())
    return flat[:-2] if flat.endswith(" .") else flat


def load_documents(path: Path) -> list[Document]:
    """Documents from a SMART file; the title falls back to the text's first line."""
    docs = []
    for rec in _read_records(path):
        text = rec.field("W")
        title = one_line(rec.field("T")) or one_line(text.split("\n", 1)[0]) or rec.label
        docs.append(
            Document(
                doc_id=rec.label,
                title=title,
                text=text,
                authors=one_line(rec.field("A")),
                source=one_line(rec.field("B")),
            )
        )
    return docs


def load_queries(path: Path, ids: QueryIds) -> list[Query]:
    """Queries from a SMART file: the ``.W`` text (``.T`` when a query has no ``.W``)."""
    queries = []
    for ordinal, rec in enumerate(_read_records(path), start=1):
        text = one_line(rec.field("W") or rec.field("T"))
        key = str(ordinal) if ids is QueryIds.ORDINAL else _norm_label(rec.label)
        queries.append(Query(key=key, label=rec.label, text=text))
    return queries


def _norm_label(label: str) -> str:
    """``001`` and ``1`` name the same query: labels compare as numbers when they are."""
    return str(int(label)) if label.isdigit() else label


def gain_of(grade: int | None, gains: Gains) -> int:
    """The nDCG gain of one judgment (see ``Gains``); raises ValueError on an unknown grade."""
    if gains is Gains.BINARY:
        return 0 if grade is not None and grade < 0 else 1
    if grade is None:
        raise ValueError("a judgment has no grade column; use --gains binary")
    if gains is Gains.GRADED:
        return max(grade, 0)
    if grade in (1, 2, 3, 4):
        return 5 - grade
    if grade in (-1, 5):
        return 0
    raise ValueError(f"grade {grade} is not a Cranfield grade (-1, 1..5)")


def parse_judgment(line: str) -> tuple[str, str, int | None] | None:
    """(query, document, grade) of one judgments line, or None for a blank line.

    Accepted: ``q d`` (no grade), ``q d grade`` (Cranfield), ``q d x y`` (CISI/CACM,
    the third column taken as the grade) and TREC's ``q Q0 d grade`` when the second
    column is literally ``Q0``.
    """
    cols = line.split()
    if not cols:
        return None
    if len(cols) >= 4 and cols[1].upper() == "Q0":
        return _norm_label(cols[0]), cols[2], int(float(cols[3]))
    if len(cols) < 2:
        raise ValueError(f"judgment line {line!r} has fewer than two columns")
    grade = int(float(cols[2])) if len(cols) >= 3 else None
    return _norm_label(cols[0]), _norm_label(cols[1]), grade


def load_judgments(path: Path, gains: Gains) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """{query key: {document id: gain > 0}} and how often each grade occurs."""
    relevant: dict[str, dict[str, int]] = {}
    grades: dict[str, int] = {}
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parsed = parse_judgment(line)
            if parsed is None:
                continue
            query, doc, grade = parsed
            grades[str(grade)] = grades.get(str(grade), 0) + 1
            gain = gain_of(grade, gains)
            if gain > 0:
                judged = relevant.setdefault(query, {})
                judged[doc] = max(gain, judged.get(doc, 0))
    return relevant, grades


def load_collection(
    docs: Path,
    queries: Path,
    qrels: Path,
    *,
    query_ids: QueryIds = QueryIds.ORDINAL,
    gains: Gains = Gains.CRANFIELD,
    name: str | None = None,
) -> Collection:
    """A whole collection; document ids are normalised like the judgments' (``007`` = 7)."""
    documents = [
        Document(_norm_label(d.doc_id), d.title, d.text, d.authors, d.source)
        for d in load_documents(docs)
    ]
    relevant, grades = load_judgments(qrels, gains)
    return Collection(
        name=name or docs.parent.name,
        documents=documents,
        queries=load_queries(queries, query_ids),
        relevant=relevant,
        grades=grades,
    )
