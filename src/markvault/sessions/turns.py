"""Who said a transcript's turn, read from its heading: the layout session notes are
written in (``session_note.render_transcript``), read back by the index.

A session note's ``## Transcript`` holds a ``### hh:mm User`` heading over each prompt
and ``### hh:mm Assistant`` over each answer (``### YYYY-MM-DD hh:mm User`` on a later
day, ``### User`` without a time). The user's turns are what the person said: the
``prompts`` search scope picks them, and keyword ranking weighs them (index/bm25.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

TRANSCRIPT = "Transcript"
USER = "User"
ASSISTANT = "Assistant"

# ASCII digits: a heading's clock is written by session_note, never in other numerals.
_USER_TURN = re.compile(rf"(?:[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}} )?(?:[0-9]{{2}}:[0-9]{{2}} )?{USER}")


def is_user_turn(heading_path: Sequence[str]) -> bool:
    """Whether a chunk under ``heading_path`` is a user's turn of a transcript."""
    return (
        bool(heading_path)
        and TRANSCRIPT in heading_path
        and _USER_TURN.fullmatch(heading_path[-1]) is not None
    )
