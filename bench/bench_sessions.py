"""Sessions: import 1,000 synthetic Claude Code sessions, then import them again.

    python bench/bench_sessions.py                       # 1,000 sessions of ~100 turns
    python bench/bench_sessions.py --sessions 100        # a quick look
    python bench/bench_sessions.py --workdir /tmp/sb     # keep the transcripts and vault

Writes transcripts in Claude Code's JSON Lines format (prompts, answers with text and
tool calls, tool results, a subagent now and then, file-history snapshots, a malformed
line in some) into a temporary ``projects/`` folder, imports them into an empty vault
through ``Vault.import_sessions`` (as ``vault sessions import`` does), imports them
again (nothing changed: no note is written, the index is not touched), grows a few
sessions and imports once more, and runs the no-op import once as a new
``vault sessions import`` process. Measures and prints; never asserts. The figures
are also written to ``bench/out/sessions.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markvault.runtime.local_host import open_local
from markvault.types.search import Filters, SearchRequest
from markvault.types.sessions import SessionQuery
from markvault.vault import Vault

CORES = os.cpu_count() or 1
HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "sessions.md"

WORDS_TEXT = (
    "index query chunk note vault search keyword vector rank fusion test fixture parser "
    "token stem heading link backlink embed model cache lock file path folder import "
    "session summary decision outcome transcript hook settings project branch commit "
    "merge rebase conflict error warning retry timeout thread process server client "
    "request response schema table column row batch stream buffer encoding unicode bigram "
    "latency throughput memory disk fsync atomic rename hash budget page limit offset "
    "filter scope prompt answer tool result agent subagent compaction context window "
    "refactor bugfix feature release version config default option flag argument option "
    "value frontmatter"
)
WORDS = WORDS_TEXT.split()
PROJECTS = [
    "shop-app",
    "kiosk",
    "markvault",
    "billing",
    "infra",
    "mobile",
    "docs-site",
    "data-pipeline",
    "auth",
    "search-ui",
]
TOOLS = ["Read", "Bash", "Grep", "Edit", "Glob", "Write"]


@dataclass
class Figures:
    rows: list[tuple[str, str]] = field(default_factory=list)

    def add(self, name: str, value: str) -> None:
        self.rows.append((name, value))
        print(f"[{CORES} cores] {name}: {value}", flush=True)

    def markdown(self) -> str:
        lines = ["| figure | value |", "| --- | --- |"]
        lines += [f"| {name} | {value} |" for name, value in self.rows]
        return "\n".join(lines) + "\n"


def log(message: str) -> None:
    print(f"· {message}", file=sys.stderr, flush=True)


class StageClock:
    """markvault's Progress protocol: when each stage (import, index refresh) ran."""

    def __init__(self) -> None:
        self.stages: list[tuple[str, float]] = []
        self._label, self._started = "", 0.0

    def start(self, label: str, total: int) -> None:
        self._label, self._started = label, time.perf_counter()

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        if self._label:
            self.stages.append((self._label, time.perf_counter() - self._started))
            self._label = ""


# ---- transcripts -----------------------------------------------------------------------------


def sentence(rng: random.Random, low: int, high: int) -> str:
    words = rng.choices(WORDS, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng, 6, 16) for _ in range(sentences))


