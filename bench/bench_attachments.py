"""Attachments' text: extraction throughput on real PDFs and generated Office files, and
what a sync costs when attachments are added, renamed and edited.

    python bench/bench_attachments.py                  # the PDFs under /usr/share/doc
    python bench/bench_attachments.py --pdfs ~/papers  # any folder of PDFs

The PDFs are real ones: Debian's documentation packages ship them (``apt-get install
camlidl-doc docbook-xsl-doc-pdf`` puts a 26-page and a 95-page manual under
/usr/share/doc; ``.pdf.gz`` files are unpacked into the bench's vault). Word,
PowerPoint and Excel files are written by their own libraries (python-docx,
python-pptx, openpyxl). Prints:

1. per format, reading in this process (``extract_formats.extract``): files, pages, MB,
   seconds, pages per second and seconds per MB;
2. a vault of those files and 200 notes synced: the first sync (notes, then the
   attachments in worker processes), a rename of a PDF of about 50 pages (nothing read again:
   its text is found by content hash), an edit of one PDF (only it read), a no-op sync.

Measures and prints; never asserts. Figures depend on the machine (say which).
"""

from __future__ import annotations

import argparse
import gzip
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/documents.py writes the Office files


def office_files(folder: Path) -> None:
    """A 30-page Word document, a 40-slide deck and a 5-sheet workbook of 2,000 rows."""
    from tests import documents

    rnd = random.Random(7)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "index",
        "query",
        "vector",
        "chunk",
        "page",
        "slide",
        "sheet",
        "note",
    ]

    def sentence() -> str:
        return " ".join(rnd.choice(words) for _ in range(14)).capitalize() + "."

    folder.mkdir(parents=True, exist_ok=True)
    pages = [[" ".join(sentence() for _ in range(6)) for _ in range(8)] for _ in range(30)]
    (folder / "report.docx").write_bytes(documents.docx(pages))
    slides = [(f"Slide {n}", "\n".join(sentence() for _ in range(5))) for n in range(1, 41)]
    (folder / "deck.pptx").write_bytes(documents.pptx(slides))
    sheets = {
        f"Sheet{s}": [[n, sentence(), rnd.random() * 1000] for n in range(2000)] for s in range(5)
    }
    (folder / "book.xlsx").write_bytes(documents.xlsx(sheets))


def real_pdfs(sources: list[Path], folder: Path) -> list[Path]:
    """The PDFs under ``sources`` copied into ``folder`` (``.pdf.gz`` unpacked)."""
    folder.mkdir(parents=True, exist_ok=True)
    found: list[Path] = []
    for source in sources:
        for path in sorted(source.rglob("*.pdf*")):
            if path.is_symlink() or not path.is_file():
                continue
            name = path.name.removesuffix(".gz")
            if not name.endswith(".pdf") or (folder / name).exists():
                continue
            data = path.read_bytes()
            (folder / name).write_bytes(gzip.decompress(data) if path.suffix == ".gz" else data)
            found.append(folder / name)
    return found


def per_format(files: list[Path]) -> None:
    from markvault.attachments.extract import limits_of
    from markvault.attachments.formats import extract, format_of
    from markvault.config import AttachmentLimits

    limits = limits_of(AttachmentLimits())
    totals: dict[str, list[float]] = {}
    print("| file | format | pages | MB | s | pages/s | s/MB | status |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for path in files:
        fmt = format_of(path.name)
        if fmt is None:
            continue
        data = path.read_bytes()
        started = time.perf_counter()
        result = extract(data, fmt, limits)
        took = time.perf_counter() - started
        mb = len(data) / 2**20
        pages = len(result.pages)
        row = totals.setdefault(fmt, [0, 0, 0.0, 0.0])
        row[0] += 1
        row[1] += pages
        row[2] += mb
        row[3] += took
        print(
            f"| {path.name} | {fmt} | {pages} | {mb:.2f} | {took:.2f} | {pages / took:.1f} | "
            f"{took / mb:.2f} | {result.status} |"
        )
    print("\n| format | files | pages | MB | s | pages/s | s/MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for fmt, (count, pages, mb, took) in sorted(totals.items()):
        print(
            f"| {fmt} | {count:.0f} | {pages:.0f} | {mb:.2f} | {took:.2f} | "
            f"{pages / took:.1f} | {took / mb:.2f} |"
        )


def syncs(vault_dir: Path, index_dir: Path, pdfs: list[Path]) -> None:
    from markvault.runtime.local_host import open_local

    for n in range(200):
        note = vault_dir / "notes" / f"note-{n:03}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# Note {n}\n\nSome text about topic {n % 17}.\n")
    vault = open_local(vault_dir, index_dir)
    print("\n| step | sync s | attachments read | reused | pages | extraction s | wave s |")
    print("|---|---:|---:|---:|---:|---:|---:|")

    def step(label: str) -> None:
        started = time.perf_counter()
        report = vault.reindex(vectors=False)
        took = time.perf_counter() - started
        a = report.attachments
        print(
            f"| {label} | {took:.2f} | {a.get('extracted', 0)} | {a.get('reused', 0)} | "
            f"{a.get('pages', 0)} | {a.get('extract_seconds', 0):.2f} | {a.get('seconds', 0):.2f} |"
        )

    try:
        step("first sync: 200 notes and the attachments")
        pages = {p: vault.get(p.relative_to(vault_dir).as_posix())["total_pages"] for p in pdfs}
        # The case: the PDF of 50 pages or the next larger one.
        moved = min(pdfs, key=lambda p: (pages[p] < 50, abs(pages[p] - 50))) if pdfs else None
        if moved is not None:
            moved.rename(moved.with_name("renamed-" + moved.name))
            step(f"rename of {moved.name} ({pages[moved]} pages)")
            edited = min((p for p in pdfs if p.exists()), key=lambda p: p.stat().st_size)
            with edited.open("ab") as f:
                f.write(b"\n% an edit: bytes appended after the end\n")
            step(f"edit of {edited.name}")
        step("no change")
    finally:
        vault.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdfs", type=Path, action="append", help="Folders of PDFs.")
    args = parser.parse_args()
    sources = args.pdfs or [Path("/usr/share/doc")]
    with tempfile.TemporaryDirectory(prefix="mv-bench-attach-") as tmp:
        vault_dir = Path(tmp) / "vault"
        pdfs = real_pdfs(sources, vault_dir / "pdfs")
        office_files(vault_dir / "office")
        if not pdfs:
            print("No PDFs found: apt-get install camlidl-doc docbook-xsl-doc-pdf", file=sys.stderr)
        print(f"## Reading in this process ({len(pdfs)} real PDFs, 3 generated Office files)\n")
        per_format([*pdfs, *sorted((vault_dir / "office").iterdir())])
        print("\n## Syncs of a vault with them (attachments read in worker processes)")
        syncs(vault_dir, Path(tmp) / "index", pdfs)
        shutil.rmtree(vault_dir)


if __name__ == "__main__":
    main()
