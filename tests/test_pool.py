"""Work in worker processes: in order, the same as here, and going on here when the
workers cannot run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from markvault.indexing.pool import WORKER_GC_THRESHOLD, _batches, in_workers
from markvault.runtime.local_host import open_local
from markvault.types.search import SearchRequest
from markvault.types.sessions import SessionQuery

from .conftest import OpenVault, WriteNotes
from .test_sessions import assistant, user


def square(x: int) -> int:
    return x * x


def squares(batch: list[int]) -> list[int]:
    return [square(x) for x in batch]


def dies(batch: list[int]) -> list[int]:
    os._exit(3)  # a worker that crashes: the pool breaks


def test_results_come_in_order_and_equal_the_work_done_here() -> None:
    items = list(range(50))
    got = [
        pair
        for done in in_workers(items, square, squares, batch_size=7, min_items=10)
        for pair in done
    ]
    assert got == [(x, x * x) for x in items]
    # Below min_items, one item at a time, here.
    small = list(in_workers(items[:5], square, squares, batch_size=7, min_items=10))
    assert small == [[(x, x * x)] for x in items[:5]]


def test_heavy_items_are_cut_into_batches_of_their_own() -> None:
    # Even weights: batches of the size asked for.
    assert _batches(list(range(10)), 4, lambda _: 1) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    # Heavy items (weight 40; 133 in all, so 4 items weigh 33 on average and no batch
    # may pass 66): two side by side go to batches of their own; the first batch, which
    # this process reads while the workers start, keeps its 4 items whatever they weigh.
    weights = {3: 40, 8: 40, 9: 40}
    items = list(range(16))
    got = _batches(items, 4, lambda i: weights.get(i, 1))
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8], [9, 10, 11, 12], [13, 14, 15]]
    assert [i for b in got for i in b] == items


def young_thresholds(batch: list[int]) -> list[int]:
    import gc

    return [gc.get_threshold()[0] for _ in batch]


def test_workers_collect_their_young_objects_less_often() -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the work runs here, without workers")
    items = list(range(20))
    got = [
        r
        for done in in_workers(items, square, young_thresholds, batch_size=5, min_items=10)
        for _, r in done
    ]
    # The first batch is read here while the workers start (see the next test).
    assert got == [square(x) for x in items[:5]] + [WORKER_GC_THRESHOLD] * 15


def pids(batch: list[int]) -> list[int]:
    return [os.getpid() for _ in batch]


def test_the_first_batch_is_read_here_while_the_workers_start() -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the work runs here, without workers")
    items = list(range(12))
    got = [
        r
        for done in in_workers(items, lambda _: os.getpid(), pids, batch_size=4, min_items=10)
        for _, r in done
    ]
    assert got[:4] == [os.getpid()] * 4
    assert os.getpid() not in got[4:]


def test_broken_workers_leave_the_work_to_this_process() -> None:
    items = list(range(30))
    got = [
        pair
        for done in in_workers(items, square, dies, batch_size=4, min_items=10)
        for pair in done
    ]
    assert got == [(x, x * x) for x in items]


def test_a_large_sync_reads_notes_in_workers(write: WriteNotes, open_vault: OpenVault) -> None:
    write({f"notes/n{i:03}.md": f"# Note {i}\n\nwalrus number {i}\n" for i in range(240)})
    vault = open_vault()
    report = vault.reindex(vectors=False)
    assert (report.added, report.notes, report.errors) == (240, 240, [])
    assert vault.search(SearchRequest("walrus", mode="keyword", limit=1000)).total == 240


def test_many_transcripts_are_read_in_workers(vault_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-me-work-zoo"
    folder.mkdir(parents=True)
    for i in range(20):
        lines = [
            user(f"Count the walruses in pen {i}", "2025-04-01T08:00:00Z", cwd="/home/me/work/zoo"),
            assistant(f"Pen {i} holds {i} walruses.", "2025-04-01T08:00:09Z"),
        ]
        sid = f"0000000{i:02}-aaaa-4bbb-8ccc-000000000000"
        (folder / f"{sid}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with open_local(vault_dir, vault_dir.parent / "index") as vault:
        report = vault.import_sessions(tmp_path / "projects")
        assert (report.transcripts, report.new, report.failed) == (20, 20, 0)
        assert vault.list_sessions(SessionQuery(limit=100))["total"] == 20
