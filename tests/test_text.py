"""JavaScript string semantics: JSON.stringify, tag-safe JSON, code point slicing, Node UTF-8."""

from spillscope._text import (
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
