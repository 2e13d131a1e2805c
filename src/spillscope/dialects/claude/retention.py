"""Claude Code's own cleanup: ``cleanupPeriodDays`` (default 30), read where the user keeps it.

Official docs (code.claude.com/docs/en/claude-directory, "Application data", as quoted in
anthropics/claude-code#51779): transcripts ``projects/<project>/<session>.jsonl`` and
``projects/<project>/<session>/tool-results/`` are deleted at start-up once their mtime is
older than ``cleanupPeriodDays`` (default 30, at least 1; tool results only since 2.1.83,
#38576). The user's value is in ``~/.claude/settings.json`` — found here as the
``settings.json`` beside the ``projects`` dir the inspected tree is in. The sweep
(cleanup.ts ``cleanupOldSessionFiles`` in a public mirror of the source, BelovedYaoo/claude-code-source
@1e87ff61) deletes a project dir's own ``*.jsonl`` and each session's ``tool-results/`` files (and
``tool-results/<dir>/*``); it leaves ``<session>/subagents/``.
"""

from __future__ import annotations

import os

from ...util.text import loads_exact
from ..records import RetentionRule

DEFAULT_DAYS = 30
SCOPE = "a project's session transcripts (not subagents/) and tool-results files, by mtime, at Claude Code's start-up"


def claude_home(tree: str) -> str | None:
    """The ``.claude`` dir above ``tree`` (a projects dir or a project dir in it), if it has one."""
    path = os.path.abspath(tree)
    for candidate in (path, os.path.dirname(path)):
        if os.path.basename(candidate) == "projects":
            return os.path.dirname(candidate)
    if os.path.isdir(os.path.join(path, "projects")):
        return path  # ~/.claude itself
    return None


def retention_rule(tree: str) -> RetentionRule | None:
    """The sweep as ``settings.json`` sets it; None where Claude Code sweeps nothing.

    settings/types.ts: ``cleanupPeriodDays`` is a non-negative integer (0: transcripts are not
    kept and existing ones are deleted at start-up — everything is past it). cleanup.ts
    ``cleanupOldMessageFilesInBackground``: a value that fails that schema while the key is set
    skips the whole cleanup ("rather than falling back to the default"); so 2.5, -1 or "30"
    sweep nothing (they were read as 2.5 days or the default 30)."""
    home = claude_home(tree)
    if home is not None:
        settings = os.path.join(home, "settings.json")
        try:
            with open(settings, "rb") as f:
                data = loads_exact(f.read())
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and "cleanupPeriodDays" in data:
            days = data["cleanupPeriodDays"]
            if (isinstance(days, (int, float)) and not isinstance(days, bool) and days >= 0
                    and float(days).is_integer()):
                return RetentionRule(float(days) * 86400.0, f"{settings}: cleanupPeriodDays {days:g}", SCOPE)
            return None  # set but invalid: Claude Code skips its cleanup
    return RetentionRule(DEFAULT_DAYS * 86400.0, f"default cleanupPeriodDays {DEFAULT_DAYS}", SCOPE)
