"""S3SpillStore against a real SeaweedFS on loopback (tests/s3server.py): layout, exact
bytes, exclusive create, rejections, the policy and prepare() on it, and concurrency."""

from __future__ import annotations

import asyncio
import io
import re
import subprocess
import sys
import threading

import boto3
import pytest

from spillscope.reference import CaptureSource, prepare, read_transcript
from spillscope.spill import (S3_RETRIEVAL_HINT, S3SpillStore, SaveTextSpill, SpillOwner,
                              SpillPolicy, SpillStoreError, ToolSource, encode_segment, parse_spill_notice,
                              session_dir_name)
from spillscope.spill.s3 import parse_s3_url

from s3server import READER, create_bucket, weed_server

NASTY = "a\r\nb\x00c\u2028\U0001F600 e\u0301 \ufeff\ud800 end \udfff"


def _client():
    return boto3.client("s3")


def _get(bucket: str, key: str) -> bytes:
    return _client().get_object(Bucket=bucket, Key=key)["Body"].read()


def _keys(bucket: str, prefix: str = "") -> list[str]:
    out: list[str] = []
    for page in _client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out += [o["Key"] for o in page.get("Contents", [])]
    return out


def _request(session: str = "sess-1", name: str = "bash.txt", content: str = NASTY) -> SaveTextSpill:
    return SaveTextSpill(SpillOwner(session), ToolSource("bash", "call-1", "result"), name, content)


def test_layout_locator_and_exact_bytes(s3_bucket):
    store = S3SpillStore(f"s3://{s3_bucket}/fleet/a")
    name = "we/ird ☃ \ud83d.txt"
    ref = store.save_text_sync(_request("sess-\ud800-1", name))
    m = re.fullmatch(rf"s3://{s3_bucket}/(fleet/a/(session-[0-9a-f]{{12}})/[0-9a-f]{{12}}-(.+))", ref.locator)
    assert m is not None, ref.locator
    key, session_dir, encoded = m.groups()
    assert session_dir == session_dir_name("sess-\ud800-1") and encoded == encode_segment(name)
    expected = NASTY.replace("\ud800", "\ufffd").replace("\udfff", "\ufffd").encode("utf-8")
    assert _get(s3_bucket, key) == expected and ref.bytes == len(expected)
    assert ref.retrieval_hint == S3_RETRIEVAL_HINT and "s3://" in ref.retrieval_hint
    assert _keys(s3_bucket) == [key]


def test_prefixless_root_and_url_parsing(s3_bucket):
    ref = S3SpillStore(f"s3://{s3_bucket}").save_text_sync(_request())
    assert re.fullmatch(rf"s3://{s3_bucket}/session-[0-9a-f]{{12}}/[0-9a-f]{{12}}-bash\.txt", ref.locator)
    assert parse_s3_url("s3://b/p/q/").prefix == "p/q" and parse_s3_url("s3://b").prefix == ""
    for bad in ("s3://", "s3:///x", "http://b/p", "s3://b/p/../q", "s3://b/p//q"):
        with pytest.raises(ValueError):
            parse_s3_url(bad)


def test_collision_retries_with_a_new_prefix_and_never_overwrites(s3_bucket):
    prefixes = iter(["aaaaaaaaaaaa", "aaaaaaaaaaaa", "aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    store = S3SpillStore(f"s3://{s3_bucket}/p", random_prefix=lambda: next(prefixes))
    first = store.save_text_sync(_request(content="first"))
    second = store.save_text_sync(_request(content="second"))
    assert first.locator.endswith("/aaaaaaaaaaaa-bash.txt") and second.locator.endswith("/bbbbbbbbbbbb-bash.txt")
    bucket_keys = _keys(s3_bucket)
    assert len(bucket_keys) == 2
    assert _get(s3_bucket, first.locator.split("/", 3)[3]) == b"first"
    assert _get(s3_bucket, second.locator.split("/", 3)[3]) == b"second"


def test_endless_collisions_are_a_rejection(s3_bucket):
    store = S3SpillStore(f"s3://{s3_bucket}/p", random_prefix=lambda: "cccccccccccc")
    store.save_text_sync(_request(content="kept"))
    with pytest.raises(SpillStoreError, match="collisions"):
        store.save_text_sync(_request(content="other"))
    assert [_get(s3_bucket, k) for k in _keys(s3_bucket)] == [b"kept"]


def test_missing_bucket_and_denied_are_rejections(s3_bucket, s3_server, monkeypatch):
    with pytest.raises(SpillStoreError, match="NoSuchBucket|does not exist"):
        S3SpillStore("s3://no-such-bucket-here/p").save_text_sync(_request())
    reader = boto3.client("s3", aws_access_key_id=READER[0], aws_secret_access_key=READER[1])
    with pytest.raises(SpillStoreError, match="AccessDenied|Access Denied"):
        S3SpillStore(f"s3://{s3_bucket}/p", client=reader).save_text_sync(_request())
    assert _keys(s3_bucket) == []


async def test_policy_degrades_on_rejection_and_spills_on_success(s3_bucket):
    text = "line\n" * 2000
    ok = await SpillPolicy(1000, S3SpillStore(f"s3://{s3_bucket}/tools")).bound_result(
        tool_name="bash", call_id="c1", content=text, owner_session_id="s1")
    assert ok.replaced and ok.ref is not None and ok.ref.locator.startswith(f"s3://{s3_bucket}/tools/session-")
    notice = parse_spill_notice(ok.text or "")
    assert notice is not None and notice.locator == ok.ref.locator and notice.retrieval_hint == S3_RETRIEVAL_HINT
    assert _get(s3_bucket, ok.ref.locator.split("/", 3)[3]) == text.encode()
    failed = await SpillPolicy(1000, S3SpillStore("s3://no-such-bucket-here/tools")).bound_result(
        tool_name="bash", call_id="c2", content=text, owner_session_id="s1")
    assert not failed.replaced and failed.text == text and "saveText failed" in failed.warnings[0]


async def test_prepare_saves_the_transcript_to_s3(s3_bucket):
    from test_reference import _capture

    caps = {"a": _capture("a", [("user", "x" * 300), ("assistant", "y\ud800" * 150), ("user", "newest")])}
    msg = await prepare("t", [("a", "A")], source=CaptureSource(caps), max_reference_bytes=200,
                        store=S3SpillStore(f"s3://{s3_bucket}/refs"))
    snap = msg.notices[0]["fullSnapshot"]
    assert snap["status"] == "saved" and snap["locator"].startswith(f"s3://{s3_bucket}/refs/{session_dir_name('t')}/")
    assert snap["locator"].endswith("-session-reference-1.txt")
    t = read_transcript(snap["locator"])  # the reader takes an s3:// locator too
    assert [m.text for m in t.messages] == ["x" * 300, "y\ud800" * 150, "newest"]


_WORKER = """
import sys
from spillscope.spill import S3SpillStore, SaveTextSpill, SpillOwner, ToolSource
store = S3SpillStore(sys.argv[1])
for i in range(100):
    body = f"worker {sys.argv[2]} save {i} " + "\\u00e9\\U0001F600" * (i * 37)
    ref = store.save_text_sync(SaveTextSpill(SpillOwner("shared-session"), ToolSource("bash", f"c{i}", "result"), "bash.txt", body))
    print(ref.locator, ref.bytes, flush=True)
"""


def test_eight_processes_save_800_distinct_intact_objects(s3_bucket):
    url = f"s3://{s3_bucket}/fleet"
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, url, str(w)], stdout=subprocess.PIPE, text=True)
             for w in range(8)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8
    refs = [line.split() for out in outputs for line in out.splitlines()]
    assert len(refs) == 800 and len({loc for loc, _ in refs}) == 800
    keys = _keys(s3_bucket, "fleet/")
    assert sorted(keys) == sorted(loc.split("/", 3)[3] for loc, _ in refs)
    for w, out in enumerate(outputs):
        for i, line in enumerate(out.splitlines()):
            loc, size = line.split()
            body = f"worker {w} save {i} " + "\u00e9\U0001F600" * (i * 37)
            data = _get(s3_bucket, loc.split("/", 3)[3])
            assert data == body.encode() and int(size) == len(data)


