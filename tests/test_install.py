"""The wheel carries what markvault needs at run time: every module, the note templates
and the starter vault, found through the package and not through a checkout.

(CI also installs the wheel with its dependencies into a fresh environment and runs the
whole path from there: scripts/wheel_smoke.sh.)"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(out),
        ],
        check=True,
        capture_output=True,
        cwd=out,
    )
    (built,) = out.glob("markvault-*.whl")
    return built


def test_the_wheel_holds_every_module_the_templates_and_the_starter_vault(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    package = REPO / "src" / "markvault"
    modules = {f"markvault/{p.relative_to(package).as_posix()}" for p in package.rglob("*.py")}
    assert modules <= names, f"missing from the wheel: {sorted(modules - names)}"
    templates = {f"markvault/templates/{p.name}" for p in (REPO / "templates").glob("*.md")}
    assert {"markvault/templates/note.md", "markvault/templates/knowledge.md"} <= templates
    assert templates <= names
    starter = {
        f"markvault/starter/{p.relative_to(REPO / 'vault').as_posix()}"
        for p in (REPO / "vault").rglob("*")
        if p.is_file() and p.name != ".markvault.toml"
    }
    assert "markvault/starter/notes/Welcome.md" in starter
    assert starter <= names, f"missing from the wheel: {sorted(starter - names)}"
    # The repository's own setting (its index/ beside the vault) is not the user's.
    assert "markvault/starter/.markvault.toml" not in names


def test_new_note_from_the_installed_wheel_in_an_empty_folder(wheel: Path, tmp_path: Path) -> None:
    """The failure that started issue 14: `vault new` from the wheel found no template."""
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    home, notes = tmp_path / "home", tmp_path / "home" / "notes"
    notes.mkdir(parents=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(site),  # before the checkout's editable install on sys.path
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    probe = subprocess.run(
        [sys.executable, "-c", "import markvault.resources as r; print(r.packaged_templates())"],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip().startswith(str(site)), probe.stdout
    made = subprocess.run(
        [sys.executable, "-m", "markvault.cli", "--vault", str(notes), "new", "note", "Alpha"],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    text = (notes / "notes" / "Alpha.md").read_text(encoding="utf-8")
    assert text.startswith("---\nid: n-") and "\n# Alpha\n" in text
