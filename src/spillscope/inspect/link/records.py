"""The records one verify pass produces: a notice's link to its artifact and what reading an artifact found.

They are separate from the code that builds them so that front ends, coverage and the
linkers share one definition without importing the linking machinery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ...reference.check import Disagreement, Recomputed
from ..findings import Finding
from ..logs import ReferenceEntry, ToolSpillEntry
from ..scan.tree import Artifact

LinkStatus = Literal["resolves", "expired", "outside-root", "unavailable", "intact", "invalid", "normalized", "unverified"]


@dataclass
class ReferenceLink:
    """A session reference notice linked to its transcript: the status, the recount and any disagreement."""

    entry: ReferenceEntry
    status: LinkStatus
    artifact: Artifact | None = None
    recomputed: Recomputed | None = None
    disagreements: list[Disagreement] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


@dataclass
class ToolSpillLink:
    """A tool-spill notice linked to its saved output: the status and findings."""

    entry: ToolSpillEntry
    status: LinkStatus
    artifact: Artifact | None = None
    findings: list[Finding] = field(default_factory=list)


@dataclass
class ArtifactCheck:
    """What reading an artifact's content found (transcripts are streamed)."""

    artifact: Artifact
    findings: list[Finding] = field(default_factory=list)
    messages: int | None = None
