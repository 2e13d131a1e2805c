"""The dialect seam: what one agent's spill layout gives the inspector, and the records it returns.

An agent (dsh, Claude Code, qwen-code, Gemini CLI, OpenCode…) is a *dialect* of one idea: a
tool result too large for the model's context is saved whole to a file, and the transcript
keeps a notice (or the full text) that names it. A :class:`Dialect` knows one agent's layout
(how to recognise its tree, where its transcripts and spill files are), its notices (how to
parse them) and its rules (what links a file to a notice, what must match, what its own sweep
deletes). It returns a :class:`Report` in the one finding vocabulary of
:mod:`spillscope.inspect.findings`, so the front ends never ask which agent it was.

The checks every dialect shares (exact bytes, prefix, suffix, SHA-256, size labels) live
in :mod:`.checks`; the registry and detection in :mod:`spillscope.dialects`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Literal

from ..inspect.findings import SEVERITY_RANK, Finding

#: What became of one link: ``verified`` (every check the notice allows passed), ``linked``
#: (the file is there, the notice offers nothing to compare), ``mismatch`` (a check failed:
#: see the findings), ``expired`` (the notice remains, the file is gone), ``unreadable`` (the
#: file is there but could not be read: never called expired), ``unchecked`` (the notice
#: names a place outside the inspected tree).
LinkStatus = Literal["verified", "linked", "mismatch", "expired", "unreadable", "unchecked"]


@dataclass(frozen=True, slots=True)
class SpillFile:
    """One file the agent's layout puts spills in, from ``lstat`` (never followed)."""

    path: str
    name: str
    size: int
    mtime: float
    mode: int
    #: The session the layout says it belongs to (a directory name), where it says one.
    session: str | None
    is_symlink: bool = False
    is_regular: bool = True


@dataclass(frozen=True, slots=True)
class Transcript:
    """One session transcript (a subagent's too), from ``lstat``."""

    path: str
    session: str | None
    size: int
    mtime: float
    #: For a subagent's transcript, the session it ran in.
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class Link:
    """A spill file and the place in a transcript that names it (or a notice whose file is gone).

    One per spill file (however many records name it: ``references`` counts them), or one per
    missing file a notice names: this is the unit ``verify`` counts as one checked notice."""

    transcript: str
    line: int
    session: str | None
    #: Which notice form named it (the dialect's own names, e.g. ``persisted-output``, ``full-text``).
    form: str
    #: The spill file's path (resolved into the inspected tree), or None when it names none.
    target: str | None
    #: The location as the notice wrote it (an absolute path on the agent's machine), if any.
    named: str | None
    status: LinkStatus
    #: The checks that ran and passed (``bytes``, ``prefix``, ``size-label``, ``sha256``…).
    checks: tuple[str, ...] = ()
    #: The notice as the model saw it (or the head of the kept text), for showing beside the file.
    notice: str = ""
    references: int = 1


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """What the agent's own sweep deletes: files whose mtime is older than ``seconds``."""

    seconds: float
    #: Where the value came from: a settings file (path and key), or ``default``.
    source: str
    #: What the sweep covers, in words (for the report).
    scope: str


@dataclass(frozen=True, slots=True)
class Options:
    """How one inspection runs. ``retention_seconds`` overrides the agent's own rule and asks
    for ``past-retention`` findings; without it the rule is only reported."""

    now: float
    retention_seconds: float | None = None
    check_content: bool = True
    #: dsh only: its session logs directory and a moved root's old prefix.
    logs: str | None = None
    rebase: str | None = None
    max_line_bytes: int | None = None
    max_log_line_bytes: int | None = None


@dataclass
class Report:
    """One inspected tree, in the words every agent shares."""

    dialect: str
    tree: str
    transcripts: list[Transcript]
    files: list[SpillFile]
    links: list[Link]
    findings: list[Finding]
    retention: RetentionRule | None = None
    #: Files the agent's sweep would delete next under ``retention`` (reported, not findings,
    #: unless a retention was asked for).
    past_retention: list[str] = field(default_factory=list)
    #: The dsh inspector's own result, for the front ends that show it (dsh only).
    native: Any = None

    def summary(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.findings).items()))

    def worst(self) -> str | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)

    def notices(self) -> dict[str, Any]:
        """``verify --json``'s ``notices`` member, the same keys as dsh's: each link is one notice;
        a link that found its file (or found it gone) is checked."""
        found = len(self.links)
        checked = sum(1 for k in self.links if k.status not in ("unchecked",))
        unchecked = sum(1 for k in self.links if k.status == "unchecked" and k.named is not None)
        from ..inspect.verify.coverage import why_nothing_checked  # here: detection and grep need none of verify

        # dsh's rule for having checked no notice; an agent's transcripts are its session logs.
        why = None if checked else why_nothing_checked(True, len(self.transcripts), found, unchecked)
        return {"found": found, "checked": checked, "unchecked": unchecked,
                "noLocator": found - checked - unchecked, "nothingChecked": why, "rebaseHint": None}

    def status_of(self) -> dict[str, Link]:
        """The link of each spill file, by path."""
        return {k.target: k for k in self.links if k.target is not None}


class Dialect(ABC):
    """One agent's spill layout: detection, layout, notices, links and checks, sweep rule."""

    #: The name ``--agent`` takes.
    name: ClassVar[str]
    #: The agent, for people.
    title: ClassVar[str]
    #: Where its tree usually is (for the "nothing matches" error).
    usual_path: ClassVar[str]

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
        """Every file ``grep`` searches, with its kind (``spill`` or ``transcript``)."""
        return iter(())


class LayoutDialect(Dialect):
    """A dialect whose rules live in its package's ``layout`` module, imported when first used:
    ``inspect_tree(tree, options) -> Report``, ``retention_rule(tree)`` and ``texts(tree)``;
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
        texts: Iterator[tuple[str, str]] = self._layout().texts(tree)
        return texts


def lstat_file(path: str, session: str | None) -> SpillFile | None:
    """A :class:`SpillFile` from ``lstat`` (None if it vanished)."""
    import stat as _stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return SpillFile(path, os.path.basename(path), st.st_size, st.st_mtime, _stat.S_IMODE(st.st_mode), session,
                     _stat.S_ISLNK(st.st_mode), _stat.S_ISREG(st.st_mode))
