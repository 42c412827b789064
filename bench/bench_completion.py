"""Completion latency (issue 16): ``completion/complete`` on the note template, per keystroke.

    python bench/bench_completion.py                          # 10k notes (~3 min the first time)
    python bench/bench_completion.py --notes 1000 --workdir /tmp/mv-completion

On a synthetic vault (gen_vault.py; keyword index only, no model: completion never
needs one), the same prefixes go through four paths:

- **facade**: ``Vault.complete("note", prefix)`` in process: the index lookup alone;
  and its first call after the index changed, which reads the names again;
- **in memory**: the SDK's ``Client`` on the ``MCPServer`` in process (current era);
- **stdio, owner**: ``vault mcp`` as Claude Code starts it, owning the index;
- **stdio, via owner**: ``vault mcp`` while another process owns the index (this one), so
  each completion also crosses the owner's socket: a second Claude Code window.

Prefixes are what a person types: the first three letters of a note id or of a title
word (``--prefixes`` of them, seeded), plus single letters (the most matches, each
answered with the best 100). For each path: p50 / p95 / max in ms, and the same
client's ``prompts/list`` round trip as the baseline (the transport's own cost), with
the ratio. Prints a table, writes ``bench/out/completion.md``; measures, never asserts.
The target is p50 <= 20 ms at 10k notes, through stdio.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters, types

import gen_vault
from markvault.config import Settings
from markvault.runtime.local_host import open_local
from markvault.runtime.shared_host import connect
from markvault.server.tools import build_server
from markvault.vault import Vault

NOTE_TEMPLATE = types.ResourceTemplateReference(uri="vault://note/{note_id}")
OUT = Path(__file__).parent / "out" / "completion.md"
MODEL_VAR = "MARKVAULT_MODEL"


def prefixes(vault: Vault, count: int, seed: int) -> tuple[list[str], list[str]]:
    """Three-letter prefixes of ids and title words, and single letters."""
    rng = random.Random(seed)
    briefs = vault.complete("note", "", 100_000)["values"]
    typed: list[str] = []
    for note_id in rng.sample(briefs, min(count, len(briefs))):
        if rng.random() < 0.5:
            typed.append(note_id[:3])
        else:
            title = vault.get(note_id, None, 2_000)["title"] or note_id
            words = [w for w in title.split() if len(w) >= 3] or [title]
            typed.append(rng.choice(words)[:3])
    return typed, list(string.ascii_lowercase)


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(ordered):.2f} / {p95:.2f} / {ordered[-1]:.2f}"


def timed_sync(fn: Callable[[str], object], inputs: list[str]) -> list[float]:
    out = []
    for value in inputs:
        start = time.perf_counter()
        fn(value)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def timed(fn: Callable[[str], Awaitable[object]], inputs: list[str]) -> list[float]:
    out = []
    for value in inputs:
        start = time.perf_counter()
        await fn(value)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def through_client(client: Client, typed: list[str], letters: list[str]) -> list[str]:
    async def complete(value: str) -> object:
        return await client.complete(NOTE_TEMPLATE, {"name": "note_id", "value": value})

    async def baseline(_: str) -> object:
        return await client.list_prompts()

    for value in typed[:10]:  # warm-up: the first calls open and cache
        await complete(value)
    words = await timed(complete, typed)
    single = await timed(complete, letters)
    base = await timed(baseline, typed)
    ratio = statistics.median(words) / statistics.median(base)
    return [summary(words), summary(single), summary(base), f"{ratio:.2f}"]


def stdio(vault_dir: Path, index_dir: Path, env: dict[str, str]) -> StdioServerParameters:
    argv = ["-m", "markvault.cli", "--vault", str(vault_dir), "--index", str(index_dir), "mcp"]
    return StdioServerParameters(command=sys.executable, args=argv, env=env)


async def run(args: argparse.Namespace, work: Path) -> list[list[str]]:
    vault_dir = work / f"v{args.notes}"
    if not vault_dir.exists():
        print(f"generating {args.notes:,} notes into {vault_dir}", flush=True)
        gen_vault.generate(vault_dir, args.notes, args.seed)
    index_dir = work / f"index-{args.notes}"
    no_model = str(work / "no-model-here")
    env = {**os.environ, MODEL_VAR: no_model}
    vault = open_local(vault_dir, index_dir, model=no_model)
    began = time.perf_counter()
    report = vault.reindex(vectors=False)
    print(f"indexed {report.notes:,} notes in {time.perf_counter() - began:.1f} s", flush=True)
    typed, letters = prefixes(vault, args.prefixes, args.seed)
    rebuilds = []
    for value in typed[:5]:  # the first keystroke after a change reads the names again
        vault.close()
        vault.status()  # the index open again, its names not yet read
        start = time.perf_counter()
        vault.complete("note", value)
        rebuilds.append((time.perf_counter() - start) * 1000)
    rows = [["first lookup after a change (names read)", summary(rebuilds), "-", "-", "-"]]
    timed_sync(lambda p: vault.complete("note", p), typed[:10])  # warm-up, as below
    facade = [
        summary(timed_sync(lambda p: vault.complete("note", p), typed)),
        summary(timed_sync(lambda p: vault.complete("note", p), letters)),
        "-",
        "-",
    ]
    rows.append(["facade (index lookup)", *facade])
    async with Client(build_server(vault)) as client:
        rows.append(["SDK client, in memory", *await through_client(client, typed, letters)])
    vault.close()  # the lifespan closed it too: now a server process may own the index
    async with Client(stdio(vault_dir, index_dir, env)) as client:
        owned = await through_client(client, typed, letters)
        rows.append(["`vault mcp` over stdio, owner", *owned])
    settings = Settings.load(vault=vault_dir, index=index_dir, model=no_model)
    with connect(settings) as owner:
        assert owner.host.runs_here
        async with Client(stdio(vault_dir, index_dir, env)) as client:
            rows.append(
                ["`vault mcp` over stdio, via owner", *await through_client(client, typed, letters)]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--prefixes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="keep the vault and index here")
    args = parser.parse_args()
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="mv-completion-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    try:
        rows = anyio.run(run, args, work)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    header = (
        "| path | 3-letter prefix p50 / p95 / max ms | 1-letter p50 / p95 / max ms "
        "| prompts/list p50 / p95 / max ms | ratio (p50 / baseline p50) |"
    )
    lines = [
        f"Completion of `vault://note/{{note_id}}` at {args.notes:,} notes "
        f"({args.prefixes} typed prefixes, 26 letters); cores {os.cpu_count()}, "
        f"load {load[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end.",
        "",
        header,
        "| --- | --- | --- | --- | --- |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    text = "\n".join(lines)
    print("\n" + text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
