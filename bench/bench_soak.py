"""Issue 15's soak: every way of writing a vault at once, then proof that nothing
acknowledged was lost.

    python bench/bench_soak.py                        # 60 s: 4 stdio + 4 HTTP clients
    python bench/bench_soak.py --seconds 10 --stdio 2 --http 2

On a fresh vault (`vault init`, 200 generated notes, keyword-only: no model is loaded)
for ``--seconds``:

- ``vault watch`` owns the index and follows the files the editor saves;
- ``--stdio`` ``vault mcp`` servers over stdio, one SDK client each, and one
  ``vault mcp --http`` server with ``--http`` SDK clients (a session each);
- an "editor": a thread writing its own notes straight into the vault the way editors
  save (a temporary file, then a rename);
- each MCP client creates notes (``create_note``), appends to its own and to one note
  they all share (``get`` for the hash, then ``edit_note``; a stale hash is read again
  and retried) and searches (``search``, keyword) for a word another client wrote;
- a "vandal" (issue 31): a third of the way in it deletes the index folder, two thirds
  in it overwrites the index file in place; the owner must rebuild it and lose nothing.

Every write carries a word of its own (``qx...q``). Afterwards, with every writer
stopped: each acknowledged write is in its file exactly once, no note holds another
writer's word or lost its frontmatter (truncated or mixed), the editor's files are
byte for byte its last save; the index found every word once the watcher caught up;
and a `reindex` then has nothing to repair (no note added, updated or removed).

Prints writes/s, search p50/p99 and errors by kind; returns non-zero when a check
fails (the test suite runs a short version: tests/test_soak.py).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from markvault.files.vault_init import init_vault
from markvault.runtime.local_host import open_local
from markvault.types.search import SearchRequest

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "soak.md"
CALL_TIMEOUT_S = 60.0
CATCH_UP_S = 60.0  # how long the watcher may take to index the last saves
SHARED = "notes/Shared.md"  # every MCP client appends to it: stale hashes are retried
CONFLICT_WORDS = ("changed since it was read", "changed while it was being written")
WORD = re.compile(r"\bqx[a-z]+q\b")


def word(n: int) -> str:
    """A searchable word of its own for write ``n``: letters only (no digit splits it),
    ``qx`` ... ``q`` (no stemmer changes it)."""
    letters = ""
    while True:
        n, r = divmod(n, 26)
        letters += chr(97 + r)
        if n == 0:
            return f"qx{letters}q"


@dataclass
class Stats:
    """What the soak saw: acknowledged writes by note, latencies, errors by kind."""

    seconds: float
    next_word: int = 0
    acked: dict[str, list[str]] = field(default_factory=dict)  # path -> words, in order
    owner: dict[str, str] = field(default_factory=dict)  # path -> writer
    unknown: set[str] = field(default_factory=set)  # the call failed: may or may not be in
    editor: dict[str, str] = field(default_factory=dict)  # path -> text of the last save
    last: dict[str, tuple[str, str]] = field(default_factory=dict)  # writer -> (word, path)
    writes: collections.Counter[str] = field(default_factory=collections.Counter)
    latency: dict[str, list[float]] = field(default_factory=dict)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def new_word(self) -> str:
        with self.lock:
            self.next_word += 1
            return word(self.next_word)

    def all_words(self) -> list[tuple[str, str]]:
        with self.lock:
            return [(w, p) for p, ws in self.acked.items() for w in ws]


# ---- the writers --------------------------------------------------------------------------


async def call(stats: Stats, client: Client, name: str, **args: Any) -> tuple[bool, Any]:
    """(ok, structured result or error text); a transport failure counts as an error."""
    began = time.monotonic()
    try:
        result = await asyncio.wait_for(client.call_tool(name, args), CALL_TIMEOUT_S)
    except Exception as exc:
        stats.errors[f"{name}: {type(exc).__name__}"] += 1
        return False, None
    stats.latency.setdefault(name, []).append(time.monotonic() - began)
    text = "".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        kind = "conflict (re-read, retried)" if any(w in text for w in CONFLICT_WORDS) else ""
        stats.errors[kind or f"{name}: {text[:70]}"] += 1
        return False, text
    return True, result.structured_content


async def mcp_writer(name: str, client: Client, stats: Stats, deadline: float) -> None:
    rng = random.Random(name)
    mine: list[str] = []
    step = 0
    while time.monotonic() < deadline:
        step += 1
        if not mine or step % 6 == 0:
            w = stats.new_word()
            ok, data = await call(
                stats, client, "create_note", kind="note", title=f"{name} {step}", content=w
            )
            if ok:
                with stats.lock:
                    stats.acked[data["path"]] = [w]
                    stats.owner[data["path"]] = name
                    stats.last[name] = (w, data["path"])
                stats.writes["MCP create_note"] += 1
                mine.append(data["path"])
            elif data is None:
                stats.unknown.add(w)
        elif step % 10 == 5:  # every client appends to one shared note, by its hash
            await append(name, client, stats, SHARED)
        elif step % 2 == 0:
            await append(name, client, stats, rng.choice(mine))
        else:
            words = stats.all_words()
            if words:
                await call(stats, client, "search", query=rng.choice(words)[0], mode="keyword")


async def append(name: str, client: Client, stats: Stats, path: str) -> None:
    w = stats.new_word()
    for _ in range(5):
        ok, data = await call(stats, client, "get", ref=path)
        if not ok:
            return
        ok, data = await call(
            stats, client, "edit_note", ref=path, hash=data["hash"], op="append", text=w
        )
        if ok:
            with stats.lock:
                stats.acked[path].append(w)
                stats.last[name] = (w, path)
            stats.writes["MCP edit_note"] += 1
            return
        if data is None:
            stats.unknown.add(w)
            return
        if not any(x in data for x in CONFLICT_WORDS):
            return


def editor(vault: Path, stats: Stats, deadline: float) -> None:
    """Saves the way editors do: the whole text to a temporary file, then a rename."""
    rng = random.Random("editor")
    folder = vault / "editor"
    folder.mkdir(exist_ok=True)
    n = 0
    while time.monotonic() < deadline:
        n += 1
        if n % 4 == 1 or not stats.editor:
            rel = f"editor/Draft {n}.md"
            text = f"# Draft {n}\n\n"
        else:
            rel = rng.choice(sorted(stats.editor))
            text = stats.editor[rel]
        w = stats.new_word()
        text += f"- {w}\n"
        temp = folder / f".draft-{n}.tmp"
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, vault / rel)
        with stats.lock:
            stats.editor[rel] = text
            stats.acked.setdefault(rel, []).append(w)
            stats.owner[rel] = "editor"
            stats.last["editor"] = (w, rel)
        stats.writes["editor save"] += 1
        time.sleep(0.05)


# ---- the processes --------------------------------------------------------------------------


@dataclass
class Site:
    vault: Path
    index: Path
    env: dict[str, str]

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "markvault.cli", "--vault", str(self.vault),
                "--index", str(self.index), *args]  # fmt: skip

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), capture_output=True, text=True, env=self.env, timeout=600
        )


def make_site(workdir: Path, notes: int) -> Site:
    vault = workdir / "vault"
    init_vault(vault)
    rng = random.Random(1)
    topics = [
        "search",
        "index",
        "sync",
        "watch",
        "notes",
        "agents",
        "git",
        "model",
        "chunk",
        "vector",
    ]
    (vault / SHARED).write_text("---\nid: shared\n---\n# Shared\n\n", "utf-8")
    for i in range(notes):
        words = " ".join(rng.choice(topics) for _ in range(60))
        (vault / "notes" / f"Seed {i}.md").write_text(f"# Seed {i}\n\n{words}\n", "utf-8")
    env = {
        **os.environ,
        "MARKVAULT_MODEL": str(workdir / "no-model-here"),  # keyword-only: no torch
        "MARKVAULT_TOKEN_FILE": str(workdir / "http-token"),
    }
    site = Site(vault, workdir / "index", env)
    done = site.cli("reindex", "--no-vectors")
    if done.returncode != 0:
        raise SystemExit(f"reindex failed: {done.stderr}")
    return site


def start_http(site: Site, errlog: TextIO, write_rate: int) -> tuple[subprocess.Popen[str], str]:
    """`vault mcp --http` on a free port; its URL, read off its announcement."""
    server = subprocess.Popen(
        site.argv("mcp", "--http", "--port", "0", "--write-rate", str(write_rate)),
        stderr=subprocess.PIPE,
        stdout=errlog,
        text=True,
        env=site.env,
    )
    assert server.stderr is not None
    for line in server.stderr:
        errlog.write(line)
        found = re.search(r"(http://\S+/mcp)", line)
        if found:
            threading.Thread(target=_drain, args=(server.stderr, errlog), daemon=True).start()
            return server, found.group(1)
    raise SystemExit(f"vault mcp --http did not start (exit {server.wait()})")


def _drain(stream: TextIO, errlog: TextIO) -> None:
    for line in stream:
        errlog.write(line)


def stdio_params(site: Site) -> StdioServerParameters:
    argv = site.argv("mcp")
    keep = ("TMPDIR", "MARKVAULT_MODEL", "MARKVAULT_TOKEN_FILE", "PYTHONPATH")
    return StdioServerParameters(
        command=argv[0], args=argv[1:], env={k: site.env[k] for k in keep if k in site.env}
    )


async def run_clients(
    site: Site, stats: Stats, stdio: int, http: int, errlog: TextIO, vandalism: list[str] | None
) -> None:
    server, url = start_http(site, errlog, write_rate=1_000_000)
    token = Path(site.env["MARKVAULT_TOKEN_FILE"]).read_text(encoding="utf-8").strip()
    try:
        async with contextlib.AsyncExitStack() as stack:
            clients: list[tuple[str, Client]] = []
            for i in range(stdio):
                transport = stdio_client(stdio_params(site), errlog=errlog)
                clients.append((f"stdio{i}", await stack.enter_async_context(Client(transport))))
            for i in range(http):
                headers = {"Authorization": f"Bearer {token}"}
                client_http = await stack.enter_async_context(
                    create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(120))
                )
                transport = streamable_http_client(url, http_client=client_http)
                clients.append((f"http{i}", await stack.enter_async_context(Client(transport))))
            began = time.monotonic()
            deadline = began + stats.seconds
            vandal_at_work = (
                [asyncio.to_thread(vandal, site, stats, began, vandalism)]
                if vandalism is not None
                else []
            )
            await asyncio.gather(
                asyncio.to_thread(editor, site.vault, stats, deadline),
                *(mcp_writer(name, client, stats, deadline) for name, client in clients),
                *vandal_at_work,
            )
            stats.seconds = time.monotonic() - began
    finally:
        server.terminate()
        server.wait(timeout=30)


def vandal(site: Site, stats: Stats, began: float, done: list[str]) -> None:
    """What a person may do to the disposable index while the owner runs: delete its
    folder, then (once the owner has made a new file) overwrite that file in place."""
    db = site.index / f"{site.vault.name}.duckdb"
    time.sleep(stats.seconds / 3)
    shutil.rmtree(site.index, ignore_errors=True)
    done.append(f"deleted the index folder at {time.monotonic() - began:.1f} s")
    while not db.exists() and time.monotonic() - began < stats.seconds * 2 / 3:
        time.sleep(0.05)
    time.sleep(max(0.0, began + stats.seconds * 2 / 3 - time.monotonic()))
    with contextlib.suppress(OSError), open(db, "r+b") as fh:
        fh.write(b"\0" * os.fstat(fh.fileno()).st_size)
        done.append(f"overwrote the index file in place at {time.monotonic() - began:.1f} s")


# ---- the checks -----------------------------------------------------------------------------


def check_files(vault: Path, stats: Stats) -> list[str]:
    """Problems with the files: lost, doubled, mixed or truncated writes."""
    problems = []
    for rel, words in stats.acked.items():
        path = vault / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
            continue
        text = path.read_text(encoding="utf-8")
        if rel in stats.editor and text != stats.editor[rel]:
            problems.append(f"{rel}: not the editor's last save")
        found = collections.Counter(WORD.findall(text))
        for w in words:
            if found[w] != 1:
                problems.append(f"{rel}: {w} found {found[w]} times")
        strangers = set(found) - set(words) - stats.unknown
        if strangers:
            problems.append(f"{rel}: holds other writers' words {sorted(strangers)[:3]}")
        if rel not in stats.editor and not text.startswith("---\n"):
            problems.append(f"{rel}: frontmatter lost (truncated?)")
    return problems


def catch_up(site: Site, stats: Stats) -> tuple[list[str], float]:
    """Words the index lacks once the watcher had CATCH_UP_S to take the last saves in,
    searched through `vault watch` (the owner); and the seconds until the last write of
    each writer was found (the lag at the end, not the time this check takes)."""
    from markvault.config import Settings
    from markvault.runtime.shared_host import connect

    settings = Settings.load(vault=site.vault, index=site.index, model=site.env["MARKVAULT_MODEL"])
    began = time.monotonic()
    lag = CATCH_UP_S
    with connect(settings) as vault:
        while time.monotonic() - began < CATCH_UP_S:
            if not unindexed(vault, stats, list(stats.last.values())):
                lag = time.monotonic() - began
                break
            time.sleep(0.1)
        while True:
            missing = unindexed(vault, stats)
            if not missing or time.monotonic() - began > CATCH_UP_S:
                return missing, lag
            time.sleep(0.25)


def unindexed(vault: Any, stats: Stats, words: list[tuple[str, str]] | None = None) -> list[str]:
    """Words a keyword search does not find in their note."""
    words = stats.all_words() if words is None else words
    results = vault.search_batch(
        ((w, w) for w, _ in words), SearchRequest("", mode="keyword", limit=5)
    )
    where = dict(words)
    return [
        f"{r['id']} not found in {where[r['id']]}"
        for r in results
        if where[r["id"]] not in {h["path"] for h in r.get("hits", [])}
    ]


def soak(
    workdir: Path, seconds: float, stdio: int, http: int, notes: int = 200, vandal: bool = True
) -> dict[str, Any]:
    """``vandal``: the index is deleted, then overwritten, while the soak runs."""
    site = make_site(workdir, notes)
    vandalism: list[str] | None = [] if vandal else None
    stats = Stats(seconds)
    stats.acked[SHARED], stats.owner[SHARED] = [], "every MCP client"
    with open(workdir / "servers.log", "w", encoding="utf-8") as errlog:
        watch = subprocess.Popen(
            site.argv("watch", "--quiet"), stdout=errlog, stderr=errlog, text=True, env=site.env
        )
        try:
            asyncio.run(run_clients(site, stats, stdio, http, errlog, vandalism))
            missing, caught_up = catch_up(site, stats)
        finally:
            watch.terminate()
            watch.wait(timeout=30)
    problems = check_files(site.vault, stats) + missing
    repair = json.loads(site.cli("reindex", "--no-vectors", "--json").stdout)
    repaired = {k: repair[k] for k in ("added", "updated", "renamed", "removed") if repair[k]}
    if repaired:
        problems.append(f"reindex had to repair the index: {repaired}")
    with open_local(site.vault, site.index) as vault:
        problems += unindexed(vault, stats)  # and after the repair, from the file itself
    searches = sorted(stats.latency.get("search", []))
    acked = sum(stats.writes.values())
    return {
        "seconds": round(stats.seconds, 1),
        "clients": {"stdio": stdio, "http": http, "editor": 1, "vault watch": 1},
        "vandal": vandalism,
        "writes": dict(stats.writes),
        "writes_per_s": round(acked / stats.seconds, 1),
        "words_checked": len(stats.all_words()),
        "unknown_outcome": len(stats.unknown),
        "search_p50_ms": round(1000 * _pct(searches, 50), 1),
        "search_p99_ms": round(1000 * _pct(searches, 99), 1),
        "searches": len(searches),
        "write_p50_ms": round(1000 * _pct(sorted(stats.latency.get("edit_note", [])), 50), 1),
        "errors": dict(stats.errors),
        "catch_up_s": round(caught_up, 2),
        "problems": problems,
        "load_average": round(os.getloadavg()[0], 2),
    }


def _pct(values: list[float], p: int) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def table(result: dict[str, Any]) -> str:
    c = result["clients"]
    rows = [
        (
            "run",
            f"{result['seconds']} s; {c['stdio']} stdio + {c['http']} HTTP MCP clients, "
            "an editor, `vault watch`",
        ),
        ("acknowledged writes", ", ".join(f"{v:,} {k}" for k, v in result["writes"].items())),
        ("writes/s", f"{result['writes_per_s']}"),
        (
            "search p50 / p99",
            f"{result['search_p50_ms']} / {result['search_p99_ms']} ms "
            f"({result['searches']:,} searches)",
        ),
        ("edit_note p50", f"{result['write_p50_ms']} ms"),
        ("errors by kind", "; ".join(f"{k}: {v}" for k, v in result["errors"].items()) or "none"),
        (
            "each writer's last write searchable, after the end",
            f"{result['catch_up_s']} s",
        ),
        (
            "acknowledged writes lost, doubled or mixed (must be 0)",
            f"**{len(result['problems'])}** of {result['words_checked']:,} words",
        ),
        ("load average (1 min) at the end", f"{result['load_average']} on 2 cores"),
    ]
    return "| figure | value |\n| --- | --- |\n" + "".join(f"| {a} | {b} |\n" for a, b in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--stdio", type=int, default=4)
    parser.add_argument("--http", type=int, default=4)
    parser.add_argument("--notes", type=int, default=200, help="Notes in the vault at start.")
    parser.add_argument(
        "--no-vandal",
        action="store_true",
        help="Leave the index alone (no deletion, no overwrite).",
    )
    parser.add_argument("--workdir", type=Path, help="Kept after the run (default: a temp dir).")
    args = parser.parse_args()
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        result = soak(
            workdir, args.seconds, args.stdio, args.http, args.notes, vandal=not args.no_vandal
        )
    text = table(result)
    print(text)
    for problem in result["problems"][:20]:
        print("PROBLEM:", problem)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text + "\n```json\n" + json.dumps(result, indent=2) + "\n```\n", "utf-8")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
