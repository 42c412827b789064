#!/usr/bin/env bash
# Install markvault from its wheel into a fresh environment and use it as a new user
# would: no checkout on the path, an empty home folder, a vault of their own. CI runs
# this after the tests (`make check-wheel`).
#
#   scripts/wheel_smoke.sh            # builds the wheel from this checkout
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/markvault-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
step() { printf '\n== %s\n' "$*"; }

step "build the wheel"
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$WORK/dist" "$REPO"
WHEEL=$(ls "$WORK"/dist/markvault-*.whl)
echo "$WHEEL"

step "install it into a fresh environment (CPU torch first)"
"$PY" -m venv "$WORK/venv"
BIN="$WORK/venv/bin"
"$BIN/python" -m pip install --quiet --upgrade pip
"$BIN/python" -m pip install --quiet torch==2.13.0
"$BIN/python" -m pip install --quiet "$WHEEL"

# A new user: empty home, nothing from this checkout or the shell's markvault settings.
export HOME="$WORK/home"
mkdir -p "$HOME"
unset XDG_CACHE_HOME MARKVAULT_VAULT MARKVAULT_INDEX MARKVAULT_MODEL PYTHONPATH || true
cd "$HOME"
VAULT="$BIN/vault"
NOTES="$HOME/notes"

step "vault init ~/notes"
"$VAULT" init "$NOTES"

step "vault new note Alpha"
"$VAULT" --vault "$NOTES" new note "Alpha" --tags smoke
"$VAULT" --vault "$NOTES" edit "notes/Alpha.md" \
    --hash "$("$VAULT" --vault "$NOTES" get notes/Alpha.md --json | "$BIN/python" -c 'import json,sys; print(json.load(sys.stdin)["hash"])')" \
    --append "The wheel carries its templates; zeppelins are rare."

step "vault reindex"
"$VAULT" --vault "$NOTES" reindex

step "vault search"
"$VAULT" --vault "$NOTES" search zeppelin | tee "$WORK/search.txt"
grep -q "notes/Alpha.md" "$WORK/search.txt"

step "the index is in the cache directory, not in or beside the vault"
"$VAULT" --vault "$NOTES" status | tee "$WORK/status.txt"
grep -q "index    $HOME/.cache/markvault/indexes/notes-" "$WORK/status.txt"
if find "$HOME" -name '*.duckdb' -not -path "$HOME/.cache/*" | grep -q .; then
    echo "an index outside the cache directory:" >&2
    find "$HOME" -name '*.duckdb' -not -path "$HOME/.cache/*" >&2
    exit 1
fi

step "vault mcp: tools/list and a search through the SDK's client"
"$BIN/python" - "$VAULT" "$NOTES" <<'PY'
import sys

import anyio
from mcp import Client, StdioServerParameters

vault, notes = sys.argv[1], sys.argv[2]


async def main() -> None:
    params = StdioServerParameters(command=vault, args=["--vault", notes, "mcp"])
    with anyio.fail_after(120):
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            missing = {"search", "get", "create_note", "learn_knowledge"} - names
            assert not missing, f"tools missing: {missing}"
            made = await client.call_tool(
                "learn_knowledge", {"topic": "smoke", "content": "Quokkas smile in photos."}
            )
            assert not made.is_error, made.content
            found = await client.call_tool("search", {"query": "quokkas", "mode": "keyword"})
            assert "knowledge/smoke/" in found.content[0].text, found.content[0].text
    print(f"{len(names)} tools listed; learn_knowledge and search answered")


anyio.run(main)
PY

step "git sync: the vault on a bare remote, a second machine's clone, a note carried over"
git config --global user.name "Smoke Test"
git config --global user.email "smoke@example.org"
git -C "$NOTES" init -q -b main
git -C "$NOTES" add -A
git -C "$NOTES" commit -q -m "My notes"
git init -q --bare -b main "$WORK/remote.git"
git -C "$NOTES" remote add origin "$WORK/remote.git"
git -C "$NOTES" push -q -u origin main
LAPTOP="$HOME/laptop"
git clone -q "$WORK/remote.git" "$LAPTOP"
"$VAULT" --vault "$LAPTOP" search zeppelin >/dev/null   # the laptop's index, built
echo "A narwhal surfaced in the wheel smoke." >> "$NOTES/notes/Alpha.md"
"$VAULT" --vault "$NOTES" sync
git -C "$LAPTOP" pull -q                                # a plain pull: no reindex after it
"$VAULT" --vault "$LAPTOP" search narwhal | tee "$WORK/pulled.txt"
grep -q "notes/Alpha.md" "$WORK/pulled.txt"
"$VAULT" --vault "$LAPTOP" sync | tee "$WORK/sync.txt"
grep -q "Up to date with origin/main" "$WORK/sync.txt"
if [ -n "$(git -C "$LAPTOP" status --porcelain)" ] || [ -n "$(git -C "$NOTES" status --porcelain)" ]; then
    echo "indexing or syncing left files in a vault" >&2
    exit 1
fi

step "ok: the wheel works on its own"
