"""Issue 4's concurrency figures: many real `vault` processes on one vault.

    python bench/bench_concurrency.py --workdir /tmp/mv-conc        # all four (~15 min + 10 once)
    python bench/bench_concurrency.py --sections soak --seconds 60  # a short soak
    python bench/bench_concurrency.py --no-model --seconds 60       # keyword-only owners: quick

Sections, on synthetic vaults from gen_vault.py (seed 1):

- soak: 5 `vault mcp` stdio servers (SDK clients in this process), `vault watch` waiting
  to take over, a loop of `vault search` / `vault status` processes, and an "editor"
  process rewriting its own notes the way editors save (temp file + rename, in-place
  truncate + write, autosave bursts) and appending in place to two notes the MCP writers
  also append to. Each MCP writer appends unique lines to its own notes with
  ``edit_note`` (the hash from ``get``; a conflict is re-read and retried), creates a few
  notes, checks through another server that its write is searchable, and every 2 s all
  five append to the same note with the same hash (exactly one must win). Halfway
  through, the owner is killed with SIGKILL. At the end: lock errors, errors by kind,
  lost / duplicated / garbled lines, the editor's last versions, temp files left, and the
  live index against a fresh `vault reindex --no-vectors` (notes, chunks, links, keyword
  rankings).
- checkout: a git repository of --checkout-notes notes and a branch where
  --checkout-changes of them differ (75% edited, 12.5% renamed, 12.5% deleted); with
  `vault watch` owning the index, seconds from `git checkout`'s start (and end) until the
  index matches the files, both ways, then checked row by row. Then the same on the 1k
  vault with every vector and the model loaded (600 notes differ): until every vector
  is there too.
- idle: process CPU over --idle-seconds of a `vault mcp` owner (model loaded, watching),
  of a second `vault mcp` (a client of the first), and of a `vault watch` alone.
- latency: `vault watch` owns the index; this process is a client (``shared.connect``);
  a note is saved the way editors do and the time until a keyword search through the
  owner finds the new word (and, with vectors, until a vector search finds the new
  section) is taken over --edits edits.

The soak, idle and 1k latency runs use an index with every vector (built once per
workdir: ~10 min for 1k notes on 2 cores), so that owners load the real model and embed
only what changes. Larger vaults, and every run with --no-model, use owners without a
model (MARKVAULT_MODEL set to a missing folder: keyword-only), because an owner whose
model has loaded embeds every missing vector inside its next sync (see the README).

Measures and prints; never asserts. The tables go to ``bench/out/concurrency.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import duckdb
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import gen_vault
from markvault.config import Settings
from markvault.errors import MarkvaultError
from markvault.files.atomic import TEMP_PREFIX
from markvault.files.vault_files import content_hash
from markvault.runtime.shared_host import connect
from markvault.types.search import Filters, SearchRequest
from markvault.vault import Vault

CORES = os.cpu_count() or 1
HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "concurrency.md"
SEED = 1
EVERY_NOTE = Filters(include_expired=True)
CALL_TIMEOUT_S = 180.0
LOCK_WORDS = re.compile(r"lock|held by process|changed hands|does not answer", re.I)
BUSY_WORDS = re.compile(r"busy|being built", re.I)
CONFLICT_WORDS = ("changed since it was read", "changed while it was being written")
OWNER_LOST_WORDS = "stopped during this change"
EDITOR_TMP = ".editor-save-"  # hidden, as editors' swap and backup files are


# ---- reporting -------------------------------------------------------------------------------


@dataclass
class Report:
    rows: list[tuple[str, str, str]] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def add(self, section: str, figure: str, value: str) -> None:
        self.rows.append((section, figure, value))
        print(f"[{CORES} cores] {section} · {figure}: {value}", flush=True)

    def detail(self, text: str) -> None:
        self.details.append(text)
        print(f"  {text}", flush=True)

    def markdown(self) -> str:
        lines = ["| section | figure | value |", "| --- | --- | --- |"]
        lines += [f"| {s} | {f} | {v.replace('|', '/')} |" for s, f, v in self.rows]
        if self.details:
            lines += ["", *[f"- {d}" for d in self.details]]
        return "\n".join(lines) + "\n"


def log(message: str) -> None:
    print(f"· {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p50_p95(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    return (
        f"p50 {ms(statistics.median(samples))} · p95 {ms(percentile(samples, 0.95))} · "
        f"max {ms(max(samples))} (n={len(samples)})"
    )


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"


def token(rng: random.Random) -> str:
    """A word no generated note holds, that the tokenizer keeps whole."""
    return "qz" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


# ---- sites: a vault, its index folder, the environment of its processes ----------------------


@dataclass
class Site:
    vault: Path
    index: Path
    env: dict[str, str] = field(default_factory=dict)  # e.g. MARKVAULT_MODEL

    @property
    def db(self) -> Path:
        return self.index / f"{self.vault.name}.duckdb"

    def args(self) -> list[str]:
        return ["--vault", str(self.vault), "--index", str(self.index)]

    def environ(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def settings(self) -> Settings:
        return Settings.load(vault=self.vault, index=self.index, model=self.env.get(MODEL_VAR))


MODEL_VAR = "MARKVAULT_MODEL"


def vault_command() -> list[str]:
    """The installed ``vault`` script of this interpreter's environment."""
    script = Path(sys.executable).parent / "vault"
    if script.is_file():
        return [str(script)]
    found = shutil.which("vault")
    return [found] if found else [sys.executable, "-m", "markvault.cli"]


def cli(site: Site, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*vault_command(), *site.args(), *args],
        capture_output=True,
        text=True,
        env=site.environ(),
        timeout=timeout,
        check=False,
    )


def no_model_env(workdir: Path) -> dict[str, str]:
    """Owners that never load a model: keyword-only indexing, no torch."""
    return {MODEL_VAR: str(workdir / "no-model-here")}


def generated_vault(workdir: Path, notes: int) -> Path:
    """A generated vault, reused from an earlier run in the same workdir when identical."""
    vault = workdir / f"vault-{notes}"
    stamp = vault / ".bench-stamp"  # hidden: not a note
    source = Path(gen_vault.__file__).read_bytes()
    want = json.dumps({"notes": notes, "seed": SEED, "gen": hashlib.sha1(source).hexdigest()})
    if not (stamp.is_file() and stamp.read_text() == want):
        shutil.rmtree(vault, ignore_errors=True)
        log(f"generating {notes} notes in {vault}")
        gen_vault.generate(vault, notes, SEED)
        stamp.write_text(want)
    return vault


def vectors_template(workdir: Path, notes: int) -> Site:
    """The generated vault with an index holding every vector (built once per workdir)."""
    vault = generated_vault(workdir, notes)
    site = Site(vault, workdir / f"index-{notes}-vectors")
    status = cli(site, "status", "--json")
    if status.returncode == 0:
        data = json.loads(status.stdout)
        if data["vectors"]["ready"] and not any(data["pending"].values()):
            return site
    log(f"embedding the {notes}-note vault once (about 10 min per 1k notes on 2 cores)")
    began = time.monotonic()
    done = cli(site, "reindex", "--json", "-q", timeout=6 * 3600)
    if done.returncode != 0:
        raise RuntimeError(f"vault reindex failed: {done.stderr}")
    log(f"embedded in {time.monotonic() - began:.0f} s")
    return site


