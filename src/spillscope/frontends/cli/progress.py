"""A progress bar on stderr for the command line: scans, log reads and verifications."""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from typing import Callable, TextIO

from ..format import human_size
from .args import SettingError


def _seconds_setting(name: str, default: float) -> float:
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise SettingError(f"{name}={text!r}: must be a number of seconds, 0 or more (e.g. 0.5)")
    return value


class Progress:
    """A progress bar on stderr: only on a terminal, only once the work has run for half
    a second (``SPILLSCOPE_PROGRESS_AFTER`` seconds), redrawn at most ten times a second,
    cut to the terminal's width, and cleared when done.

    ``with Progress() as progress:`` gives what to hand the core — the bar, or ``None``
    when no bar will be drawn — and clears the bar on the way out."""

    WIDTH = 24
    UNITS = {"scan": "session dirs", "logs": "logs"}

    def __init__(self, stream: TextIO | None = None) -> None:
        # sys.stderr as it is now, not as it was when this module was imported (lazily, by
        # the first command that shows progress: a test's captured stream, since closed).
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.after = _seconds_setting("SPILLSCOPE_PROGRESS_AFTER", 0.5)
        self.enabled = self.stream.isatty()
        self.shown = False
        self.last = 0.0
        # Block characters only where the stream can encode them.
        self.fill = "█░" if (getattr(self.stream, "encoding", "") or "").lower().replace("-", "") == "utf8" else "#-"

    def __enter__(self) -> Callable[[str, int, int | None], None] | None:
        return self if self.enabled else None

    def __exit__(self, *exc: object) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        final = total is not None and done >= total
        if now - self.start < self.after or (now - self.last < 0.1 and not final):
            return
        self.last = now
        columns = shutil.get_terminal_size().columns
        self.stream.write("\r\x1b[K" + self.render(phase, done, total, now - self.start)[: max(columns - 1, 10)])
        self.stream.flush()
        self.shown = True

    def render(self, phase: str, done: int, total: int | None, elapsed: float) -> str:
        if phase == "verify":
            amount = human_size(done) + (f" / {human_size(total)}" if total is not None else "")
        else:
            amount = f"{done:,}" + (f"/{total:,}" if total is not None else "") + f" {self.UNITS.get(phase, 'items')}"
        if not total:
            return f"{phase:<6} {amount}  {elapsed:.1f}s"
        frac = min(done / total, 1.0)
        filled = int(frac * self.WIDTH)
        bar = self.fill[0] * filled + self.fill[1] * (self.WIDTH - filled)
        return f"{phase:<6} {bar} {frac:4.0%}  {amount}  {elapsed:.1f}s"
