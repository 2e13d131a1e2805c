"""What `spillscope cat` writes, byte for byte, through the real entry point (issue 27 items
8-9, issue 23 item 5): hostile text is inert by default wherever it goes (a terminal, or a
pipe into one), `--raw` writes the exact bytes, every message ends a line in the human
output, and an artifact that changes while it is read is a warning and exit 1, never a
silent cut."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from spillscope.formats.transcript import read_transcript, render_transcript
from spillscope.util.text import js_utf8, visible

EXE = [sys.executable, "-m", "spillscope"]

#: Every code point the escaping rule makes visible, and the ones it must keep.
CONTROLS = ([chr(c) for c in range(0x20) if c not in (0x09, 0x0A)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
            + ["\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
               "\u2069", "\u061c", "\u2028", "\u2029", "\ufeff"])
#: Terminal attacks as they come: a title change, colours, a cursor jump, a hyperlink.
SEQUENCES = ["\x1b]0;pwned\x07", "\x1b[31mred\x1b[0m", "\x1b[2J\x1b[H", "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",
             "\x9b31m", "\x1bP+q\x1b\\", "line\rover"]


def run(*args: str, **kw) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*EXE, *args], capture_output=True, timeout=120, **kw)


def transcript(path: Path, texts: list[str]) -> Path:
    conv = [{"role": "user", "text": t} for t in texts]
    path.write_bytes(js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                                "conversation": conv}, 3)))
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A transcript and a tool output holding every control and sequence, each in a message."""
    base = tmp_path_factory.mktemp("hostile")
    texts = [f"before {c} after" for c in CONTROLS] + [f"a {s} z" for s in SEQUENCES] + ["ends with a newline\n", "x"]
    tool = base / "aaaaaaaaaaaa-bash.txt"
    tool.write_bytes(js_utf8("".join(texts)))
    return transcript(base / "aaaaaaaaaaaa-session-reference-1.txt", texts), tool, texts


def _inert(data: bytes) -> bool:
    text = data.decode("utf-8")
    return not any(c in text for c in CONTROLS)


def test_hostile_text_through_a_pipe_is_inert_and_raw_is_exact(hostile):
    """`cat … | head` must not retitle, recolour or rewrite the terminal it ends on: by
    default every control is shown as a symbol (the one rule, util.text.visible) and a note
    says so; --raw is the exact bytes."""
    path, tool, texts = hostile

    def whole(show) -> bytes:
        return js_utf8("".join(f"{'' if i == 1 else chr(10)}### Message {i}: user\n\n{show(t)}\n"
                               for i, t in enumerate(texts, 1)))

    shown = run("cat", str(path))
    assert shown.returncode == 0 and shown.stdout == whole(visible) and _inert(shown.stdout)
    assert b"control character(s) shown as visible symbols" in shown.stderr and b"--raw" in shown.stderr
    raw = run("cat", str(path), "--raw")
    assert raw.returncode == 0 and raw.stdout == whole(lambda t: t) and raw.stderr == b""
    # One message: its text shown inert and a newline; --raw: exactly its text, nothing added.
    for i in (1, texts.index("a \x1b]0;pwned\x07 z") + 1, len(texts) - 1, len(texts)):
        one = run("cat", str(path), "--message", str(i))
        assert one.returncode == 0 and one.stdout == js_utf8(visible(texts[i - 1])) + b"\n", i
        one_raw = run("cat", str(path), "--message", str(i), "--raw")
        assert one_raw.returncode == 0 and one_raw.stdout == js_utf8(texts[i - 1]), i
    out = run("cat", str(tool))
    assert out.returncode == 0 and _inert(out.stdout) and out.stdout == js_utf8(visible("".join(texts))) + b"\n"
    assert run("cat", str(tool), "--raw").stdout == tool.read_bytes()
    # JSON is ASCII and exact, whatever the text.
    data = json.loads(run("cat", str(path), "--json").stdout)
    assert [m["text"] for m in data["messages"]] == texts


def test_raw_tool_output_is_its_bytes_even_when_not_utf8(tmp_path):
    odd = tmp_path / "aaaaaaaaaaaa-bash.txt"
    odd.write_bytes(b"ok \xff\xfe bad \xc3 cut \x1b[31m\r\n")
    assert run("cat", str(odd), "--raw").stdout == odd.read_bytes()
    shown = run("cat", str(odd)).stdout
    assert shown == "ok \ufffd\ufffd bad \ufffd cut ␛[31m⏎\n\n".encode()


