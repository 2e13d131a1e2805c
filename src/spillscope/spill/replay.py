"""Replay normalisation of spill locators (FORMAT.md §8), exactly as upstream's
``packages/test-support/session-snapshot/src/normalize.ts`` does it.

Recorded sessions used for replay tests have each local-backend locator replaced by
``{{spillLocator:<safe name>}}``; byte counts and omission counts are kept. Two patterns
find them: a cwd-relative ``{{cwd}}/.spill/...`` root and the snapshot roots
``/tmp/dsh-acp-snap-<9 hex>`` / ``/tmp/dsh-acp-snapshot-spill`` (also ``C:\\t\\...``).
Separator runs (``[\\\\/]+``) match raw, JSON-escaped and doubly escaped spellings alike,
and the lookahead stops the name before ``. Use read with offset/limit``, a quote, an
escaped quote, whitespace or ``)``. Unrelated paths that only look alike stay as they are.

The upstream patterns are JavaScript regular expressions; they are translated here with
JavaScript's meaning kept: ``\\s`` is JavaScript's whitespace set (which has U+FEFF and
lacks U+001C–U+001F and U+0085, unlike Python's) and ``$`` is the end of the input.
"""

from __future__ import annotations

import re

#: The placeholder a scrubbed locator becomes.
PLACEHOLDER = "{{spillLocator:%s}}"
#: A whole locator that is a placeholder; group 1 is the safe (encoded) name.
NORMALIZED_LOCATOR = re.compile(r"\A\{\{spillLocator:([A-Za-z0-9._~-]+)\}\}\Z")

_JS_SPACE = "\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_END = r"(?=\. Use read with offset/limit|[" + _JS_SPACE + r')"]|\\+"|\Z)'
_NAME = r"[0-9a-f]{12}-([A-Za-z0-9._~-]+?)"
LOCAL_SPILL_PATH = re.compile(r"\{\{cwd\}\}[\\/]+\.spill[\\/]+session-[0-9a-f]{12}[\\/]+" + _NAME + _END)
SNAPSHOT_SPILL_PATH = re.compile(
    r"(?:[A-Za-z]:)?[\\/]+(?:tmp|t)[\\/]+(?:dsh-acp-snap-[0-9a-f]{9}|dsh-acp-snapshot-spill)[\\/]+"
    r"session-[0-9a-f]{12}[\\/]+" + _NAME + _END
)


def _placeholder(match: re.Match[str]) -> str:
    return PLACEHOLDER % match.group(1)


def scrub_locators(text: str) -> str:
    """Every replay-scrubbable locator in ``text`` (any escaping layer) → its placeholder."""
    return SNAPSHOT_SPILL_PATH.sub(_placeholder, LOCAL_SPILL_PATH.sub(_placeholder, text))


def snapshot_spill_paths(text: str) -> dict[str, str]:
    """upstream ``extractSnapshotSpillPaths``: safe name → the matched path as spelled
    (escaping included), last match winning per name."""
    return {m.group(1): m.group(0) for m in SNAPSHOT_SPILL_PATH.finditer(text)}


def normalized_name(locator: str) -> str | None:
    """The safe name of a ``{{spillLocator:<name>}}`` locator, or None for any other."""
    m = NORMALIZED_LOCATOR.match(locator)
    return m.group(1) if m is not None else None
