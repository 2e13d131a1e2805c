"""Process facts from /proc for the lifecycle tests: children, command lines, liveness."""

from __future__ import annotations

import os
from pathlib import Path


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (every thread's), [] if it is gone."""
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            out += [int(p) for p in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    except OSError:
        pass
    return out


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie is not alive)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
