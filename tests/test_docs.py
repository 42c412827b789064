"""The README and docs/: short where a person arrives, and every link leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown page (fenced code left out)."""
    found: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_the_readme_stays_short() -> None:
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 400


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)  # links shown as code are examples
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address or a URI scheme
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.relative_to(REPO)}: {target} leads nowhere"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.name}: no heading #{anchor} in {dest.name}"


def test_the_architecture_map_names_every_module() -> None:
    """docs/architecture.md draws the tree: a module added or moved must be drawn too."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = text.split("```")[1]  # the tree, the page's first code block
    package = REPO / "src" / "markvault"
    missing = [
        path.relative_to(package).as_posix()
        for path in sorted(package.rglob("*.py"))
        if "__pycache__" not in path.parts
        and not re.search(rf"(?<![\w.]){re.escape(path.name)}\b", drawn)
    ]
    assert not missing, f"not in docs/architecture.md's tree: {missing}"
