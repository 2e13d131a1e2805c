"""``-E`` on RE2: catastrophic regexes run in linear time in the CLI's ``grep -E``, the TUI's root
search and the notebook's ``search(regex=True)`` (issue 23 item 4, issue 26); syntax RE2 lacks is
refused with its reason; offsets are code points whatever the text holds.

The corpus is generated: nested and overlapping quantifiers over an atom (``(a+)+$``,
``(a|aa)*c``, ``(x+x+)+y``, ``(a*)*b``, ``(.*a){20}``...), each over a megabyte of the atom's
character with a character that makes it fail at the end -- the inputs on which a backtracking
engine takes exponential time (30 characters already took a minute). Every check runs in a
child process with a deadline, so a backtracking engine fails the test instead of hanging it.
The bound is generous (a few seconds plus ten times a plain pattern's time, measured in the same
run); the real measure is in ``bench/grep.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from regex_oracle import re2_spans

from spillscope.formats.transcript import render_transcript
from spillscope.inspect.search.pattern import Pattern, PatternError
from spillscope.util.text import js_normalize, js_utf8

MB = 1 << 20
#: An atom of a pattern and the character whose long run makes it explode.
ATOMS = {"a": "a", "x": "x", r"\w": "w", "[ab]": "b"}


def catastrophic(atom: str) -> list[str]:
    """Patterns on which a backtracking engine explodes over a long run of ``atom``'s character."""
    return [f"({atom}+)+$", f"({atom}*)*!", f"({atom}|{atom}{atom})*c", f"({atom}+{atom}+)+y", f"(.*{atom}){{20}}!",
            f"({atom}|{atom}?)+!", f"(({atom}+)*)+!", f"^({atom}+\\s?)*$", f"({atom}{{1,30}}){{1,30}}!"]


