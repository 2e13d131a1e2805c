"""The embedded demo: a spill root and session logs written by spillscope's own writer.

It exercises every path an operator meets: references with dropped and shortened
messages, an intact reference, no storage, tool spills, hostile text (ANSI and OSC
escapes, Rich markup, bidi controls, NUL, CRLF, lone surrogates), one artifact deleted
afterwards so its locator has expired, and one orphan (spilled, never logged).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..util.text import js_stringify, js_utf8
from ..reference.preparation import LogDirectorySource, prepare
from ..spill.local import LocalSpillStore
from ..spill.naming import encode_segment
from ..spill.policy import SpillPolicy

BASE_TIME = 1_790_000_000_000
HOSTILE = (
    "Output with escapes: \x1b[31mRED\x1b[0m and a title change \x1b]0;pwned\x07 "
    "and [bold red]markup[/] and [link=https://evil.example]a link[/link]; "
    "bidi \u202eevil\u202c, NUL \x00, lone CR\r, CRLF\r\n, lone surrogate \ud800, emoji 😀, 界."
)


@dataclass(frozen=True)
class Demo:
    """The demo's spill root and session logs, and the locator in them that points at nothing."""

    base: Path
    root: Path
    logs: Path
    expired_locator: str


def _project_dir(logs: Path, cwd: str | None) -> Path:
    key = "_no-cwd" if cwd is None else "--" + cwd.strip("/").replace("/", "-") + "--"
    return logs / key


def _write_log(logs: Path, session_id: str, cwd: str | None, rows: list[dict[str, Any]]) -> Path:
    directory = _project_dir(logs, cwd) / encode_segment(session_id)
    directory.mkdir(parents=True, exist_ok=True)
    header: dict[str, Any] = {"type": "session", "version": 3, "id": session_id, "createdAt": BASE_TIME}
    if cwd is not None:
        header["cwd"] = cwd
    header.update({"isSeeded": False, "delegationDepth": 0})
    lines = [header]
    for seq, row in enumerate(rows):
        lines.append({"type": row["type"], "seq": seq, "time": BASE_TIME + seq + 1, "data": row["data"],
                      **({"surfaceOp": row["surfaceOp"]} if "surfaceOp" in row else {})})
    path = directory / "session.v3.jsonl"
    path.write_bytes(b"".join(js_utf8(js_stringify(line)) + b"\n" for line in lines))
    return path


