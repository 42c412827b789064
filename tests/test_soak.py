"""The short version of issue 15's soak (bench/bench_soak.py runs it for 60 s): stdio and
HTTP MCP clients, an editor and `vault watch` writing and searching one vault at once,
while the index folder is deleted and then its file overwritten in place (issue 31);
nothing acknowledged may be lost, doubled, mixed or missing from the index."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # bench/ is not installed
    sys.path.insert(0, str(REPO))

from bench.bench_soak import Stats, check_files, soak, word  # noqa: E402


def test_a_short_soak_loses_nothing(tmp_path: Path) -> None:
    result = soak(tmp_path, seconds=8, stdio=2, http=2, notes=50)
    assert result["problems"] == []
    writes = result["writes"]
    assert writes["MCP create_note"] >= 4 and writes["MCP edit_note"] >= 4, writes
    assert writes["editor save"] >= 10 and result["searches"] >= 4, result
    assert set(result["errors"]) <= {"conflict (re-read, retried)"}, result["errors"]
    assert result["unknown_outcome"] == 0
    assert len(result["vandal"]) == 2, result["vandal"]  # deleted, then overwritten


def test_the_checks_see_a_lost_a_doubled_and_a_stranger_word(tmp_path: Path) -> None:
    stats = Stats(seconds=1)
    words = [word(n) for n in range(1, 5)]
    stats.acked = {"notes/a.md": words[:2], "notes/b.md": words[2:]}
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/a.md").write_text(f"---\nid: a\n---\n{words[0]}\n{words[3]}\n")
    (tmp_path / "notes/b.md").write_text(f"# B\n{words[2]} {words[2]} {words[3]}\n")
    assert check_files(tmp_path, stats) == [
        f"notes/a.md: {words[1]} found 0 times",
        f"notes/a.md: holds other writers' words ['{words[3]}']",
        f"notes/b.md: {words[2]} found 2 times",
        "notes/b.md: frontmatter lost (truncated?)",
    ]
