"""Change feed latency (issue 16): from an editor's write to the MCP client's event.

    python bench/bench_feed.py                      # 2,000 notes, 30 edits
    python bench/bench_feed.py --notes 10000 --edits 50 --workdir /tmp/mv-feed

On a synthetic vault (gen_vault.py; keyword index only, no model), two `vault mcp`
processes over stdio share one index, as two Claude Code windows do: the first owns it
(its watcher sees the write), the second asks it and follows its change feed over the
owner's socket. A current-era client listens to one note on the first
(`subscriptions/listen`), a handshake-era client subscribes to the same note on the
second (`resources/subscribe`). Each edit is a plain append to the note's file, made
once the previous edit was heard by both; the time to each client's
`notifications/resources/updated` is taken from just before the write. Prints p50 /
p95 / max in ms, writes ``bench/out/feed.md``; measures, never asserts. The promise is
2 s; the watcher's own quiet time (0.5 s after the last event, so an editor's burst of
saves is one sync) is most of the figure, so it is printed beside it as the baseline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPDeprecationWarning

import gen_vault
from markvault.runtime.local_host import open_local
from markvault.server.live import note_uri

OUT = Path(__file__).parent / "out" / "feed.md"
MODEL_VAR = "MARKVAULT_MODEL"
WATCH_QUIET_MS = 500  # watch.py's min_interval_ms: the watcher's own wait


def stdio(vault_dir: Path, index_dir: Path, env: dict[str, str]) -> StdioServerParameters:
    argv = ["-m", "markvault.cli", "--vault", str(vault_dir), "--index", str(index_dir), "mcp"]
    return StdioServerParameters(command=sys.executable, args=argv, env=env)


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(ordered):.0f} / {p95:.0f} / {ordered[-1]:.0f}"


class Heard:
    """The moments a handshake-era client hears updates of one URI."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._send, self._receive = anyio.create_memory_object_stream[float](100)

    async def handler(self, message: Any) -> None:
        if (
            isinstance(message, types.ResourceUpdatedNotification)
            and message.params.uri == self.uri
        ):
            self._send.send_nowait(time.perf_counter())

    async def next(self) -> float:
        return await self._receive.receive()


async def measure(vault_dir: Path, index_dir: Path, env: dict[str, str], edits: int) -> list[str]:
    note = sorted(p for p in vault_dir.rglob("*.md") if not p.name.startswith("."))[0]
    uri = note_uri(note.relative_to(vault_dir).as_posix())
    heard = Heard(uri)
    owner_ms: list[float] = []
    follower_ms: list[float] = []
    with anyio.fail_after(600):
        async with Client(stdio(vault_dir, index_dir, env)) as owner:
            status = (await owner.call_tool("status", {})).structured_content or {}
            assert status["owner"]["this_process_owns"], status
            async with (
                Client(
                    stdio(vault_dir, index_dir, env), mode="legacy", message_handler=heard.handler
                ) as other,
                owner.listen(resource_subscriptions=[uri]) as events,
            ):
                await other.subscribe_resource(uri)
                for i in range(edits):
                    began = time.perf_counter()
                    with note.open("a", encoding="utf-8") as f:
                        f.write(f"\nEdit {i} from an editor.\n")
                    await anext(events)
                    owner_ms.append((time.perf_counter() - began) * 1000)
                    follower_ms.append((await heard.next() - began) * 1000)
    return [summary(owner_ms), summary(follower_ms)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2_000)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="keep the vault and index here")
    args = parser.parse_args()
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    # The handshake era's subscribe is deprecated at the current one; serving it is the point.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="mv-feed-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    try:
        vault_dir, index_dir = work / f"v{args.notes}", work / f"index-{args.notes}"
        if not vault_dir.exists():
            print(f"generating {args.notes:,} notes into {vault_dir}", flush=True)
            gen_vault.generate(vault_dir, args.notes, args.seed)
        no_model = str(work / "no-model-here")
        vault = open_local(vault_dir, index_dir, model=no_model)
        vault.reindex(vectors=False)
        vault.close()
        env = {**os.environ, MODEL_VAR: no_model}
        owner, follower = anyio.run(measure, vault_dir, index_dir, env, args.edits)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    lines = [
        f"An editor's append to one note -> `notifications/resources/updated`, at "
        f"{args.notes:,} notes, {args.edits} edits; cores {os.cpu_count()}, load "
        f"{load[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end.",
        "",
        "| client | p50 / p95 / max ms | the watcher's quiet time (baseline) |",
        "| --- | --- | --- |",
        f"| current era, listen, on the owning `vault mcp` | {owner} | {WATCH_QUIET_MS} |",
        f"| handshake era, subscribe, on a second `vault mcp` (via the owner's socket) "
        f"| {follower} | {WATCH_QUIET_MS} |",
    ]
    text = "\n".join(lines)
    print("\n" + text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