class Writer:
    """One session's lines, with the bookkeeping fields Claude Code writes."""

    def __init__(self, rng: random.Random, sid: str, cwd: str, start: float) -> None:
        self.rng, self.sid, self.cwd, self.clock = rng, sid, cwd, start
        self.lines: list[str] = []
        self.parent: str | None = None

    def _base(self, kind: str, sidechain: bool = False) -> dict[str, Any]:
        self.clock += self.rng.uniform(1, 40)
        uid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.clock))
        obj = {
            "parentUuid": self.parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.sid,
            "version": "2.0.50",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": f"{stamp}.{self.rng.randint(0, 999):03d}Z",
        }
        self.parent = uid
        return obj

    def emit(self, obj: dict[str, Any]) -> None:
        self.lines.append(json.dumps(obj, ensure_ascii=False))

    def user(self, content: Any, sidechain: bool = False) -> None:
        self.emit(
            {**self._base("user", sidechain), "message": {"role": "user", "content": content}}
        )

    def assistant(self, blocks: list[dict[str, Any]], sidechain: bool = False) -> None:
        message = {
            "model": "claude-sonnet-4-5-20250929",
            "id": f"msg_{self.rng.getrandbits(48):x}",
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": None,
            "usage": {"input_tokens": 1000, "output_tokens": 200},
        }
        self.emit({**self._base("assistant", sidechain), "message": message})

    def tool_round(self) -> None:
        rng = self.rng
        name = rng.choice(TOOLS)
        tool_id = f"toolu_{rng.getrandbits(64):x}"
        path = f"{self.cwd}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        args = {
            "Read": {"file_path": path},
            "Bash": {"command": f"pytest -q tests/test_{rng.choice(WORDS)}.py"},
            "Grep": {"pattern": rng.choice(WORDS), "path": f"{self.cwd}/src"},
            "Edit": {"file_path": path, "old_string": "a", "new_string": "b"},
            "Glob": {"pattern": "src/**/*.py"},
            "Write": {"file_path": path, "content": paragraph(rng, 2)},
        }[name]
        self.assistant([{"type": "tool_use", "id": tool_id, "name": name, "input": args}])
        lines = [f"{n:6}→{sentence(rng, 4, 10)}" for n in range(1, rng.randint(3, 40))]
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": "\n".join(lines)}
        self.user([result])

    def turn(self) -> None:
        rng = self.rng
        self.user(paragraph(rng, rng.randint(1, 3)))
        self.assistant([{"type": "thinking", "thinking": paragraph(rng, 2), "signature": "x"}])
        for _ in range(rng.randint(1, 3)):
            self.tool_round()
        if rng.random() < 0.05:  # a subagent
            task = sentence(rng, 4, 8)
            self.assistant(
                [
                    {
                        "type": "tool_use",
                        "id": "toolu_task",
                        "name": "Task",
                        "input": {"description": task},
                    }
                ]
            )
            self.user(task, sidechain=True)
            self.assistant([{"type": "text", "text": paragraph(rng, 1)}], sidechain=True)
            self.user([{"type": "tool_result", "tool_use_id": "toolu_task", "content": "Done."}])
        self.assistant([{"type": "text", "text": paragraph(rng, rng.randint(1, 4))}])


def write_sessions(root: Path, count: int, turns: int, seed: int) -> tuple[list[Path], int]:
    """``count`` transcripts of about ``turns`` turns; returns the files and total bytes."""
    rng = random.Random(seed)
    files: list[Path] = []
    total = 0
    base = 1_735_689_600.0  # 2025-01-01
    for n in range(count):
        project = PROJECTS[n % len(PROJECTS)]
        cwd = f"/home/me/work/{project}"
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        writer = Writer(rng, sid, cwd, base + n * 86_400 * 365 / count)
        writer.emit({"type": "summary", "summary": sentence(rng, 3, 6), "leafUuid": "x"})
        for _ in range(max(1, int(rng.gauss(turns, turns / 5)))):
            writer.turn()
            if rng.random() < 0.02:
                writer.emit({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}})
        if rng.random() < 0.1:
            writer.lines.insert(rng.randint(1, len(writer.lines)), '{"type": "user", "mess')
        folder = root / ("-home-me-work-" + project)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{sid}.jsonl"
        data = "\n".join(writer.lines) + "\n"
        path.write_text(data, encoding="utf-8")
        files.append(path)
        total += len(data.encode("utf-8"))
    return files, total


def grow(path: Path, rng: random.Random, turns: int) -> None:
    """Append ``turns`` turns to a transcript, as a resumed session does."""
    first = json.loads(path.read_text(encoding="utf-8").split("\n", 2)[1])
    writer = Writer(rng, first["sessionId"], first["cwd"], time.time())
    for _ in range(turns):
        writer.turn()
    with path.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(writer.lines) + "\n")


# ---- measuring -------------------------------------------------------------------------------


def folder_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.md"))


def timed_import(vault: Vault, projects: Path) -> tuple[float, Any, StageClock]:
    clock = StageClock()
    started = time.perf_counter()
    report = vault.import_sessions(projects, progress=clock)
    return time.perf_counter() - started, report, clock


def stage_text(clock: StageClock) -> str:
    return ", ".join(f"{label.lower()} {seconds:.1f} s" for label, seconds in clock.stages)


