"""The command line's argument types and checks: durations, counts, ports, ``--fail-on`` and roots.

A root argument becomes a :class:`~spillscope.storage.Storage` here (:func:`open_root`), through
the one registry that decides what a path or URL is; what takes local directories only is
:data:`LOCAL_ONLY`, so a command that cannot take a URL refuses it by name instead of reading
it as a local path.

Separate so the parser (main.py) and every command share one definition of a valid value
and one ``UsageError`` (exit 2).
"""

from __future__ import annotations

import argparse
import re

from ...inspect.findings import CODES, SEVERITY_RANK
from ...storage import Storage, UnsupportedRoot, open_storage, set_request_timeout


class UsageError(Exception):
    pass


class SettingError(ValueError):
    """An environment setting that cannot be used (the CLI reports it as a usage error).

    Here, beside :class:`UsageError`, so ``main`` catches both without importing the
    progress bar (progress.py) that reads the settings."""


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


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def add_timeout(sp: argparse.ArgumentParser) -> None:
    """``--timeout SECONDS``, on every command that takes an S3 root."""
    sp.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                    help="give up on an s3:// request unanswered this long, retry included "
                         "(default 15, or SPILLSCOPE_S3_TIMEOUT)")


#: What takes a local directory only; every other command reads any registered store.
#: prune deletes what the local sweep may delete (the S3 backend has no sweep of its own to
#: mirror), demo writes a directory, and session logs are local files.
LOCAL_ONLY = frozenset({"prune", "demo", "--logs"})


def open_root(text: str, command: str, *, timeout: float | None = None, check: bool = True) -> Storage:
    """The store ``text`` names, for ``command`` (a usage error, exit 2, for a scheme the
    command does not take or a malformed one); with ``check``, also unless it can be
    inspected now (a directory; a reachable bucket). ``timeout`` (``--timeout``) bounds
    every remote request from now on."""
    try:
        if timeout is not None:
            set_request_timeout(timeout)
        store = open_storage(text, command=command, supports=("local",) if command in LOCAL_ONLY else None)
    except (UnsupportedRoot, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if check:
        require_usable(store)
    return store


def require_usable(store: Storage) -> None:
    """A usage error unless the root can be inspected now (a directory; a reachable bucket)."""
    problem = store.problem()
    if problem is not None:
        raise UsageError(str(problem))


def check_logs(text: str | None) -> None:
    """A usage error unless ``--logs`` is a local directory (a URL is refused by name)."""
    if text is not None:
        open_root(text, "--logs")

