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


def _json_corpus() -> list[bytes]:
    """JSON texts and near-JSON ones: numbers at and past 64 bits and past a double's range,
    strings with every escape, lone and paired surrogates (escaped and raw), controls, DEL,
    U+2028, astral and combining characters, a BOM, invalid UTF-8, nesting, bad syntax."""
    import json
    import random

    rng = random.Random(26)
    strings = ["", "a", "\x00\x1f\x7f", "\u2028\u2029", "e\u0301", "界😀", "\ud800", "\udc00\ud800", "\ud83d\ude00",
               '"\\/', "\r\n\t\b\f", "\ufeff"]
    texts = [json.dumps(s).encode() for s in strings] + [json.dumps(s, ensure_ascii=False).encode("utf-8", "surrogatepass")
                                                       for s in strings]
    texts += [b'"\\ud83d\\ude00"', b'"\\uD83D\\uDE00"', b'"\\ud83d"', b'"\\ude00\\ud83d"', b'"\\u00e9\\/"', b'"\t"',
              b'"\xed\xa0\x80"', b'"\xff"', b"\xef\xbb\xbf{}", b'{"a":1,"a":2,"b":3}', b"[1,2", b" [ 1 , 2 ] ", b"\t1\n",
              b"NaN", b"[Infinity]", b"-Infinity", b"01", b"1.", b".5", b"-0", b"-0.0", b"1e400", b"-1e400", b"1.5e-400",
              b"18446744073709551615", b"18446744073709551616", b"-9223372036854775808", b"-9223372036854775809",
              b"1" + b"0" * 400, b"2.2250738585072011e-308", b"4.35", b"[true,false,null]", b"{}", b"[]", b"",
              b"[" * 100 + b"]" * 100, b"[" * 1100 + b"]" * 1100, b'{"a":' * 300 + b"1" + b"}" * 300]
    for _ in range(2000):
        k = rng.random()
        if k < 0.3:
            texts.append(repr(rng.uniform(-1e300, 1e300)).encode())
        elif k < 0.5:
            texts.append(f"{rng.randint(0, 10**30)}e{rng.randint(-330, 310)}".encode())
        elif k < 0.7:
            texts.append(str(rng.randint(-(10**25), 10**25)).encode())
        else:
            value = {rng.choice(strings): [rng.choice(strings), rng.randint(-(2**70), 2**70), rng.random()]}
            texts.append(json.dumps(value, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass"))
    return texts


def test_the_stdlib_reads_json_as_loads_exact_always_did(monkeypatch):
    """loads_exact parses with the stdlib until orjson is loaded (orjson's import is 6.5 ms of
    a grep's start-up): for every text, the same value (type, sign, digits) or the same error
    as orjson first (and the stdlib where orjson refuses) gives."""
    import sys

    from spillscope.util import text

    def outcome(data: bytes | str, stdlib_first: bool) -> tuple[str, str]:
        monkeypatch.setattr(text, "_stdlib_rent", 0 if stdlib_first else text.STDLIB_BUDGET)
        if stdlib_first:
            monkeypatch.delitem(sys.modules, "orjson", raising=False)
        try:
            return "ok", ascii(loads_exact(data)) + repr(type(loads_exact(data)))
        except ValueError as exc:
            return "error", str(exc)
        finally:
            monkeypatch.undo()

    for data in _json_corpus():
        assert outcome(data, True) == outcome(data, False), data[:80]
        if data.isascii():
            assert outcome(data.decode(), True) == outcome(data.decode(), False), data[:80]


def test_loads_exact_refuses_what_orjson_refuses_whatever_the_recursion_limit(monkeypatch):
    """Deeper than orjson's 1,024 levels is a ValueError, even where the recursion limit lets
    the stdlib (the first parser until orjson is loaded) go deeper: a caller may raise it, and
    loads_exact's own fallback does, for a moment, in another thread."""
    import sys

    import pytest

    from spillscope.util import text

    monkeypatch.setattr(text, "_stdlib_rent", 0)
    monkeypatch.delitem(sys.modules, "orjson", raising=False)
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(20_000)
        for depth in (1025, 2000, 5000):
            with pytest.raises(ValueError, match="nested deeper than 1024"):
                loads_exact(b"[" * depth + b"]" * depth)
        assert loads_exact(b"[" * 1000 + b"]" * 1000) == loads_exact("[" * 1000 + "]" * 1000)
        # Brackets in strings count too (a bound, not a parse): orjson reads those.
        assert loads_exact(b'"' + b"[" * 5000 + b'"') == "[" * 5000
    finally:
        sys.setrecursionlimit(limit)


def test_loads_exact_imports_orjson_once_the_stdlib_cost_as_much():
    """A process that parses little never imports orjson; one that parses a lot imports it
    once the stdlib's extra cost reaches the import's (STDLIB_BUDGET), and uses it then."""
    import subprocess
    import sys

    code = ("import sys; from spillscope.util import text\n"
            "text.loads_exact(b'{\"sessionId\": \"s\", \"n\": 1}'); print('orjson' in sys.modules)\n"
            "for _ in range(text.STDLIB_BUDGET // (1 << 16) + 1): text.loads_exact(b'\"' + b'x' * (1 << 16) + b'\"')\n"
            "print('orjson' in sys.modules)\n"
            "calls = 0\n"
            "while 'orjson' not in sys.modules: text.loads_exact(b'\"x\"'); calls += 1\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["False", "True"], proc.stderr
    few = subprocess.run([sys.executable, "-c", code.replace("(1 << 16) + 1", "(1 << 16) - 2") + "print(calls)"],
                         capture_output=True, text=True, timeout=60)
    # bytes alone did not reach the budget, a few calls more did: a call counts as bytes too
    assert few.stdout.split()[:2] == ["False", "False"] and 0 < int(few.stdout.split()[2]) < 100, few.stderr


def test_ascii_json_is_the_stdlibs_ascii_json(monkeypatch):
    """ascii_json's bytes are ``json.dumps(..., ensure_ascii=True, separators=(",", ":"))``'s,
    DEL included (orjson leaves it raw), whichever encoder wrote them."""
    import json

    from spillscope.util.text import ascii_json, ascii_json_string

    for value in ["a\x7fb", "\x00\x1f", "\u2028", "界😀", "\ud800", "plain", '"\\/', {"k\x7f": ["\x7f", None, 1]}]:
        want = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
        assert ascii_json(value) == want
        if isinstance(value, str):
            assert ascii_json_string(value) == want
