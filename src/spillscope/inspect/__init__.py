"""The inspector core: scanning roots, reading logs, linking notices to artifacts,
verification findings and watching. Read-only by construction."""

from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports

if TYPE_CHECKING:
    from .findings import CODES, Finding, finding
    from .logs import ReferenceEntry, SessionLog, ToolSpillEntry, read_logs, read_session_log
    from .scan.tree import Artifact, RootScan, SessionDir, scan_root
    from .link.records import ReferenceLink, ToolSpillLink
    from .link.locate import resolve_locator
    from .verify.inspection import Inspection, inspect_root

_EXPORTS = {
    "findings": ("CODES", "Finding", "finding"),
    "logs": ("ReferenceEntry", "SessionLog", "ToolSpillEntry", "read_logs", "read_session_log"),
    "scan.tree": ("Artifact", "RootScan", "SessionDir", "scan_root"),
    "link.records": ("ReferenceLink", "ToolSpillLink"),
    "link.locate": ("resolve_locator",),
    "verify.inspection": ("Inspection", "inspect_root"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["Artifact", "CODES", "Finding", "Inspection", "ReferenceEntry", "ReferenceLink", "RootScan", "SessionDir", "SessionLog", "ToolSpillEntry", "ToolSpillLink", "finding", "inspect_root", "read_logs", "read_session_log", "resolve_locator", "scan_root"]
