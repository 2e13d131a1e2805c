"""Names in the local layout (FORMAT.md §2): session dirs and encoded file-name segments.

Pure functions, apart from the backend that writes with them, so the inspector can read
names without importing the (asyncio-based) store.
"""

from __future__ import annotations

from ..util.text import js_utf8, utf16_units

SESSION_DIR_PREFIX = "session-"
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def encode_segment(raw: str) -> str:
    """Injective, traversal-proof encoding of one path segment over UTF-16 code units."""
    if raw == "":
        return "~"
    if raw == ".":
        return "~002E"
    if raw == "..":
        return "~002E~002E"
    if raw.isascii() and all(ord(c) in _SAFE for c in raw):
        return raw
    return "".join(chr(u) if u in _SAFE else "~%04X" % u for u in utf16_units(raw))


def decode_segment(encoded: str) -> str | None:
    """Invert :func:`encode_segment`; ``None`` when ``encoded`` is not a valid encoding."""
    if encoded == "~":
        return ""
    units: list[int] = []
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        if ch == "~":
            digits = encoded[i + 1 : i + 5]
            if len(digits) != 4 or any(c not in "0123456789ABCDEF" for c in digits):
                return None
            units.append(int(digits, 16))
            i += 5
        elif ord(ch) < 128 and ord(ch) in _SAFE:
            units.append(ord(ch))
            i += 1
        else:
            return None
    raw = b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")
    return raw if encode_segment(raw) == encoded else None


def session_hash(session_id: str) -> str:
    """First 12 hex chars of sha256 over Node's UTF-8 of the id (lone surrogate → U+FFFD)."""
    # Imported here: a scan reads names with this module and needs no OpenSSL (2-3 ms of
    # start-up); a second import is a dictionary look-up, small beside the digest.
    import hashlib

    return hashlib.sha256(js_utf8(session_id)).hexdigest()[:12]


def session_dir_name(session_id: str) -> str:
    return SESSION_DIR_PREFIX + session_hash(session_id)
