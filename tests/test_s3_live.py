"""The TUI, the notebook and watch on an s3:// root (a real SeaweedFS): the same browse,
reader text and findings as the local root; live changes by polling ListObjectsV2.
Everything in-process reads with the Read/List-only identity (the server refuses writes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import boto3
import pytest

import spillscope
from spillscope.frontends.demo import write_demo
from spillscope.storage import s3 as s3mod
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.widgets import BrowseTree

from s3server import READER
from test_inspect_s3 import upload
from test_tui import find, nodes, open_resolving_reference, status_text, wait_for


@pytest.fixture
def s3_demo(tmp_path, s3_bucket, monkeypatch):
    demo = write_demo(tmp_path / "demo")
    upload(demo.root, s3_bucket, "demo")
    admin = boto3.client("s3")  # made before the switch: the tests' own writes
    # From here on the inspector's read client is the read-only identity's.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", READER[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", READER[1])
    monkeypatch.setenv("SPILLSCOPE_S3_POLL_SECONDS", "0.3")
    s3mod.drop_clients("read")
    yield demo, f"s3://{s3_bucket}/demo", admin, s3_bucket
    s3mod.drop_clients("read")


async def test_tui_browses_and_reads_an_s3_root_like_the_local_one(s3_demo):
    demo, url, _, _ = s3_demo
    texts = {}
    for root, rebase in ((str(demo.root), None), (url, str(demo.root))):
        app = SpillscopeApp(root, str(demo.logs), rebase=rebase, watch=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_for(pilot, lambda: app.verified, timeout=20)
            tree = app.query_one(BrowseTree)
            expired = find(tree, "reference", lambda d: d.obj.status == "expired")
            assert "expired-locator" in expired.label.plain
            reader = await open_resolving_reference(app, pilot)
            doc = reader.document
            texts[root] = ([doc.read(m.index) for m in doc.messages], app.inspection.summary(),
                           sorted(n.data.kind for n in nodes(tree) if n.data is not None))
            await pilot.press("escape")
    local, remote = texts[str(demo.root)], texts[url]
    assert remote == local and len(local[0]) >= 6


async def test_tui_live_watch_on_s3_polls_the_listing(s3_demo):
    demo, url, admin, bucket = s3_demo
    app = SpillscopeApp(url, str(demo.logs), rebase=str(demo.root))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        await pilot.pause(0.8)  # the first poll
        tree = app.query_one(BrowseTree)
        research = find(tree, "reference", lambda d: d.obj.status == "resolves")
        session = research.data.obj.artifact.session_dir
        new = f"{url}/{session}/aaaaaaaaaaaa-bash.txt"
        admin.put_object(Bucket=bucket, Key=new.split("/", 3)[3], Body=b"new artifact")
        await wait_for(pilot, lambda: any(n.data and n.data.key == new for n in nodes(tree)), timeout=10)
        key = research.data.key
        admin.delete_object(Bucket=bucket, Key=research.data.obj.artifact.path.split("/", 3)[3])
        await wait_for(pilot, lambda: find(tree, "reference", lambda d: d.key == key).data.obj.status == "expired",
                       timeout=10)
        assert "live" in status_text(app)


async def test_notebook_on_an_s3_root(s3_demo):
    import asyncio

    demo, url, admin, bucket = s3_demo
    local = spillscope.open(demo.root, demo.logs)
    remote = spillscope.open(url, demo.logs, rebase=str(demo.root))
    assert remote.root == url
    assert [f.code for f in remote.findings()] == [f.code for f in local.findings()]
    path = next(a.path for s in remote.inspection.scan.sessions for a in s.artifacts
                if a.kind == "session-reference-transcript")
    view = remote.transcript(path)
    assert view._repr_html_() == local.transcript(path.replace(url, str(demo.root)))._repr_html_().replace(
        str(demo.root), url)

    from spillscope.inspect.watch.events import STATUS_EVENTS

    async def first_event():
        async for ev in remote.watch():
            if ev.event not in STATUS_EVENTS:  # the watch's own `live` comes first
                return ev

    task = asyncio.create_task(first_event())
    await asyncio.sleep(0.8)
    key = path.split("/", 3)[3].rsplit("/", 1)[0] + "/abcabcabcabc-bash.txt"
    admin.put_object(Bucket=bucket, Key=key, Body=b"new")
    ev = await asyncio.wait_for(task, 10)
    assert ev.event == "added" and ev.path == f"s3://{bucket}/{key}" and ev.kind == "tool-output"


def test_cli_watch_on_s3_reports_added_modified_deleted(s3_demo):
    demo, url, admin, bucket = s3_demo
    proc = subprocess.Popen([sys.executable, "-m", "spillscope", "watch", url, "--json", "--initial"],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        def wait(pred):
            while True:
                line = proc.stdout.readline()
                assert line, "watch ended"
                ev = json.loads(line)
                ev.pop("time")  # when the batch came (issue 28): checked in test_cli.py
                if pred(ev):
                    return ev

        wait(lambda e: e["event"] == "added")  # the initial listing: the poller is up
        session = next(p.name for p in demo.root.iterdir() if any(p.iterdir()))
        key = f"demo/{session}/abcdefabcdef-bash.txt"
        new = f"s3://{bucket}/{key}"
        admin.put_object(Bucket=bucket, Key=key, Body=b"first")
        assert wait(lambda e: e["path"] == new) == {"event": "added", "path": new, "session": session, "kind": "tool-output"}
        time.sleep(1.1)  # LastModified has one-second resolution; the size changes anyway
        admin.put_object(Bucket=bucket, Key=key, Body=b"first and more")
        assert wait(lambda e: e["path"] == new)["event"] == "modified"
        admin.delete_object(Bucket=bucket, Key=key)
        assert wait(lambda e: e["path"] == new)["event"] == "deleted"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
