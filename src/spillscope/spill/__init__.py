"""The spill system's storage half: the seam, the local backend and the tool-output policy."""

from .local import LocalSpillStore, decode_segment, encode_segment, session_dir_name, session_hash
from .policy import PolicyOutcome, SpillPolicy, ToolSpillNotice, format_spill_notice, parse_spill_notice
from .retention import Retained, retain_head_tail
from .types import (
    RETRIEVAL_HINT,
    Locator,
    SaveTextSpill,
    SessionReferenceSource,
    SpillOwner,
    SpillRef,
    SpillSource,
    SpillStore,
    SpillStoreError,
    ToolSource,
    source_from_json,
)

__all__ = [
    "RETRIEVAL_HINT",
    "LocalSpillStore",
    "Locator",
    "PolicyOutcome",
    "Retained",
    "SaveTextSpill",
    "SessionReferenceSource",
    "SpillOwner",
    "SpillPolicy",
    "SpillRef",
    "SpillSource",
    "SpillStore",
    "SpillStoreError",
    "ToolSource",
    "ToolSpillNotice",
    "decode_segment",
    "encode_segment",
    "format_spill_notice",
    "parse_spill_notice",
    "retain_head_tail",
    "session_dir_name",
    "session_hash",
    "source_from_json",
]