def copy_site(template: Site | None, vault: Path, dest: Path, env: dict[str, str]) -> Site:
    """A fresh copy of ``vault`` (and of the template's index) under ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copytree(vault, dest / vault.name)  # copy2: modification times kept
    site = Site(dest / vault.name, dest / "index", env)
    if template is not None:
        shutil.copytree(template.index, site.index, ignore=shutil.ignore_patterns("*.owner.lock"))
    else:
        done = cli(site, "reindex", "--no-vectors", "-q")
        if done.returncode != 0:
            raise RuntimeError(f"vault reindex failed: {done.stderr}")
    return site


def note_files(vault: Path) -> list[str]:
    """Vault-relative paths of the notes (outside hidden folders)."""
    return sorted(
        p.relative_to(vault).as_posix()
        for p in vault.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(vault).parts)
    )


def disk_hashes(vault: Path) -> dict[str, str]:
    return {rel: content_hash((vault / rel).read_bytes()) for rel in note_files(vault)}


def editor_save(path: Path, text: str, style: str = "rename") -> None:
    """Save as editors do: a hidden temp file renamed over the note, or in place."""
    if style == "rename":
        tmp = path.with_name(f"{EDITOR_TMP}{path.name}.{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    else:  # truncate, then write in two parts: a reader may see an empty or half file
        half = len(text) // 2
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text[:half])
            fh.flush()
            fh.write(text[half:])


# ---- processes -------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(cmd_word: str) -> set[int]:
    """Live child processes of this one whose command line holds ``cmd_word``."""
    found = set()
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) == me and stat[0] != "Z" and cmd_word.encode() in cmdline:
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Proc:
    """A background `vault` process; its stderr is kept (and searched for lock errors)."""

    def __init__(self, site: Site, args: list[str], logdir: Path, name: str) -> None:
        logdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.stdout_path = logdir / f"{name}.out"
        self._stdout = open(self.stdout_path, "w")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            [*vault_command(), *site.args(), *args],
            stdout=self._stdout,
            stderr=subprocess.PIPE,
            text=True,
            env={**site.environ(), "PYTHONUNBUFFERED": "1"},
        )
        self.stderr_path = logdir / f"{name}.err"
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _read(self) -> None:
        assert self.popen.stderr is not None
        with open(self.stderr_path, "a") as keep:
            for line in self.popen.stderr:
                keep.write(line)
                keep.flush()
                with self._seen:
                    self.lines.append(line.rstrip("\n"))
                    self._seen.notify_all()

    def wait_for(self, prefix: str, timeout: float = 600) -> float:
        """Seconds until a stderr line starting with ``prefix`` (raises on timeout)."""
        began = time.monotonic()
        with self._seen:
            while not any(line.startswith(prefix) for line in self.lines):
                if self.popen.poll() is not None or time.monotonic() - began > timeout:
                    raise RuntimeError(f"{self.name}: no {prefix!r}: {self.lines[-5:]}")
                self._seen.wait(0.2)
        return time.monotonic() - began

    def stop(self, timeout: float = 60) -> int:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._reader.join(5)
        self._stdout.close()
        return self.popen.returncode

    def syncs(self) -> list[dict[str, Any]]:
        """`vault watch --json` lines: one per sync."""
        out = []
        for line in self.stdout_path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out


def start_watch(site: Site, logdir: Path, name: str = "watch") -> Proc:
    proc = Proc(site, ["watch", "--json"], logdir, name)
    proc.wait_for("Watching")
    return proc


# ---- MCP clients -----------------------------------------------------------------------------


class ServerGone(Exception):
    """A server died or did not answer: the outcome of its call is unknown."""


def server_params(site: Site) -> StdioServerParameters:
    command = vault_command()
    env = dict(site.env)
    # The SDK starts servers with HOME, PATH, SHELL, TERM, USER and LOGNAME only. The
    # owner's socket lives under tempfile.gettempdir(): pass TMPDIR on, or servers and
    # CLI commands of this run would look for different sockets, and a command that
    # is not the owner would fail after 60 s with "held by process N".
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return StdioServerParameters(
        command=command[0], args=[*command[1:], *site.args(), "mcp"], env=env
    )


async def tool(
    client: Client, name: str, timings: dict[str, list[float]] | None = None, **args: Any
) -> tuple[bool, Any]:
    """(ok, structured result or text); raises ServerGone when the server is gone."""
    began = time.monotonic()
    try:
        result = await asyncio.wait_for(client.call_tool(name, args), CALL_TIMEOUT_S)
    except TimeoutError as exc:
        raise ServerGone(f"{name}: no answer in {CALL_TIMEOUT_S:.0f} s") from exc
    except Exception as exc:
        raise ServerGone(f"{name}: {type(exc).__name__}: {exc}") from exc
    if timings is not None:
        timings.setdefault(f"MCP {name}", []).append(time.monotonic() - began)
    text = "".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        return False, text
    data = result.structured_content
    return True, (text if data is None or list(data) == ["result"] else data)


def classify(message: str) -> str:
    if any(words in message for words in CONFLICT_WORDS):
        return "conflict"
    if OWNER_LOST_WORDS in message:
        return "owner lost during a write"
    if LOCK_WORDS.search(message):
        return "LOCK ERROR"
    if BUSY_WORDS.search(message):
        return "INDEX BUSY"
    return "tool error: " + message[:60]


async def start_client(
    site: Site, stack: contextlib.AsyncExitStack, errlog: TextIO, spawn: asyncio.Lock
) -> tuple[Client, int | None]:
    """A `vault mcp` server and its SDK client; its pid found as the new child process."""
    async with spawn:
        before = children("mcp")
        client = await stack.enter_async_context(
            Client(stdio_client(server_params(site), errlog=errlog))
        )
        new = children("mcp") - before
    return client, (min(new) if new else None)


# ---- the soak --------------------------------------------------------------------------------


@dataclass
class Line:
    """One line a writer asked to add: ``acked`` must be in the file once, ``refused``
    never, ``unknown`` (the server or owner died during the call) at most once."""

    text: str
    path: str
    state: str = "refused"


@dataclass
class Soak:
    site: Site
    logdir: Path
    seconds: float
    rng: random.Random
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    spawn: asyncio.Lock = field(default_factory=asyncio.Lock)
    clients: list[Client | None] = field(default_factory=lambda: [None] * WRITERS)
    pids: list[int | None] = field(default_factory=lambda: [None] * WRITERS)
    lines: dict[str, Line] = field(default_factory=dict)
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: dict[str, str] = field(default_factory=dict)
    timings: dict[str, list[float]] = field(default_factory=dict)
    recent: collections.deque[tuple[str, str]] = field(
        default_factory=lambda: collections.deque(maxlen=50)
    )
    killed: int | None = None
    watch: Proc | None = None
    events: list[str] = field(default_factory=list)

    def error(self, kind: str, message: str) -> None:
        self.errors[kind] += 1
        self.examples.setdefault(kind, message.strip().replace("\n", " ")[:300])

    def event(self, text: str) -> None:
        self.events.append(f"{time.strftime('%H:%M:%S')} {text}")
        log(text)

    def live(self, besides: int | None = None) -> list[tuple[int, Client]]:
        return [(i, c) for i, c in enumerate(self.clients) if c is not None and i != besides]


WRITERS = 5
OWN_NOTES = 3
EDITOR_NOTES = 10
SHARED_NOTES = 2
MAX_CREATED = 6


def plan_notes(vault: Path, rng: random.Random) -> dict[str, list[str]]:
    """Which existing notes each actor works on (disjoint sets)."""
    candidates = []
    for rel in note_files(vault):
        data = (vault / rel).read_bytes()
        if 500 <= len(data) <= 15_000 and b"\r" not in data and data.endswith(b"\n"):
            candidates.append(rel)
    wanted = EDITOR_NOTES + SHARED_NOTES + 1 + WRITERS * OWN_NOTES
    chosen = rng.sample(candidates, wanted)
    plan = {
        "editor": chosen[:EDITOR_NOTES],
        "shared": chosen[EDITOR_NOTES : EDITOR_NOTES + SHARED_NOTES],
        "contended": [chosen[EDITOR_NOTES + SHARED_NOTES]],
    }
    rest = chosen[EDITOR_NOTES + SHARED_NOTES + 1 :]
    for i in range(WRITERS):
        plan[f"w{i}"] = rest[i * OWN_NOTES : (i + 1) * OWN_NOTES]
    return plan


async def append(soak: Soak, i: int, client: Client, rel: str, seq: int) -> None:
    """get -> edit_note(append) with the hash read; a conflict is read again and retried."""
    word = token(soak.rng)
    line = Line(f"mcp w{i} n{seq} {word}", rel)
    soak.lines[line.text] = line
    for _attempt in range(8):
        ok, data = await tool(client, "get", soak.timings, ref=rel, max_chars=500)
        if not ok:
            soak.error(classify(data), data)
            return
        line.state = "unknown"
        ok, data = await tool(
            client,
            "edit_note",
            soak.timings,
            ref=rel,
            hash=data["hash"],
            op="append",
            text=line.text,
        )
        if ok:
            line.state = "acked"
            soak.counts["MCP appends acknowledged"] += 1
            soak.recent.append((word, rel))
            if soak.rng.random() < 0.25:
                await read_after_write(soak, i, word, rel)
            return
        kind = classify(data)
        if kind == "conflict":
            line.state = "refused"
            soak.counts["edit conflicts (stale hash; read again, retried)"] += 1
            continue
        line.state = "unknown" if kind.startswith("owner lost") else "refused"
        soak.error(kind, data)
        return
    soak.counts["appends given up after 8 conflicts in a row"] += 1


async def read_after_write(soak: Soak, i: int, word: str, rel: str) -> None:
    """A write through one server must be found at once through another (one index)."""
    others = soak.live(besides=i)
    if not others:
        return
    _, other = soak.rng.choice(others)
    try:
        ok, text = await tool(
            other, "search", soak.timings, query=word, mode="keyword", include_expired=True, limit=3
        )
    except ServerGone:
        return
    if ok and rel in text:
        soak.counts["read-after-write through another server: found"] += 1
    else:
        soak.error("STALE READ (MCP)", f"{word} in {rel} not found: {text[:200]}")


async def create(soak: Soak, i: int, client: Client, n: int, own: list[str]) -> None:
    word = token(soak.rng)
    line = Line(f"mcp w{i} create c{n} {word}", "", "unknown")
    soak.lines[line.text] = line
    ok, data = await tool(
        client, "create_note", soak.timings, kind="note", title=f"Soak w{i} c{n} {word}",
        content=line.text,
    )  # fmt: skip
    if ok:
        line.state, line.path = "acked", data["path"]
        own.append(data["path"])
        soak.counts["MCP notes created"] += 1
    else:
        line.state = "refused"
        soak.error(classify(data), data)


async def writer(soak: Soak, i: int, own: list[str], shared: list[str]) -> None:
    """One agent on its own `vault mcp` server; a server that dies is started again."""
    seq = created = 0
    errlog = open(soak.logdir / f"mcp-w{i}.err", "a")  # noqa: SIM115 - closed below
    try:
        while not soak.release.is_set():  # a lost server is replaced, even after the load
            pid = None
            try:
                async with contextlib.AsyncExitStack() as stack:
                    client, pid = await start_client(soak.site, stack, errlog, soak.spawn)
                    soak.clients[i], soak.pids[i] = client, pid
                    while not soak.stop.is_set():
                        seq += 1
                        roll = soak.rng.random()
                        if roll < 0.06 and created < MAX_CREATED:
                            created += 1
                            await create(soak, i, client, created, own)
                        elif roll < 0.2:
                            await append(soak, i, client, soak.rng.choice(shared), seq)
                        else:
                            await append(soak, i, client, soak.rng.choice(own), seq)
                        await asyncio.sleep(soak.rng.uniform(0.2, 0.8))
                    await soak.release.wait()  # the final checks use the live servers
                    soak.clients[i] = None
            except Exception as exc:  # the server died (killed, or crashed)
                soak.clients[i] = None
                if pid is not None and pid == soak.killed:
                    soak.counts["MCP server killed with the owner, restarted"] += 1
                else:
                    soak.error("MCP server lost", f"w{i} pid {pid}: {type(exc).__name__}: {exc}")
                await asyncio.sleep(0.5)
    finally:
        soak.clients[i] = None
        errlog.close()


async def contended(soak: Soak, rel: str) -> None:
    """Every 2 s all live writers read the same note and append with that same hash."""
    r = 0
    while not soak.stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(soak.stop.wait(), 2.0)
        live = soak.live()
        if soak.stop.is_set() or len(live) < 2:
            continue
        r += 1
        reads = await asyncio.gather(
            *(tool(c, "get", soak.timings, ref=rel, max_chars=500) for _, c in live),
            return_exceptions=True,
        )
        hashes = {res[1]["hash"] if isinstance(res, tuple) and res[0] else None for res in reads}
        if None in hashes or len(hashes) != 1:
            soak.counts["contended rounds skipped (a read failed)"] += 1
            continue
        (expected,) = hashes
        word = token(soak.rng)
        lines = [Line(f"mcp round r{r} w{i} {word}", rel, "unknown") for i, _ in live]
        for line in lines:
            soak.lines[line.text] = line
        results = await asyncio.gather(
            *(
                tool(
                    c, "edit_note", soak.timings, ref=rel, hash=expected, op="append", text=ln.text
                )
                for (_, c), ln in zip(live, lines, strict=True)
            ),
            return_exceptions=True,
        )
        winners = unknown = 0
        for line, res in zip(lines, results, strict=True):
            if not isinstance(res, tuple):
                unknown += 1  # the server died: unknown
            elif res[0]:
                line.state = "acked"
                winners += 1
            elif classify(res[1]) == "conflict":
                line.state = "refused"
            else:
                kind = classify(res[1])
                line.state = "unknown" if kind.startswith("owner lost") else "refused"
                unknown += kind.startswith("owner lost")
                soak.error(kind, res[1])
        soak.counts["contended rounds"] += 1
        if winners == 1 and not unknown:
            soak.counts["contended rounds: exactly one winner, the rest refused"] += 1
        elif winners > 1:
            soak.error("TWO WINNERS IN ONE ROUND", f"round {r}: {winners} appends with one hash")
        elif winners == 0 and not unknown:
            soak.error("NO WINNER IN A ROUND", f"round {r}: {[str(x)[:100] for x in results]}")
        else:
            soak.counts["contended rounds with an unknown outcome (owner killed)"] += 1


SEARCH_WORDS = ["index", "vector", "duckdb", "search", "latency", "cache", "schema", "deploy"]


async def cli_loop(soak: Soak) -> None:
    """`vault search` and `vault status` processes, one after another."""
    n = 0
    while not soak.stop.is_set():
        n += 1
        expect = None
        if n % 10 == 0:
            args = ["status", "--json"]
        elif soak.recent and soak.rng.random() < 0.6:
            word, expect = soak.rng.choice(list(soak.recent))
            args = ["search", word, "--mode", "keyword", "--json", "--include-expired"]
        else:
            args = ["search", soak.rng.choice(SEARCH_WORDS), "--mode", "keyword", "--json"]
        began = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *vault_command(),
            *soak.site.args(),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=soak.site.environ(),
        )
        out, err = await proc.communicate()
        soak.timings.setdefault(f"CLI {args[0]}", []).append(time.monotonic() - began)
        soak.counts["CLI commands run"] += 1
        stderr = err.decode(errors="replace")
        if proc.returncode == 4 or LOCK_WORDS.search(stderr) or BUSY_WORDS.search(stderr):
            kind = "INDEX BUSY" if BUSY_WORDS.search(stderr) else "LOCK ERROR"
            soak.error(kind, f"CLI {args[0]} exit {proc.returncode}: {stderr}")
        elif proc.returncode not in (0, 1):
            soak.error(f"CLI exit {proc.returncode}", stderr)
        elif expect is not None:
            paths = {h["path"] for h in json.loads(out)["hits"]}
            if expect in paths:
                soak.counts["CLI read-after-write: found"] += 1
            else:
                soak.error("STALE READ (CLI)", f"{args[1]} in {expect} not found")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(soak.stop.wait(), soak.rng.uniform(0.3, 1.0))


async def owner_status(soak: Soak, besides: int | None = None) -> dict[str, Any] | None:
    for _, client in soak.live(besides):
        try:
            ok, data = await tool(client, "status")
        except ServerGone:
            continue
        if ok:
            return dict(data)
    return None


async def killer(soak: Soak, at: float) -> None:
    """SIGKILL the owner once, halfway; time until another process serves the index."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(soak.stop.wait(), at)
    if soak.stop.is_set():
        return
    status = await owner_status(soak)
    if status is None:
        soak.error("kill skipped", "no server answered status")
        return
    pid = status["owner"]["owner_pid"]
    who = describe(soak, pid)
    if not who.startswith("MCP server"):
        soak.event(f"the owner is {who}; not killing it")
        return
    soak.killed = pid
    began = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    soak.event(f"killed the owner ({who}, pid {pid}) with SIGKILL")
    writer_of = soak.pids.index(pid)
    holder = asyncio.create_task(watch_holder(soak, began))
    survivors = soak.live(besides=writer_of)
    answered = await asyncio.gather(*(first_answer(c, pid, began) for _, c in survivors))
    holder.cancel()
    times = [a[0] for a in answered if a is not None]
    if not times:
        soak.error("NO TAKEOVER", "no surviving server answered within 180 s of the kill")
        return
    new = min((a for a in answered if a is not None), key=lambda a: a[0])[1]
    soak.counts["owner killed"] += 1
    soak.timings["takeover"] = times
    soak.event(
        f"new owner: {describe(soak, new)} (pid {new}); first answer from the surviving "
        f"servers after {', '.join(ms(t) for t in times)}"
    )


