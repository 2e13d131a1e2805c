"""The formats and codecs the reference implementation writes: the transcript artifact
(writer, streaming parser, `pread` index), session logs (JSONL, zstd), and locators
(Windows paths, rebasing). Pure functions and records: no storage, no inspection, no UI."""
