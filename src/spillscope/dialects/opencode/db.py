"""Reading ``opencode.db`` without writing a byte into the tree, while OpenCode may be writing it.

The schema (anomalyco/opencode ``packages/opencode/src/session/session.sql.ts``
@063e8306d9895af9bdd175306cfa4fa3291fd83a): table ``message`` (``id, session_id,
time_created, time_updated, data``) and table ``part`` (``id, message_id, session_id,
time_created, time_updated, data``), ``data`` being the JSON of ``MessageV2.Info`` /
``MessageV2.Part`` without the ids the columns hold (``Omit<…, "id" | "sessionID" |
"messageID">``). These are what the older JSON storage kept as
``storage/message/<sessionID>/<messageID>.json`` and ``storage/part/<messageID>/<partID>.json``.

**How it is opened.** ``?mode=ro`` alone is not enough: on a database in WAL mode (OpenCode's)
a read-only connection *creates* ``opencode.db-wal`` and ``opencode.db-shm`` when they are
not there (OpenCode not running) and, being read-only, leaves them behind (measured:
SQLite 3.40.1). So the header's journal mode and the files beside it decide:

- rollback journal (not WAL): ``mode=ro``, which creates nothing;
- WAL, with ``-wal`` and ``-shm`` there (OpenCode has it open): ``mode=ro`` through them —
  the only way to see what OpenCode committed to the WAL but has not checkpointed. The
  reader takes its read mark in the existing ``-shm``, as every SQLite reader must; it creates
  no file;
- WAL, no ``-wal``: every committed transaction is in the database file itself, so
  ``immutable=1`` (no locks, no ``-wal``/``-shm``) reads all of it. Justified because in WAL
  mode an OpenCode that starts meanwhile writes to a new ``-wal``; the database file changes
  only at a checkpoint (by default after 1000 pages), and a read torn by one is an SQLite
  error (a finding here), at worst a row missed;
- WAL, a non-empty ``-wal`` but no ``-shm`` (left by a crash: a live connection always has
  the ``-shm``): reading the WAL would create the ``-shm``, so the database file is read
  ``immutable=1`` and the WAL's transactions, which OpenCode recovers on its next start, are
  reported unread.

Between the look at the directory and the open, OpenCode may close the database and delete
its ``-wal``/``-shm``: then ``mode=ro`` recreates them. That window is the open call's.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Collection, Iterator
from urllib.parse import quote

from ...inspect.findings import Finding, finding
from ...storage.local import open_regular
from ..records import StoredRecord

#: How long a read waits for a lock OpenCode holds (a rollback-journal database being written;
#: in WAL mode readers are not blocked) before it is a finding: OpenCode's transactions are short.
BUSY_TIMEOUT = 2.0

#: The tables whose ``data`` is a transcript's record, in the order grep searches them
#: (sorted, as the older storage's ``message/`` sorts before ``part/``), each row ordered as
#: its JSON file sorted by path: ``message`` by (session, id), ``part`` by (message, id) —
#: the order OpenCode itself reads a message's parts in (``hydrate`` in
#: ``packages/opencode/src/session/message-v2.ts`` @007a9409bafea06d6b9084ff1f6d1fe9f5e3a803,
#: over the part table's ``part_message_id_id_idx``). Ids are ascending, so within a session or
#: a message this is also the order they were written in.
TABLES = {"message": "session_id, id", "part": "message_id, id"}

_HEADER = b"SQLite format 3\x00"


def connect(path: str, notes: list[Finding]) -> sqlite3.Connection:
    """A read-only connection that creates no file beside ``path`` (module docstring); what it
    cannot read goes to ``notes``. Raises ``OSError`` (a symlink, not a regular file: SQLite
    would follow it) and ``sqlite3.Error``."""
    with os.fdopen(open_regular(path), "rb") as f:
        header = f.read(100)
    wal = len(header) >= 20 and header.startswith(_HEADER) and header[18] == 2 and header[19] == 2
    query = "mode=ro"
    if wal and not (os.path.lexists(path + "-wal") and os.path.lexists(path + "-shm")):
        query = "mode=ro&immutable=1"
        try:
            pending = os.lstat(path + "-wal").st_size
        except OSError:
            pending = 0
        if pending:
            notes.append(finding("unreadable", path=path + "-wal",
                                 detail=f"{pending} bytes of WAL not searched: no OpenCode has the database open, "
                                        "and reading its WAL would create the -shm file in the tree"))
    con = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?{query}", uri=True, timeout=BUSY_TIMEOUT)
    con.text_factory = bytes  # data as stored: decoded (or refused) as the JSON files are
    return con


def not_opened(path: str, exc: OSError | sqlite3.Error) -> Finding:
    """The finding for a database :func:`connect` refused (its reason, without errno's number)."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
    return finding("unreadable", path=path, detail=f"cannot open the database read-only: {reason}")


def rows(path: str, sessions: Collection[str] | None = None) -> Iterator[StoredRecord | Finding]:
    """Every ``message`` and ``part`` row (:data:`TABLES` order), of ``sessions`` only if given.

    A database that cannot be opened or read (a symlink, locked, corrupt, not a database) is
    one ``unreadable`` finding naming the path and the reason; rows already given stay given."""
    notes: list[Finding] = []
    try:
        con = connect(path, notes)
    except (OSError, sqlite3.Error) as exc:
        yield not_opened(path, exc)
        return
    try:
        yield from notes
        have = {bytes(n).decode("utf-8", "replace") for (n,) in
                con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not have & TABLES.keys():
            yield finding("unreadable", path=path, detail="no message or part table: not an OpenCode database")
            return
        wanted = sorted(set(sessions)) if sessions is not None else None
        if wanted == []:
            return
        for table, order in TABLES.items():
            if table not in have:
                continue
            where = f" WHERE session_id IN ({', '.join('?' * len(wanted))})" if wanted is not None else ""
            sql = f"SELECT rowid, id, session_id, data FROM {table}{where} ORDER BY {order}"
            for rowid, ident, session, data in con.execute(sql, wanted or ()):
                yield StoredRecord(table, _text(ident) or "", rowid, _text(session), _bytes(data))
    except sqlite3.Error as exc:
        yield finding("unreadable", path=path, detail=f"cannot read the database: {exc}")
    finally:
        con.close()


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return None if value is None else str(value)


def _bytes(value: object) -> bytes | None:
    if isinstance(value, bytes):
        return value
    return None if value is None else str(value).encode()