async def first_answer(client: Client, dead: int, since: float) -> tuple[float, int] | None:
    """(seconds, new owner) when this server first answers status with a new owner."""
    while time.monotonic() - since < 180:
        try:
            ok, data = await tool(client, "status")
        except ServerGone:
            return None
        if ok and data["owner"]["owner_pid"] not in (None, dead):
            return time.monotonic() - since, int(data["owner"]["owner_pid"])
        await asyncio.sleep(0.05)
    return None


async def watch_holder(soak: Soak, since: float) -> None:
    """Log who holds the owner lock (the pid in the lock file) while it changes hands."""
    lock = soak.site.db.with_name(soak.site.db.name + ".owner.lock")
    last = None
    while True:
        with contextlib.suppress(OSError, ValueError):
            pid = int(lock.read_text().strip() or 0)
            if pid != last:
                last = pid
                soak.event(
                    f"+{ms(time.monotonic() - since)}: lock file names {describe(soak, pid)}"
                )
        await asyncio.sleep(0.02)


def describe(soak: Soak, pid: int | None) -> str:
    if pid is None:
        return "nobody"
    if soak.watch is not None and pid == soak.watch.pid:
        return "vault watch"
    if pid in soak.pids:
        return f"MCP server of w{soak.pids.index(pid)}"
    try:
        return "process " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return f"process {pid} (gone)"


