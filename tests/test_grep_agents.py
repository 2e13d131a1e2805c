"""``spillscope grep`` on every other agent's tree: -n, -C N, -l, -c, --session, --kind, colour, exit codes.

Through the real entry point (``python -m spillscope grep``) on the real fixtures of Claude Code,
qwen-code, Gemini CLI and OpenCode, and on a hostile tree, each answer compared with an oracle
computed here independently: the files are found by each agent's documented layout (globs), a
spill file is its bytes decoded as UTF-8 with replacement, a transcript is parsed with ``json``
line by line (a JSON document whole) and its strings walked (under ``message`` where a record has
one), hits are ``str.find`` left to right, lines are what ``\\n`` separates in that one text, and
a file's session comes from its path or its records. OpenCode's ``opencode.db`` is read from a
copy with ``sqlite3``: each ``message`` row (by session, id) then each ``part`` row (by message,
id), its ``data`` one JSON document naming the row (docs/cli.md).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
#: Each agent's tree and a pattern that hits both its spill files and its transcripts.
TREES = {"claude": ("claude/projects", "Output"), "qwen": ("qwen/home", "x" * 1000),
         "gemini": ("gemini/tmp", "x" * 100), "opencode": ("opencode/share", "\u00fc" * 5000)}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
CUT = 400  # a context line longer than this is cut and marked … (docs/cli.md)


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spillscope", "grep", *args], capture_output=True, timeout=120,
                          encoding="utf-8", errors="surrogateescape", env=env)


# ---- the oracle -----------------------------------------------------------------------------

def _files(agent: str, tree: Path) -> list[tuple[Path, str]]:
    """Every spill file and transcript, by the agent's layout (not by spillscope's code)."""
    globs = {"claude": [("*/*/tool-results/*", "spill"), ("*/*.jsonl", "transcript"),
                        ("*/*/subagents/**/*.jsonl", "transcript")],
             "qwen": [("tmp/*/tool-results/*", "spill"), ("tmp/*/*.output", "spill"),
                      ("projects/*/chats/*.jsonl", "transcript")],
             "gemini": [("*/tool-outputs/**/*", "spill"), ("*/chats/**/*.jsonl", "transcript")],
             "opencode": [("tool-output/*", "spill"), ("storage/part/**/*.json", "transcript"),
                          ("opencode.db", "transcript")]}[agent]
    found = {(p, kind) for g, kind in globs for p in tree.glob(g) if p.is_file() and not p.is_symlink()}
    return sorted(found, key=lambda pk: str(pk[0]))


def _strings(value: object, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


Row = dict[str, Any]  # a database row as a hit names it: table, id, rowid


def db_rows(path: Path) -> list[tuple[Row, str, bytes]]:
    """(row, session, data) of each ``message`` row by (session_id, id), then each ``part`` row
    by (message_id, id) — bytes order, as SQLite's — read from a copy (the database and its WAL:
    the copy recovers the WAL's commits), so the tree under test is never opened here."""
    out: list[tuple[Row, str, bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        if Path(f"{path}-wal").exists():
            shutil.copyfile(f"{path}-wal", f"{copy}-wal")
        con = sqlite3.connect(copy)
        con.text_factory = bytes
        try:
            for table, key in (("message", "session_id"), ("part", "message_id")):
                got = con.execute(f"SELECT rowid, id, session_id, {key}, data FROM {table}").fetchall()
                for rowid, ident, session, k, data in sorted(got, key=lambda r: (r[3], r[1])):
                    out.append(({"table": table, "id": ident.decode(), "rowid": rowid}, session.decode(), data))
        finally:
            con.close()
    return out


def _texts(path: Path, kind: str) -> Iterator[tuple[int | None, str | None, str, Row | None]]:
    """(JSONL line, field, decoded text, database row) of each text grep searches in one file."""
    if path.name == "opencode.db":
        for row, _, data in db_rows(path):
            for where, text in _strings(json.loads(data), ""):
                yield None, where, text, row
        return
    data = path.read_bytes()
    if kind == "spill":
        yield None, None, data.decode("utf-8", "replace"), None
        return
    if path.suffix == ".json":
        for where, text in _strings(json.loads(data), ""):
            yield None, where, text, None
        return
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        rec = json.loads(raw)
        if isinstance(rec, dict) and "message" in rec:
            rec, base = rec["message"], "message"
        else:
            base = ""
        for where, text in _strings(rec, base):
            yield n, where, text, None


def _lines_of(text: str, s: int, e: int, context: int) -> tuple[int, list[str], list[str]]:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # a final newline ends the last line; it starts none
    first = text.count("\n", 0, s) + 1
    last = first + text[s:e - 1].count("\n")  # the line of the hit's last character

    def cut(x: str) -> str:
        return x if len(x) <= CUT else x[:CUT] + "…"

    return first, [cut(x) for x in lines[max(0, first - 1 - context):first - 1]], \
        [cut(x) for x in lines[last:last + context]]


def oracle(agent: str, tree: Path, pattern: str, context: int = 0) -> list[dict[str, Any]]:
    """Every hit as ``grep --json -C context`` writes it, in order."""
    out = []
    for path, kind in _files(agent, tree):
        for line, field, text, row in _texts(path, kind):
            i = 0
            while (s := text.find(pattern, i)) >= 0:
                e = s + len(pattern)
                n, before, after = _lines_of(text, s, e, context)
                out.append({"path": str(path), "kind": "spill" if kind == "spill" else "transcript", "line": line,
                            "field": field, "start": s, "end": e, "match": text[s:e], "text_line": n,
                            "before_lines": before, "after_lines": after, **({"row": row} if row else {})})
                i = e
    return out


def _first_key(path: Path, key: str) -> str | None:
    data = path.read_bytes()
    docs = [json.loads(data)] if path.suffix == ".json" else [json.loads(r) for r in data.split(b"\n") if r.strip()]
    return next((d[key] for d in docs if isinstance(d, dict) and isinstance(d.get(key), str)), None)


def sessions(agent: str, tree: Path) -> dict[str, str | None]:
    """The session of each file: the session whose transcript (or OpenCode part) names the file,
    else its path where the layout puts it in one, else its records."""
    files = [(p, k) for p, k in _files(agent, tree) if p.name != "opencode.db"]  # many sessions: db_rows
    out: dict[str, str | None] = {}
    for path, kind in files:
        rel = path.relative_to(tree).parts
        if agent == "claude":
            out[str(path)] = (rel[1] if len(rel) > 2 else path.stem if UUID.match(path.stem)
                              else _first_key(path, "sessionId"))
        elif kind == "transcript":
            out[str(path)] = _first_key(path, "sessionID" if agent == "opencode" else "sessionId")
        elif agent == "gemini":
            out[str(path)] = path.parent.name[len("session-"):] if path.parent.name.startswith("session-") else None
    for path, kind in files:
        # A spill file a transcript names is that transcript's session's, whatever dir it is in
        # (Gemini CLI's distillation dir is named for a prompt id, its loose files for none).
        if kind == "spill" and agent in ("qwen", "opencode", "gemini"):
            name = path.name.encode()
            owner = [out[str(t)] for t, k in files if k == "transcript" and name in t.read_bytes()]
            if agent == "opencode" and not owner and (tree / "opencode.db").exists():
                owner = [s for _, s, data in db_rows(tree / "opencode.db") if name in data]
            out[str(path)] = owner[0] if owner else out.get(str(path))
    return out


def _tree(agent: str) -> Path:
    return (FIXTURES / TREES[agent][0]).resolve()


def _jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


AGENTS = sorted(TREES)


# ---- the real fixtures ----------------------------------------------------------------------

@pytest.mark.parametrize("agent", AGENTS)
def test_line_numbers_and_context_match_the_oracle(agent: str) -> None:
    tree, pattern = _tree(agent), TREES[agent][1]
    want = oracle(agent, tree, pattern, context=2)
    assert {h["kind"] for h in want} == {"spill", "transcript"}  # the pattern covers both kinds
    assert any(h["text_line"] > 1 for h in want)
    proc = run(pattern, str(tree), "--json", "-C", "2")
    assert proc.returncode == 0, proc.stderr
    assert _jsonl(proc.stdout) == want
    # -n alone: the same line, no context members; the human output says it before the offsets.
    proc = run(pattern, str(tree), "-n", "--json")
    assert _jsonl(proc.stdout) == [{k: v for k, v in h.items() if not k.endswith("_lines")} for h in want]
    human = run(pattern, str(tree), "-n").stdout.splitlines()
    heads = [re.search(r" line (\d+) cp (\d+)-(\d+)$", h) for h in human if not h.startswith("    ")]
    assert [(int(m[1]), int(m[2]), int(m[3])) for m in heads if m] == [(h["text_line"], h["start"], h["end"])
                                                                        for h in want]
    assert len(heads) == len(want)


@pytest.mark.parametrize("agent", AGENTS)
def test_files_with_matches_and_counts_in_path_order(agent: str) -> None:
    tree, pattern = _tree(agent), TREES[agent][1]
    want: dict[str, int] = {}
    for h in oracle(agent, tree, pattern):
        want[h["path"]] = want.get(h["path"], 0) + 1
    assert list(want) == sorted(want) and len(want) > 1
    listed = run(pattern, str(tree), "-l")
    assert listed.returncode == 0 and listed.stdout.splitlines() == list(want)
    counted = run(pattern, str(tree), "-c", "--json")
    assert counted.returncode == 0 and _jsonl(counted.stdout) == [{"path": p, "count": n} for p, n in want.items()]
    # --kind: tool-output is the spill files' other name; what it keeps, in the same order.
    spills = [p for p, n in want.items() if str(p) in {str(f) for f, k in _files(agent, tree) if k == "spill"}]
    kinded = run(pattern, str(tree), "-c", "--kind", "tool-output")
    assert kinded.stdout.splitlines() == [f"{p}: {want[p]}" for p in spills]
    # -q: nothing written, the exit says whether there is a hit; -F is the default said.
    quiet = [run(pattern, str(tree), "-q", *extra) for extra in ([], ["-F"], ["--session", "no-such-session"])]
    assert [(q.returncode, q.stdout) for q in quiet] == [(0, ""), (0, ""), (1, "")], [q.stderr for q in quiet]


@pytest.mark.parametrize("agent", AGENTS)
def test_session_keeps_only_that_sessions_files(agent: str) -> None:
    tree = _tree(agent)
    owner = sessions(agent, tree)
    named = [s for s in owner.values() if s is not None]
    chosen = max(set(named), key=lambda s: (named.count(s), s))
    texts = {str(p): any(t for _, _, t, _ in _texts(p, k)) for p, k in _files(agent, tree)}
    want = [p for p in sorted(owner) if owner[p] == chosen and texts[p]]
    db = tree / "opencode.db"
    if agent == "opencode" and any(s == chosen and any(t for _, t in _strings(json.loads(d), ""))
                                   for _, s, d in db_rows(db)):
        want = sorted([*want, str(db)])  # the database, for its rows of that session
    assert 1 < len(want)
    # Both kinds of a session: its transcript and the spill files its layout or links give it.
    assert {k for p, k in _files(agent, tree) if str(p) in want} == {"spill", "transcript"} or agent == "opencode"
    proc = run("-E", "(?s).", str(tree), "-l", "--session", chosen)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == want
    proc = run("-E", "(?s).", str(tree), "-l", "--session", chosen, "--kind", "transcript")
    assert proc.stdout.splitlines() == [p for p in want if p.endswith((".jsonl", ".json"))]
    nobody = run("-E", "(?s).", str(tree), "-l", "--session", "no-such-session")
    assert (nobody.returncode, nobody.stdout) == (1, "")


def test_claude_sessions_repeat_and_include_subagents() -> None:
    tree = _tree("claude")
    owner = sessions("claude", tree)
    picked = sorted({s for s in owner.values() if s})[:2]
    want = [p for p in sorted(owner) if owner[p] in picked]
    assert any("agent-" in p for p in want)  # an older subagent's, named by its records only
    proc = run("-E", "(?s).", str(tree), "-l", "--session", picked[0], "--session", picked[1])
    assert proc.stdout.splitlines() == want


def test_exit_codes() -> None:
    tree = str(_tree("qwen"))
    assert run("line", tree, "-l").returncode == 0
    none = run("no such text \u2028 anywhere", tree, "-c")
    assert (none.returncode, none.stdout) == (1, "")
    bad = run("-E", "(a", tree, "-n")
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    unknown = run("line", tree, "--kind", "unknown", "-l")
    assert unknown.returncode == 2 and unknown.stdout == "" and "--kind unknown" in unknown.stderr
    assert "Traceback" not in bad.stderr + unknown.stderr


# ---- hostile text ---------------------------------------------------------------------------

SID = "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f"
HOSTILE = ("first\r\nsecond \u2028 still second\nNUL\x00here\n\x1b[31mred\x1b[0m 𝄞 astral 𝄞\n"
           "ends TAIL\nHEAD starts\n" + "x" * 500 + "\nlast 𝄞 line")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Claude Code projects dir: one session, one spill file and one transcript string holding
    CRLF, U+2028, NUL, an escape sequence, astral characters and a line past the cut."""
    root = tmp_path_factory.mktemp("hostile") / "projects"
    spills = root / "-home-dev-app" / SID / "tool-results"
    spills.mkdir(parents=True)
    (spills / "toolu_01Hostile.txt").write_bytes(HOSTILE.encode("utf-8") + b"\n\xff bad byte TAIL\n")
    records = [{"type": "user", "sessionId": SID, "message": {"role": "user", "content": "hello"}},
               {"type": "user", "sessionId": SID, "message": {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "toolu_01Hostile", "content": HOSTILE + "\ud800 TAIL"}]}}]
    (root / "-home-dev-app" / f"{SID}.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="ascii")
    return root


def _hostile_oracle(root: Path, pattern: str, context: int) -> list[dict[str, Any]]:
    return oracle("claude", root, pattern, context)


@pytest.mark.parametrize("pattern", ["second", "\u2028", "\x00", "\x1b[31m", "𝄞", "TAIL\nHEAD", "\r\nsecond",
                                     "x" * 10, "\ufffd", "last", "TAIL\n"])
def test_hostile_text_lines_and_context(hostile: Path, pattern: str) -> None:
    want = _hostile_oracle(hostile, pattern, 1)
    assert want
    proc = run("--json-pattern", json.dumps(pattern), str(hostile), "--json", "-C", "1")
    assert proc.returncode == 0, proc.stderr
    assert _jsonl(proc.stdout) == want


@pytest.mark.parametrize("pattern", ["TAIL\nHEAD", "TAIL\n"])
def test_hostile_context_is_shown_inert_and_numbered(hostile: Path, pattern: str) -> None:
    want = _hostile_oracle(hostile, pattern, 2)
    proc = run(pattern, str(hostile), "-C", "2", "--color", "always")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # Only the writer's own SGR is sent: the text's ESC, NUL, CR, U+2028 are made visible.
    bare = out.replace("\x1b[35m", "").replace("\x1b[1;33m", "").replace("\x1b[0m", "")
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f\u2028\u2029]", bare)
    assert "\x1b[1;33m" in out
    blocks = out.split("--\n")
    assert blocks[-1] == "" and len(blocks) - 1 == len(want)
    for block, hit in zip(blocks, want):
        numbers = [re.match(r"    (\d+)([-:]) ", line) for line in block.splitlines()[1:]]
        n = hit["text_line"]
        last = n + hit["match"][:-1].count("\n")  # a hit ending in a newline ends on the line it closes
        assert [(int(m[1]), m[2]) for m in numbers if m] == (
            [(n - len(hit["before_lines"]) + i, "-") for i in range(len(hit["before_lines"]))] + [(n, ":")]
            + [(last + 1 + i, "-") for i in range(len(hit["after_lines"]))])


def test_colour_follows_the_terminal_and_no_color(hostile: Path) -> None:
    import pty

    def on_terminal(env: dict[str, str]) -> bytes:
        master, slave = pty.openpty()
        try:
            proc = subprocess.run([sys.executable, "-m", "spillscope", "grep", "astral", str(hostile), "-l"],
                                  stdout=slave, stderr=subprocess.PIPE, timeout=120, env=env)
            assert proc.returncode == 0, proc.stderr
            os.close(slave)
            slave = -1
            got = b""
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                got += chunk
            return got
        finally:
            os.close(master)
            if slave >= 0:
                os.close(slave)

    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert b"\x1b[35m" in on_terminal(env)
    plain = on_terminal({**env, "NO_COLOR": "1"})
    assert b"\x1b" not in plain and b"toolu_01Hostile.txt" in plain
