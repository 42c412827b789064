"""Resolve every link and embed of a vault as markvault does, and count what resolves.

    python scripts/check_links.py PATH/TO/VAULT [--list]

Used to check markvault's link rules against a real Obsidian vault, for example
Obsidian's own help vault (github.com/obsidianmd/obsidian-help, its `en/` folder): there
1,520 of 1,524 wiki links and all 285 embeds (Markdown images included) resolve; the 4
wiki links and 2 Markdown links left name a note `Example` that does not exist, as in
Obsidian. Nothing in the vault is
written. `--list` prints each unresolved link.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from markvault.files.vault_files import VaultFiles
from markvault.markdown.links import LinkResolver
from markvault.markdown.parse import parse_note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--list", action="store_true", help="print each unresolved link")
    args = parser.parse_args()
    root = args.vault.resolve()
    files = VaultFiles(root)
    found, _ = files.scan()
    notes = {
        key: parse_note(key, (root / st.file).read_text(encoding="utf-8"))
        for key, st in found.items()
    }
    attachments = files.attachments()
    resolver = LinkResolver([(p, list(n.aliases)) for p, n in notes.items()], attachments)
    total: Counter[str] = Counter()
    resolved: Counter[str] = Counter()
    to_files: Counter[str] = Counter()
    for path, note in notes.items():
        for link in note.links:
            kind = "embeds" if link.embed else f"{link.style} links"
            target = resolver.resolve(path, link.target, link.style)
            total[kind] += 1
            if target is None:
                if args.list:
                    print(f"unresolved {kind[:-1]}: {path}:{link.line} -> {link.target!r}")
                continue
            resolved[kind] += 1
            to_files[kind] += resolver.is_attachment(target)
    print(f"{len(notes)} notes, {len(attachments)} other files")
    for kind in sorted(total):
        print(
            f"{kind:>15}: {resolved[kind]:,} of {total[kind]:,} resolve "
            f"({to_files[kind]:,} to files other than notes)"
        )


if __name__ == "__main__":
    main()
