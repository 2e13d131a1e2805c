"""JavaScript string semantics: JSON.stringify, tag-safe JSON, code point slicing, Node UTF-8."""

from hypothesis import given
from hypothesis import strategies as st

from spillscope.util.text import (
    code_point_slices,
    js_json_string,
    js_normalize,
    js_stringify,
    js_utf8,
    loads_exact,
    tag_safe_json,
    utf8_len,
    visible,
)


def test_json_stringify_vectors(vectors):
    for v in vectors["jsonStringify"]:
        assert js_json_string(v["input"]) == v["jsStringify"], v
        assert tag_safe_json(v["input"]) == v["tagSafe"], v


def test_fragment_vectors(vectors):
    for v in vectors["fragments"]:
        assert [js_json_string(s) for s in code_point_slices(v["input"])] == v["lines"], v


def test_split_pair_is_one_code_point():
    # A pair given as two separate Python code points is one JS code point.
    text = "\ud83d" + "\ude00"
    assert js_normalize(text) == "\U0001F600"
    assert code_point_slices("a" * 63 + text) == ["a" * 63 + "\U0001F600"]


def test_node_utf8_of_lone_surrogates():
    assert js_utf8("\ud800") == "\ufffd".encode()
    assert utf8_len("a\udc00b") == 5
    assert utf8_len("\U0001F600") == 4


def test_loads_exact_keeps_lone_surrogates():
    assert loads_exact(b'"x\\ud800y"') == "x\ud800y"
    assert loads_exact(b'"\\ud83d\\ude00"') == "\U0001F600"
    assert loads_exact('"\\udc00\\ud800"') == "\udc00\ud800"


def test_stringify_indent_matches_js_layout():
    out = js_stringify({"a": "\ud800", "b": None, "c": 3}, indent=2)
    assert out == '{\n  "a": "\\ud800",\n  "b": null,\n  "c": 3\n}'


def test_visible_controls():
    assert visible("\x1b[31mred\x00\r\n\u202e") == "␛[31mred␀⏎\n⟨U+202E⟩"
    assert visible("lone\ud800") == "lone⟨lone U+D800⟩"


def _visible_by_code_point(text: str) -> str:
    """The definition of `visible`, one code point at a time (the fast one must agree)."""
    from spillscope.util.text import _FORMAT_CONTROLS, js_normalize

    out = []
    for ch in js_normalize(text):
        cp = ord(ch)
        if ch in "\n\t":
            out.append(ch)
        elif ch == "\r":
            out.append("⏎")
        elif cp < 0x20:
            out.append(chr(0x2400 + cp))
        elif cp == 0x7F:
            out.append("␡")
        elif 0x80 <= cp < 0xA0 or cp in _FORMAT_CONTROLS:
            out.append("⟨U+%04X⟩" % cp)
        elif 0xD800 <= cp <= 0xDFFF:
            out.append("⟨lone U+%04X⟩" % cp)
        else:
            out.append(ch)
    return "".join(out)


_TRICKY = st.sampled_from(list("\x00\x1b\r\n\t\x7f\x85\x9f\u200e\u2028\u2029\u202e\u2066\u2069\ufeff\u061c\ud800\udfff\ud83d\ude00é界a"))


@given(st.lists(st.one_of(_TRICKY, st.characters()), max_size=40).map("".join))
def test_visible_agrees_with_its_code_point_definition(text):
    assert visible(text) == _visible_by_code_point(text)
