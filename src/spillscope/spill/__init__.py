"""The spill system's storage half: the seam, the local backend and the tool-output policy."""

from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports

if TYPE_CHECKING:
    from .local import LocalSpillStore
    from .naming import decode_segment, encode_segment, session_dir_name, session_hash
    from ..formats.notices import RETRIEVAL_HINT, ToolSpillNotice, format_spill_notice, has_spill_notice, parse_spill_notice
    from .policy import PolicyOutcome, SpillPolicy
    from .retention import Retained, retain_head_tail
    from .s3 import S3_RETRIEVAL_HINT, S3SpillStore
    from .types import (Locator, SaveTextSpill, SessionReferenceSource, SpillOwner, SpillRef,
                        SpillSource, SpillStore, SpillStoreError, ToolSource, source_from_json)

_EXPORTS = {
    "local": ("LocalSpillStore",),
    "naming": ("decode_segment", "encode_segment", "session_dir_name", "session_hash"),
    "policy": ("PolicyOutcome", "SpillPolicy"),
    "..formats.notices": ("RETRIEVAL_HINT", "ToolSpillNotice", "format_spill_notice", "has_spill_notice", "parse_spill_notice"),
    "retention": ("Retained", "retain_head_tail"),
    "s3": ("S3SpillStore", "S3_RETRIEVAL_HINT"),
    "types": ("Locator", "SaveTextSpill", "SessionReferenceSource", "SpillOwner", "SpillRef",
              "SpillSource", "SpillStore", "SpillStoreError", "ToolSource", "source_from_json"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "RETRIEVAL_HINT", "S3_RETRIEVAL_HINT", "S3SpillStore", "LocalSpillStore", "Locator", "PolicyOutcome", "Retained", "SaveTextSpill",
    "SessionReferenceSource", "SpillOwner", "SpillPolicy", "SpillRef", "SpillSource", "SpillStore",
    "SpillStoreError", "ToolSource", "ToolSpillNotice", "decode_segment", "encode_segment",
    "format_spill_notice", "has_spill_notice", "parse_spill_notice", "retain_head_tail", "session_dir_name", "session_hash",
    "source_from_json",
]
