"""qwen-code's tree and sweep.

Spills (QwenLM/qwen-code truncation.ts @38d5debb, ``persistToolResult``):
``<runtimeBase>/tmp/<projectHash>/tool-results/<callId>.txt`` — per *project*, so a file's
session is only what names it — and the legacy ``<runtimeBase>/tmp/<projectHash>/<tool>_<12
hex>.output``. Transcripts: ``<runtimeBase>/projects/<sanitized cwd>/chats/<sessionId>.jsonl``
(services/chatRecordingService.ts). ``runtimeBase`` is ``~/.qwen`` (or ``$QWEN_RUNTIME_DIR``):
the tree is that dir, its ``tmp``, or one ``tmp/<hash>`` (the transcripts are then looked for
two levels up). Notices name files by absolute path, resolved by the part after ``tmp``.

Sweep: ``cleanupOldToolResults(globalTempDir, 24 h)`` at session start walks every project's
``tool-results/*`` and ``*.output`` and deletes a regular file when ``now - mtimeMs >= 24 h``
(``packages/core/src/utils/toolResultCleanup.ts``, seen at undici77/qwen-code-no-telemetry
@ac2b1df056b1ca02d13ef24729cfa98528e4812a, a fork of QwenLM/qwen-code) — with no look at
which session still names a file.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Iterator

from ...inspect.findings import Finding, finding
from ..records import Options, Report, RetentionRule, applied_rule
from ..engine import Layout, jsonl_texts, link_and_check, lstat_dir, resolve_under, transcript
from .notice import parse
from .probe import runtime_base

RULE = RetentionRule(24 * 3600.0, "qwen-code's fixed 24 h (toolResultCleanup.ts, every project, at session start)",
                     "tmp/*/tool-results/* and tmp/*/*.output, by mtime (>= 24 h), live sessions not spared")
_WANTED = (b"<persisted-output>", b"Tool output was too large")
_LEGACY = re.compile(r".+_[0-9a-f]{12}\.output\Z")


def _subdirs(path: str) -> list[str]:
    try:
        with os.scandir(path) as it:
            return sorted(e.path for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def retention_rule(tree: str) -> RetentionRule:
    return RULE


def texts(tree: str) -> Iterator[tuple[str, str]]:
    layout = scan(tree)
    yield from ((f.path, "spill") for f in layout.files if f.is_regular)
    yield from ((t.path, "transcript") for t in layout.transcripts)


def scan(tree: str) -> Layout:
    layout = Layout()
    base = runtime_base(tree)
    if base is None:
        return layout
    path = os.path.abspath(tree)
    tmp = os.path.join(base, "tmp")
    # One project hash dir when the tree is one; every project otherwise.
    projects = [path] if os.path.dirname(path) == tmp else _subdirs(tmp)
    for project in projects:
        spills = os.path.join(project, "tool-results")
        lstat_dir(layout, spills, None, "qwen-code writes files only")
        legacy = Layout()
        lstat_dir(legacy, project, None, "")
        # Only the legacy *.output files are spills at the project level (the rest: logs, checkpoints).
        layout.files.extend(f for f in legacy.files if _LEGACY.match(f.name))
    for chats in _subdirs(os.path.join(base, "projects")):
        d = os.path.join(chats, "chats")
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if name.endswith(".jsonl"):
                t = transcript(os.path.join(d, name), name[:-6])
                if t is not None:
                    layout.transcripts.append(t)
    return layout


def inspect_tree(tree: str, options: Options) -> Report:
    report = Report("qwen", tree, [], [], [], [], applied_rule(RULE, options))
    base = runtime_base(tree)
    if base is None:
        return report
    layout = scan(tree)
    pending: list[Finding] = []
    texts = (x for t in layout.transcripts for x in jsonl_texts(t, pending, _WANTED))
    link_and_check(report, layout, texts, parse,
                   functools.partial(resolve_under, anchor="tmp", base=os.path.join(base, "tmp")), options)
    report.findings.extend(pending)
    seconds = report.retention.seconds if report.retention is not None else RULE.seconds
    for f in report.files:
        if options.now - f.mtime >= seconds and f.is_regular:
            report.past_retention.append(f.path)
            if options.retention_seconds is not None:
                report.findings.append(finding("past-retention", path=f.path,
                                               detail="qwen-code's start-up cleanup at that age deletes it"))
    return report