class _Interrupting:
    """A request body that stops the server after ``after`` bytes have been sent."""

    def __init__(self, data: bytes, after: int, stop) -> None:
        self.data, self.after, self.stop, self.pos, self.stopped = data, after, stop, 0, False

    def read(self, n: int = -1) -> bytes:
        if self.pos >= self.after and not self.stopped:
            self.stopped = True
            self.stop()
        n = len(self.data) - self.pos if n is None or n < 0 else min(n, 1 << 16)
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos if whence == 0 else (len(self.data) + pos if whence == 2 else self.pos + pos)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.slow
def test_server_stopped_mid_save_is_a_rejection_with_no_partial_object(tmp_path, monkeypatch):
    with weed_server(tmp_path / "weed") as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        create_bucket(server, "midsave")
        client = boto3.client("s3")
        sent: list[_Interrupting] = []

        def interrupt(request, **_):
            body = request.body
            data = body.getvalue() if isinstance(body, io.BytesIO) else body
            if isinstance(data, (bytes, bytearray)) and len(data) > (4 << 20):
                request.body = _Interrupting(bytes(data), 1 << 20, server.stop)
                sent.append(request.body)

        client.meta.events.register("before-send.s3.PutObject", interrupt)
        store = S3SpillStore("s3://midsave/p", client=client)  # this server's (the cached one is the session's)
        with pytest.raises(SpillStoreError, match="spill save failed"):
            store.save_text_sync(_request(content="z" * (32 << 20)))
        assert sent[0].stopped  # the server really went away mid-body (retries then found it gone)
        server.start_again()
        assert _keys("midsave") == []
        # and the store works again once the server is back
        ref = S3SpillStore("s3://midsave/p", client=boto3.client("s3")).save_text_sync(_request(content="after"))
        assert _get("midsave", ref.locator.split("/", 3)[3]) == b"after"


def test_saves_from_threads_share_one_client(s3_bucket):
    store = S3SpillStore(f"s3://{s3_bucket}/t")
    refs: list[str] = []

    def work(n: int) -> None:
        for i in range(20):
            refs.append(asyncio.run(store.save_text(_request(f"s{n}", content=f"{n}-{i}"))).locator)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(refs)) == 80 and len(_keys(s3_bucket)) == 80


def test_missing_extra_is_one_clear_line(tmp_path):
    code = ("import sys; sys.modules['boto3'] = None\n"
            "from spillscope.spill import S3SpillStore, SaveTextSpill, SpillOwner, ToolSource, SpillStoreError\n"
            "try:\n"
            "    S3SpillStore('s3://b/p').save_text_sync(SaveTextSpill(SpillOwner('s'), ToolSource('t', 'c', 'result'), 'x.txt', 'x'))\n"
            "except SpillStoreError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "S3 support needs the s3 extra: pip install 'spillscope[s3]' (boto3 is not installed)\n"


def test_core_imports_never_load_boto3():
    code = ("import sys\n"
            "import spillscope.spill, spillscope.spill.s3, spillscope.inspect.verify.inspection, spillscope.frontends.cli.main, spillscope.frontends.cli.cat\n"
            "from spillscope.spill import S3SpillStore\n"
            "S3SpillStore('s3://b/p')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"
