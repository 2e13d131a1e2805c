"""What every match of a regex holds: the longest literal text any match must contain.

A file (or a window) whose bytes lack that literal's encoded form holds no match, so the byte
prefilter rules it out before any decoding, as it does for a fixed string (ripgrep's literal
extraction, in its simplest form). The rule is a *necessary* condition: where the analysis is
unsure it gives no literal, never a wrong one.

The pattern is parsed with Python's own regex parser (``re._parser``), which reads RE2's
syntax the same way for every construct this module draws a literal from: literal characters,
escaped punctuation, groups, concatenation and counted repetition. A pattern holding syntax
the two read differently (``[[:alpha:]]``, which Python takes as a set and a ``]``) or that
Python cannot read (``\\pL``, ``\\Q..\\E``, ``\\x{..}``, ``\\z``, ``(?<name>``) gives no literal:
RE2 searches it unfiltered. Separate from :mod:`.pattern` because it is an analysis of a
pattern, not a way of matching one.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

#: Text in a pattern after which Python's parser and RE2 may disagree: no literal is drawn.
_DIFFERENT = ("[:", "\\p", "\\P", "\\C", "\\0")

#: ASCII letters that match a non-ASCII character when case is ignored (RE2 and Python both
#: fold k to U+212A KELVIN SIGN and s to U+017F LONG S; Python also i to U+0130/U+0131).
_FOLDS_BEYOND_ASCII = frozenset("iIkKsS")


@functools.lru_cache(maxsize=64)
def required_literal(pattern: str, ignore_case: bool) -> tuple[str, bool] | None:
    """(the longest text every match of ``pattern`` contains, whether it is to be found
    ignoring ASCII case (then lowercased, and made of characters that match only ASCII
    characters when case is ignored)), or None when none can be drawn safely."""
    if any(mark in pattern for mark in _DIFFERENT):
        return None
    translated = _for_python(pattern)
    if translated is None:
        return None
    pattern = translated
    import importlib
    import re

    # Private modules (stable since 3.11) have no stubs: typed Any here.
    C: Any = importlib.import_module("re._constants")  # noqa: N806
    _parser: Any = importlib.import_module("re._parser")

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possible nested set" and the like: refused above
            parsed = _parser.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    folded = ignore_case or bool(parsed.state.flags & C.SRE_FLAG_IGNORECASE)
    if parsed.state.flags & C.SRE_FLAG_VERBOSE:
        return None  # RE2 has no (?x): it would not have compiled; never guess
    runs: list[str] = []
    _runs(parsed.data, C, runs, [], folded)
    if folded:
        runs = [r for run in runs if (r := ascii_run(run))]
    if not runs:
        return None
    best = max(runs, key=len)
    return (best.lower(), True) if folded else (best, False)


def _runs(items: list[tuple[Any, Any]], C: Any, runs: list[str], cur: list[str], folded: bool) -> None:  # noqa: N803
    """Collects into ``runs`` the literal texts that every match of the sequence ``items``
    holds contiguously; ``cur`` is the run being built (continued across groups)."""
    for op, av in items:
        if op is C.LITERAL:
            cur.append(chr(av))
        elif op is C.AT:
            continue  # zero-width (^, $, \b): the characters around it stay adjacent
        elif op is C.SUBPATTERN and not (av[1] & C.SRE_FLAG_IGNORECASE and not folded):
            _runs(av[3].data, C, runs, cur, folded)  # a group: its text is inline
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT) and av[0] >= 1:
            _flush(runs, cur)
            _runs(av[2].data, C, runs, [], folded)  # at least once: its own runs hold
        else:
            _flush(runs, cur)  # a class, a branch, an optional part: the run ends here
    _flush(runs, cur)


def _flush(runs: list[str], cur: list[str]) -> None:
    if cur:
        runs.append("".join(cur))
        cur.clear()


def ascii_run(text: str) -> str:
    """The longest part of ``text`` whose characters match only ASCII when case is ignored."""
    best, run = "", []
    for ch in text + "\x80":
        if ch < "\x80" and ch not in _FOLDS_BEYOND_ASCII:
            run.append(ch)
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return best


def _for_python(pattern: str) -> str | None:
    """``pattern`` in Python's spelling where RE2 spells the same thing otherwise: ``\\z`` as
    ``\\Z``, ``\\x{HHHH}`` as ``\\UHHHHHHHH``, ``\\Q..\\E`` as escaped text, ``(?<n>`` as
    ``(?P<n>``; None where a form is malformed (RE2 would have refused it)."""
    import re

    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            out.append("(?P<")
            i += 3
            continue
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = pattern[i + 1]
        if nxt == "z":
            out.append("\\Z")
        elif nxt == "x" and pattern.startswith("{", i + 2):
            end = pattern.find("}", i + 3)
            try:
                code = int(pattern[i + 3 : end], 16) if end > i + 3 else -1
            except ValueError:
                return None
            if not 0 <= code <= 0x10FFFF:
                return None
            out.append(f"\\U{code:08X}")
            i = end + 1
            continue
        elif nxt == "Q":
            end = pattern.find("\\E", i + 2)
            quoted = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
            out.append(re.escape(quoted))
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(ch + nxt)
        i += 2
    return "".join(out)