def p50(fn: Any, runs: int = 15) -> float:
    """Median seconds of ``fn()`` over ``runs`` calls, after one warm-up call."""
    fn()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def reading_figures(vault: Vault, figures: Figures) -> None:
    """What the session tools cost on the imported vault (warm, in process)."""
    listed = vault.list_sessions(SessionQuery(limit=20))
    sid = listed["sessions"][0]["session_id"]
    project = listed["sessions"][0]["project"]
    unsummarised = SessionQuery(project=project, has_summary=False)
    figures.add(
        "list_sessions(limit=20) / (project, has_summary=false) / group_by project, p50",
        f"{p50(lambda: vault.list_sessions(SessionQuery(limit=20))) * 1000:.0f} / "
        f"{p50(lambda: vault.list_sessions(unsummarised)) * 1000:.0f} / "
        f"{p50(vault.session_projects) * 1000:.0f} ms",
    )
    figures.add(
        "read_session: a page / a query inside a ~100-turn session, p50",
        f"{p50(lambda: vault.read_session(sid[:8], max_chars=20_000)) * 1000:.0f} / "
        f"{p50(lambda: vault.read_session(sid[:8], query='fsync rename')) * 1000:.0f} ms",
    )
    read = vault.read_session(sid)
    started = time.perf_counter()
    vault.save_session_summary(
        sid,
        {"overview": "Bench.", "decisions": ["Use fsync before rename"], "open_items": ["x"]},
        read["hash"],
    )
    figures.add(
        "save_session_summary (index refresh included)", f"{time.perf_counter() - started:.1f} s"
    )

    def search(scope: str | None) -> None:
        vault.search(SearchRequest("fsync rename", mode="keyword", filters=Filters(scope=scope)))

    figures.add(
        "keyword search, no scope / scope=prompts / scope=decisions, p50",
        " / ".join(
            f"{p50(lambda s=s: search(s)) * 1000:.0f}" for s in (None, "prompts", "decisions")
        )
        + " ms",
    )


def run(args: argparse.Namespace, workdir: Path) -> Figures:
    figures = Figures()
    projects, vault_dir, index_dir = workdir / "projects", workdir / "vault", workdir / "index"
    for folder in (projects, vault_dir, index_dir):
        shutil.rmtree(folder, ignore_errors=True)
    vault_dir.mkdir(parents=True)
    log(f"writing {args.sessions} transcripts of ~{args.turns} turns into {projects}")
    started = time.perf_counter()
    files, size = write_sessions(projects, args.sessions, args.turns, args.seed)
    log(f"written in {time.perf_counter() - started:.1f} s")
    label = f"{args.sessions:,} sessions × ~{args.turns} turns"
    figures.add("transcripts", f"{label}, {size / 1048576:.0f} MB of JSON Lines")

    with open_local(vault_dir, index_dir) as vault:
        log("first import")
        seconds, report, clock = timed_import(vault, projects)
        stats = vault.status()
        figures.add(
            "first import (into an empty vault)",
            f"{seconds:.1f} s ({stage_text(clock)}): {report.new:,} notes, "
            f"{report.malformed_lines} malformed lines skipped, "
            f"{args.sessions / seconds:.0f} sessions/s",
        )
        figures.add(
            "resulting notes",
            f"{folder_bytes(vault_dir) / 1048576:.0f} MB of Markdown, {stats['chunks']:,} chunks",
        )
        log("re-import, nothing changed")
        seconds, report, clock = timed_import(vault, projects)
        figures.add(
            "re-import, nothing changed",
            f"{seconds:.1f} s: {report.unchanged:,} unchanged, {report.new + report.updated} "
            f"written, index {report.index}",
        )
        reading_figures(vault, figures)
        rng = random.Random(args.seed + 1)
        for path in rng.sample(files, args.grow):
            grow(path, rng, 5)
        log(f"re-import after {args.grow} sessions grew")
        seconds, report, clock = timed_import(vault, projects)
        figures.add(
            f"re-import after {args.grow} sessions grew by 5 turns",
            f"{seconds:.1f} s ({stage_text(clock)}): {report.updated} updated, "
            f"{report.unchanged:,} unchanged",
        )
    log("no-op import as a new process")
    started = time.perf_counter()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "markvault.cli", "--vault", str(vault_dir)),
            *("--index", str(index_dir), "sessions", "import", "--source", str(projects), "-q"),
        ],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    figures.add(
        "`vault sessions import` with nothing new, as a new process",
        f"{wall:.1f} s (exit {done.returncode}: {done.stdout.strip()})",
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--grow", type=int, default=10, help="Sessions grown before the third run.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="Keep transcripts and vault here.")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    if args.workdir:
        figures = run(args, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="mv-bench-sessions-") as tmp:
            figures = run(args, Path(tmp))
    table = figures.markdown()
    print()
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(f"Sessions benchmark ({CORES} cores)\n\n" + table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