def _user(text: str) -> dict[str, Any]:
    return {"type": "user/message", "surfaceOp": "append",
            "data": {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": "u-" + hashlib.sha256(js_utf8(text)).hexdigest()[:8]}}


def _assistant(text: str) -> dict[str, Any]:
    return {"type": "assistant/message", "surfaceOp": "append",
            "data": {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                                                        "source": {"kind": "model", "provider": "demo", "model": "demo"}, "id": "a"},
                     "usage": {"inputTokens": 1, "outputTokens": 1}, "stream": []}}


SOURCES: dict[str, tuple[str | None, list[dict[str, Any]]]] = {
    "src-research": ("/home/demo/research", [
        _user("Survey the spill formats and summarise the risks."),
        _assistant("First pass: " + "The spill store keeps tool output out of context. " * 40),
        _user("Include the hostile sample verbatim."),
        _assistant(HOSTILE * 3),
        _user("And the long appendix, please."),
        _assistant("Final answer: three risks, all mitigated ✅\n" + "".join(f"界😀é appendix line {i}\n" for i in range(400))),
    ]),
    "src-build": ("/home/demo/build", [
        _user("Run the build and keep the log."),
        _assistant("".join(f"[{i:04d}] compiling module_{i}.c ... ok\r\n" for i in range(600))),
        _assistant("Build finished: 600 modules, 0 errors."),
    ]),
    "src-notes": (None, [
        _user("note: remember the retention period is 30 days"),
        _assistant("Noted."),
    ]),
}


async def _build(base: Path, fixed_time: float | None) -> Demo:
    root, logs = base / "spill-root", base / "logs"
    root.mkdir(parents=True, mode=0o700)
    logs.mkdir(parents=True)
    for sid, (cwd, rows) in SOURCES.items():
        _write_log(logs, sid, cwd, rows)
    counter = iter(range(1, 1 << 30))
    # Counted file prefixes, not random ones: every demo has the same paths, so a path
    # noted from the last run (or the README, or a screenshot) still names the file.
    # No start-up sweep: writing a demo must never delete anything (its files are back-dated).
    store = LocalSpillStore(root, random_prefix=lambda: f"{next(counter):012x}", cleanup_period_days=0)
    source = LogDirectorySource(logs)
    cwd = "/home/demo/project"
    targets = [
        ("demo-target-research", [("src-research", "Research ✨"), ("src-notes", "Notes")], 1400, store),
        ("demo-target-build", [("src-build", "Build log")], 500, store),
        ("demo-target-nostore", [("src-research", "Research (no storage)")], 600, None),
    ]
    expired = ""
    for target, refs, budget, st in targets:
        msg = await prepare(target, refs, source=source, max_reference_bytes=budget, store=st)
        assert msg is not None
        direct = _user("Please use " + " and ".join(f"@{label}" for _, label in refs) + ".")
        _write_log(logs, target, cwd, [direct, {"type": "user/message", "surfaceOp": "append", "data": msg.to_event_data(f"ref-{target}")}])
        if target == "demo-target-build":
            expired = msg.notices[0]["fullSnapshot"]["locator"]
    # Tool spills through the policy.
    policy = SpillPolicy(1024, store)
    tool_session = "demo-tools"
    tool_rows: list[dict[str, Any]] = [_user("Run the tools.")]
    outputs = [
        ("bash", "call_1", "".join(f"line {i:04d}: ok\r\n" for i in range(800))),
        ("web_fetch", "call_2", "<html>" + "界😀é" * 900 + "</html>"),
        ("grep", "call_3", HOSTILE * 20),
    ]
    for tool, call, text in outputs:
        out = await policy.bound_result(tool_name=tool, call_id=call, content=text, owner_session_id=tool_session)
        tool_rows.append({"type": "tool/call", "data": {"turn": 1, "step": 1, "callId": call, "name": tool, "arguments": "{}"}})
        tool_rows.append({"type": "tool/result", "surfaceOp": "append", "data": {"turn": 1, "step": 1, "message": {
            "source": {"kind": "tool", "callId": call},
            "content": [{"type": "tool-result", "toolCallId": call, "content": list(out.content), "isError": False}],
            "role": "tool", "id": f"t-{call}"}}})
    # An orphan: this output was spilled, then the run was cancelled before its tool
    # result reached the log, so no notice names the artifact.
    await policy.bound_result(tool_name="pytest", call_id="call_4", owner_session_id=tool_session,
                              content="".join(f"tests/test_{i:03d}.py::test_case PASSED\n" for i in range(300)))
    tool_rows.append({"type": "tool/call", "data": {"turn": 1, "step": 2, "callId": "call_4", "name": "pytest", "arguments": "{}"}})
    _write_log(logs, tool_session, cwd, tool_rows)
    # The build transcript was deleted by retention: its locator has expired.
    os.unlink(expired)
    if fixed_time is not None:
        for path in [*root.rglob("*"), *logs.rglob("*")]:
            os.utime(path, (fixed_time, fixed_time), follow_symlinks=False)
    return Demo(base, root, logs, expired)


def default_demo_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"spillscope-demo-{os.getuid()}"


def write_demo(base: str | os.PathLike[str] | None = None, *, fixed_time: float | None = None) -> Demo:
    """(Re)write the demo under ``base`` (default: a per-user temp dir) and return its paths.

    The demo is reproducible: the same files with the same bytes at the same paths every
    time (counted file prefixes). ``fixed_time`` also gives every file that mtime (for
    snapshots and screenshots); without it they are written now."""
    path = Path(base) if base is not None else default_demo_dir()
    if path.exists():
        marker = path / ".spillscope-demo"
        if not marker.exists() and any(path.iterdir()):
            raise FileExistsError(f"{path} exists and is not a spillscope demo; refusing to overwrite it")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / ".spillscope-demo").write_text("written by `spillscope demo`\n")
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_build(path, fixed_time))
    # Called from async code (a notebook, a test): build on a loop of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _build(path, fixed_time)).result()


__all__ = ["Demo", "default_demo_dir", "write_demo"]
