"""The inspector core: scanning roots, reading logs, linking notices to artifacts,
verification findings and watching. Read-only by construction."""

from .findings import CODES, Finding, finding
from .logs import ReferenceEntry, SessionLog, ToolSpillEntry, read_logs, read_session_log
from .scan import Artifact, RootScan, SessionDir, scan_root
from .verify import Inspection, ReferenceLink, ToolSpillLink, inspect_root, resolve_locator

__all__ = [
    "CODES",
    "Artifact",
    "Finding",
    "Inspection",
    "ReferenceEntry",
    "ReferenceLink",
    "RootScan",
    "SessionDir",
    "SessionLog",
    "ToolSpillEntry",
    "ToolSpillLink",
    "finding",
    "inspect_root",
    "read_logs",
    "read_session_log",
    "resolve_locator",
    "scan_root",
]
