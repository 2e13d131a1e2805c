"""The transcript artifact (FORMAT.md §6): the writer, a streaming reader and a lazy index.

* :func:`render_transcript` (:mod:`.writer`) is byte-identical to the reference writer.
* :func:`iter_transcript` (:mod:`.reader`, over the state machine in :mod:`.parser`) is a
  streaming parser: it yields the metadata, then each message's start, fragments and
  end, and raises :class:`TranscriptError` (``file:line: reason``) for a malformed file.
  A file cut off mid-write is not an error: the stream ends with an :class:`Incomplete`
  event.
* :func:`read_transcript` collects the stream into exact texts.
* :class:`TranscriptIndex` (:mod:`.index`) records, in one pass, where each message and
  every 128th fragment start, so any code point offset of a huge message is reached with
  ``pread`` without decoding what comes before it. Its memory is proportional to the index.
* The records (events, :class:`Transcript`) are in :mod:`.records`; the fixed lines in
  :mod:`.layout`.

This package's names are exported lazily (PEP 562), so importing one submodule (the
fixed lines of :mod:`.layout`, say) does not load the codec. Inside spillscope, import
from the submodules.
"""

from typing import TYPE_CHECKING

from ...util.lazy import lazy_exports

if TYPE_CHECKING:
    from .layout import (DEFAULT_MAX_LINE_BYTES, FRAGMENT_CODE_POINTS, INTRO, METADATA_KEYS, NOTE_1, NOTE_2,
                         REFERENCE_WARNING, ROLES, TITLE, TITLE_LINE, departs_from_title)
    from .records import (Event, Fragment, Incomplete, MessageEnd, MessageStart, Transcript, TranscriptError,
                          TranscriptMessage, TranscriptMetadata)
    from .writer import render_transcript
    from .parser import FAST_CHUNK, FIRST_CHUNK
    from .reader import Source, iter_transcript, parse_transcript, read_transcript
    from .index import CHECKPOINT_EVERY, OPEN_WHOLE_BYTES, MessageIndex, TranscriptIndex

_EXPORTS = {
    "layout": ("DEFAULT_MAX_LINE_BYTES", "FRAGMENT_CODE_POINTS", "INTRO", "METADATA_KEYS", "NOTE_1", "NOTE_2",
               "REFERENCE_WARNING", "ROLES", "TITLE", "TITLE_LINE", "departs_from_title"),
    "records": ("Event", "Fragment", "Incomplete", "MessageEnd", "MessageStart", "Transcript", "TranscriptError",
                "TranscriptMessage", "TranscriptMetadata"),
    "writer": ("render_transcript",),
    "parser": ("FAST_CHUNK", "FIRST_CHUNK"),
    "reader": ("Source", "iter_transcript", "parse_transcript", "read_transcript"),
    "index": ("CHECKPOINT_EVERY", "OPEN_WHOLE_BYTES", "MessageIndex", "TranscriptIndex"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "CHECKPOINT_EVERY", "DEFAULT_MAX_LINE_BYTES", "Event", "FAST_CHUNK", "FIRST_CHUNK", "FRAGMENT_CODE_POINTS",
    "Fragment", "INTRO", "Incomplete", "METADATA_KEYS", "MessageEnd", "MessageIndex", "MessageStart", "NOTE_1",
    "NOTE_2", "OPEN_WHOLE_BYTES", "REFERENCE_WARNING", "ROLES", "Source", "TITLE", "TITLE_LINE", "Transcript",
    "TranscriptError", "TranscriptIndex", "TranscriptMessage", "TranscriptMetadata", "departs_from_title",
    "iter_transcript", "parse_transcript", "read_transcript", "render_transcript",
]
