"""Attachments' text: which files have text markvault can read, and one extractor per
format. Pure: bytes in, an ``Extracted`` out; run in a worker process with a budget
(``extract.py``), never in a process that holds the index.

Each extractor splits the text where its format has places a reader can be sent to: a
PDF's pages, a presentation's slides, a workbook's sheets, a Word document's pages (at
its page breaks), an EPUB's chapters; an HTML page is one page. What a format cannot
give is said, not hidden: a PDF without a text layer (a scan) is ``no_text``, an
encrypted or broken file ``failed`` with the reason.

The libraries, all permissively licensed: pypdfium2 for PDFs (Google's PDFium in the
wheel; BSD-3/Apache-2.0), which read Debian's documentation PDFs 10-70x faster than
pypdf (BSD) and pdfminer.six (MIT, ~3x slower than pypdf) with the same text (PyMuPDF is
AGPL: not an option); python-docx, python-pptx and openpyxl for Office files (MIT); the
standard library for HTML and EPUB. See bench/bench_attachments.py.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from posixpath import dirname, join, normpath
from typing import Any

# Light at import (a sync asks ``format_of`` of every attachment): the parsers, zipfile
# and the libraries are imported by the extractors, in the workers.

# Suffix -> (format, what its parts are called). The one list of what is extracted.
FORMATS: dict[str, tuple[str, str]] = {
    ".pdf": ("pdf", "Page"),
    ".docx": ("docx", "Page"),
    ".pptx": ("pptx", "Slide"),
    ".xlsx": ("xlsx", "Sheet"),
    ".html": ("html", "Page"),
    ".htm": ("html", "Page"),
    ".epub": ("epub", "Chapter"),
}
# Formats packed as zip archives: their members' sizes are checked before anything is
# unpacked (a "zip bomb" posing as a .docx unpacks to gigabytes).
ZIPPED = frozenset({"docx", "pptx", "xlsx", "epub"})
MEMORY_REASON = "needs more memory than one attachment may take to read"
EXTRACTOR_VERSION = "1"  # bumped when an extractor's output changes: cached text is redone


def format_of(path: str) -> str | None:
    """The format of a file markvault extracts text from, by its name; None otherwise."""
    dot = path.rfind(".")
    if dot < 0:
        return None
    found = FORMATS.get(path[dot:].lower())
    return found[0] if found else None


def unit_of(fmt: str) -> str:
    """What a format's parts are called ("Page", "Slide", ...)."""
    return next(unit for f, unit in FORMATS.values() if f == fmt)


@dataclass(frozen=True)
class Limits:
    """What one file's extraction may take (``config.AttachmentLimits`` as plain values,
    which pickle to a worker)."""

    max_bytes: int
    max_pages: int
    max_chars: int
    max_unpacked_bytes: int


@dataclass
class Extracted:
    """One file's text by part. ``status``: "text", "no_text" (nothing readable: a
    scan, an empty file) or "failed"; ``reason`` says why for the last two, and what was
    left out when a limit cut a file short (its status is then still "text")."""

    format: str
    status: str
    pages: list[tuple[int, str, str]] = field(default_factory=list)  # (number, label, text)
    total_pages: int = 0
    reason: str | None = None
    seconds: float = 0.0  # what reading it took

    @property
    def chars(self) -> int:
        return sum(len(p[2]) for p in self.pages)


class ExtractError(Exception):
    """A file that cannot be read as its format says; the message is the reason."""


def extract(data: bytes, fmt: str, limits: Limits) -> Extracted:
    """The text of a file of format ``fmt``; never raises for a bad file (the reason is
    in the result)."""
    if len(data) > limits.max_bytes:
        return Extracted(fmt, "failed", reason=too_large_reason(len(data), limits.max_bytes))
    try:
        if fmt in ZIPPED:
            _check_zip(data, limits)
        result = _EXTRACTORS[fmt](data, limits)
    except ExtractError as exc:
        return Extracted(fmt, "failed", reason=str(exc))
    except MemoryError:
        return Extracted(fmt, "failed", reason=MEMORY_REASON)
    except RecursionError:
        return Extracted(fmt, "failed", reason="nested too deeply to read (a damaged file?)")
    except Exception as exc:  # a library's own complaint about a broken file
        return Extracted(fmt, "failed", reason=f"cannot be read: {_first_line(exc)}")
    return _finished(result, limits)


def _finished(result: Extracted, limits: Limits) -> Extracted:
    """Whitespace tidied, empty parts dropped, the character limit applied, and a file
    with no text at all said to be so."""
    pages: list[tuple[int, str, str]] = []
    chars = 0
    cut = False
    for number, label, text in result.pages:
        text = _tidy(text)
        if not text:
            continue
        if chars + len(text) > limits.max_chars:
            text = text[: max(0, limits.max_chars - chars)]
            cut = True
        pages.append((number, label, text))
        chars += len(text)
        if cut:
            break
    result.pages = pages
    if cut:
        note = f"only the first {limits.max_chars:,} characters are indexed"
        result.reason = f"{result.reason}; {note}" if result.reason else note
    if not pages and result.status == "text":
        result.status = "no_text"
        if result.reason is None:
            result.reason = "no text in it"
    return result