def test_message_n_ends_a_line_on_a_terminal(hostile):
    """On a real pty (stdout and stderr both on it): the text, then a newline, so the next
    prompt starts its own line; escapes are visible."""
    import pty

    path, _, texts = hostile
    i = texts.index("a \x1b]0;pwned\x07 z") + 1
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*EXE, "cat", str(path), "--message", str(i)], stdout=slave, stderr=slave,
                                stdin=subprocess.DEVNULL)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(master)
    out = b"".join(chunks)
    assert b"\x1b]0;" not in out and b"\x07" not in out
    assert out.startswith("a ␛]0;pwned␇ z\r\n".encode()), out


# --- an artifact that changes while it is read ----------------------------------------

BIG = 3 << 20  # several of cat's 1 MiB reads: it is blocked on the pipe after the first


def _big_tool(path: Path) -> bytes:
    line = b"0123456789 tool output line\n"
    data = line * (BIG // len(line))
    path.write_bytes(data)
    return data


def _big_transcript(path: Path) -> bytes:
    texts = [f"message {i} " + "words and more words " * 2000 for i in range(BIG // 40_000)]
    transcript(path, texts)
    return path.read_bytes()


def _change(path: Path, how: str, data: bytes) -> None:
    if how == "truncated":
        with open(path, "r+b") as f:
            f.truncate(len(data) // 2 + 7)  # mid-line
    elif how == "emptied":
        with open(path, "r+b") as f:
            f.truncate(0)
    elif how == "grown":
        with open(path, "ab") as f:
            f.write(data[: 1 << 20])
    elif how == "rewritten":  # the same size, other bytes, behind the part already read
        with open(path, "r+b") as f:
            f.seek(len(data) - 100)
            f.write(b"X" * 99)
    elif how == "replaced":
        other = path.with_name(path.name + ".new")
        other.write_bytes(data)
        os.replace(other, path)
    else:
        raise AssertionError(how)


def _cat_while_changing(path: Path, how: str, data: bytes, *extra: str) -> tuple[int, bytes, bytes]:
    """Run cat into a pipe; once it has written (so opened and read the file's first part,
    and is blocked on the full pipe), change the file; then read the rest."""
    proc = subprocess.Popen([*EXE, "cat", str(path), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err: list[bytes] = []
    t = threading.Thread(target=lambda: err.append(proc.stderr.read()))
    t.start()
    first = proc.stdout.read(1)
    assert first, "cat wrote nothing"
    _change(path, how, data)
    rest = proc.stdout.read()
    code = proc.wait(timeout=120)
    t.join(30)
    return code, first + rest, err[0]


@pytest.mark.parametrize("how", ["truncated", "emptied", "grown", "rewritten", "replaced"])
@pytest.mark.parametrize("kind", ["tool", "transcript"])
def test_an_artifact_changed_while_cat_reads_it_is_a_warning_and_exit_1(tmp_path, kind, how):
    if kind == "tool":
        path = tmp_path / "aaaaaaaaaaaa-bash.txt"
        data = _big_tool(path)
    else:  # (grown: the bytes appended make it malformed too; the change is still said)
        path = tmp_path / "aaaaaaaaaaaa-session-reference-1.txt"
        data = _big_transcript(path)
    code, out, err = _cat_while_changing(path, how, data)
    assert code == 1, (code, err)
    assert b"spillscope: warning: incomplete artifact (" in err and b"while read" in err, err
    assert 0 < len(out)


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_changed_while_read_in_json_is_incomplete(tmp_path, how):
    path = tmp_path / "aaaaaaaaaaaa-bash.txt"
    data = _big_tool(path)
    code, out, err = _cat_while_changing(path, how, data, "--json")
    assert code == 1 and b"incomplete artifact" in err
    doc = json.loads(out)
    assert doc["complete"] is False and "while read" in doc["changedWhileRead"]


def test_a_transcript_cut_off_mid_write_is_a_warning_and_exit_1_too(tmp_path):
    path = transcript(tmp_path / "aaaaaaaaaaaa-session-reference-1.txt", ["one", "two"])
    body = path.read_bytes()
    path.write_bytes(body[: body.rindex(b"### Message 2") + 20])
    for extra in ((), ("--json",), ("--raw",), ("--message", "1")):
        proc = run("cat", str(path), *extra)
        assert proc.returncode == 1, extra
        assert b"spillscope: warning: incomplete artifact (" in proc.stderr, extra
    # The same file, whole and unchanged: exit 0, no warning.
    path.write_bytes(body)
    ok = run("cat", str(path))
    assert ok.returncode == 0 and ok.stderr == b""
    assert read_transcript(path).messages[1].text == "two"
