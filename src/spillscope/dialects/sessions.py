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
from typing import TYPE_CHECKING, Literal

from ..storage.local import open_regular
from ..util.text import loads_exact

if TYPE_CHECKING:
    from .base import Dialect
    from .records import Report

#: How many records of a transcript are asked for its session before giving up (the key is
#: in the first record of every agent's transcripts seen; a bound keeps a huge one cheap).
_RECORDS_ASKED = 64


def sessions_of(dialect: Dialect, tree: str) -> dict[str, str | None]:
    """The session each file ``dialect.texts(tree)`` gives belongs to (None: nothing says one)."""
    from .records import Options

    # Links only: the content checks say nothing about sessions, and cost a read of every file.
    report = dialect.inspect(tree, Options(now=time.time(), check_content=False))
    owners = session_owners(dialect, report)
    return {path: session for path, (session, _) in owners.items()}


#: How a file's session is known: a transcript of that session names it (``link``), or only
#: the layout puts it in that session's dir (``layout``: for an orphan, its probable session).
SessionSource = Literal["link", "layout", "transcript"]


def session_owners(dialect: Dialect, report: Report) -> dict[str, tuple[str | None, SessionSource | None]]:
    """The one rule for which session each spill file and transcript of ``report`` belongs to,
    and how that is known (``ls --session``, ``grep --session``, the listing's groups).

    A spill file belongs to the session of the transcript whose notice names it (the link's
    session, else that transcript's own): qwen-code's and OpenCode's spills sit in a shared
    dir, and only the chat that links them says whose they are. One nothing links belongs to
    the session its dir is (Claude Code ``<sessionId>/tool-results/``, Gemini CLI
    ``session-<id>/``), which for an orphan is only its probable session; else to none."""
    tsessions: dict[str, str | None] = {}
    for t in report.transcripts:
        session = t.parent or t.session
        # Only JSON is asked: a database (opencode.db) holds many sessions, and grep keeps the
        # asked sessions' rows of it itself (Dialect.records).
        if session is None and dialect.record_session_key and t.path.endswith((".jsonl", ".json")):
            session = _from_records(t.path, dialect.record_session_key)
        tsessions[t.path] = session
    linked: dict[str, str] = {}
    for k in report.links:
        session = k.session or tsessions.get(k.transcript)
        if k.target is not None and session is not None:
            linked.setdefault(k.target, session)
    out: dict[str, tuple[str | None, SessionSource | None]] = {}
    for f in report.files:
        if f.path in linked:
            out[f.path] = (linked[f.path], "link")
        elif f.session is not None:
            out[f.path] = (f.session, "layout")
        else:
            out[f.path] = (None, None)
    for path, session in tsessions.items():
        out[path] = (session, None if session is None else "transcript")
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