async def wait_quiet(soak: Soak, timeout: float = 300) -> float:
    """Seconds until the owner reports nothing pending, three times in a row."""
    began = time.monotonic()
    calm = 0
    while time.monotonic() - began < timeout:
        status = await owner_status(soak)
        watcher = (status or {}).get("watcher") or {}
        if (
            status is not None
            and not any(status["pending"].values())
            and not watcher.get("pending_paths")
            and not watcher.get("pending_reasons")
        ):
            calm += 1
            if calm >= 3:
                return time.monotonic() - began
        else:
            calm = 0
        await asyncio.sleep(1.0)
    soak.error("NOT QUIET", f"still pending after {timeout:.0f} s")
    return timeout


async def run_soak(soak: Soak, plan: dict[str, list[str]], editor_config: Path) -> None:
    writers = [
        asyncio.create_task(writer(soak, i, plan[f"w{i}"], plan["shared"])) for i in range(WRITERS)
    ]
    began = time.monotonic()
    while sum(c is not None for c in soak.clients) < WRITERS:
        if time.monotonic() - began > 300:
            raise RuntimeError("the MCP servers did not start")
        await asyncio.sleep(0.1)
    status = await owner_status(soak)
    owner = status["owner"]["owner_pid"] if status else None
    soak.event(f"{WRITERS} MCP servers up in {time.monotonic() - began:.1f} s; owner: "
               f"{describe(soak, owner)}")  # fmt: skip
    soak.watch = Proc(soak.site, ["watch", "--json"], soak.logdir, "watch")
    soak.watch.wait_for("Waiting to own")
    editor = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "_editor", str(editor_config)
    )
    soak.event(f"soak running for {soak.seconds:.0f} s")
    loops = [
        asyncio.create_task(contended(soak, plan["contended"][0])),
        asyncio.create_task(cli_loop(soak)),
        asyncio.create_task(killer(soak, soak.seconds / 2)) if soak.seconds >= 20 else None,
    ]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(soak.stop.wait(), soak.seconds)
    soak.stop.set()
    await asyncio.gather(*(t for t in loops if t is not None))
    await editor.wait()
    soak.event("load stopped; waiting for the index to be quiet")
    waiting = time.monotonic()
    while len(soak.live()) < WRITERS and time.monotonic() - waiting < 300:
        await asyncio.sleep(0.2)  # a writer restarting its server
    soak.timings["quiet"] = [await wait_quiet(soak)]
    status = await owner_status(soak)
    owner = status["owner"]["owner_pid"] if status else None
    soak.event(f"quiet after {soak.timings['quiet'][0]:.1f} s; owner: {describe(soak, owner)}")
    soak.release.set()
    await asyncio.gather(*writers)


# ---- the editor (its own process) ------------------------------------------------------------


