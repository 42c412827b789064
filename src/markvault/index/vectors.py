"""Vector search's side of the index: one embedding per distinct chunk text.

Vectors are keyed by the hash of the text the model reads, so unchanged text, moved
notes and renamed files keep theirs. Search is exact cosine, with no HNSW index on disk
(which crash recovery can break). A process that answers many queries (an owner) holds
every vector in a float32 matrix: at vault sizes (tens of thousands of chunks) a
matrix-vector product takes milliseconds. A process's first query is scored inside
DuckDB instead: loading the matrix costs several times the one product a one-shot
search needs (50,000 chunks: ~1.6 s to load against ~0.5 s to score in SQL, measured
on a loaded 2-core EPYC), and the process stays as small as a keyword one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from markvault.index.store import Store

if TYPE_CHECKING:
    import numpy as np


class VectorIndex:
    """The embeddings table, and the matrix of every chunk's vector."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.con = store.con
        self._matrix: tuple[str, np.ndarray, np.ndarray] | None = None
        self._scored_in_sql = False  # the first query since a change was, without the matrix
        self._counts: tuple[str, int, int] | None = None  # cached counts

    def forget(self) -> None:
        """The chunks changed: the cached matrix and counts are stale."""
        self._matrix = None
        self._counts = None
        self._scored_in_sql = False

    def ensure_table(self, model: str, dim: int) -> None:
        """Create the embeddings table for ``dim``; a model of another size replaces it."""
        meta = self.store.meta()
        if meta.get("embedding_dim") == str(dim) and self.store.has_table("embeddings"):
            if meta.get("model") != model:
                self.store.set_meta(model=model)
            return
        with self.store.transaction():
            if self.store.has_table("embeddings"):
                self.store.notices.append(
                    f"Embedding model changed ({meta.get('model')} -> {model}): rebuilding vectors."
                )
            self.con.execute("DROP TABLE IF EXISTS embeddings")
            self.con.execute(
                f"CREATE TABLE embeddings (hash VARCHAR, model VARCHAR, vec FLOAT[{dim}])"
            )
            self.store.set_meta(embedding_dim=str(dim), model=model)
        self._counts = None

    def missing(self, model: str) -> list[tuple[str, str]]:
        """(hash, embed text) of chunk contents that have no vector for ``model``."""
        if not self.store.has_table("embeddings"):
            return self._embed_inputs()
        return self._embed_inputs(
            "WHERE c.hash NOT IN (SELECT hash FROM embeddings WHERE model = ?)", [model]
        )

    def _embed_inputs(
        self, where: str = "", params: list[Any] | None = None
    ) -> list[tuple[str, str]]:
        from markvault.types.notes import embed_input  # a search defines no note types

        rows = self.con.execute(
            "SELECT c.hash, any_value(c.context), any_value(c.text) FROM chunks c "
            f"{where} GROUP BY c.hash ORDER BY c.hash",
            params or [],
        ).fetchall()
        return [(r[0], embed_input(r[1], r[2])) for r in rows]

    def add(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        import numpy as np
        import pyarrow as pa  # a search never writes vectors

        dim = vectors.shape[1]
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
        table = pa.table(
            {
                "hash": pa.array(list(hashes), pa.string()),
                "model": pa.array([model] * len(hashes), pa.string()),
                "vec": pa.FixedSizeListArray.from_arrays(flat, dim),
            }
        )
        with self.store.transaction():
            self.store.insert_table("embeddings", table)
        self._matrix = None
        self._counts = None

    def prune(self) -> int:
        """Drop vectors no chunk uses any more, when they are a fifth of the table or more."""
        if not self.store.has_table("embeddings"):
            return 0
        unused, total = self.con.execute(
            "SELECT count(*) FILTER (WHERE hash NOT IN (SELECT hash FROM chunks)), count(*) "
            "FROM embeddings"
        ).fetchone() or (0, 0)
        if unused and unused * 5 >= total:
            with self.store.transaction():
                self.con.execute(
                    "DELETE FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)"
                )
            self._counts = None
            return int(unused)
        return 0

    def counts(self, model: str) -> tuple[int, int]:
        """(chunk contents with a vector for ``model``, all distinct chunk contents)."""
        if self._counts is None or self._counts[0] != model:
            self._counts = (model, *self._count(model))
        return self._counts[1], self._counts[2]

    def _count(self, model: str) -> tuple[int, int]:
        total = self.con.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()
        if not self.store.has_table("embeddings"):
            return 0, int(total[0]) if total else 0
        done = self.con.execute(
            "SELECT count(DISTINCT c.hash) FROM chunks c SEMI JOIN embeddings e "
            "ON e.hash = c.hash AND e.model = ?",
            [model],
        ).fetchone()
        return (int(done[0]) if done else 0), (int(total[0]) if total else 0)

    def scores(
        self, model: str, query: np.ndarray, *, follow_up: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids ascending, each chunk's inner product with the unit vector
        ``query``): from the matrix when this process holds it or asks a second time
        (it answers queries for others), else computed in SQL without loading it.
        ``follow_up``: a second scoring within the same search (hybrid's feedback),
        which is not a second query."""
        import numpy as np  # imported by the vector side only: keyword search needs none

        held = self._matrix is not None and self._matrix[0] == model
        if held or (self._scored_in_sql and not follow_up):
            ids, matrix = self.matrix(model)
            return ids, matrix @ query
        self._scored_in_sql = True
        if not self.store.has_table("embeddings"):
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if not self.store.writable:  # a read-only open has one thread (store.connect)
            self.con.execute("RESET threads")
        # The vector as a literal: binding a list of 384 floats as a parameter costs
        # ~0.1 s in the DuckDB client, parsing the literal ~5 ms. Only numbers go in.
        values = np.nan_to_num(query.astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)
        vector = "[" + ",".join(map(repr, values.tolist())) + f"]::FLOAT[{len(values)}]"
        # Two lists in one row: fetchnumpy would import numpy.ma (~20 ms) for its masks.
        found = self.con.execute(
            f"SELECT list(c.id ORDER BY c.id), "
            f"list(array_inner_product(e.vec, {vector}) ORDER BY c.id) "
            "FROM chunks c JOIN embeddings e ON e.hash = c.hash AND e.model = ?",
            [model],
        ).fetchone()
        ids, scores = found if found and found[0] is not None else ([], [])
        return np.array(ids, np.int64), np.array(scores, np.float32)

    def vectors_of(self, model: str, chunk_ids: Sequence[int]) -> np.ndarray:
        """The unit vectors of those of ``chunk_ids`` that have one, in that order:
        from the matrix when this process holds it, else read for these alone."""
        import numpy as np  # imported by the vector side only: keyword search needs none

        if self._matrix is not None and self._matrix[0] == model:
            at, found = find_sorted(self._matrix[1], chunk_ids)
            return self._matrix[2][at[found]]
        if not chunk_ids or not self.store.has_table("embeddings"):
            return np.zeros((0, 1), np.float32)
        rows = dict(
            self.con.execute(
                "SELECT c.id, e.vec FROM chunks c JOIN embeddings e ON e.hash = c.hash "
                "AND e.model = ? WHERE c.id IN (SELECT unnest(?))",
                [model, [int(c) for c in chunk_ids]],
            ).fetchall()
        )
        present = [rows[c] for c in chunk_ids if c in rows]
        return np.array(present, np.float32) if present else np.zeros((0, 1), np.float32)

    def matrix(self, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, unit vectors) of every chunk that has a vector; cached."""
        import numpy as np  # imported by the vector side only: keyword search needs none

        if self._matrix is not None and self._matrix[0] == model:
            return self._matrix[1], self._matrix[2]
        if not self.store.has_table("embeddings"):
            return np.zeros(0, np.int64), np.zeros((0, 1), np.float32)
        if not self.store.writable:  # a read-only open has one thread (store.connect)
            self.con.execute("RESET threads")
        table = self.con.execute(
            "SELECT c.id, e.vec FROM chunks c JOIN embeddings e ON e.hash = c.hash "
            "AND e.model = ? ORDER BY c.id",
            [model],
        ).to_arrow_table()
        ids = table.column("id").to_numpy().astype(np.int64)
        vec = table.column("vec").combine_chunks()
        dim = vec.type.list_size if len(vec) else 1
        # The list array's child values, sliced by hand: ``flatten()`` would import
        # pyarrow.compute (~50 ms), a one-shot search's largest import after the model.
        values = vec.values.slice(vec.offset * dim, len(vec) * dim) if len(vec) else vec.values
        matrix = values.to_numpy().reshape(-1, dim).astype(np.float32, copy=False)
        self._matrix = (model, ids, matrix)
        return ids, matrix


def find_sorted(ids: np.ndarray, wanted: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``wanted`` sits in the ascending ``ids``: (positions, found), the
    positions clipped into range and meaningful only where ``found``."""
    import numpy as np  # imported by the vector side only: keyword search needs none

    keys = np.asarray(wanted, dtype=ids.dtype)
    at = np.clip(np.searchsorted(ids, keys), 0, max(len(ids) - 1, 0))
    found = ids[at] == keys if len(ids) else np.zeros(len(keys), bool)
    return at, found
