"""The command line's argument types and checks: durations, counts, ports, ``--fail-on`` and roots.

Separate so the parser (main.py) and every command share one definition of a valid value
and one ``UsageError`` (exit 2).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ...inspect.findings import CODES, SEVERITY_RANK


class UsageError(Exception):
    pass


#: ``verify``'s exit status when it checked no notice (no logs, no notice in them, every
#: locator outside the root...) and no finding reached --fail-on: not a pass (0), and not
#: findings (1) a script would go looking for.
NOTHING_CHECKED_STATUS = 3

#: ``verify --fail-on``'s default: every warning and error fails; info findings (the
#: notice itself says no snapshot was saved, a fork's dialect...) are reported only.
DEFAULT_FAIL_ON = "warning"


#: The largest count or byte limit accepted (JavaScript's safe integers, as in the format).
MAX_COUNT = 2**53 - 1


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhdw]?)\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (use e.g. 30s, 12h, 7d, 2w)")
    unit = {"": 86400, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]
    return float(m.group(1)) * unit


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text!r}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"too large: {text!r} (at most {MAX_COUNT})")
    return value


def non_negative_int(text: str) -> int:
    """A whole number from 0 (``grep -C 0``) up to :data:`MAX_COUNT`."""
    return 0 if text.strip() == "0" else positive_int(text)


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {value}")
    return value


def parse_fail_on(text: str) -> set[str]:
    codes: set[str] = set()
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        # An empty value would silently mean "fail on nothing": that must be asked for.
        raise argparse.ArgumentTypeError("empty: name finding codes or severities (or 'none' to fail on nothing)")
    for part in parts:
        if part in SEVERITY_RANK:
            codes |= {c for c, (sev, _) in CODES.items() if SEVERITY_RANK[sev] >= SEVERITY_RANK[part]}
        elif part in CODES:
            codes.add(part)
        elif part == "none":
            continue
        else:
            raise argparse.ArgumentTypeError(f"unknown finding code or severity {part!r}")
    return codes


def finding_code(text: str) -> str:
    if text not in CODES:
        raise argparse.ArgumentTypeError(f"unknown finding code {text!r} (one of: {', '.join(CODES)})")
    return text


def check_root(root: str) -> None:
    """A usage error unless ``root`` is a directory or a reachable ``s3://bucket/prefix``."""
    if root.startswith("s3://"):
        from ...inspect.s3root import check_root

        problem = check_root(root)
        if problem is not None:
            raise UsageError(problem)
    elif not Path(root).is_dir():
        raise UsageError(f"{root}: not a directory")
