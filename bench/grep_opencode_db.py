#!/usr/bin/env python3
"""``spillscope grep`` over OpenCode's ``opencode.db`` against the same parts as JSON files, and
against a bare read of the rows, in the same run.

One OpenCode data dir holds ``--parts`` tool parts (random words, 1-8 KB of output each, one
assistant message per four parts) in ``opencode.db`` — OpenCode's schema and indexes
(session.sql.ts @063e8306), in WAL mode and closed, as OpenCode leaves it — and another the same
parts in the older ``storage/part/<message>/<part>.json`` layout. Rows: ``grep -c`` of a rare
string on each tree, and the baseline: one ``sqlite3`` pass reading every row's ``data`` and
parsing it with orjson (what any search of the rows must at least do), in a fresh process too.
Each the best of ``--repeat`` runs, start-up included; the ratios are what counts.

    python bench/grep_opencode_db.py                 # 40,000 parts, ~180 MB of data
    python bench/grep_opencode_db.py --parts 5000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RARE = "quartzite handover protocol"
SCHEMA = """
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
                      time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
                   time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""
BASELINE = """
import sqlite3, sys, orjson
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro&immutable=1", uri=True)
con.text_factory = bytes
n = 0
for table in ("message", "part"):
    for (data,) in con.execute(f"SELECT data FROM {table}"):
        orjson.loads(data)
        n += 1
print(n)
"""


def build(root: Path, parts: int, seed: int = 7) -> tuple[Path, Path]:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10))) for _ in range(4000)]
    db_tree, json_tree = root / "db", root / "json"
    (db_tree / "tool-output").mkdir(parents=True)
    (json_tree / "tool-output").mkdir(parents=True)
    con = sqlite3.connect(db_tree / "opencode.db")
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SCHEMA)
    with con:
        for i in range(parts):
            session, message = f"ses_{i // 400:06d}", f"msg_{i // 4:08d}"
            size = rng.randint(1000, 8000)
            words: list[str] = []
            n = 0
            while n < size:
                words.append(rng.choice(vocab))
                n += len(words[-1]) + 1
            if rng.random() < 0.001:
                words.append(RARE)
            data = {"type": "tool", "callID": f"call_{i}", "tool": "bash",
                    "state": {"status": "completed", "input": {"command": "make"}, "output": " ".join(words),
                              "title": "make", "metadata": {}, "time": {"start": i, "end": i + 1}}}
            pid = f"prt_{i:08d}"
            con.execute("INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)", (pid, message, session, json.dumps(data)))
            if i % 4 == 0:
                con.execute("INSERT INTO message VALUES (?, ?, 0, 0, ?)",
                            (message, session, json.dumps({"role": "assistant", "time": {"created": i}})))
            d = json_tree / "storage" / "part" / message
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{pid}.json").write_text(json.dumps({"id": pid, "sessionID": session, "messageID": message, **data}))
    con.close()
    return db_tree, json_tree


def best(cmd: list[str], repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", type=int, default=40000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db_tree, json_tree = build(Path(tmp), args.parts)
        db = db_tree / "opencode.db"
        print(f"{args.parts} parts; opencode.db {db.stat().st_size / 1e6:.0f} MB; load {os.getloadavg()}")
        base, n = best([sys.executable, "-c", BASELINE, str(db)], args.repeat)
        grep = [sys.executable, "-m", "spillscope", "grep", "-c", RARE]
        on_db, out_db = best(grep + [str(db_tree)], args.repeat)
        on_json, out_json = best(grep + [str(json_tree)], args.repeat)
        hits_db = sum(int(line.rsplit(": ", 1)[1]) for line in out_db.splitlines())
        hits_json = sum(int(line.rsplit(": ", 1)[1]) for line in out_json.splitlines())
        assert hits_db == hits_json > 0, (out_db, out_json)
        assert sorted(p.name for p in db_tree.iterdir()) == ["opencode.db", "tool-output"]  # nothing created
        print(f"| rows read + orjson (baseline) | {base:.2f} s | 1.00× | {n.strip()} rows |")
        print(f"| grep -c, opencode.db | {on_db:.2f} s | {on_db / base:.2f}× | {hits_db} hits |")
        print(f"| grep -c, the same parts as JSON files | {on_json:.2f} s | {on_json / base:.2f}× | {hits_json} hits |")
        print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
