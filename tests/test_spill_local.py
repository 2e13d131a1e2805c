"""The local backend: layout vectors, safe names, modes, symlink refusal, failures, concurrency."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from spillscope.spill import (
    RETRIEVAL_HINT,
    LocalSpillStore,
    SaveTextSpill,
    SessionReferenceSource,
    SpillOwner,
    SpillRef,
    SpillStoreError,
    ToolSource,
    decode_segment,
    encode_segment,
    session_dir_name,
)
from spillscope.spill.types import source_from_json


def req(owner: str = "sess-1", name: str = "bash.txt", content: str = "hello") -> SaveTextSpill:
    return SaveTextSpill(SpillOwner(owner), ToolSource("bash", "call_1", "result"), name, content)


@pytest.mark.parametrize(
    "raw,encoded",
    [
        ("", "~"),
        (".", "~002E"),
        ("..", "~002E~002E"),
        ("~", "~007E"),
        ("/", "~002F"),
        ("\\", "~005C"),
        ("\x00", "~0000"),
        ("é", "~00E9"),
        ("\U0001F600", "~D83D~DE00"),
        ("a" * 300, "a" * 300),
        ("x" * 150 + "/" * 150, "x" * 150 + "~002F" * 150),
    ],
)
def test_encode_segment_vectors(raw, encoded):
    assert encode_segment(raw) == encoded
    assert decode_segment(encoded) == raw


def test_encode_segment_upstream_vectors(vectors):
    for v in vectors["encodeSegment"]:
        assert encode_segment(v["input"]) == v["output"], v


def test_encode_segment_injective_and_traversal_proof():
    alphabet = ["", ".", "..", "~", "a", "A", "-", "_", "/", "\\", "\x00", "é", "\U0001F600", "\ud800", "~0041"]
    inputs = {a + b + c for a in alphabet for b in alphabet for c in alphabet}
    encoded = {encode_segment(s) for s in inputs}
    assert len(encoded) == len(inputs)
    for e in encoded:
        assert e not in ("", ".", "..") and "/" not in e and "\x00" not in e


def test_session_dir_vectors(vectors):
    for v in vectors["sessionDirHash"]:
        assert session_dir_name(v["sessionId"]) == v["dir"], v
    assert session_dir_name("\ud800") == session_dir_name("\ufffd")
    assert session_dir_name("x") == "session-" + hashlib.sha256(b"x").hexdigest()[:12]


async def test_save_layout_bytes_and_hint(tmp_path):
    store = LocalSpillStore(tmp_path / "root")
    ref = await store.save_text(req(content="a\ud800b\U0001F600"))
    path = Path(ref.locator)
    assert path.is_absolute()
    assert path.parent == tmp_path / "root" / session_dir_name("sess-1")
    prefix, _, name = path.name.partition("-")
    assert len(prefix) == 12 and all(c in "0123456789abcdef" for c in prefix)
    assert name == "bash.txt"
    assert path.read_bytes() == b"a\xef\xbf\xbdb\xf0\x9f\x98\x80"
    assert ref.bytes == 9
    assert ref.retrieval_hint == RETRIEVAL_HINT == "Use read with offset/limit, or grep this path to search within it."


async def test_modes_under_umask_000(tmp_path):
    old = os.umask(0)
    try:
        ref = await LocalSpillStore(tmp_path / "r" / "nested").save_text(req())
    finally:
        os.umask(old)
    path = Path(ref.locator)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "r" / "nested").stat().st_mode) == 0o700


async def test_modes_under_restrictive_umask(tmp_path):
    old = os.umask(0o777)
    try:
        ref = await LocalSpillStore(tmp_path / "r").save_text(req())
    finally:
        os.umask(old)
    assert stat.S_IMODE(Path(ref.locator).stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(ref.locator).parent.stat().st_mode) == 0o700


async def test_default_root_is_private_and_lazy():
    store = LocalSpillStore()
    assert store._root is None  # nothing created until needed
    ref = await store.save_text(req())
    root = Path(ref.locator).parent.parent
    assert root.name.startswith("dsh-spill-")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert store.root == root
    subprocess.run(["rm", "-rf", str(root)], check=True)


async def test_symlinked_session_dir_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / session_dir_name("sess-1")).symlink_to(elsewhere)
    with pytest.raises(SpillStoreError) as info:
        await LocalSpillStore(root).save_text(req())
    assert "symlink" in str(info.value)
    assert list(elsewhere.iterdir()) == []


async def test_symlink_at_target_path_cannot_redirect(tmp_path, monkeypatch):
    root = tmp_path / "root"
    sdir = root / session_dir_name("sess-1")
    sdir.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("original")
    import secrets as _secrets

    monkeypatch.setattr(_secrets, "token_hex", lambda n: "aaaaaaaaaaaa")
    (sdir / "aaaaaaaaaaaa-bash.txt").symlink_to(victim)
    with pytest.raises(SpillStoreError) as info:
        await LocalSpillStore(root).save_text(req(content="evil"))
    assert isinstance(info.value.cause, OSError)
    assert victim.read_text() == "original"


async def test_existing_regular_file_is_never_overwritten(tmp_path, monkeypatch):
    root = tmp_path / "root"
    sdir = root / session_dir_name("sess-1")
    sdir.mkdir(parents=True)
    import secrets as _secrets

    monkeypatch.setattr(_secrets, "token_hex", lambda n: "bbbbbbbbbbbb")
    (sdir / "bbbbbbbbbbbb-bash.txt").write_text("keep")
    with pytest.raises(SpillStoreError):
        await LocalSpillStore(root).save_text(req())
    assert (sdir / "bbbbbbbbbbbb-bash.txt").read_text() == "keep"


async def test_root_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SpillStoreError) as info:
        await LocalSpillStore(f).save_text(req())
    assert isinstance(info.value.cause, OSError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
async def test_read_only_root_nonroot(tmp_path):
    root = tmp_path / "ro"
    root.mkdir(mode=0o500)
    with pytest.raises(SpillStoreError):
        await LocalSpillStore(root).save_text(req())


async def test_read_only_root(tmp_path):
    """A read-only filesystem (the case permissions cannot fake for root)."""
    root = tmp_path / "ro"
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(root)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        with pytest.raises(SpillStoreError) as info:
            await LocalSpillStore(root).save_text(req())
        assert info.value.cause.errno == errno.EROFS
    finally:
        subprocess.run(["umount", str(root)], check=False)


async def test_enospc_leaves_nothing_half_written(tmp_path):
    root = tmp_path / "tiny"
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(root)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        store = LocalSpillStore(root)
        with pytest.raises(SpillStoreError) as info:
            await store.save_text(req(content="x" * (1024 * 1024)))
        assert info.value.cause.errno == errno.ENOSPC
        assert list((root / session_dir_name("sess-1")).iterdir()) == []
        ok = await store.save_text(req(content="small"))
        assert Path(ok.locator).read_text() == "small"
    finally:
        subprocess.run(["umount", str(root)], check=False)


async def test_200_concurrent_saves(tmp_path):
    store = LocalSpillStore(tmp_path / "root")
    contents = [f"payload {i} " * (i + 1) for i in range(200)]
    refs = await asyncio.gather(*(store.save_text(req(content=c)) for c in contents))
    assert len({r.locator for r in refs}) == 200
    for ref, content in zip(refs, contents):
        assert Path(ref.locator).read_text() == content
        assert ref.bytes == len(content)
    assert len(list(Path(refs[0].locator).parent.iterdir())) == 200


def test_records_round_trip_camel_case():
    r = SaveTextSpill(SpillOwner("t"), SessionReferenceSource("src", "L"), "session-reference-1.txt", "c")
    data = r.to_json()
    assert data == {
        "owner": {"sessionId": "t"},
        "source": {"kind": "session-reference", "sessionId": "src", "label": "L"},
        "suggestedName": "session-reference-1.txt",
        "content": "c",
    }
    assert SaveTextSpill.from_json(data) == r
    assert source_from_json({"toolName": "bash", "callId": "c", "label": "result"}) == ToolSource("bash", "c", "result")
    ref = SpillRef.from_json({"locator": "/x", "bytes": 3, "retrievalHint": "h"})
    assert ref.to_json() == {"locator": "/x", "bytes": 3, "retrievalHint": "h"}
    with pytest.raises(ValueError):
        SpillRef.from_json({"locator": "/x", "bytes": "3", "retrievalHint": "h"})
