"""Racing writers through the owner, and a checkout that
only changes line endings."""

from __future__ import annotations

import threading
from pathlib import Path

from markvault.config import Settings
from markvault.errors import ConflictError
from markvault.files.atomic import TEMP_PREFIX
from markvault.runtime.shared_host import connect
from markvault.types.edits import Edit

from .conftest import OpenVault, WriteNotes


def race(*jobs: object) -> list[object]:
    """Run callables at the same moment in threads; their results or exceptions."""
    barrier = threading.Barrier(len(jobs))
    results: list[object] = [None] * len(jobs)

    def run(i: int, job: object) -> None:
        barrier.wait()
        try:
            results[i] = job()  # type: ignore[operator]
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, j)) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_two_writers_from_the_same_base_one_wins(write: WriteNotes, vault_dir: Path) -> None:
    """Two servers (the owner and a client) change one note from the same
    hash: exactly one change lands, whole; the other is a conflict; no temp file left."""
    write({"n.md": "# N\n\nbase\n"})
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    with connect(settings) as one, connect(settings) as two:
        assert one.host.owner_info()["this_process_owns"]
        assert not two.host.owner_info()["this_process_owns"]
        base = one.get("n.md")["hash"]
        results = race(
            lambda: one.edit_note("n.md", [Edit("append", "from one")], base),
            lambda: two.edit_note("n.md", [Edit("append", "from two")], base),
        )
        won = [r for r in results if isinstance(r, dict)]
        lost = [r for r in results if isinstance(r, ConflictError)]
        assert len(won) == 1 and len(lost) == 1, results
        text = (vault_dir / "n.md").read_text()
        assert text.count("from one") + text.count("from two") == 1
        assert one.get("n.md")["hash"] == won[0]["hash"]
    assert not list(vault_dir.glob(f"**/{TEMP_PREFIX}*"))


def test_two_creators_of_one_note_one_wins(write: WriteNotes, vault_dir: Path) -> None:
    """Two creators of one note: nothing is overwritten; the second creator gets a conflict."""
    write({"a.md": "apple"})
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    with connect(settings) as one, connect(settings) as two:
        results = race(
            lambda: one.new_note("note", "Same", content="first"),
            lambda: two.new_note("note", "Same", content="second"),
        )
        assert sum(isinstance(r, dict) for r in results) == 1, results
        assert sum(isinstance(r, ConflictError) for r in results) == 1, results
        text = (vault_dir / "notes/Same.md").read_text()
        assert ("first" in text) != ("second" in text)


def test_a_line_ending_checkout_keeps_chunks_and_writes_nothing(
    write: WriteNotes, open_vault: OpenVault, vault_dir: Path
) -> None:
    """A CRLF checkout: git rewriting every file with CRLF changes their bytes, not their
    text: chunks (and so citations and vectors) stay, and markvault rewrites nothing."""
    write({f"n{i}.md": f"# N{i}\n\nwalrus {i}\n\n## More\n\ntext {i}\n" for i in range(20)})
    v = open_vault()
    v.reindex(vectors=False)
    before = {c["chunk_id"] for c in v.get("n3.md")["chunks"]}
    for path in vault_dir.glob("*.md"):
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    converted = {p.name: p.read_bytes() for p in vault_dir.glob("*.md")}
    report = v.reindex(vectors=False)
    assert report.updated == 20 and report.errors == []
    assert {c["chunk_id"] for c in v.get("n3.md")["chunks"]} == before
    assert {p.name: p.read_bytes() for p in vault_dir.glob("*.md")} == converted
    assert v.reindex(vectors=False).updated == 0  # and no churn afterwards
