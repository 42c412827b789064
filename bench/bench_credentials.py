"""The credential gate's cost and false positives on a vault's worth of text.

    python bench/bench_credentials.py                 # 2,000 generated notes
    python bench/bench_credentials.py --notes 10000   # a bigger vault
    python bench/bench_credentials.py --code DIR      # also count findings in DIR's files

The gate (``markvault.credentials``) runs on every write and every sync, and
``vault check`` runs it over the whole vault, so its speed is measured in megabytes
of notes per second, against a baseline run on the same text in the same process:
markvault's own tokenizer (``text.tokenize``), which every indexed byte goes
through anyway. Also: findings in the generated vault and in the bundled one (any is
a false positive: they hold no secret), the same for every file of both vaults read as
`vault sync` reads them (secret_files.py: any file, by content, by name), what one
note-sized write costs, and what a fingerprint costs (a slow hash, paid only per
finding). ``--code DIR``: the sync's file scan over every file under DIR (say, a
Python environment's site-packages: code, tests, data), findings per thousand files.
Measures and prints; never asserts. The figures are also written to ``bench/out/credentials.md``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import string
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import gen_vault
from markvault.credentials.detection import find, redact
from markvault.credentials.finding import fingerprint
from markvault.credentials.policy import CredentialPolicy
from markvault.credentials.scan import check_vault
from markvault.markdown.tokens import tokenize

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "credentials.md"
REPO_VAULT = HERE.parent / "vault"


def best_of(runs: int, fn: Callable[[], object]) -> float:
    """The fastest of ``runs`` timings (the least disturbed by other work), seconds."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def notes_of(folder: Path) -> list[tuple[str, str]]:
    return [
        (p.relative_to(folder).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted(folder.rglob("*.md"))
    ]


def secret_note(rng: random.Random, body: str) -> str:
    """A note-sized text with three credentials in it, as an agent might write one."""
    alnum = string.ascii_letters + string.digits
    token = "ghp_" + "".join(rng.choice(alnum) for _ in range(36))
    key = "AKIA" + "".join(rng.choice(string.ascii_uppercase + "234567") for _ in range(16))
    password = "".join(rng.choice(alnum) for _ in range(14))
    return f"{body}\n\nDeploy with {token}.\n\nAWS_ACCESS_KEY_ID={key}\nPASSWORD={password}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3, help="Timings per figure (best kept).")
    parser.add_argument("--code", type=Path, help="Also scan every file under this folder.")
    args = parser.parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)

    policy = CredentialPolicy()
    with tempfile.TemporaryDirectory() as tmp:
        gen_vault.generate(Path(tmp), notes=args.notes, seed=1)
        notes = notes_of(Path(tmp))
        began = time.perf_counter()
        generated_files = check_vault(Path(tmp), policy)
        files_time = time.perf_counter() - began
    bundled_files = check_vault(REPO_VAULT, policy)
    texts = [text for _, text in notes]
    megabytes = sum(len(t.encode()) for t in texts) / 1e6

    gate = best_of(args.runs, lambda: [find(t) for t in texts])
    baseline = best_of(args.runs, lambda: [tokenize(t) for t in texts])
    false_positives = [(path, f.kind, f.line) for path, text in notes for f in find(text)]
    bundled = [(p, f.kind, f.line) for p, t in notes_of(REPO_VAULT) for f in find(t)]

    rng = random.Random(1)
    sizes = sorted(texts, key=len)
    median_note = sizes[len(sizes) // 2]
    with_secrets = secret_note(rng, median_note)
    clean_write = statistics.median(best_of(1, lambda: find(median_note)) for _ in range(50))
    secret_write = statistics.median(best_of(1, lambda: redact(with_secrets)) for _ in range(50))
    one_fingerprint = best_of(args.runs, lambda: fingerprint("password", str(time.time_ns())))

    load = os.getloadavg()[0]
    rows = [
        ("notes (generated, seed 1)", f"{len(texts):,}"),
        ("text", f"{megabytes:.1f} MB"),
        ("gate: find() over every note", f"{gate:.2f} s · {megabytes / gate:.1f} MB/s"),
        ("baseline: text.tokenize() over every note", f"{baseline:.2f} s"),
        ("gate / baseline", f"{gate / baseline:.2f}×"),
        ("findings in the generated vault (false positives)", str(len(false_positives))),
        ("findings in the bundled vault (false positives)", str(len(bundled))),
        (
            f"every file as sync reads it, generated ({generated_files.files:,} files)",
            f"{generated_files.credentials} findings · {files_time:.2f} s "
            f"· {generated_files.bytes / 1e6 / files_time:.1f} MB/s",
        ),
        (
            f"every file as sync reads it, bundled ({bundled_files.files:,} files)",
            f"{bundled_files.credentials} findings",
        ),
        (f"one write: a median note ({len(median_note):,} chars)", f"{clean_write * 1e3:.2f} ms"),
        ("one write: the same with 3 credentials, redacted", f"{secret_write * 1e3:.2f} ms"),
        ("one fingerprint (PBKDF2, per new finding)", f"{one_fingerprint * 1e3:.1f} ms"),
        ("load average (1 min) during the run", f"{load:.2f} on {os.cpu_count()} cores"),
    ]
    code_found: list[tuple[str, str, str]] = []
    if args.code:
        code = check_vault(args.code.resolve(), policy, trash=True)
        code_found = [(n.path, f.kind, f.where) for n in code.found for f in n.found]
        files_with = len(code.found)
        rows.append(
            (
                f"every file under --code ({code.files:,} files, {code.bytes / 1e6:.0f} MB)",
                f"{len(code_found)} findings in {files_with} files "
                f"({1000 * files_with / max(code.files, 1):.1f} per 1,000 files)",
            )
        )
    table = "| figure | value |\n| --- | --- |\n" + "".join(f"| {a} | {b} |\n" for a, b in rows)
    print(table)
    for path, kind, line in (false_positives + bundled)[:20]:
        print(f"false positive: {path}:{line} {kind}")
    for n in (*generated_files.found, *bundled_files.found):
        print(f"file finding: {n.path}: {', '.join(f'{f.kind} ({f.where})' for f in n.found)}")
    for path, kind, where in code_found[:200]:
        print(f"code finding: {path}: {kind} ({where})")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