def corpus() -> list[str]:
    return [p for atom in ATOMS for p in catastrophic(atom)]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root whose tool outputs, and the two messages of a transcript, are each a megabyte of
    one character and a different last character."""
    sdir = tmp_path_factory.mktemp("redos") / "root" / "session-0123456789ab"
    sdir.mkdir(parents=True)
    for i, ch in enumerate(sorted(set(ATOMS.values())), 1):
        (sdir / f"{i + 100:012x}-bash.txt").write_bytes(js_utf8(ch * MB + "!"))
    conv = [{"role": "user", "text": "a" * MB + "%"}, {"role": "assistant", "text": "x" * MB + "%"}]
    data = render_transcript({"sessionId": "src", "label": "l", "cwd": None, "capturedThroughSeq": 3,
                              "conversation": conv}, 3)
    (sdir / f"{1:012x}-session-reference-1.txt").write_bytes(js_utf8(data))
    return sdir.parent


def _grep(root: Path, pattern: str, timeout: float) -> float:
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "spillscope", "grep", "-E", pattern, str(root), "--json"],
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{pattern}: still running after {timeout:.1f} s")
    assert proc.returncode in (0, 1), proc.stderr
    return time.monotonic() - t0


@pytest.fixture(scope="module")
def plain_cli(root: Path) -> float:
    """How long ``grep -E`` takes with a plain pattern on the same root, measured in this run."""
    return _grep(root, "ab", 120)


def _child(code: str, timeout: float) -> str:
    try:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout:.0f} s: a backtracking engine")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


#: One pattern of each shape for the CLI (a process each); the other checks take them all.
CLI_PATTERNS = ["(a+)+$", "(x+x+)+y", "(a|aa)*c", "(a*)*!", "(.*a){20}!", r"(\w{1,30}){1,30}!"]


@pytest.mark.parametrize("pattern", CLI_PATTERNS)
def test_grep_E_runs_a_catastrophic_pattern_in_linear_time(root: Path, plain_cli: float, pattern: str) -> None:
    bound = 5 + 10 * plain_cli
    assert _grep(root, pattern, bound) < bound


def test_the_search_runs_the_whole_corpus_over_every_run_in_linear_time(root: Path) -> None:
    """The library under every front end: each pattern over each file (the same compiled
    pattern across files, as a root search uses it)."""
    out = _child(f"""
        import json, pathlib, time
        from spillscope.inspect.search.pattern import Pattern
        from spillscope.inspect.search.tool import search_tool_output
        from spillscope.inspect.search.transcript import search_transcript
        files = sorted(pathlib.Path({str(root)!r}).rglob("*.txt"))
        def run(p):
            t0 = time.monotonic()
            for f in files:
                search = search_transcript if "reference" in f.name else search_tool_output
                list(search(str(f), p))
            return time.monotonic() - t0
        plain = run(Pattern("ab", regex=True))
        print(json.dumps([plain, {{p: run(Pattern(p, regex=True)) for p in {corpus()!r}}}]))
        """, timeout=60 + 5 * len(corpus()))
    plain, times = json.loads(out)
    slow = {p: t for p, t in times.items() if t > 3 + 10 * plain}
    assert not slow, (slow, plain)


def test_notebook_search_runs_the_corpus_in_linear_time(root: Path) -> None:
    out = _child(f"""
        import json, time, spillscope
        insp = spillscope.open({str(root)!r})
        t0 = time.monotonic(); insp.search("ab", regex=True); plain = time.monotonic() - t0
        times = {{}}
        for p in {corpus()!r}:
            t0 = time.monotonic(); insp.search(p, regex=True); times[p] = time.monotonic() - t0
        print(json.dumps([plain, times]))
        """, timeout=60 + 5 * len(corpus()))
    plain, times = json.loads(out)
    slow = {p: t for p, t in times.items() if t > 5 + 10 * plain}
    assert not slow, (slow, plain)


def test_tui_root_search_runs_catastrophic_patterns_in_linear_time(root: Path) -> None:
    patterns = ["(a+)+$", "(x+x+)+y", "(a|aa)*c", r"(.*\w){20}!"]
    out = _child(f"""
        import asyncio, json, time
        from textual.app import App
        from spillscope.frontends.tui.search import SearchScreen

        async def main():
            times = []
            for query in ["re:ab"] + ["re:" + p for p in {patterns!r}]:
                app = App()
                async with app.run_test(size=(120, 30)) as pilot:
                    t0 = time.monotonic()
                    screen = SearchScreen({str(root)!r}, None, None, query)
                    app.push_screen(screen)
                    while True:
                        await pilot.pause(0.05)
                        status = str(screen.query_one("#search-status").render()) if screen.is_mounted else ""
                        if status.endswith("done") or "cannot search" in status:
                            break
                    assert "cannot search" not in status, status
                    times.append(time.monotonic() - t0)
            print(json.dumps(times))

        asyncio.run(main())
        """, timeout=120)
    plain, *rest = json.loads(out)
    assert max(rest) < 5 + 10 * plain, (rest, plain)


#: What RE2 does not have, and a word the refusal must say.
UNSUPPORTED = [(r"(\w+)\1", "backreference"), ("(?P<n>a)(?P=n)", "backreference"), ("a(?=b)", "lookahead"),
               ("a(?!b)", "lookahead"), ("(?<=a)b", "lookbehind"), ("(?<!a)b", "lookbehind"), ("(?>a+)b", "atomic"),
               ("a++", "possessive"), ("a*+b", "possessive"), (r"a\Z", r"\z"), (r"\C", "any byte"),
               ("a{1001}", "repetition"), ("[a", "missing ]"), ("(a", "missing )")]


@pytest.mark.parametrize("pattern,word", UNSUPPORTED)
def test_syntax_re2_lacks_is_refused_with_its_reason(pattern: str, word: str) -> None:
    with pytest.raises(PatternError, match=re.escape(word)):
        Pattern(pattern, regex=True).compile()


def test_grep_E_refuses_unsupported_syntax_in_one_line_exit_2(root: Path) -> None:
    for pattern in ("(a)\\1", "x(?<!y)"):
        proc = subprocess.run([sys.executable, "-m", "spillscope", "grep", "-E", pattern, str(root)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and "not supported" in proc.stderr, proc.stderr


#: Characters whose code points and UTF-8 lengths differ: astral, lone surrogates (either half),
#: combining marks, controls, line separators.
ALPHABET = ["a", "b", "\n", "😀", "界", "\ud800", "\udfff", "e\u0301", "\x00", "\u2028", "é", " "]
PATTERNS = ["a+", "b.", ".", "[^a]{2}", r"\x{D800}|😀", r"\bab", "(?i)A|É", "(?s).b", r"\pL+", "^a|b$", "(?m)^b",
            "x*", "a*?b", r"[\x{D800}-\x{DFFF}]+"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=40), st.sampled_from(PATTERNS), st.integers(0, 40))
def test_spans_are_code_points_as_re2_over_the_whole_text_gives_them(parts: list[str], pattern: str, at: int) -> None:
    """Offsets map from RE2's bytes to code points exactly, lone surrogates and astral characters
    included, and a search resumed at a code point chains the matches the whole text has there."""
    text = js_normalize("".join(parts))
    want = re2_spans(text, pattern)
    got = list(Pattern(pattern, regex=True).compile().spans(text, -1))
    assert got == want
    resume = min(at, len(text))
    if any(e == resume for _, e in want) or resume == 0:
        assert list(Pattern(pattern, regex=True).compile().spans(text, resume)) == [m for m in want if m[0] >= resume]