_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def _tidy(text: str) -> str:
    text = text.replace("\x00", "")
    text = "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()


def too_large_reason(size: int, limit: int) -> str:
    return f"{size / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB limit for attachments"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n", 1)[0][:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _check_zip(data: bytes, limits: Limits) -> None:
    """Refuse a zip whose members would unpack past the limit, before unpacking any.
    zipfile stops each member at its declared size, so a lying header cannot get past."""
    import zipfile

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ExtractError(f"not a valid zip archive (corrupt or truncated): {exc}") from None
    infos = archive.infolist()
    total = sum(i.file_size for i in infos)
    if total > limits.max_unpacked_bytes:
        raise ExtractError(
            f"would unpack to {total / 2**20:.0f} MiB, over the "
            f"{limits.max_unpacked_bytes / 2**20:.0f} MiB limit (a zip bomb?)"
        )
    if len(infos) > 100_000:
        raise ExtractError(f"holds {len(infos):,} files (a zip bomb?)")


# ---- PDF --------------------------------------------------------------------------------


def _pdf(data: bytes, limits: Limits) -> Extracted:
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():  # one locked against editing only opens
            raise ExtractError("encrypted: it needs a password to open") from None
        raise ExtractError(f"not a readable PDF (corrupt or truncated): {exc}") from None
    try:
        total = len(document)
        result = Extracted("pdf", "text", total_pages=total)
        for number in range(1, min(total, limits.max_pages) + 1):
            try:
                page = document[number - 1]
                textpage = page.get_textpage()
                text = textpage.get_text_range()
                textpage.close()
                page.close()
            except pdfium.PdfiumError as exc:  # one damaged page: the others are read
                text = ""
                result.reason = f"page {number} could not be read: {exc}"
            # PDFium marks a word hyphenated across lines with U+FFFE, and ends lines
            # with CR LF.
            text = text.replace("\ufffe\r\n", "").replace("\ufffe", "").replace("\r\n", "\n")
            result.pages.append((number, f"Page {number}", text))
    finally:
        document.close()
    if total > limits.max_pages:
        result.reason = (
            f"{total:,} pages: only the first {limits.max_pages:,} are indexed "
            "(the limit for one attachment)"
        )
    if not any(p[2].strip() for p in result.pages) and total:
        result.status = "no_text"
        result.reason = (
            f"no text layer in its {total:,} page(s) (a scan or images?); "
            "OCR is not supported: store a text version beside it"
        )
    return result


# ---- Office ------------------------------------------------------------------------------


def _docx(data: bytes, limits: Limits) -> Extracted:
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:
        raise ExtractError(f"not a readable Word document: {_first_line(exc)}") from None
    pages: list[list[str]] = [[]]

    def new_page() -> None:
        if pages[-1]:
            pages.append([])

    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                cells = [c.text.strip() for c in row.cells]
                pages[-1].append(" | ".join(_unique(cells)))
            continue
        pages[-1].append(block.text)
        # A hard break, or where Word last laid a page out: the page ends here.
        if block.contains_page_break or block._p.xpath(".//w:br[@w:type='page']"):
            new_page()
    kept = pages[: limits.max_pages]
    result = Extracted(
        "docx",
        "text",
        [(n, f"Page {n}", "\n".join(lines)) for n, lines in enumerate(kept, 1)],
        len(pages),
    )
    if len(pages) > limits.max_pages:
        result.reason = f"{len(pages):,} pages: only the first {limits.max_pages:,} are indexed"
    return result


def _unique(cells: list[str]) -> list[str]:
    """A row's cells, merged cells (repeated by python-docx) once."""
    out: list[str] = []
    for cell in cells:
        if not out or out[-1] != cell:
            out.append(cell)
    return out


def _pptx(data: bytes, limits: Limits) -> Extracted:
    from pptx import Presentation

    try:
        deck = Presentation(io.BytesIO(data))
    except Exception as exc:
        raise ExtractError(f"not a readable PowerPoint file: {_first_line(exc)}") from None
    slides = list(deck.slides)
    result = Extracted("pptx", "text", total_pages=len(slides))
    for number, slide in enumerate(slides[: limits.max_pages], 1):
        lines: list[str] = []
        for shape in slide.shapes:
            lines += _shape_text(shape)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                lines += ["Notes:", notes.text]
        result.pages.append((number, f"Slide {number}", "\n".join(lines)))
    if len(slides) > limits.max_pages:
        result.reason = f"{len(slides):,} slides: only the first {limits.max_pages:,} are indexed"
    return result


def _shape_text(shape: object) -> list[str]:
    lines: list[str] = []
    if getattr(shape, "has_text_frame", False):
        lines.append(shape.text_frame.text)  # type: ignore[attr-defined]
    if getattr(shape, "has_table", False):
        for row in shape.table.rows:  # type: ignore[attr-defined]
            lines.append(" | ".join(c.text for c in row.cells))
    for inner in getattr(shape, "shapes", ()):  # a group
        lines += _shape_text(inner)
    return lines


