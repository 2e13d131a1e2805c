"""The dialect seam: what one agent's spill layout gives the inspector.

An agent (dsh, Claude Code, qwen-code, Gemini CLI, OpenCode…) is a *dialect* of one idea: a
tool result too large for the model's context is saved whole to a file, and the transcript
keeps a notice (or the full text) that names it. A :class:`Dialect` knows one agent's layout
(how to recognise its tree, where its transcripts and spill files are), its notices (how to
parse them) and its rules (what links a file to a notice, what must match, what its own sweep
deletes). It returns a :class:`~.records.Report` (the records are in :mod:`.records`, and
re-exported here) in the one finding vocabulary of :mod:`spillscope.inspect.findings`, so
the front ends never ask which agent it was.

The checks every dialect shares (exact bytes, prefix, suffix, SHA-256, size labels) live
in :mod:`.checks`; the registry and detection in :mod:`spillscope.dialects`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Collection, Iterator

from ..util.lazy import lazy_exports

if TYPE_CHECKING:
    from .records import (Link as Link, LinkStatus as LinkStatus, Options as Options, Report as Report,
                          RetentionRule as RetentionRule, SpillFile as SpillFile, StoredRecord as StoredRecord,
                          Transcript as Transcript, lstat_file as lstat_file)
    from ..inspect.findings import Finding

__all__ = ["Dialect", "LayoutDialect", "Link", "LinkStatus", "Options", "Report", "RetentionRule", "SpillFile",
           "StoredRecord", "Transcript", "lstat_file"]

# The records load on first use: a dialect's class needs none of them to be defined.
__getattr__, _ = lazy_exports(__name__, {"..records": ("Link", "LinkStatus", "Options", "Report", "RetentionRule",
                                                       "SpillFile", "StoredRecord", "Transcript", "lstat_file")})


class Dialect(ABC):
    """One agent's spill layout: detection, layout, notices, links and checks, sweep rule."""

    #: The name ``--agent`` takes.
    name: ClassVar[str]
    #: The agent, for people.
    title: ClassVar[str]
    #: Where its tree usually is (for the "nothing matches" error).
    usual_path: ClassVar[str]
    #: The top-level key of a transcript record naming its session, for a transcript whose
    #: name does not say it (``grep --session``, :func:`.sessions.sessions_of`); empty: none.
    record_session_key: ClassVar[str] = ""

    @abstractmethod
    def detect(self, tree: str) -> float:
        """How sure (0 to 1) that ``tree`` is this agent's: 0 means not at all. Reads names only."""

    @abstractmethod
    def inspect(self, tree: str, options: Options) -> Report:
        """Link every spill file to what names it, check each link, and collect the findings."""

    def retention(self, tree: str) -> RetentionRule | None:
        """The agent's own sweep rule as the user configured it (None: the agent sweeps nothing)."""
        return None

    def texts(self, tree: str) -> Iterator[tuple[str, str]]:
        """Every file ``grep`` searches, with its kind (``spill`` or ``transcript``), sorted by
        path (grep's results come in this order, however the layout was walked)."""
        return iter(())

    def records(self, path: str, sessions: Collection[str] | None) -> Iterator[StoredRecord | Finding] | None:
        """The records of a transcript ``texts`` gave that is a database, not a file of JSON
        (OpenCode's ``opencode.db``), in a stable order, of ``sessions`` only if given, and
        findings for what cannot be read; None for a file ``grep`` reads itself."""
        return None


class LayoutDialect(Dialect):
    """A dialect whose rules live in its package's ``layout`` module, imported when first used:
    ``inspect_tree(tree, options) -> Report``, ``retention_rule(tree)`` and ``texts(tree)`` (and
    ``records(path, sessions)`` where a transcript is a database);
    and whose ``detect(tree) -> float`` lives in its ``probe`` module, which reads names only
    and imports none of the layout (detecting a dsh root costs no other agent's code)."""

    def _layout(self) -> Any:
        return self._module("layout")

    def _module(self, name: str) -> Any:
        import importlib

        return importlib.import_module(f"{type(self).__module__}.{name}")

    def detect(self, tree: str) -> float:
        score: float = self._module("probe").detect(tree)
        return score

    def inspect(self, tree: str, options: Options) -> Report:
        report: Report = self._layout().inspect_tree(tree, options)
        return report

    def retention(self, tree: str) -> RetentionRule | None:
        rule: RetentionRule | None = self._layout().retention_rule(tree)
        return rule

    def texts(self, tree: str) -> Iterator[tuple[str, str]]:
        return iter(sorted(self._layout().texts(tree)))

    def records(self, path: str, sessions: Collection[str] | None) -> Iterator[StoredRecord | Finding] | None:
        layout = self._layout()
        if not hasattr(layout, "records"):
            return None
        got: Iterator[StoredRecord | Finding] | None = layout.records(path, sessions)
        return got
