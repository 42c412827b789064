"""Real document files made for tests: PDFs written by hand (a text layer in Helvetica,
or only a drawing, as a scan has), Office files written by their own libraries."""

from __future__ import annotations

import io
import zipfile


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(pages: list[str], *, text_layer: bool = True) -> bytes:
    """A PDF of ``pages``, each a text of lines drawn in Helvetica; without a
    ``text_layer`` each page is a grey rectangle and nothing else (a scan's look)."""
    objects: list[bytes] = []
    count = len(pages)
    # 1: catalog, 2: pages, 3: font, then per page: page object, content stream
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        if text_layer:
            ops = ["BT /F1 11 Tf 14 TL 72 760 Td"]
            for line in text.split("\n"):
                ops.append(f"({_escape(line)}) Tj T*")
            ops.append("ET")
        else:
            ops = ["0.5 g 72 72 451 698 re f"]
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def encrypted_pdf(pages: list[str], password: str = "s3cret-pass") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(pdf(pages))).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx(paragraphs_by_page: list[list[str]], table: list[list[str]] | None = None) -> bytes:
    """A Word document: each page's paragraphs, a page break between pages."""
    import docx as python_docx
    from docx.enum.text import WD_BREAK

    document = python_docx.Document()
    for number, paragraphs in enumerate(paragraphs_by_page):
        for text in paragraphs:
            paragraph = document.add_paragraph(text)
        if number < len(paragraphs_by_page) - 1:
            paragraph.add_run().add_break(WD_BREAK.PAGE)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx(slides: list[tuple[str, str]], notes: dict[int, str] | None = None) -> bytes:
    """A presentation of (title, body) slides, speaker notes by slide number."""
    from pptx import Presentation

    deck = Presentation()
    for number, (title, body) in enumerate(slides, 1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes and number in notes:
            slide.notes_slide.notes_text_frame.text = notes[number]
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def zip_bomb(unpacked_bytes: int) -> bytes:
    """A .docx in name: a zip whose one member unpacks to ``unpacked_bytes`` of zeros
    (written a megabyte at a time; the archive is a few megabytes at most)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * 2**20
            for _ in range(unpacked_bytes // len(block)):
                member.write(block)
    return out.getvalue()


def epub(chapters: list[tuple[str, str]]) -> bytes:
    """An EPUB of (title, paragraph) chapters."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
            for i in range(len(chapters))
        )
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        archive.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
            f'version="3.0"><manifest>{items}</manifest><spine>{spine}</spine></package>',
        )
        for i, (title, text) in enumerate(chapters):
            archive.writestr(
                f"OEBPS/c{i}.xhtml",
                f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
                f"<p>{text}</p></body></html>",
            )
    return out.getvalue()


def heavy_docx(paragraphs: int) -> bytes:
    """A valid Word document of ``paragraphs`` short paragraphs, written as raw XML: a
    small file whose parsed tree takes hundreds of megabytes."""
    main = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/'
            '2006/content-types"><Override PartName="/word/document.xml" ContentType='
            '"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"'
            "/></Types>",
        )
        archive.writestr(
            "_rels/.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
            'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
            "openxmlformats.org/officeDocument/2006/relationships/officeDocument"
            '" Target="word/document.xml"/></Relationships>',
        )
        body = "<w:p><w:r><w:t>word word word</w:t></w:r></w:p>" * paragraphs
        archive.writestr(
            "word/document.xml",
            f'<?xml version="1.0"?><w:document xmlns:w="{main}"><w:body>{body}'
            "</w:body></w:document>",
        )
    return out.getvalue()