def editor_main(config_path: str) -> int:
    """Rewrite own notes as editors save them; append in place to the shared notes."""
    cfg = json.loads(Path(config_path).read_text())
    vault = Path(cfg["vault"])
    rng = random.Random(cfg["seed"])
    base = {rel: (vault / rel).read_bytes().decode("utf-8") for rel in cfg["own"]}
    last: dict[str, str] = {}
    appended: list[str] = []
    styles: collections.Counter[str] = collections.Counter()
    counter = 0
    end = time.monotonic() + cfg["seconds"]
    while time.monotonic() < end:
        counter += 1
        if rng.random() < 0.15:
            rel = rng.choice(cfg["shared"])
            line = f"editor shared {rel.rsplit('/', 1)[-1][:12]} a{counter}"
            with open(vault / rel, "a", encoding="utf-8") as fh:  # like `echo >> note.md`
                fh.write(line + "\n")
            appended.append(line)
            styles["in-place append (shared note)"] += 1
        else:
            rel = rng.choice(cfg["own"])
            roll = rng.random()
            style = "rename" if roll < 0.6 else "in place"
            text = f"{base[rel]}\neditor counter {counter}\n"
            editor_save(vault / rel, text, style)
            styles[f"save ({style})"] += 1
            if roll > 0.9:  # an autosave right behind it
                time.sleep(0.03)
                counter += 1
                text = f"{base[rel]}\neditor counter {counter}\n"
                editor_save(vault / rel, text, "rename")
                styles["autosave 30 ms later"] += 1
            last[rel] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        time.sleep(rng.uniform(0.1, 0.3))
    result = {"last": last, "appended": appended, "styles": dict(styles), "saves": counter}
    Path(cfg["result"]).write_text(json.dumps(result))
    return 0


# ---- the soak's checks -----------------------------------------------------------------------


