"""Human formatting of sizes and ages, shared by the CLI table and the TUI."""

from __future__ import annotations

from typing import Callable


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def human_age(seconds: float) -> str:
    if seconds < 120:
        return f"{max(0.0, seconds):.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 artifact``, ``2 artifacts``: a number with its noun in the right number."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


#: What the stats headers say when no notice gives a byte count.
UNKNOWN_BYTES = "an unknown number of bytes"


def omitted_text(size: Callable[[int], str], known: int, unknown: int, unknown_text: str = "unknown") -> str:
    """What notices omitted: ``12.8 KiB``; ``12.8 KiB+`` when some notices give no count (a
    lower bound); ``unknown_text`` when none of them gives one -- never ``0 Bytes+``, which
    reads as a count."""
    if unknown and not known:
        return unknown_text
    return size(known) + ("+" if unknown else "")
