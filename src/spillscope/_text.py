"""Compatibility: this module moved to :mod:`spillscope.util.text`; every name it had stays importable here."""

from .util.text import (  # noqa: F401
    MAX_JSON_DEPTH,
    _FORMAT_CONTROLS,
    _SHOWN,
    _SHOWN_LINE,
    _SURROGATE,
    _escape_lone,
    _finish_js_json,
    _normalize_tree,
    _show,
    _too_deep,
    code_point_slices,
    has_surrogates,
    js_json_string,
    js_normalize,
    js_stringify,
    js_utf8,
    loads_exact,
    lone_surrogate_count,
    tag_safe_json,
    utf16_units,
    utf8_len,
    visible,
)

__all__ = ['MAX_JSON_DEPTH', '_FORMAT_CONTROLS', '_SHOWN', '_SHOWN_LINE', '_SURROGATE', '_escape_lone', '_finish_js_json', '_normalize_tree', '_show', '_too_deep', 'code_point_slices', 'has_surrogates', 'js_json_string', 'js_normalize', 'js_stringify', 'js_utf8', 'loads_exact', 'lone_surrogate_count', 'tag_safe_json', 'utf16_units', 'utf8_len', 'visible']