TABLES = {
    "notes": "SELECT path, file, id, title, kind, type, hash, size, mtime_ns FROM notes",
    "chunks": "SELECT path, seq, heading_path, start_line, end_line, text, hash, fts_text "
    "FROM chunks",
    "links": "SELECT source, target, heading, line, target_path FROM links",
}
RANKING_QUERIES = [
    "index",
    "vector embedding",
    "duckdb transaction lock",
    '"rank fusion"',
    "mcp",
    "editor counter",
    "qz*",
    "soak OR round",
]


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def table_rows(db: Path, sql: str) -> collections.Counter[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(sql).fetchall()
    return collections.Counter(tuple(_frozen(v) for v in row) for row in rows)


def missing_vectors(db: Path) -> int | None:
    with duckdb.connect(str(db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "embeddings" not in tables:
            return None
        row = con.execute(
            "SELECT count(DISTINCT hash) FROM chunks WHERE hash NOT IN "
            "(SELECT hash FROM embeddings)"
        ).fetchone()
    return int(row[0]) if row else 0


def rankings(site: Site) -> dict[str, list[tuple[str, tuple[int, ...], float]]]:
    """Keyword top-10 of each query, opened in this process (nothing else runs)."""
    out = {}
    with Vault(site.settings()) as vault:
        for query in RANKING_QUERIES:
            hits = vault.search(
                SearchRequest(query, mode="keyword", limit=10, filters=EVERY_NOTE)
            ).hits
            out[query] = [(h.path, tuple(h.lines), round(h.score, 4)) for h in hits]
    return out


def same_ranking(
    a: list[tuple[str, tuple[int, ...], float]], b: list[tuple[str, tuple[int, ...], float]]
) -> bool:
    """The same scores, and the same hits at each score (the order among equal scores
    follows chunk ids, which differ between an index that grew and a fresh one); the
    lowest score's group may be cut differently by the limit."""
    if [h[2] for h in a] != [h[2] for h in b]:
        return False
    groups_a: dict[float, set[tuple[str, tuple[int, ...]]]] = collections.defaultdict(set)
    groups_b: dict[float, set[tuple[str, tuple[int, ...]]]] = collections.defaultdict(set)
    for hit in a:
        groups_a[hit[2]].add(hit[:2])
    for hit in b:
        groups_b[hit[2]].add(hit[:2])
    last = a[-1][2] if a else None
    return all(groups_a[score] == groups_b[score] for score in groups_a if score != last)


def compare_indexes(live: Site, fresh: Site, report: Report) -> bool:
    """The live index against a fresh keyword reindex of the same files."""
    equal = True
    for table, sql in TABLES.items():
        a, b = table_rows(live.db, sql), table_rows(fresh.db, sql)
        only_live, only_fresh = a - b, b - a
        same = not only_live and not only_fresh
        equal &= same
        report.add(
            "soak",
            f"index = fresh reindex: {table}",
            f"{'equal' if same else 'DIFFERENT'} ({sum(a.values()):,} rows live; "
            f"{sum(only_live.values())} only live, {sum(only_fresh.values())} only fresh)",
        )
        for row in list(only_live)[:3]:
            report.detail(f"{table} only in the live index: {str(row)[:300]}")
        for row in list(only_fresh)[:3]:
            report.detail(f"{table} only in the fresh index: {str(row)[:300]}")
    a_rank, b_rank = rankings(live), rankings(fresh)
    differing = [q for q in RANKING_QUERIES if not same_ranking(a_rank[q], b_rank[q])]
    ties = [q for q in RANKING_QUERIES if a_rank[q] != b_rank[q] and q not in differing]
    equal &= not differing
    if ties:
        report.detail(f"equal scores in another order (ties) for {ties}")
    report.add(
        "soak",
        f"index = fresh reindex: keyword top-10 of {len(RANKING_QUERIES)} queries",
        "equal" if not differing else f"DIFFERENT for {differing}",
    )
    for query in differing[:3]:
        report.detail(f"ranking of {query!r}: live {a_rank[query][:5]} · fresh {b_rank[query][:5]}")
    return equal


def check_files(
    soak: Soak, plan: dict[str, list[str]], editor: dict[str, Any], report: Report
) -> None:
    vault = soak.site.vault
    tracked = {line.path for line in soak.lines.values() if line.path}
    tracked |= {rel for rel in note_files(vault) if rel.rsplit("/", 1)[-1].startswith("Soak w")}
    tracked |= set(plan["shared"])
    seen: collections.Counter[str] = collections.Counter()
    where: dict[str, set[str]] = collections.defaultdict(set)
    garbled = []
    for rel in sorted(tracked):
        path = vault / rel
        if not path.is_file():
            soak.error("TRACKED NOTE MISSING", rel)
            continue
        for text in path.read_text(encoding="utf-8").split("\n"):
            if text in soak.lines or text.startswith("editor shared "):
                seen[text] += 1
                where[text].add(rel)
            elif "mcp w" in text or "mcp round" in text or "editor shared" in text:
                garbled.append(f"{rel}: {text[:120]!r}")
    lost = [ln for ln in soak.lines.values() if ln.state == "acked" and seen[ln.text] == 0]
    doubled = [ln for ln in soak.lines.values() if seen[ln.text] > 1]
    ghost = [ln for ln in soak.lines.values() if ln.state == "refused" and seen[ln.text]]
    misplaced = [
        ln
        for ln in soak.lines.values()
        if ln.path and seen[ln.text] and where[ln.text] != {ln.path}
    ]
    unknown = [ln for ln in soak.lines.values() if ln.state == "unknown"]
    states = collections.Counter(ln.state for ln in soak.lines.values())
    report.add(
        "soak",
        "MCP lines: acknowledged / refused (conflict) / outcome unknown",
        f"{states['acked']:,} / {states['refused']:,} / {len(unknown)} "
        f"({sum(1 for ln in unknown if seen[ln.text])} of the unknown were written)",
    )
    report.add(
        "soak",
        "lost / duplicated / garbled (interleaved) / misplaced / written-though-refused lines",
        f"{len(lost)} / {len(doubled)} / {len(garbled)} / {len(misplaced)} / {len(ghost)}",
    )
    for label, items in (
        ("lost", [ln.text for ln in lost]),
        ("duplicated", [ln.text for ln in doubled]),
        ("garbled", garbled),
        ("misplaced", [ln.text for ln in misplaced]),
        ("written though refused", [ln.text for ln in ghost]),
    ):
        for item in items[:3]:
            report.detail(f"{label}: {item}")
    appended = editor["appended"]
    kept = sum(1 for line in appended if seen[line] == 1)
    report.add(
        "soak",
        "editor's in-place appends to the 2 shared notes kept",
        f"{kept} of {len(appended)}"
        + (
            f" ({len(appended) - kept} overwritten by an MCP edit's atomic replace that "
            "read the file just before the append)"
            if kept < len(appended)
            else ""
        ),
    )
    wrong = [
        rel
        for rel, digest in editor["last"].items()
        if hashlib.sha256((vault / rel).read_bytes()).hexdigest() != digest
    ]
    report.add(
        "soak",
        "editor's notes holding their last saved version",
        f"{len(editor['last']) - len(wrong)} of {len(editor['last'])} "
        f"({editor['saves']} saves: {editor['styles']})",
    )
    leftovers = [p.relative_to(vault).as_posix() for p in vault.rglob(f"{TEMP_PREFIX}*")]
    leftovers += [p.relative_to(vault).as_posix() for p in vault.rglob(f"{EDITOR_TMP}*")]
    report.add("soak", "temp files left in the vault", f"{len(leftovers)} {leftovers[:5]}")


def scan_logs(soak: Soak, report: Report) -> None:
    texts = {p.name: p.read_text(errors="replace") for p in soak.logdir.glob("mcp-w*.err")}
    if soak.watch is not None:
        texts["watch.err"] = "\n".join(soak.watch.lines)
    lock_lines, tracebacks = [], 0
    for name, text in texts.items():
        tracebacks += text.count("Traceback")
        lock_lines += [f"{name}: {ln[:200]}" for ln in text.splitlines() if LOCK_WORDS.search(ln)]
    report.add(
        "soak",
        "server stderr: lines mentioning a lock / tracebacks",
        f"{len(lock_lines)} / {tracebacks} (logs in {soak.logdir})",
    )
    for line in lock_lines[:3]:
        report.detail(line)


def bench_soak(
    workdir: Path, args: argparse.Namespace, template: Site | None, report: Report
) -> None:
    env = no_model_env(workdir) if args.no_model else {}
    vault = generated_vault(workdir, args.soak_notes)
    site = copy_site(template, vault, workdir / "soak", env)
    logdir = workdir / "soak" / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    plan = plan_notes(site.vault, rng)
    editor_config = workdir / "soak" / "editor.json"
    editor_result = workdir / "soak" / "editor-result.json"
    editor_config.write_text(
        json.dumps(
            {
                "vault": str(site.vault),
                "own": plan["editor"],
                "shared": plan["shared"],
                "seconds": args.seconds,
                "seed": SEED + 1,
                "result": str(editor_result),
            }
        )
    )
    soak = Soak(site, logdir, args.seconds, rng)
    what = "keyword-only owners (no model)" if args.no_model else "index with vectors, real model"
    label = f"{args.soak_notes // 1000}k notes" if args.soak_notes >= 1000 else str(args.soak_notes)
    report.detail(
        f"soak: {label}, {what}, {args.seconds:.0f} s; load average before: {load_average()}"
    )
    began = time.monotonic()
    try:
        asyncio.run(asyncio.wait_for(run_soak(soak, plan, editor_config), args.seconds + 1200))
    finally:
        if soak.watch is not None:
            code = soak.watch.stop()
            soak.event(f"vault watch stopped (exit {code})")
    report.detail(f"soak: load average after: {load_average()}")
    for event in soak.events:
        report.detail(f"soak event {event}")
    leftover = children("mcp")
    if leftover:
        soak.error("MCP servers still running", str(leftover))
    wall = time.monotonic() - began
    locks, busy = soak.errors.get("LOCK ERROR", 0), soak.errors.get("INDEX BUSY", 0)
    report.add(
        "soak",
        "lock errors (must be 0)",
        f"{locks + busy} ({locks} naming a lock or a silent owner, {busy} index busy)",
    )
    other = {k: v for k, v in soak.errors.items() if k not in ("LOCK ERROR", "INDEX BUSY")}
    report.add("soak", "other errors by kind", json.dumps(other) if other else "none")
    for kind, example in soak.examples.items():
        report.detail(f"first {kind!r}: {example}")
    for name, value in sorted(soak.counts.items()):
        report.add("soak", name, f"{value:,}")
    acked = soak.counts["MCP appends acknowledged"]
    report.add("soak", "acknowledged MCP appends per second", f"{acked / args.seconds:.1f}")
    for name in sorted(soak.timings):
        if name.startswith(("MCP", "CLI")):
            report.add("soak", f"{name} latency", p50_p95(soak.timings[name]))
    if "takeover" in soak.timings:
        took = soak.timings["takeover"]
        report.add(
            "soak",
            "kill -9 of the owner -> first answer with the new owner (fastest / slowest server)",
            f"{ms(min(took))} / {ms(max(took))}",
        )
    report.add("soak", "load stopped -> index quiet", f"{soak.timings['quiet'][0]:.1f} s")
    check_files(soak, plan, json.loads(editor_result.read_text()), report)
    scan_logs(soak, report)
    fresh = Site(site.vault, workdir / "soak" / "fresh-index", env)
    done = cli(fresh, "reindex", "--no-vectors", "-q")
    if done.returncode != 0:
        raise RuntimeError(f"fresh reindex failed: {done.stderr}")
    equal = compare_indexes(site, fresh, report)
    report.add("soak", "final index equal to a fresh reindex (must be true)", str(equal).lower())
    gaps = missing_vectors(site.db)
    if gaps is not None:
        report.add("soak", "chunk texts without a vector in the live index at the end", str(gaps))
    report.detail(f"soak: {wall:.0f} s wall in all")


# ---- git checkout ----------------------------------------------------------------------------


def git(vault: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    subprocess.run(["git", "-C", str(vault), *args], check=True, capture_output=True, env=env)


def make_branch(vault: Path, changes: int, rng: random.Random) -> tuple[int, int, int]:
    """A repository on `main` and a branch `other` where ``changes`` notes differ."""
    git(vault, "init", "-q", "-b", "main")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "base")
    git(vault, "checkout", "-q", "-b", "other")
    files = note_files(vault)
    rng.shuffle(files)
    edits, renames = changes * 3 // 4, changes // 8
    deletes = changes - edits - renames
    for rel in files[:edits]:
        path = vault / rel
        path.write_bytes(path.read_bytes() + f"\nbranch edit {token(rng)}\n".encode())
    for rel in files[edits : edits + renames]:
        os.rename(vault / rel, vault / (rel[:-3] + " moved.md"))
    for rel in files[edits + renames : changes]:
        (vault / rel).unlink()
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "other")
    git(vault, "checkout", "-q", "main")
    return edits, renames, deletes


def index_matches_disk(site: Site) -> tuple[bool, str]:
    """(path, content hash) of every note in the index against the files (owner stopped)."""
    indexed = {row[0]: row[1] for row in table_rows(site.db, "SELECT path, hash FROM notes")}
    disk = disk_hashes(site.vault)
    only_index = set(indexed) - set(disk)
    only_disk = set(disk) - set(indexed)
    differ = {p for p in set(disk) & set(indexed) if disk[p] != indexed[p]}
    ok = not (only_index or only_disk or differ)
    return (
        ok,
        f"{len(only_index)} only indexed, {len(only_disk)} only on disk, {len(differ)} differ",
    )


def bench_checkout(
    workdir: Path, notes: int, changes: int, report: Report, template: Site | None = None
) -> None:
    """Checkouts both ways under a watching owner: keyword-only, or (``template``) with
    the model and an index holding every vector."""
    vault = generated_vault(workdir, notes)
    dest = workdir / ("checkout-vectors" if template else "checkout")
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    site = Site(dest / vault.name, dest / "index", {} if template else no_model_env(workdir))
    shutil.copytree(vault, site.vault)
    if template is not None:
        shutil.copytree(template.index, site.index, ignore=shutil.ignore_patterns("*.lock"))
    began = time.monotonic()
    edits, renames, deletes = make_branch(site.vault, changes, random.Random(SEED))
    log(f"git repository and branch made in {time.monotonic() - began:.0f} s")
    done = cli(site, "reindex", "-q", *([] if template else ["--no-vectors"]))
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    size = f"{notes // 1000}k notes" if notes >= 1000 else f"{notes} notes"
    owner = "owner with the model, every vector indexed" if template else "keyword-only owner"
    size += ", vectors" if template else ""
    report.detail(
        f"checkout: {size}, `vault watch` as the {owner}; `other` differs in {changes:,} "
        f"notes: {edits:,} edited, {renames:,} renamed, {deletes:,} deleted; "
        f"load average before: {load_average()}"
    )
    logdir = dest / "logs"
    expected = {"other": notes - deletes, "main": notes}
    for n, branch in enumerate(("other", "main")):
        watch = start_watch(site, logdir, f"watch-{n}")
        busy: list[str] = []
        try:
            with connect(site.settings()) as client:
                assert not client.host.owner_info()["this_process_owns"], (
                    "the watch process should own the index"
                )
                if template is not None:  # the model loaded first: see the report
                    client.search(SearchRequest("warm up", mode="vector", limit=1))
                wait_status(client, notes_are(notes - (deletes if n else 0), template), 600)
                syncs_before = len(watch.syncs())
                start = time.monotonic()
                git(site.vault, "checkout", "-q", branch)
                end = time.monotonic()
                want = expected[branch]
                converged = wait_status(client, notes_are(want, template), 1800, busy)
        finally:
            watch.stop()
        ok, detail = index_matches_disk(site)
        syncs = watch.syncs()[syncs_before:]
        what = "index = files, every vector" if template else "index = files"
        report.add(
            "checkout",
            f"{size}: git checkout {branch} ({changes:,} notes differ) -> {what}",
            f"{converged - start:.1f} s from its start, {converged - end:.1f} s after it ended "
            f"(git took {end - start:.1f} s); {len(syncs)} syncs "
            f"({', '.join(describe_sync(s) for s in syncs[:4])})",
        )
        if busy:
            report.add(
                "checkout",
                f"{size}: status calls answered 'busy' meanwhile",
                f"{len(busy)}, e.g. {busy[-1][:160]}",
            )
        report.add(
            "checkout",
            f"{size}: after checkout {branch}: index (path, hash) = files on disk",
            f"{'yes' if ok else 'NO'} ({detail})",
        )


def notes_are(count: int, vectors: object = None) -> Callable[[dict[str, Any]], bool]:
    """The index holds ``count`` notes (and every vector, if ``vectors``), and the
    watcher delivered its start batch."""
    return lambda status: (
        status["notes"] == count
        and watcher_started(status)
        and (not vectors or status["vectors"]["ready"])
    )


def watcher_started(status: dict[str, Any]) -> bool:
    return bool((status.get("watcher") or {}).get("batches", 0) >= 1)


def describe_sync(sync: dict[str, Any]) -> str:
    reasons = ",".join(sync.get("reasons", [])) or "hints"
    changed = sum(sync.get(k, 0) for k in ("added", "updated", "renamed", "removed"))
    embedded = f", {sync['embedded']} embedded" if sync.get("embedded") else ""
    return f"{sync.get('seconds', 0):.1f} s {reasons}: {changed} changed{embedded}"


def wait_status(
    client: Vault,
    check: Callable[[dict[str, Any]], bool],
    timeout: float = 120,
    busy: list[str] | None = None,
) -> float:
    """The monotonic time at which the owner reports ``check`` true and nothing pending
    (answers that the index is busy are collected in ``busy``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = client.status()
        except MarkvaultError as exc:
            if busy is None:
                raise
            busy.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.1)
            continue
        if check(status) and not any(status["pending"].values()):
            return time.monotonic()
        time.sleep(0.1)
    raise TimeoutError(f"no convergence in {timeout:.0f} s")


# ---- idle CPU --------------------------------------------------------------------------------


async def idle_mcp(site: Site, seconds: float, logdir: Path, report: Report, label: str) -> None:
    spawn = asyncio.Lock()
    with open(logdir / "idle-mcp.err", "a") as errlog:
        async with contextlib.AsyncExitStack() as stack:
            owner, owner_pid = await start_client(site, stack, errlog, spawn)
            began = time.monotonic()
            if MODEL_VAR not in site.env:  # wait until the model is loaded
                while time.monotonic() - began < 300:
                    ok, text = await tool(owner, "search", query="vector", mode="vector", limit=1)
                    if ok and "still loading" not in text:
                        break
                    await asyncio.sleep(1)
                log(f"model loaded in the owner after {time.monotonic() - began:.1f} s")
            other, other_pid = await start_client(site, stack, errlog, spawn)
            ok, status = await tool(other, "status")
            assert ok and status["owner"]["owner_pid"] == owner_pid, status
            await asyncio.sleep(5)  # past start-up
            assert owner_pid and other_pid
            cpu0 = cpu_seconds(owner_pid), cpu_seconds(other_pid)
            wall0 = time.monotonic()
            await asyncio.sleep(seconds)
            wall = time.monotonic() - wall0
            cpu1 = cpu_seconds(owner_pid), cpu_seconds(other_pid)
    model = "model loaded" if MODEL_VAR not in site.env else "no model"
    for name, c0, c1 in (
        (f"`vault mcp` owner ({model}, watching)", cpu0[0], cpu1[0]),
        ("`vault mcp` client of it", cpu0[1], cpu1[1]),
    ):
        report.add(
            "idle",
            f"{label}: {name}, {seconds:.0f} s",
            f"{(c1 - c0) / wall * 100:.3f}% of a core ({(c1 - c0) * 1000:.0f} ms CPU)",
        )


def idle_watch(site: Site, seconds: float, logdir: Path, report: Report, label: str) -> None:
    watch = start_watch(site, logdir, "watch-idle")
    try:
        if MODEL_VAR not in site.env:
            with connect(site.settings()) as client:  # waits for the model to load
                client.search(SearchRequest("vector", mode="vector", limit=1))
        time.sleep(5)
        cpu0, wall0 = cpu_seconds(watch.pid), time.monotonic()
        time.sleep(seconds)
        cpu, wall = cpu_seconds(watch.pid) - cpu0, time.monotonic() - wall0
    finally:
        watch.stop()
    what = "model loaded" if MODEL_VAR not in site.env else "no model"
    report.add(
        "idle",
        f"{label}: `vault watch` ({what}), {seconds:.0f} s",
        f"{cpu / wall * 100:.3f}% of a core ({cpu * 1000:.0f} ms CPU)",
    )


# ---- edit -> searchable ----------------------------------------------------------------------

ANIMALS = ["heron", "otter", "lynx", "ibis", "walrus", "marten", "gecko", "puffin", "tapir"]
THINGS = ["lanterns", "violins", "teapots", "anchors", "kites", "lighthouses", "saddles"]
PLACES = ["frozen harbour", "salt marsh", "copper mine", "glass bridge", "orchard", "dune"]


def until_found(probe: Callable[[], bool], timeout: float = 120) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return time.monotonic()
        time.sleep(0.01)
    return None


def bench_latency(site: Site, label: str, edits: int, logdir: Path, report: Report) -> None:
    vectors = MODEL_VAR not in site.env
    watch = start_watch(site, logdir, f"watch-latency-{label}")
    keyword: list[float] = []
    vector: list[float] = []
    misses = 0
    try:
        with connect(site.settings()) as client:
            assert not client.host.owner_info()["this_process_owns"], (
                "the watch process should own the index"
            )
            if vectors:
                client.search(
                    SearchRequest("vector", mode="vector", limit=1)
                )  # waits for the model
            wait_status(client, watcher_started)
            rng = random.Random(11)
            for rel in rng.sample(note_files(site.vault), edits):
                path = site.vault / rel
                word = token(rng)
                sentence = (
                    f"A {rng.choice(ANIMALS)} carried {rng.randint(3, 99)} "
                    f"{rng.choice(THINGS)} across the {rng.choice(PLACES)} at dawn."
                )
                text = path.read_bytes().decode("utf-8")
                time.sleep(0.6)  # a person's save, not part of a burst
                began = time.monotonic()
                editor_save(path, f"{text}\n## Field log {word}\n\n{sentence}\n")

                def by_keyword(word: str = word, rel: str = rel) -> bool:
                    hits = client.search(
                        SearchRequest(word, mode="keyword", limit=3, filters=EVERY_NOTE)
                    ).hits
                    return any(h.path == rel for h in hits)

                def by_vector(query: str = sentence, word: str = word, rel: str = rel) -> bool:
                    hits = client.search(
                        SearchRequest(
                            query, mode="vector", limit=10, filters=EVERY_NOTE, full_text=True
                        )
                    ).hits
                    return any(h.path == rel and word in (h.text or "") for h in hits)

                found = until_found(by_keyword)
                if found is None:
                    misses += 1
                    continue
                keyword.append(found - began)
                if vectors:
                    found = until_found(by_vector, 30)
                    if found is None:
                        misses += 1
                    else:
                        vector.append(found - began)
    finally:
        watch.stop()
    owner = "`vault watch` with the model, vectors" if vectors else "`vault watch`, no model"
    report.add(
        "latency",
        f"{label} ({owner}): save -> found by a keyword search from another process",
        p50_p95(keyword),
    )
    if vectors:
        report.add(
            "latency",
            f"{label}: save -> its new section found by a vector search from another process",
            p50_p95(vector),
        )
    if misses:
        report.add("latency", f"{label}: edits never found", str(misses))


# ---- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sections", default="soak,checkout,idle,latency")
    parser.add_argument("--seconds", type=float, default=300.0, help="Soak duration.")
    parser.add_argument("--soak-notes", type=int, default=1000)
    parser.add_argument("--checkout-notes", type=int, default=10000)
    parser.add_argument("--checkout-changes", type=int, default=2000)
    parser.add_argument(
        "--checkout-vectors",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Also check out on the vault with vectors (the model re-embeds what changed).",
    )
    parser.add_argument("--latency-notes", default="1000,10000")
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument(
        "--no-model", action="store_true", help="Keyword-only owners everywhere (quick)."
    )
    parser.add_argument(
        "--workdir", type=Path, help="Keep vaults and the vectors index here for the next run."
    )
    parser.add_argument("--out", type=Path, default=OUT)
    return parser.parse_args(argv)


def source_stamp() -> str:
    """Which code ran: src/ changes under a long benchmark on a shared machine."""
    src = Path(__file__).resolve().parent.parent / "src" / "markvault"
    files = sorted(src.glob("*.py"))
    digest = hashlib.sha1(b"".join(p.read_bytes() for p in files)).hexdigest()[:12]
    newest = max(files, key=lambda p: p.stat().st_mtime)
    when = time.strftime("%H:%M:%S", time.localtime(newest.stat().st_mtime))
    return f"src/markvault sha1 {digest} (newest: {newest.name} at {when})"


def run(args: argparse.Namespace, workdir: Path, report: Report) -> None:
    report.detail(f"load average at start: {load_average()}")
    report.detail(f"code at start: {source_stamp()}")
    sections = set(args.sections.split(","))
    logdir = workdir / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    template = None
    wants_vectors = sections & {"soak", "idle", "latency"} or (
        "checkout" in sections and args.checkout_vectors
    )
    if wants_vectors and not args.no_model:
        template = vectors_template(workdir, args.soak_notes)
    if "soak" in sections:
        bench_soak(workdir, args, template, report)
    if "checkout" in sections:
        bench_checkout(workdir, args.checkout_notes, args.checkout_changes, report)
        if template is not None and args.checkout_vectors:
            changes = min(args.checkout_changes, args.soak_notes * 3 // 5)
            bench_checkout(workdir, args.soak_notes, changes, report, template)
    if "idle" in sections:
        env = no_model_env(workdir) if args.no_model else {}
        vault = generated_vault(workdir, args.soak_notes)
        site = copy_site(template, vault, workdir / "idle", env)
        label = f"{args.soak_notes:,} notes"
        asyncio.run(idle_mcp(site, args.idle_seconds, logdir, report, label))
        idle_watch(site, args.idle_seconds, logdir, report, label)
    if "latency" in sections:
        for notes in (int(n) for n in args.latency_notes.split(",")):
            with_vectors = template is not None and notes == args.soak_notes
            env = {} if with_vectors else no_model_env(workdir)
            vault = generated_vault(workdir, notes)
            site = copy_site(template if with_vectors else None, vault, workdir / "latency", env)
            bench_latency(site, f"{notes:,} notes", args.edits, logdir, report)
    report.detail(f"load average at end: {load_average()}")
    report.detail(f"code at end: {source_stamp()}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    temp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="markvault-bench-conc-")) if temp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"markvault concurrency benchmark · {CORES} cores · workdir {workdir}", flush=True)
    report = Report()
    try:
        run(args, workdir, report)
    finally:
        table = report.markdown()
        print("\n" + table)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            f"# bench_concurrency.py · {CORES} cores · {time.strftime('%Y-%m-%d %H:%M')}\n\n"
            f"`python bench/bench_concurrency.py {' '.join(sys.argv[1:])}`\n\n{table}",
            encoding="utf-8",
        )
        print(f"written to {args.out}")
        if temp:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "_editor":
        sys.exit(editor_main(sys.argv[2]))
    sys.exit(main())
