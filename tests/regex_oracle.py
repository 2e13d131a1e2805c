"""An independent oracle for ``-E``: RE2's own ``finditer`` over a whole text, as code-point spans.

The library's bindings chain the matches (an empty one moves a character on); the oracle keeps the
non-empty ones. A text holding a lone surrogate cannot be str-searched by the bindings (UTF-8 has no
surrogates), so it is searched as its ``surrogatepass`` bytes and the byte offsets are mapped by
decoding the prefix — no windows, no counting tables, nothing of the search under test.
"""

from __future__ import annotations

import re2


def re2_spans(text: str, pattern: str, icase: bool = False) -> list[tuple[int, int]]:
    options = re2.Options()
    options.case_sensitive = not icase
    options.log_errors = False
    if not any("\ud800" <= ch <= "\udfff" for ch in text + pattern):
        return [m.span() for m in re2.compile(pattern, options).finditer(text) if m.end() > m.start()]
    pat = "".join(f"\\x{{{ord(ch):04X}}}" if "\ud800" <= ch <= "\udfff" else ch for ch in pattern)
    data = text.encode("utf-8", "surrogatepass")
    out = []
    for m in re2.compile(pat.encode(), options).finditer(data):
        if m.end() > m.start():
            s = len(data[: m.start()].decode("utf-8", "surrogatepass"))
            out.append((s, s + len(data[m.start() : m.end()].decode("utf-8", "surrogatepass"))))
    return out
