"""How long a session-log line a reader takes before it reports the line instead of reading it whole.

Apart from :mod:`.sessionlog` (its reader, with pathlib, the zstd codec and its records) so
that the command line's parser states the default in ``--help`` without importing a reader:
``spillscope grep`` on a root without logs reads no log. The transcript's bound lives with
the transcript's fixed lines (:mod:`.transcript.layout`), which is as cheap to import.
"""

#: The longest session-log line read (``--max-log-line-bytes``); a longer one is a finding.
DEFAULT_MAX_LOG_LINE_BYTES = 64 << 20
