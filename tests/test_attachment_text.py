"""Attachments' text in the index: PDFs, Word, PowerPoint, Excel, HTML and EPUB files
are searched and read by page like notes, their text kept by content hash (a rename
reads nothing), bad files listed with a reason within their budget, and store_document
takes them through the same trust boundary. The files are real, made by hand (PDFs) or
by the Office formats' own libraries (tests/documents.py)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from markvault import Vault
from markvault.attachments.extract import Extractor, Job, read_one
from markvault.attachments.formats import Extracted, format_of
from markvault.config import AttachmentLimits, Settings
from markvault.errors import RefusedError
from markvault.files.vault_files import content_hash
from markvault.runtime.local_host import local_vault
from markvault.types.search import Filters, SearchRequest

from . import documents
from .conftest import WriteNotes, checksums
from .test_watching import Watching, found, watching  # noqa: F401 (the fixture)

# A word found only inside one attachment, on one page of it: (file, page, word, label).
FILES: dict[str, tuple[Callable[[], bytes], int, str, str]] = {
    "papers/report.pdf": (
        lambda: documents.pdf(
            [
                "Quarterly report, introduction.",
                "The zanzibarite reactor is described here.",
                "End.",
            ]
        ),
        2,
        "zanzibarite",
        "Page 2",
    ),
    "docs/manual.docx": (
        lambda: documents.docx(
            [["Setup steps for the manual."], ["Then calibrate the quokkameter."]]
        ),
        2,
        "quokkameter",
        "Page 2",
    ),
    "slides/kickoff.pptx": (
        lambda: documents.pptx(
            [("Kickoff", "agenda and goals"), ("Risks", "supply chain")],
            notes={2: "mention the pangolinoid vendor"},
        ),
        2,
        "pangolinoid",
        "Slide 2",
    ),
    "sheets/budget.xlsx": (
        lambda: documents.xlsx({"Summary": [["total", 10]], "Lines": [["tapirwood", 3]]}),
        2,
        "tapirwood",
        "Sheet Lines",
    ),
    "web/page.html": (
        lambda: (
            b"<html><head><title>T</title><script>var marmosetic = 1;</script></head>"
            b"<body><h1>Saved page</h1><p>The ocelotine method.</p></body></html>"
        ),
        1,
        "ocelotine",
        "Page 1",
    ),
    "books/novel.epub": (
        lambda: documents.epub(
            [("Opening", "It was a dark night."), ("Two", "The axolotlish end.")]
        ),
        2,
        "axolotlish",
        "Chapter 2",
    ),
}
NOTE = {"notes/index.md": "# Index\n\nThe [[report.pdf]] and the [[manual.docx]].\n"}


def settings_for(vault_dir: Path, **limits: object) -> Settings:
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    return dataclasses.replace(settings, attachments=AttachmentLimits(**limits))  # type: ignore[arg-type]


@pytest.fixture
def open_with(vault_dir: Path) -> Iterator[Callable[..., Vault]]:
    """A vault of this process whose attachment limits the test sets."""
    opened: list[Vault] = []

    def _open(settings: Settings | None = None, **limits: object) -> Vault:
        v = local_vault(settings or settings_for(vault_dir, **limits))
        opened.append(v)
        return v

    yield _open
    for v in opened:
        v.close()


@pytest.fixture
def library(write: WriteNotes) -> Path:
    return write({**NOTE, **{path: make() for path, (make, _, _, _) in FILES.items()}})


def test_a_word_only_in_an_attachment_is_found_with_its_page_and_get_reads_that_page(
    library: Path, open_with: Callable[..., Vault]
) -> None:
    before = checksums(library)
    v = open_with()
    report = v.reindex(vectors=False)
    assert report.attachments["indexed"] == len(FILES) and report.attachments["not_read"] == 0
    assert checksums(library) == before  # nothing written into the vault, nothing beside
    for path, (_, page, word, label) in FILES.items():
        hits = v.search(SearchRequest(word, mode="keyword")).hits
        assert [h.path for h in hits] == [path], word
        hit = hits[0]
        assert (hit.kind, hit.type, hit.page, hit.heading_path) == (
            "attachment",
            format_of(path),
            page,
            [label],
        )
        assert hit.uri == f"vault://note/{path}#page={page}"
        assert hit.to_json()["page"] == page
        view = v.get(hit.uri)
        assert view["pages"] == [page, page] and word in view["text"], path
        assert view["text"].startswith(f"## {label}\n")
        others = v.get(path)  # the whole file: every page, this one among them
        assert word in others["text"] and others["total_pages"] >= page
        chunk = v.get(f"#{hit.chunk_id}")
        assert chunk["page"] == page and word in chunk["text"]
    assert "marmosetic" not in v.get("web/page.html")["text"]  # scripts are not text
    # Notes stay notes: counted apart, links to the files resolve as before.
    info = v.index_status()
    assert info["notes"] == 1 and info["attachments"]["extracted"] == len(FILES)
    assert info["unresolved_links"] == 0 and info["links_to_files"] == 2


def test_filters_keep_or_drop_attachments_and_pick_formats(
    write: WriteNotes, open_with: Callable[..., Vault]
) -> None:
    write(
        {
            "notes/a.md": "# Alpha\n\nThe heliograph signal.\n",
            "a.pdf": documents.pdf(["heliograph in a PDF"]),
            "a.docx": documents.docx([["heliograph in Word"]]),
        }
    )
    v = open_with()
    v.reindex(vectors=False)

    def paths(**filters: object) -> set[str]:
        found = v.search(SearchRequest("heliograph", mode="keyword", filters=Filters(**filters)))  # type: ignore[arg-type]
        return {h.path for h in found.hits}

    assert paths() == {"notes/a.md", "a.pdf", "a.docx"}
    assert paths(attachments="exclude") == {"notes/a.md"}
    assert paths(attachments="only") == {"a.pdf", "a.docx"}
    assert paths(types=["pdf"]) == {"a.pdf"}
    assert paths(kinds=["attachment"], types=["docx"]) == {"a.docx"}


def test_a_long_attachment_is_read_page_by_page_under_the_size_limit(
    write: WriteNotes, open_with: Callable[..., Vault]
) -> None:
    pages = [f"Page {n} text. " + ("filler words here " * 40) for n in range(1, 11)]
    write(
        {
            "long.pdf": documents.pdf(
                ["\n".join(p[i : i + 90] for i in range(0, len(p), 90)) for p in pages]
            )
        }
    )
    v = open_with()
    v.reindex(vectors=False)
    seen: list[int] = []
    view = v.get("long.pdf", max_chars=2000)
    while True:
        assert len(view["text"]) <= 2000
        first, last = view["pages"]
        seen += range(first, last + 1)
        if view["next_pages"] is None:
            break
        start, end = (int(x) for x in view["next_pages"].split(":"))
        view = v.get(f"long.pdf#page={start}-{end}", max_chars=2000)
    assert seen == list(range(1, 11))
    with pytest.raises(Exception, match="Bad page range"):
        v.get("long.pdf#page=5-2")


def test_a_rename_reads_nothing_and_an_edit_reads_only_that_file(
    write: WriteNotes, open_with: Callable[..., Vault], vault_dir: Path
) -> None:
    big = documents.pdf([f"Page {n}: chapter about subject {n}" for n in range(1, 51)])
    write({"a/big.pdf": big, "b/other.pdf": documents.pdf(["another file"])})
    v = open_with()
    assert v.reindex(vectors=False).attachments["extracted"] == 2

    (vault_dir / "a/big.pdf").rename(vault_dir / "a/renamed.pdf")
    moved = v.reindex(vectors=False).attachments
    assert (moved["extracted"], moved["reused"], moved["removed"]) == (0, 1, 1)
    assert [h.path for h in v.search(SearchRequest("subject", mode="keyword")).hits] == [
        "a/renamed.pdf"
    ]

    (vault_dir / "copy.pdf").write_bytes(big)  # a copy: its text is there already
    assert v.reindex(vectors=False).attachments["extracted"] == 0

    (vault_dir / "b/other.pdf").write_bytes(documents.pdf(["another file, edited: xylophone"]))
    edited = v.reindex(vectors=False).attachments
    assert (edited["extracted"], edited["indexed"]) == (1, 1)
    assert [h.path for h in v.search(SearchRequest("xylophone", mode="keyword")).hits] == [
        "b/other.pdf"
    ]

    (vault_dir / "copy.pdf").unlink()
    assert v.reindex(vectors=False).attachments["removed"] == 1
    assert v.index_status()["attachments"]["total"] == 2


def test_every_bad_file_is_listed_with_its_reason_and_the_rest_is_indexed(
    write: WriteNotes, open_with: Callable[..., Vault]
) -> None:
    write(
        {
            "notes/n.md": "# Note\n\nThe wombat note.\n",
            "good.pdf": documents.pdf(["a wombat in a good PDF"]),
            "locked.pdf": documents.encrypted_pdf(["secret wombat"]),
            "cut.pdf": documents.pdf(["wombat"] * 5)[:400],
            "scan.pdf": documents.pdf(["x", "y"], text_layer=False),
            "bomb.docx": documents.zip_bomb(48 * 2**20),
            "fake.xlsx": b"PK\x03\x04 not really a workbook",
            "thick.pdf": documents.pdf([f"page {n} wombat" for n in range(1, 2001)]),
            "empty.pptx": b"",
        }
    )
    v = open_with(max_unpacked_bytes=32 * 2**20, max_pages=100)
    report = v.reindex(vectors=False)
    status = v.index_status()
    reasons = {p["path"]: p["reason"] for p in status["attachments"]["not_read"]}
    assert "password" in reasons["locked.pdf"]
    assert "corrupt or truncated" in reasons["cut.pdf"]
    assert "no text layer" in reasons["scan.pdf"] and "OCR" in reasons["scan.pdf"]
    assert "zip bomb" in reasons["bomb.docx"]
    assert "zip" in reasons["fake.xlsx"] and "zip" in reasons["empty.pptx"]
    assert status["attachments"]["without_text"] == 1 and status["attachments"]["failed"] == 5
    # A file cut short by a limit is read as far as the limit, and says so.
    problems = {p["path"]: p["problem"] for p in status["problems"]}
    assert "2,000 pages: only the first 100" in problems["thick.pdf"]
    assert set(problems) == {*reasons, "thick.pdf"}
    assert {w["path"] for w in report.warnings} == set(problems)
    # The rest is indexed, and a file without text is still found by its name.
    found = {h.path for h in v.search(SearchRequest("wombat", mode="keyword", limit=20)).hits}
    assert found == {"notes/n.md", "good.pdf", "thick.pdf"}
    assert [h.path for h in v.search(SearchRequest("scan", mode="keyword")).hits] == ["scan.pdf"]
    # Known bad files are not read again until they change.
    assert v.reindex(vectors=False).attachments == {}


def test_a_file_that_takes_too_long_is_stopped_at_its_budget(
    write: WriteNotes, open_with: Callable[..., Vault]
) -> None:
    write(
        {
            "notes/n.md": "# Note\n\nThe kestrel note.\n",
            "slow.pdf": documents.pdf([f"page {n} kestrel " * 20 for n in range(1, 3001)]),
            "quick.html": b"<p>a kestrel page</p>",
        }
    )
    v = open_with(seconds=0.2, max_pages=100_000)
    started = time.monotonic()
    report = v.reindex(vectors=False)
    took = time.monotonic() - started
    assert took < 30  # the budget, a worker's start and the rest of the sync
    reasons = {p["path"]: p["reason"] for p in v.index_status()["attachments"]["not_read"]}
    assert reasons == {"slow.pdf": reasons["slow.pdf"]}
    assert "took over 0.2 s" in reasons["slow.pdf"]
    assert report.attachments["not_read"] == 1
    assert {h.path for h in v.search(SearchRequest("kestrel", mode="keyword")).hits} == {
        "notes/n.md",
        "quick.html",
    }


def test_a_file_renamed_or_changed_while_it_is_read_is_retried(tmp_path: Path) -> None:
    data = documents.pdf(["moving target"])
    path = tmp_path / "x.pdf"
    path.write_bytes(data)
    limits = AttachmentLimits()
    gone = Job("x.pdf", str(tmp_path / "gone.pdf"), "pdf", content_hash(data))
    changed = Job("x.pdf", str(path), "pdf", content_hash(b"what the sync read before"))
    fine = Job("x.pdf", str(path), "pdf", content_hash(data))
    with Extractor(limits) as extractor:
        outcomes = {j.full + j.hash: (o, v) for j, o, v in extractor.run([gone, changed, fine])}
    assert outcomes[gone.full + gone.hash][0] == "retry"
    assert "gone while being read" in outcomes[gone.full + gone.hash][1]
    assert outcomes[changed.full + changed.hash] == (
        "retry",
        "x.pdf: changed while being read; will retry",
    )
    outcome, value = outcomes[fine.full + fine.hash]
    assert (
        outcome == "done" and isinstance(value, Extracted) and value.pages[0][2] == "moving target"
    )
    # The same rules where no worker runs.
    from markvault.attachments.extract import limits_of

    assert read_one(gone, limits_of(limits))[0] == "retry"


def test_an_oversized_file_is_listed_unread(
    write: WriteNotes, open_with: Callable[..., Vault]
) -> None:
    write({"huge.pdf": documents.pdf(["big " * 2000])})
    v = open_with(max_bytes=1000)
    v.reindex(vectors=False)
    (problem,) = v.index_status()["attachments"]["not_read"]
    assert (
        "over the 0 MiB limit" in problem["reason"] or "limit for attachments" in problem["reason"]
    )


def test_note_tools_refuse_attachments(library: Path, open_with: Callable[..., Vault]) -> None:
    v = open_with()
    v.reindex(vectors=False)
    digest = v.get("papers/report.pdf")["hash"]
    for change in (
        lambda: v.edit_note("papers/report.pdf", [], digest),
        lambda: v.move_note("papers/report.pdf", "x.md", digest),
        lambda: v.delete_note("papers/report.pdf", digest),
    ):
        with pytest.raises(RefusedError, match="is an attachment"):
            change()
    assert (library / "papers/report.pdf").exists()


def test_turned_off_nothing_is_read(library: Path, open_with: Callable[..., Vault]) -> None:
    v = open_with(enabled=False)
    report = v.reindex(vectors=False)
    assert report.attachments == {} and v.index_status()["attachments"]["total"] == 0
    assert v.search(SearchRequest("zanzibarite", mode="keyword")).hits == []


# ---- store_document ----------------------------------------------------------------------


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / ".private").mkdir(parents=True)
    (folder / "paper.pdf").write_bytes(documents.pdf(["Abstract.", "The gryphonite result."]))
    (folder / ".private" / "hidden.pdf").write_bytes(documents.pdf(["hidden gryphonite"]))
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (folder / "keys.pdf").write_bytes(documents.pdf([f"deploy token {token}"]))
    return folder


def test_store_document_keeps_a_pdf_and_makes_it_searchable(
    docs: Path, vault_dir: Path, open_with: Callable[..., Vault]
) -> None:
    settings = dataclasses.replace(settings_for(vault_dir), document_roots=(docs,))
    v = open_with(settings)
    v.reindex(vectors=False)
    stored = v.store_document(str(docs / "paper.pdf"), topic="physics")
    assert stored["path"] == "documents/physics/paper.pdf" and stored["pages"] == 2
    assert (vault_dir / stored["path"]).read_bytes() == (docs / "paper.pdf").read_bytes()
    (hit,) = v.search(SearchRequest("gryphonite", mode="keyword")).hits
    assert (hit.path, hit.page) == (stored["path"], 2)
    # Read once, when stored: the sync found its text by content hash.
    assert v.index_status()["attachments"]["extracted"] == 1

    with pytest.raises(RefusedError, match="hidden"):
        v.store_document(str(docs / ".private" / "hidden.pdf"))
    with pytest.raises(RefusedError, match="credential"):
        v.store_document(str(docs / "keys.pdf"))
    assert sorted(p.name for p in (vault_dir / "documents").rglob("*.pdf")) == ["paper.pdf"]

    note = v.store_document(str(docs / "paper.pdf"), title="Paper as text", as_markdown=True)
    text = (vault_dir / note["path"]).read_text()
    assert note["path"].endswith(".md") and "### Page 2\n\nThe gryphonite result." in text
    redacted = v.store_document(str(docs / "keys.pdf"), as_markdown=True)
    assert redacted["credentials"].startswith("1 credential redacted")
    assert "ghp_" not in (vault_dir / redacted["path"]).read_text()


@pytest.mark.model
def test_an_attachment_is_found_by_meaning(
    write: WriteNotes, vault_dir: Path, encoder_cache: Path
) -> None:
    from markvault.embed.embedder import SentenceEmbedder

    write(
        {
            "notes/bread.md": "# Bread\n\nKnead the dough for ten minutes.\n",
            "manuals/car.pdf": documents.pdf(
                ["Contents.", "When the automobile will not turn over, check the battery."]
            ),
        }
    )
    v = local_vault(settings_for(vault_dir), SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache))
    try:
        v.reindex()
        hit = v.search(SearchRequest("my car won't start in the morning", mode="vector")).hits[0]
        assert (hit.path, hit.page) == ("manuals/car.pdf", 2)
        assert "battery" in v.get(hit.uri)["text"]
    finally:
        v.close()


def test_a_vault_without_attachments_starts_no_worker(
    write: WriteNotes, open_with: Callable[..., Vault]
) -> None:
    write({"a.md": "# A\n", "img.png": b"\x89PNG"})
    v = open_with()
    report = v.reindex(vectors=False)
    assert report.attachments == {}  # no wave ran: nothing to read, nothing removed


def test_what_an_answer_leaves_waiting_is_read_in_the_background(
    library: Path, open_with: Callable[..., Vault]
) -> None:
    import threading

    from markvault.attachments.backfill import backfill_round

    v = open_with(inline_seconds=0.0)
    first = v.refresh()  # as before an answer: notes now, no extraction started
    assert first.notes == 1 and first.attachments["pending"] == len(FILES)
    assert v.search(SearchRequest("zanzibarite", mode="keyword")).hits == []
    assert [h.path for h in v.search(SearchRequest("Index", mode="keyword")).hits] == [
        "notes/index.md"
    ]
    keeper = v.host.core().keeper  # type: ignore[attr-defined]
    assert keeper.attachments_wake.is_set() and len(keeper.attachments_waiting) == len(FILES)
    assert backfill_round(keeper, threading.RLock()) == len(FILES)
    assert not keeper.attachments_waiting
    assert [h.page for h in v.search(SearchRequest("zanzibarite", mode="keyword")).hits] == [2]


@pytest.mark.anyio
async def test_the_mcp_tools_cite_the_page_and_read_it(
    library: Path, open_with: Callable[..., Vault]
) -> None:
    from mcp import Client

    from markvault.server.tools import build_server

    v = open_with()
    v.reindex(vectors=False)
    async with Client(build_server(v)) as client:
        listing = await client.call_tool("search", {"query": "quokkameter", "mode": "keyword"})
        text = listing.content[0].text
        assert "docs/manual.docx" in text and "vault://note/docs/manual.docx#page=2" in text
        read = await client.call_tool("get", {"ref": "vault://note/docs/manual.docx#page=2"})
        assert not read.is_error and "quokkameter" in read.structured_content["text"]
        status = await client.call_tool("status", {})
        assert status.structured_content["attachments"]["extracted"] == len(FILES)


def test_a_pdf_dropped_into_a_watched_vault_is_searchable_and_follows_a_rename(
    watching: Watching,  # noqa: F811 (test_watching's fixture)
    vault_dir: Path,
) -> None:
    watching.until(lambda: found(vault_dir, "apple") == {"notes/a.md"})
    (vault_dir / "papers").mkdir()
    (vault_dir / "papers/new.pdf").write_bytes(documents.pdf(["x", "the dropped ibexian file"]))
    watching.until(lambda: found(vault_dir, "ibexian") == {"papers/new.pdf"}, 180)
    (vault_dir / "papers/new.pdf").rename(vault_dir / "papers/moved.pdf")
    watching.until(lambda: found(vault_dir, "ibexian") == {"papers/moved.pdf"}, 180)


def test_a_file_that_needs_too_much_memory_is_stopped_and_listed(
    write: WriteNotes, open_with: Callable[..., Vault]
) -> None:
    write(
        {
            "heavy.docx": documents.heavy_docx(3_000_000),  # 1 MB, ~160 MB of XML
            "light.docx": documents.docx([["a light heron document"]]),
        }
    )
    v = open_with(memory_bytes=400 * 2**20)
    v.reindex(vectors=False)
    reasons = {p["path"]: p["reason"] for p in v.index_status()["attachments"]["not_read"]}
    # Python's MemoryError says "memory"; libxml2 failing to allocate says less.
    assert reasons.keys() == {"heavy.docx"}, reasons
    assert "memory" in reasons["heavy.docx"] or "XMLSyntaxError" in reasons["heavy.docx"]
    assert [h.path for h in v.search(SearchRequest("heron", mode="keyword")).hits] == ["light.docx"]