def _xlsx(data: bytes, limits: Limits) -> Extracted:
    from openpyxl import load_workbook

    try:
        book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:
        raise ExtractError(f"not a readable Excel workbook: {_first_line(exc)}") from None
    try:
        sheets = book.worksheets
        result = Extracted("xlsx", "text", total_pages=len(sheets))
        for number, sheet in enumerate(sheets[: limits.max_pages], 1):
            lines: list[str] = []
            chars = 0
            for row in sheet.iter_rows(values_only=True):
                cells = ["" if v is None else str(v) for v in row]
                while cells and not cells[-1]:
                    cells.pop()
                if cells:
                    line = " | ".join(cells)
                    lines.append(line)
                    chars += len(line)
                    if chars > limits.max_chars:  # the rest would be cut anyway
                        break
            result.pages.append((number, f"Sheet {sheet.title}", "\n".join(lines)))
    finally:
        book.close()
    return result


# ---- HTML and EPUB --------------------------------------------------------------------------


@functools.cache
def _html_parser() -> Any:
    """The class that reads an HTML page's visible text (html.parser imported once)."""
    from html.parser import HTMLParser

    class _HTMLText(HTMLParser):
        """The visible text of an HTML page, a line per block; its title."""

        _SKIP = frozenset({"script", "style", "template", "noscript", "svg", "head"})
        _BLOCK = frozenset(
            {
                *("p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6"),
                *("section", "article", "header", "footer", "pre", "blockquote", "table"),
                *("ul", "ol", "dt", "dd", "figcaption", "hr"),
            }
        )

        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.title = ""
            self._skipping = 0
            self._in_title = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "title":
                self._in_title = True
            elif tag in self._SKIP:
                self._skipping += 1
            elif tag in self._BLOCK:
                self.parts.append("\n")
            elif tag in ("td", "th"):
                self.parts.append(" | ")

        def handle_endtag(self, tag: str) -> None:
            if tag == "title":
                self._in_title = False
            elif tag in self._SKIP:
                self._skipping = max(0, self._skipping - 1)
            elif tag in self._BLOCK:
                self.parts.append("\n")

        def handle_data(self, data: str) -> None:
            if self._in_title:
                self.title += data
            elif not self._skipping:
                self.parts.append(data)

        def text(self) -> str:
            return "".join(self.parts)

    return _HTMLText


def html_text(markup: str) -> tuple[str, str]:
    """(visible text, title) of an HTML page."""
    parser = _html_parser()()
    parser.feed(markup)
    parser.close()
    return parser.text(), parser.title.strip()


def _decode(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", "replace")
    head = data[:2048].decode("ascii", "replace").lower()
    found = re.search(r"charset=[\"']?([a-z0-9_\-]+)", head)
    try:
        return data.decode(found.group(1) if found else "utf-8")
    except (LookupError, UnicodeDecodeError):
        return data.decode("utf-8", "replace")


def _html(data: bytes, limits: Limits) -> Extracted:
    text, _ = html_text(_decode(data))
    return Extracted("html", "text", [(1, "Page 1", text)], 1)


def _epub(data: bytes, limits: Limits) -> Extracted:
    import zipfile
    from xml.etree import ElementTree

    archive = zipfile.ZipFile(io.BytesIO(data))
    try:
        container = ElementTree.fromstring(archive.read("META-INF/container.xml"))
        rootfile = next(e for e in container.iter() if e.tag.endswith("rootfile"))
        opf_path = rootfile.attrib["full-path"]
        opf = ElementTree.fromstring(archive.read(opf_path))
    except (KeyError, StopIteration, ElementTree.ParseError) as exc:
        raise ExtractError(f"not a readable EPUB (no package document): {exc}") from None
    items = {
        e.attrib.get("id"): e.attrib.get("href", "")
        for e in opf.iter()
        if e.tag.endswith("}item") or e.tag == "item"
    }
    spine = [e.attrib.get("idref") for e in opf.iter() if e.tag.endswith("itemref")]
    chapters = [items[i] for i in spine if i in items]
    result = Extracted("epub", "text", total_pages=len(chapters))
    base = dirname(opf_path)
    for number, href in enumerate(chapters[: limits.max_pages], 1):
        try:
            markup = archive.read(normpath(join(base, href.split("#")[0])))
        except KeyError:
            continue
        text, _ = html_text(_decode(markup))
        result.pages.append((number, f"Chapter {number}", text))
    if len(chapters) > limits.max_pages:
        result.reason = (
            f"{len(chapters):,} chapters: only the first {limits.max_pages:,} are indexed"
        )
    return result


_EXTRACTORS: dict[str, Callable[[bytes, Limits], Extracted]] = {
    "pdf": _pdf,
    "docx": _docx,
    "pptx": _pptx,
    "xlsx": _xlsx,
    "html": _html,
    "epub": _epub,
}
assert set(_EXTRACTORS) == {f for f, _ in FORMATS.values()}
