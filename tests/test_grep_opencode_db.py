"""``spillscope grep`` on OpenCode's ``opencode.db``: its message and part rows searched as the older JSON parts are.

Through the real entry point on a copy of the OpenCode fixture (tests/fixtures/opencode,
written from OpenCode's own schema and templates) with hostile rows added — CR/LF, U+2028, NUL
and a lone surrogate as JSON escapes, astral characters, an escape sequence — each answer
compared with the oracle of test_grep_agents.py, which reads the rows from a copy of the
database with ``sqlite3`` and ``json``. And the database is only read: in WAL mode with OpenCode
running or not, a crash's leftover WAL, locked, corrupt — no file appears in the tree, what
cannot be read is a finding naming the database, and the exit status is the hits' (0 hits, 1
none; 2 only for a usage error).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from test_grep_agents import HOSTILE, _jsonl, db_rows, oracle, run

FIXTURES = Path(__file__).parent / "fixtures"
SES = "ses_hostile"
#: Placeholders replaced by JSON escapes in the stored text: a lone surrogate (JSON.stringify
#: writes one as ``\ud800``) and an escaped surrogate pair (which decodes to one astral character).
LONE, PAIR = "@@LONE@@", "@@PAIR@@"
OUTPUT = HOSTILE + f" {LONE} lone TAIL\r\n{PAIR} pair"
ERROR = f"boom\u2028TAIL\r\n\U0001d11e {LONE}\x00 end"


def _data(value: dict[str, Any]) -> str:
    """The ``data`` text as OpenCode stores it (JSON.stringify: UTF-8, controls escaped)."""
    return json.dumps(value, ensure_ascii=False).replace(LONE, "\\ud800").replace(PAIR, "\\ud834\\udd1e")


def _add_rows(db: Path) -> None:
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT INTO message VALUES ('msg_h', ?, 1, 1, ?)",
                    (SES, _data({"role": "assistant", "time": {"created": 1}, "error": {
                        "name": "UnknownError", "data": {"message": ERROR}}})))
        con.execute("INSERT INTO part VALUES ('prt_h1', 'msg_h', ?, 1, 1, ?)",
                    (SES, _data({"type": "tool", "callID": "call_h", "tool": "bash", "state": {
                        "status": "completed", "input": {"command": "cat hostile"}, "output": OUTPUT,
                        "title": "bash", "metadata": {}, "time": {"start": 1, "end": 2}}})))
        # Inserted before prt_h1's id sorts: grep orders by (message, id), not by rowid.
        con.execute("INSERT INTO part VALUES ('prt_h0', 'msg_h', ?, 1, 1, ?)",
                    (SES, _data({"type": "text", "text": "first part TAIL"})))
    con.close()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "share"
    shutil.copytree(FIXTURES / "opencode" / "share", root)
    _add_rows(root / "opencode.db")
    return root


def _listing(root: Path, read: bool = True) -> dict[str, object]:
    """Every name in the tree with its bytes (or, ``read=False``, its size and mtime: closing a
    file this process opened drops every POSIX lock the process holds on it, a locker's too)."""
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = p.read_bytes() if read and p.is_file() else (st.st_size, st.st_mtime_ns)
    return out


def _to_wal(db: Path) -> None:
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    con.close()  # the last connection's close checkpoints and deletes -wal and -shm
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()


def _db_hits(tree: Path, pattern: str, context: int = 0) -> list[dict[str, Any]]:
    return [h for h in oracle("opencode", tree, pattern, context) if h["path"].endswith("opencode.db")]


# ---- hits in the database, every output ----------------------------------------------------

PATTERNS = ["TAIL", "\u2028", "\x00", "\U0001d11e", "\ud800", "\r\nsecond", "TAIL\nHEAD", "TAIL\r\n",
            "x" * 10, "agent line 1999", "aborted", "no tool here", "claude-sonnet"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_db_hits_match_the_oracle(tree: Path, pattern: str) -> None:
    want = oracle("opencode", tree, pattern, context=1)
    assert [h for h in want if "row" in h], "the pattern hits a row of the database"
    proc = run("--json-pattern", json.dumps(pattern), str(tree), "--json", "-C", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert _jsonl(proc.stdout) == want
    # -n alone: the same hits without the context members.
    proc = run("--json-pattern", json.dumps(pattern), str(tree), "--json", "-n")
    assert _jsonl(proc.stdout) == [{k: v for k, v in h.items() if not k.endswith("_lines")} for h in want]


def test_both_tables_and_their_order(tree: Path) -> None:
    """Message rows by (session, id), then part rows by (message, id): prt_h0 before prt_h1
    although inserted after it."""
    hits = _db_hits(tree, "TAIL")
    rows = [(h["row"]["table"], h["row"]["id"]) for h in hits]
    assert rows == [("message", "msg_h"), ("part", "prt_h0")] + [("part", "prt_h1")] * 2
    proc = run("TAIL", str(tree), "--json")
    got = [(h["row"]["table"], h["row"]["id"], h["row"]["rowid"]) for h in _jsonl(proc.stdout) if "row" in h]
    assert got == [(h["row"]["table"], h["row"]["id"], h["row"]["rowid"]) for h in hits]


def test_human_output_names_the_database_row(tree: Path) -> None:
    db = tree / "opencode.db"
    want = _db_hits(tree, "TAIL", context=1)
    proc = run("TAIL", str(tree), "-n")
    assert proc.returncode == 0, proc.stderr
    heads = [h for h in proc.stdout.splitlines() if h.startswith(str(db))]
    assert heads == [f"{db} {h['row']['table']} {h['row']['id']} {h['field']}: transcript line {h['text_line']} "
                     f"cp {h['start']}-{h['end']}" for h in want]
    # -C: numbered lines from the one decoded string, every control made visible.
    proc = run("TAIL", str(tree), "-C", "1")
    bare = proc.stdout
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f\u2028\u2029]", bare)
    assert f"{db} part prt_h1 state.output: transcript line 5 cp" in bare


def test_a_hostile_row_id_is_shown_inert_and_given_exactly_in_json(tree: Path) -> None:
    db = tree / "opencode.db"
    ident = "prt_\x1b[31m\n\u2028\U0001d11e"
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT INTO part VALUES (?, 'msg_z', ?, 1, 1, ?)", (ident, SES, _data({"text": "marker"})))
    con.close()
    proc = run("marker", str(db.parent), "--color", "always")
    assert proc.returncode == 0, proc.stderr
    bare = proc.stdout.replace("\x1b[35m", "").replace("\x1b[1;33m", "").replace("\x1b[0m", "")
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f\u2028\u2029]", bare.replace("\n", ""))
    assert len(proc.stdout.splitlines()) == 2  # the head and the hit: the id's newline is shown, not sent
    (hit,) = _jsonl(run("marker", str(db.parent), "--json").stdout)
    assert hit["row"]["id"] == ident and hit["field"] == "text"


def test_files_with_matches_counts_and_max_count(tree: Path) -> None:
    want: dict[str, int] = {}
    for h in oracle("opencode", tree, "TAIL"):
        want[h["path"]] = want.get(h["path"], 0) + 1
    db = str(tree / "opencode.db")
    assert db in want and list(want) == sorted(want)
    listed = run("TAIL", str(tree), "-l")
    assert (listed.returncode, listed.stdout.splitlines()) == (0, list(want))
    counted = run("TAIL", str(tree), "-c", "--json")
    assert _jsonl(counted.stdout) == [{"path": p, "count": n} for p, n in want.items()]
    # -m N: N hits per file, the database being one file.
    capped = _jsonl(run("TAIL", str(tree), "--json", "-m", "2").stdout)
    assert [h for h in capped if h["path"] == db] == [
        {k: v for k, v in h.items() if not k.endswith("_lines") and k != "text_line"} for h in _db_hits(tree, "TAIL")[:2]]
    # --kind spill leaves the database out, --kind transcript keeps it.
    assert db not in run("TAIL", str(tree), "-l", "--kind", "spill").stdout.splitlines()
    assert db in run("TAIL", str(tree), "-l", "--kind", "transcript").stdout.splitlines()


def test_session_keeps_that_sessions_rows_only(tree: Path) -> None:
    db = str(tree / "opencode.db")
    # ses_2: its message and tool part in the database, and the spill file that part names.
    proc = run("-E", "(?s).", str(tree), "-l", "--session", "ses_2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [db, str(tree / "tool-output" / "tool_019a2b3c4d02AbCdEfGhIjKlMn")]
    session_of = {(r["table"], r["id"]): ses for r, ses, _ in db_rows(tree / "opencode.db")}
    want = [h for h in oracle("opencode", tree, "build") if h["path"] in proc.stdout.splitlines()
            and ("row" not in h or session_of[h["row"]["table"], h["row"]["id"]] == "ses_2")]
    hits = _jsonl(run("build", str(tree), "--json", "--session", "ses_2").stdout)
    assert hits == [{k: v for k, v in h.items() if not k.endswith("_lines") and k != "text_line"} for h in want]
    assert {h["row"]["id"] for h in hits} == {"msg_0002"}  # "mode"/"agent": "build"
    # The hostile session has rows only; two sessions are their union, in the same order.
    only = _jsonl(run("TAIL", str(tree), "--json", "--session", SES, "--kind", "transcript").stdout)
    assert only and {h["path"] for h in only} == {db}
    both = run("-E", "(?s).", str(tree), "-c", "--session", SES, "--session", "ses_2").stdout.splitlines()
    assert [line.rsplit(": ", 1)[0] for line in both] == proc.stdout.splitlines()
    nobody = run("TAIL", str(tree), "-l", "--session", "no-such-session")
    assert (nobody.returncode, nobody.stdout) == (1, "")


def test_a_row_that_is_not_json_is_a_finding_and_the_rest_is_searched(tree: Path) -> None:
    db = tree / "opencode.db"
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT INTO part VALUES ('prt_bad', 'msg_h', ?, 1, 1, 'TAIL {not json')", (SES,))
        con.execute("INSERT INTO part VALUES ('prt_bytes', 'msg_h', ?, 1, 1, CAST(? AS TEXT))",
                    (SES, b'{"text": "TAIL \xff"}'))
    rowids = dict(con.execute("SELECT id, rowid FROM part WHERE id IN ('prt_bad', 'prt_bytes')").fetchall())
    con.close()
    proc = run("TAIL", str(tree), "--json")
    assert proc.returncode == 0
    errs = proc.stderr.splitlines()
    assert len(errs) == 2 and "Traceback" not in proc.stderr
    for ident in ("prt_bad", "prt_bytes"):
        assert any(e.startswith(f"spillscope grep: malformed-log: {db}:{rowids[ident]}: part {ident} ") for e in errs)
    good = [h for h in _jsonl(proc.stdout) if h["path"] == str(db)]
    assert [h["row"]["id"] for h in good] == ["msg_h", "prt_h0"] + ["prt_h1"] * 2


# ---- read-only, whatever state OpenCode left the database in ------------------------------

def test_a_wal_database_opencode_has_closed_gets_no_wal_or_shm(tree: Path) -> None:
    """OpenCode not running: ``mode=ro`` alone would create opencode.db-wal and -shm and leave them."""
    _to_wal(tree / "opencode.db")
    before = _listing(tree)
    want = oracle("opencode", tree, "TAIL")
    assert _jsonl(run("TAIL", str(tree), "--json").stdout) == [
        {k: v for k, v in h.items() if not k.endswith("_lines") and k != "text_line"} for h in want]
    assert run("TAIL", str(tree), "-l", "--session", SES).returncode == 0  # --session inspects the links too
    proc = subprocess.run([sys.executable, "-m", "spillscope", "verify", str(tree), "--json"],
                          capture_output=True, timeout=120, encoding="utf-8")
    assert json.loads(proc.stdout)["notices"]["checked"] == 5, proc.stderr
    assert _listing(tree) == before


def test_a_live_wal_is_read_through_and_nothing_is_created(tree: Path) -> None:
    """OpenCode running: a commit still in the WAL is found, an open transaction is not."""
    db = tree / "opencode.db"
    _to_wal(db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO part VALUES ('prt_wal', 'msg_h', ?, 1, 1, ?)", (SES, _data({"text": "only in the wal"})))
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO part VALUES ('prt_open', 'msg_h', ?, 1, 1, ?)", (SES, _data({"text": "only in the wal too"})))
    try:
        before = _listing(tree, read=False)  # the writer's locks stay held
        proc = run("only in the wal", str(tree), "--json")
        after = _listing(tree, read=False)
    finally:
        writer.rollback()
        writer.close()
    assert proc.returncode == 0, proc.stderr
    assert [h["row"]["id"] for h in _jsonl(proc.stdout)] == ["prt_wal"]
    assert before.keys() == after.keys() and {"opencode.db-wal", "opencode.db-shm"} <= before.keys()
    # The database and its WAL untouched; the -shm is where every reader takes its read mark.
    assert {k: v for k, v in before.items() if k != "opencode.db-shm"} == \
        {k: v for k, v in after.items() if k != "opencode.db-shm"}


def test_a_wal_left_without_its_shm_is_a_finding_and_no_shm_is_made(tree: Path, tmp_path: Path) -> None:
    """After a crash: the database file is searched, the WAL's commits are reported unread."""
    db = tree / "opencode.db"
    _to_wal(db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO part VALUES ('prt_wal', 'msg_h', ?, 1, 1, ?)", (SES, _data({"text": "TAIL in wal"})))
    crashed = tmp_path / "crashed"
    shutil.copytree(tree, crashed, ignore=shutil.ignore_patterns("*-shm"))
    writer.close()
    before = _listing(crashed)
    assert "opencode.db-wal" in before and "opencode.db-shm" not in before
    proc = run("TAIL", str(crashed), "--json")
    assert _listing(crashed) == before
    assert proc.returncode == 0
    (err,) = proc.stderr.splitlines()
    assert err.startswith(f"spillscope grep: unreadable: {crashed / 'opencode.db-wal'}: ")
    assert "not searched" in err
    assert [h["row"]["id"] for h in _jsonl(proc.stdout) if "row" in h] == ["msg_h", "prt_h0"] + ["prt_h1"] * 2


def test_a_locked_database_is_a_finding_and_the_exit_status_is_the_hits(tree: Path) -> None:
    db = tree / "opencode.db"
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # a rollback-journal writer: readers get SQLITE_BUSY
    try:
        before = _listing(tree, read=False)
        elsewhere = run("agent line 1999", str(tree), "-l")  # hits a spill file, and a part
        only_db = run("no tool here", str(tree), "-l")  # hits a part only
        after = _listing(tree, read=False)
    finally:
        locker.rollback()
        locker.close()
    assert before == after
    want = f"spillscope grep: unreadable: {db}: cannot read the database: database is locked\n"
    assert (elsewhere.returncode, elsewhere.stderr) == (0, want)
    assert elsewhere.stdout.splitlines() == [str(tree / "tool-output" / "tool_019a2b3c4d02AbCdEfGhIjKlMn")]
    assert (only_db.returncode, only_db.stdout, only_db.stderr) == (1, "", want)


def _garbage(db: Path) -> None:
    db.write_bytes(b"not a database\n" * 300)


def _truncated(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[:100] + b"\x00" * 4000)


def _no_tables(db: Path) -> None:
    db.unlink()
    sqlite3.connect(db).close()  # an empty database, as a fresh OpenCode makes before migrating


def _symlink(db: Path) -> None:
    target = db.with_name("elsewhere.sqlite")
    db.rename(target)
    db.symlink_to(target.name)


@pytest.mark.parametrize("damage, reason", [
    (_garbage, "cannot read the database: file is not a database"),
    (_truncated, "cannot read the database: database disk image is malformed"),
    (_no_tables, "no message or part table: not an OpenCode database"),
    (_symlink, "cannot open the database read-only: Too many levels of symbolic links"),
])
def test_a_damaged_database_is_a_finding(tree: Path, damage: Any, reason: str) -> None:
    db = tree / "opencode.db"
    damage(db)
    before = _listing(tree)
    hit = run("agent line 1999", str(tree), "-c")
    none = run("no tool here", str(tree), "-c")
    assert _listing(tree) == before
    want = f"spillscope grep: unreadable: {db}: {reason}\n"
    assert (hit.returncode, hit.stderr) == (0, want)
    assert hit.stdout == f"{tree / 'tool-output' / 'tool_019a2b3c4d02AbCdEfGhIjKlMn'}: 1\n"
    assert (none.returncode, none.stdout, none.stderr) == (1, "", want)

