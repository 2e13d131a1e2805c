#!/usr/bin/env python3
"""Coverage-guided fuzzing of the transcript reader with atheris (bounded in time).

    python fuzz/fuzz_transcript.py -max_total_time=60 -rss_limit_mb=1024

Any exception other than TranscriptError is a crash; so is a TranscriptError whose line
is outside the input."""

import sys

import atheris

with atheris.instrument_imports():
    from spillscope.formats.transcript import TranscriptError, read_transcript


def TestOneInput(data: bytes) -> None:
    try:
        read_transcript(data, max_line_bytes=4096)
    except TranscriptError as exc:
        if not 1 <= exc.line <= data.count(b"\n") + 1:
            raise AssertionError(f"error line {exc.line} outside the input") from exc


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
