"""Small rules the core's parts share: chunk references, page limits, dates."""

from __future__ import annotations

import datetime as dt

from markvault.errors import UsageError


def chunk_ref(ref: str) -> int | None:
    """The chunk id of ``#12`` or ``vault://chunk/12``; None for any other reference.

    Raises:
        UsageError: a chunk reference that is no number.
    """
    if ref.startswith("vault://chunk/"):
        ref = ref[len("vault://chunk/") :]
    elif ref.startswith("#"):
        ref = ref[1:]
    else:
        return None
    if not ref.isdigit():
        raise UsageError(f"Bad chunk reference {ref!r}.", "Chunk references look like #123.")
    return int(ref)


# The index pages with 64-bit integers: a larger offset is past every listing anyway.
MAX_OFFSET = 2**63 - 1


def check_page(limit: int, offset: int) -> None:
    if not 1 <= limit <= 1000 or not 0 <= offset <= MAX_OFFSET:
        raise UsageError(
            "limit must be 1..1000 and offset 0 or more (below 2**63).", "Page with offset."
        )


def epoch() -> dt.datetime:
    return dt.datetime.fromtimestamp(0).astimezone()


def moment(
    value: str | None, name: str | None = None, end_of_day: bool = False
) -> dt.datetime | None:
    """An ISO date or time as an aware datetime (local time when it has no offset).

    With ``name``, a bad value raises UsageError; without, it is None.
    """
    if not value:
        return None
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        if name is None:
            return None
        raise UsageError(
            f"{name} {value!r} is not an ISO date or time.",
            "Example: 2026-03-01 or 2026-03-01T14:00.",
        ) from None
    if end_of_day and len(value.strip()) == 10:
        when = when.replace(hour=23, minute=59, second=59)
    return when.astimezone() if when.tzinfo is None else when
