"""The keyword index's postings are the fts extension's: the SQL rebuild (index/keyword.py)
groups the token strings itself, in a fraction of create_fts_index's time and memory, and
is held here to give exactly the rows the extension gives over the same text."""

from __future__ import annotations

from pathlib import Path

from bench.profile_index import differing_from_fts

from markvault.config import Settings
from markvault.index.store import connect
from markvault.runtime.local_host import open_local

from .conftest import WriteNotes

STARTER = Path(__file__).parents[1] / "vault"


def test_the_rebuilt_postings_equal_the_fts_extensions(
    write: WriteNotes, vault_dir: Path, tmp_path: Path
) -> None:
    files = {
        str(p.relative_to(STARTER)): p.read_bytes()
        for p in STARTER.rglob("*.md")
        if ".markvault" not in p.parts
    }
    files["notes/mixed.md"] = (
        "# Straße und Café\n\nΚαλημέρα κόσμε, 東京タワー, naïve café façade; "
        "repeat repeat repeat, l'été d'un wombat.\n\n## Empty section\n\n## Code\n\n"
        "```python\nprint('hi')  # code counts too\n```\n"
    )
    files["notes/blank.md"] = "---\ntitle: only a title\n---\n"
    write(files)
    index = tmp_path / "index"
    with open_local(vault_dir, index) as vault:
        vault.reindex(vectors=False)
    settings = Settings.load(vault=vault_dir, index=index)
    con = connect(settings.db_path, settings, read_only=False)
    try:
        chunks = con.execute("SELECT count(*) FROM postings").fetchone()
        assert chunks is not None and chunks[0] > 100
        assert differing_from_fts(con) == 0
        # One term frequency off by one is two differing rows (each side's).
        con.execute("UPDATE postings SET tf = tf + 1 WHERE rowid = 0")
        assert differing_from_fts(con) == 2
    finally:
        con.close()
