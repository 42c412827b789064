"""The layering law, kept by a test: each layer imports only itself and the layers below.

The README's Architecture section (and docs/architecture.md) draws these layers. Every
import counts, whether at the top of a module, inside a function (a lazy import is still a
dependency) or under ``TYPE_CHECKING``. No two modules may import each other, directly or
round a longer cycle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

# Top to bottom. A module belongs to the layer of the longest prefix that names it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("faces", ("markvault.cli", "markvault.server")),
    ("runtime", ("markvault.runtime",)),
    ("facade", ("markvault", "markvault.vault")),
    ("calls", ("markvault.calls",)),
    ("core", ("markvault.core", "markvault.attachments.backfill")),
    (
        "upkeep",
        (
            "markvault.indexing",
            "markvault.search",
            "markvault.git.sync",
            "markvault.git.autosync",
            "markvault.credentials.scan",
            "markvault.files.vault_init",
            "markvault.sessions.claude_hooks",
            "markvault.attachments.reconcile",
            "markvault.attachments.view",
            "markvault.git.merge_state",
        ),
    ),
    (
        "stores",
        (
            "markvault.index",
            "markvault.embed",
            "markvault.files",
            "markvault.sessions",
            "markvault.sessions.sanitize",
            "markvault.sessions.session",
            "markvault.sessions.transcript_reader",
            "markvault.sessions.transcript_files",
            "markvault.sessions.session_note",
            "markvault.sessions.session_summary",
            "markvault.attachments.extract",
            # the placeholder of a session note's summary comes from sessions/
            "markvault.markdown.template_text",
        ),
    ),
    (
        "rules",
        (
            "markvault.git.repo",
            "markvault.credentials",
            "markvault.credentials.finding",
            "markvault.credentials.value_shapes",
            "markvault.credentials.token_rules",
            "markvault.credentials.key_value_rules",
            "markvault.credentials.detection",
            "markvault.credentials.policy",
            "markvault.markdown",
            "markvault.attachments.formats",
            "markvault.search.time_expressions",  # pure: the index reads note dates with it
            "markvault.search.time_signal",
            "markvault.search.time_words",
            "markvault.search.query_cost",  # pure: the index reads a long query's terms by it
            "markvault.identity",
            "markvault.display",
        ),
    ),
    (
        "plain",
        (
            "markvault.types",
            "markvault.files.atomic",  # the one atomic writer: trust.py writes through it
            "markvault.answers",
            "markvault.config",
            "markvault.http_settings",
            "markvault.trust",
            "markvault.user_folders",
            "markvault.resources",
            "markvault.errors",
        ),
    ),
]


def modules(src: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts and parts[0] == "markvault":
            found[".".join(parts)] = path
    return found


def imports_of(path: Path, module: str, known: set[str]) -> set[str]:
    """Every markvault module ``module`` imports (relative imports resolved)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if not base.startswith("markvault"):
                continue
            for alias in node.names:
                name = f"{base}.{alias.name}"
                out.add(name if name in known else base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("markvault"))
    out.discard(module)
    return {m for m in out if m in known}


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = rank, len(prefix)
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def violations(src: Path) -> list[str]:
    """What breaks the law in the tree under ``src``: each a line saying which import."""
    found = modules(src)
    known = set(found)
    graph = {m: imports_of(p, m, known) for m, p in found.items()}
    problems = []
    for module, deps in sorted(graph.items()):
        rank = layer_of(module)
        if rank < 0:
            problems.append(f"{module} is in no layer: add it to LAYERS")
            continue
        for dep in sorted(deps):
            if layer_of(dep) < rank:
                problems.append(
                    f"{module} ({LAYERS[rank][0]}) imports {dep} ({LAYERS[layer_of(dep)][0]}),"
                    " a higher layer"
                )
    for component in cycles(graph):
        problems.append("modules import each other: " + ", ".join(component))
    return problems


def test_the_package_keeps_the_layering_law() -> None:
    assert violations(SRC) == []


BELOW_THE_FACES = (
    "markvault.index",
    "markvault.core",
    "markvault.search.searcher",
    "markvault.embed",
)


def test_the_faces_never_reach_the_index_or_the_core() -> None:
    found = modules(SRC)
    known = set(found)
    for module, path in found.items():
        if layer_of(module) != 0:
            continue
        for dep in imports_of(path, module, known):
            assert not any(dep == p or dep.startswith(p + ".") for p in BELOW_THE_FACES), (
                module,
                dep,
            )


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "markvault" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # a lower layer importing a higher one, at the top of the module
        ({"errors.py": "from markvault.vault import Vault\n", "vault.py": ""}, "a higher layer"),
        # the same inside a function, relative
        (
            {"index/__init__.py": "", "index/store.py": "def f():\n    from ..core import x\n"}
            | {"core/__init__.py": ""},
            "a higher layer",
        ),
        # two modules of one layer importing each other
        (
            {"markdown/__init__.py": "", "markdown/a.py": "from . import b\n"}
            | {"markdown/b.py": "from markvault.markdown import a\n"},
            "import each other",
        ),
    ],
)
def test_the_law_catches_a_backward_import(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    files = {"__init__.py": ""} | files
    problems = violations(_tree(tmp_path, files))
    assert any(expected in p for p in problems), problems


def test_the_law_passes_a_downward_import(tmp_path: Path) -> None:
    files = {"__init__.py": "", "vault.py": "from markvault.errors import X\n", "errors.py": ""}
    assert violations(_tree(tmp_path, files)) == []


def test_every_public_name_of_the_package_loads() -> None:
    """``markvault``'s names load on first use (PEP 562): each must name what its module
    defines, and the type checkers' list must be the same names."""
    import markvault

    assert markvault.__all__ == sorted(markvault._HOMES)
    for name in markvault.__all__:
        assert getattr(markvault, name).__name__ == name
    with pytest.raises(AttributeError):
        _ = markvault.NoSuchName  # type: ignore[attr-defined]
    source = (SRC / "markvault" / "__init__.py").read_text(encoding="utf-8")
    checked = set(re.findall(r"import (\w+) as \1\b", source))
    assert checked == set(markvault.__all__)
