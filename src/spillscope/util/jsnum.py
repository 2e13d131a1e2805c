"""JavaScript number checks in Python: the reference validates budgets with
``Number.isInteger`` / ``Number.isSafeInteger``, and a JavaScript number is a double,
so ``400.0`` is an integer there, ``True`` and ``"400"`` are not numbers at all, and
``2**53`` is not *safe*. These helpers answer exactly as JavaScript would for the
Python value a caller (or a parsed JSON config) hands over.
"""

from __future__ import annotations

import math
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1


def is_js_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def js_is_integer(value: Any) -> bool:
    """``Number.isInteger(value)``."""
    if not is_js_number(value):
        return False
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    try:
        float(value)  # an int past the double range is Infinity in JavaScript
    except OverflowError:
        return False
    return True


def js_is_safe_integer(value: Any) -> bool:
    """``Number.isSafeInteger(value)``."""
    return js_is_integer(value) and abs(value) <= MAX_SAFE_INTEGER


def js_number_text(value: Any) -> str:
    """How a template literal prints ``value`` (for error messages that quote it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    return str(value)
