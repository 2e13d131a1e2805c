"""The expiry rule and its cutoff (FORMAT.md §2): Node's ``mtimeMs`` against ``Date.now() - period``.

Separate from the walk that applies it because the inspector's ``past-retention`` forecast
and ``spillscope prune`` need the very same arithmetic without deleting anything.
"""

from __future__ import annotations

import time

MS_PER_DAY = 24 * 60 * 60 * 1000
DEFAULT_CLEANUP_PERIOD_DAYS = 30


def now_ms() -> int:
    """``Date.now()``: whole milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def node_mtime_ms(mtime_ns: int) -> float:
    """Node's ``Stats.mtimeMs`` for an mtime in nanoseconds (``sec * 1e3 + nsec / 1e6``)."""
    sec, nsec = divmod(mtime_ns, 1_000_000_000)
    return float(sec * 1000) + nsec / 1e6


def cutoff_ms(period_ms: int, now: int | None = None) -> int:
    """The sweep's cutoff: ``now - period`` in whole milliseconds."""
    return (now_ms() if now is None else now) - period_ms


def is_expired(mtime_ns: int, cutoff: float) -> bool:
    """The expiry rule: the mtime is strictly older than the cutoff."""
    return node_mtime_ms(mtime_ns) < cutoff


def validate_period_days(days: object) -> int:
    """``cleanupPeriodDays``: a whole number of days, 0 or more (0 disables the sweep).
    ``None`` is the default (30), as the reference's ``cleanupPeriodDays ?? 30`` reads a
    JSON ``null`` — it sweeps, it does not refuse and it does not disable."""
    if days is None:
        return DEFAULT_CLEANUP_PERIOD_DAYS
    if isinstance(days, bool) or not isinstance(days, (int, float)):
        raise TypeError(f"cleanup_period_days must be a number, not {type(days).__name__}")
    if days != days or days < 0 or days != int(days):
        raise ValueError(f"cleanup_period_days must be a whole number of days, 0 or more: {days!r}")
    return int(days)
