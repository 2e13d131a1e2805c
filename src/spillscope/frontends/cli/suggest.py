"""Close matches for a mistyped command or option: ``did you mean `ls`?``.

Closeness is the edit distance with a swap of two neighbours counting as one edit (the
slips people make: a letter missing, extra, wrong or swapped), not difflib's ratio,
which misses a wrong letter in a two-letter word (``lx`` scores 0.5 against ``ls``).
"""

from __future__ import annotations

from typing import Iterable


def distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap neighbours) turning ``a`` into ``b``."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[len(b)]


def close(word: str, candidates: Iterable[str]) -> list[str]:
    """The candidates nearest ``word`` (case aside), if near enough to be a slip: one edit
    for a word of up to four letters, two for a longer one; [] when none is."""
    scored = []
    for c in candidates:
        d = distance(word.lower(), c.lower())
        if d <= (1 if max(len(word), len(c)) <= 4 else 2):
            scored.append((d, c))
    best = min((d for d, _ in scored), default=None)
    return sorted(c for d, c in scored if d == best)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean `ls`?)`` — or `` or `` between several — or "" when nothing is close."""
    found = close(word, candidates)
    if not found:
        return ""
    names = [f"`{c}`" for c in found]
    return " (did you mean " + (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]) + "?)"
