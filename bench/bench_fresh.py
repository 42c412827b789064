"""What "fresh on every read" costs a command on a vault that did not change (issue 14).

    python bench/bench_fresh.py [--notes 10000] [--pairs 10] [--work /tmp/mv-fresh]

Generates a vault (``gen_vault.py``), commits it to git, indexes it (keywords only), then
times `vault search` as a new process, pair by pair in alternating order: A with the
freshness check switched off in the process, B as shipped. Prints the medians and the
ratio B/A, and the check alone, in process: on the git vault (git status and HEAD) and
on the same files without git (one stat walk).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from gen_vault import generate

DRIVER = """
import sys
if sys.argv[1] == "off":
    import markvault.core.freshness as f
    f.Freshness.before_call = lambda self, name: None
    f.Freshness.around = lambda self, name, read: read()  # a search's check, beside it
from markvault.cli.main import main
sys.argv = ["vault", *sys.argv[2:]]
main()
"""


def vault_cmd(switch: str, vault: Path, index: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        DRIVER,
        switch,
        "--vault",
        str(vault),
        "--index",
        str(index),
        *args,
    ]


def timed(cmd: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(cmd, check=False, capture_output=True)
    return time.perf_counter() - began


def check_alone(vault: Path, index: Path, runs: int = 5) -> float:
    """Median seconds of the freshness check on an unchanged vault, in process."""
    from markvault.config import Settings
    from markvault.core import Core
    from markvault.core.runtime_context import RuntimeContext

    core = Core(RuntimeContext(Settings.load(vault=vault, index=index)))
    core.fresh.before_call("search")  # records the state the next checks compare with
    times = []
    for _ in range(runs):
        core.fresh._next_check = 0.0
        began = time.perf_counter()
        core.fresh.before_call("search")
        times.append(time.perf_counter() - began)
    core.close()
    return statistics.median(times)


def git(vault: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(vault), *args], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--work", type=Path, default=Path("/tmp/mv-fresh"))
    args = parser.parse_args()
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    vault, index = args.work / "vault", args.work / "index"
    if not (vault / ".git").exists():
        shutil.rmtree(args.work, ignore_errors=True)
        generate(vault, notes=args.notes, seed=1)
        git(vault, "init", "-q")
        git(vault, "add", "-A")
        git(vault, "-c", "user.name=bench", "-c", "user.email=b@x", "commit", "-qm", "bench")
    subprocess.run(vault_cmd("on", vault, index, "reindex", "--no-vectors", "-q"), check=True)
    search = ("search", "--mode", "keyword", "design decision", "--json")
    timed(vault_cmd("on", vault, index, *search))  # warm the page cache and the state
    a_times, b_times = [], []
    for i in range(args.pairs):
        order = [("off", a_times), ("on", b_times)]
        for switch, into in order if i % 2 == 0 else order[::-1]:
            into.append(timed(vault_cmd(switch, vault, index, *search)))
    a, b = statistics.median(a_times), statistics.median(b_times)
    with_git = check_alone(vault, index)
    os.rename(vault / ".git", args.work / "git-aside")
    try:
        without_git = check_alone(vault, index)
    finally:
        os.rename(args.work / "git-aside", vault / ".git")
    load = os.getloadavg()[0]
    print(f"vault: {args.notes:,} notes, unchanged; load average {load:.1f}")
    print("| | median s |")
    print("| --- | --- |")
    print(f"| `vault search` process, check off (A) | {a:.3f} |")
    print(f"| `vault search` process, check on (B) | {b:.3f} |")
    print(f"| ratio B/A | {b / a:.3f} |")
    print(f"| the check alone, git vault (HEAD + git status) | {with_git:.4f} |")
    print(f"| the check alone, same files without git (stat walk) | {without_git:.4f} |")


if __name__ == "__main__":
    main()
