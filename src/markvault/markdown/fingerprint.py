"""What decides an index's chunk text and vectors, as one short hash: the chunker's and
the tokenizer's versions, the chunk size and the model. An index built under another
fingerprint is rebuilt (``index.store`` keeps the chunk part, the model is kept apart).

Its own module, not chunk.py's: every command that opens the index checks it, and only
a sync needs the chunker and the note types it builds.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from markvault.markdown.tokens import TOKENIZER_VERSION

if TYPE_CHECKING:
    from markvault.config import ChunkParams

# Bump when chunk.py makes other chunks from the same text.
CHUNKER_VERSION = "2"  # 2: template placeholders are not indexed (template_text.py)


def fingerprint(params: ChunkParams, model: str) -> str:
    """Identifies everything that decides chunk text and vectors."""
    data = {
        "chunker": CHUNKER_VERSION,
        "tokenizer": TOKENIZER_VERSION,
        "max_pieces": params.max_pieces,
        "model": model,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def chunk_fingerprint(params: ChunkParams) -> str:
    """The part of the fingerprint that changes chunk text (the model is tracked apart)."""
    return fingerprint(params, model="")
