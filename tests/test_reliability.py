"""Bad input files (alias bombs, code tags, odd frontmatter, BOM and CRLF, binary and
oversized files, conflict markers, many scripts) never crash indexing or lose bytes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from markvault import ConflictError, RefusedError, Vault
from markvault.types.edits import Edit
from markvault.types.search import SearchRequest

from .conftest import OpenVault, WriteNotes, checksums


def hash_of(v: Vault, ref: str) -> str:
    return str(v.get(ref)["hash"])


def test_01_alias_bomb_reported_others_indexed(write: WriteNotes, open_vault: OpenVault) -> None:
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        rows.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    vault = write({"bomb.md": "---\n" + "\n".join(rows) + "\n---\nbody", "ok.md": "fine"})
    before = checksums(vault)
    started = time.perf_counter()
    report = open_vault().reindex(vectors=False)
    assert time.perf_counter() - started < 5
    assert report.notes == 2
    assert any("unsafe" in w["message"] for w in report.warnings if w["path"] == "bomb.md")
    assert checksums(vault) == before


def test_02_python_tags_are_never_executed(
    write: WriteNotes, open_vault: OpenVault, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    write({"evil.md": f'---\nx: !!python/object/apply:os.system ["touch {marker}"]\n---\nbody'})
    v = open_vault()
    report = v.reindex(vectors=False)
    assert any("invalid YAML" in w["message"] for w in report.warnings)
    v.get("evil.md")
    assert not marker.exists()


def test_03_unclosed_fence_is_body_and_editable(write: WriteNotes, open_vault: OpenVault) -> None:
    text = "---\ntitle: never closed\n\nbody words\n"
    vault = write({"open.md": text})
    v = open_vault()
    v.reindex(vectors=False)
    assert v.search(SearchRequest("words", mode="keyword")).hits[0].path == "open.md"
    v.edit_note("open.md", [Edit("append", "more")], hash_of(v, "open.md"))
    assert (vault / "open.md").read_text(encoding="utf-8") == text + "more\n"


@pytest.mark.parametrize("front", ["---\n- a\n- b\n---\n", "---\na scalar\n---\n"])
def test_04_non_mapping_frontmatter(write: WriteNotes, open_vault: OpenVault, front: str) -> None:
    vault = write({"odd.md": front + "text here\n"})
    v = open_vault()
    report = v.reindex(vectors=False)
    assert report.notes == 1
    assert any("not a mapping" in w["message"] for w in report.warnings)
    v.edit_note("odd.md", [Edit("append", "added")], hash_of(v, "odd.md"))
    assert (vault / "odd.md").read_text(encoding="utf-8") == front + "text here\nadded\n"


def test_05_rules_in_body_survive(write: WriteNotes, open_vault: OpenVault) -> None:
    text = "---\nid: r\n---\n# T\n\nabove\n\n---\n\nbelow\n\n***\n\n## End\n\nfin\n"
    vault = write({"rules.md": text})
    v = open_vault()
    v.reindex(vectors=False)
    v.edit_note("r", [Edit("replace_section", "changed", heading="End")], hash_of(v, "r"))
    after = (vault / "rules.md").read_text(encoding="utf-8")
    assert after == text.replace("fin\n", "changed\n")


def test_06_yaml_oddities_read_as_json_and_untouched(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    text = "---\ndate: 2024-01-01\ndraft: no\nid: 0123\nother: 1\n---\nbody\n"
    vault = write({"odd.md": text})
    v = open_vault()
    v.reindex(vectors=False)
    note = v.get("0123")
    assert json.loads(json.dumps(note))["metadata"] == {
        "date": "2024-01-01",
        "draft": "no",
        "id": "0123",
        "other": 1,
    }
    v.edit_note("0123", [Edit("set_key", key="other", value=2)], note["hash"])
    after = (vault / "odd.md").read_text(encoding="utf-8")
    assert after == text.replace("other: 1", "other: 2")


def test_07_bom_crlf_no_final_newline(write: WriteNotes, open_vault: OpenVault) -> None:
    raw = "\ufeff---\r\nid: b\r\n---\r\n# T\r\n\r\nlast".encode()
    vault = write({"b.md": raw})
    v = open_vault()
    v.reindex(vectors=False)
    v.edit_note("b", [Edit("append", "new line")], hash_of(v, "b"))
    assert (vault / "b.md").read_bytes() == raw + b"\r\nnew line"


def test_08_set_one_tag_diff_is_one_line(write: WriteNotes, open_vault: OpenVault) -> None:
    text = (
        "---\n# comment\nzeta: 1\ntitle: \"Quoted\"\ntags: [a]\nunknown: {x: 1}\nalpha: 'q'\n"
        "---\nbody\n"
    )
    vault = write({"t.md": text})
    v = open_vault()
    v.reindex(vectors=False)
    v.edit_note("t.md", [Edit("set_key", key="tags", value=["a", "b"])], hash_of(v, "t.md"))
    before_lines = text.splitlines()
    after_lines = (vault / "t.md").read_text(encoding="utf-8").splitlines()
    diff = [(a, b) for a, b in zip(before_lines, after_lines, strict=True) if a != b]
    assert diff == [("tags: [a]", "tags: [a, b]")]


def test_09_binary_and_invalid_utf8_skipped_and_unwritable(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    vault = write(
        {
            "bin.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
            "latin1.md": "caf\xe9".encode("latin-1"),
            "ok.md": "fine",
        }
    )
    v = open_vault()
    report = v.reindex(vectors=False)
    assert report.notes == 1
    assert {e["path"] for e in report.errors} == {"bin.md", "latin1.md"}
    assert (
        "not valid UTF-8" in next(e for e in report.errors if e["path"] == "latin1.md")["message"]
    )
    with pytest.raises(RefusedError):
        v.host.core().keeper.files.read("latin1.md", v.settings.max_note_bytes)
    again = v.reindex(vectors=False)  # unchanged bad files are not re-read
    assert again.errors == [] and again.notes == 1
    assert (vault / "latin1.md").read_bytes() == "caf\xe9".encode("latin-1")


def test_10_oversized_note_and_frontmatter(write: WriteNotes, open_vault: OpenVault) -> None:
    big_front = (
        "---\n" + "\n".join(f"k{i}: {'x' * 100}" for i in range(11_000)) + "\n---\nsmall body"
    )
    write({"huge.md": "word " * 11_000_000, "bigfm.md": big_front, "ok.md": "fine words"})
    v = open_vault()
    report = v.reindex(vectors=False)
    assert [e["path"] for e in report.errors] == ["huge.md"]
    assert "size limit" in report.errors[0]["message"]
    assert any(
        "frontmatter over" in w["message"] for w in report.warnings if w["path"] == "bigfm.md"
    )
    assert v.search(SearchRequest("small", mode="keyword")).hits[0].path == "bigfm.md"
    assert v.search(SearchRequest("fine", mode="keyword")).hits[0].path == "ok.md"


def test_12_conflict_markers_refuse_writes(write: WriteNotes, open_vault: OpenVault) -> None:
    text = "# N\n\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> other\n"
    vault = write({"c.md": text})
    v = open_vault()
    v.reindex(vectors=False)
    with pytest.raises(RefusedError, match="conflict markers"):
        v.edit_note("c.md", [Edit("append", "x")], hash_of(v, "c.md"))
    assert (vault / "c.md").read_text(encoding="utf-8") == text


def test_stale_hash_is_a_conflict_and_keeps_the_editors_bytes(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    vault = write({"n.md": "v1\n"})
    v = open_vault()
    v.reindex(vectors=False)
    old = hash_of(v, "n.md")
    (vault / "n.md").write_text("v2 from the editor\n", encoding="utf-8")
    with pytest.raises(ConflictError, match="changed since it was read"):
        v.edit_note("n.md", [Edit("append", "agent")], old)
    assert (vault / "n.md").read_text(encoding="utf-8") == "v2 from the editor\n"
    assert not [p for p in vault.iterdir() if p.name.startswith(".mv-tmp")]


def test_writes_are_searchable_at_once(write: WriteNotes, open_vault: OpenVault) -> None:
    write({"n.md": "first\n"})
    v = open_vault()
    v.reindex(vectors=False)
    v.edit_note("n.md", [Edit("append", "zanzibar")], hash_of(v, "n.md"))
    assert [h.path for h in v.search(SearchRequest("zanzibar", mode="keyword")).hits] == ["n.md"]


@pytest.mark.parametrize(
    "rel",
    [
        "../x.md",
        "/etc/passwd",
        "C:\\x.md",
        "\\\\host\\share.md",
        "a\x00.md",
        "a.md:stream",
        "CON.md",
        ".git/config",
        ".obsidian/plugins/x.md",
        "notes/../../x.md",
        "%2e%2e/x.md",
        "..%2fx.md",
        "x.txt",
    ],
)
def test_unsafe_paths_are_refused(open_vault: OpenVault, vault_dir: Path, rel: str) -> None:
    v = open_vault()
    with pytest.raises(RefusedError):
        v.host.core().keeper.files.create(rel, "x")
    assert not [p for p in vault_dir.parent.rglob("*") if p.is_file()]


def test_git_merge_in_progress_refuses_writes(write: WriteNotes, open_vault: OpenVault) -> None:
    vault = write({"n.md": "text\n"})
    v = open_vault()
    v.reindex(vectors=False)
    (vault / ".git").mkdir()
    (vault / ".git" / "MERGE_HEAD").write_text("abc\n", encoding="utf-8")
    with pytest.raises(RefusedError, match="merge is in progress"):
        v.edit_note("n.md", [Edit("append", "x")], hash_of(v, "n.md"))


def test_crash_leftover_temp_files_are_cleaned_not_indexed(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    import os

    vault = write({"n.md": "note", "sub/.mv-tmp-old": "half a write", "sub/.mv-tmp-new": "live"})
    os.utime(vault / "sub" / ".mv-tmp-old", (1, 1))  # left by a crash long ago
    v = open_vault()
    assert v.reindex(vectors=False).notes == 1
    assert not (vault / "sub" / ".mv-tmp-old").exists()
    assert (vault / "sub" / ".mv-tmp-new").exists()  # may be another process's write


def test_a_loop_of_symlinks_is_skipped_with_a_warning(
    write: WriteNotes, open_vault: OpenVault, tmp_path: Path
) -> None:
    """A link that leads back to itself (directly or through another) names no file:
    skipped and said, as a dangling link is skipped, never a crash of the whole scan."""
    vault = write({"ok.md": "a fine note"})
    (vault / "self.md").symlink_to("self.md")
    (vault / "ping.md").symlink_to("pong.md")
    (vault / "pong.md").symlink_to("ping.md")
    report = open_vault().reindex(vectors=False)
    assert report.notes == 1
    looped = {w["path"] for w in report.warnings if "loop" in w["message"]}
    assert looped == {"self.md", "ping.md", "pong.md"}


def test_a_move_into_a_loop_of_symlinks_is_refused(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    vault = write({"ok.md": "a fine note"})
    (vault / "loop").symlink_to("loop")
    v = open_vault()
    v.reindex(vectors=False)
    with pytest.raises(RefusedError, match="loop"):
        v.move_note("ok.md", "loop/ok.md", hash_of(v, "ok.md"))
    assert (vault / "ok.md").read_text() == "a fine note"
