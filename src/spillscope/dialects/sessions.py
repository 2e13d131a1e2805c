"""Which session each file ``grep`` searches belongs to (``grep --session`` on any agent's tree).

The dialect's own inspection says it where the layout or a link does: a spill file in a
session's dir (Claude Code ``<sessionId>/tool-results/``, Gemini CLI ``session-<id>/``), or
one a session's transcript names (qwen-code's and OpenCode's spills sit in a shared dir); a
transcript named by its session, or a subagent's, which belongs to the session it ran in. A
transcript whose name does not say it is asked its records: the first one holding the
dialect's :attr:`~.base.Dialect.record_session_key` (an older Claude Code ``agent-<id>.jsonl``,
a Gemini CLI chat, an OpenCode part). What nothing names belongs to no session.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ..storage.local import open_regular
from ..util.text import loads_exact

if TYPE_CHECKING:
    from .base import Dialect

#: How many records of a transcript are asked for its session before giving up (the key is
#: in the first record of every agent's transcripts seen; a bound keeps a huge one cheap).
_RECORDS_ASKED = 64


def sessions_of(dialect: Dialect, tree: str) -> dict[str, str | None]:
    """The session each file ``dialect.texts(tree)`` gives belongs to (None: nothing says one)."""
    from .records import Options

    # Links only: the content checks say nothing about sessions, and cost a read of every file.
    report = dialect.inspect(tree, Options(now=time.time(), check_content=False))
    linked = {k.target: k.session for k in report.links if k.target is not None and k.session is not None}
    out: dict[str, str | None] = {}
    for f in report.files:
        out[f.path] = f.session if f.session is not None else linked.get(f.path)
    for t in report.transcripts:
        session = t.parent or t.session
        # Only JSON is asked: a database (opencode.db) holds many sessions, and grep keeps the
        # asked sessions' rows of it itself (Dialect.records).
        if session is None and dialect.record_session_key and t.path.endswith((".jsonl", ".json")):
            session = _from_records(t.path, dialect.record_session_key)
        out[t.path] = session
    return out


def _from_records(path: str, key: str) -> str | None:
    try:
        with os.fdopen(open_regular(path), "rb") as f:
            if path.endswith(".json"):  # one JSON document
                return _named(f.read(), key)
            for n, raw in enumerate(f):
                if n >= _RECORDS_ASKED:
                    break
                got = _named(raw, key)
                if got is not None:
                    return got
    except OSError:
        pass
    return None


def _named(raw: bytes, key: str) -> str | None:
    try:
        rec = loads_exact(raw)
    except ValueError:
        return None
    value = rec.get(key) if isinstance(rec, dict) else None
    return value if isinstance(value, str) else None
