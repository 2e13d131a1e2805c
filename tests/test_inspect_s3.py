"""The inspector on s3:// roots against a real SeaweedFS: the upstream fixture root,
uploaded, lists, verifies and cats the same as its local copy; a gone key is an
expired locator; inspector commands are read-only (run with a Read/List-only identity,
and the inspector's client refuses writes before sending)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from s3server import READER

pytestmark = pytest.mark.usefixtures("s3_server")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, timeout=300,
                          env=env if env is not None else dict(os.environ))


def reader_env() -> dict[str, str]:
    """The read-only identity: a write from any inspector command would be refused by the server."""
    env = dict(os.environ)
    env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = READER
    return env


def upload(root: Path, bucket: str, prefix: str) -> None:
    client = boto3.client("s3")
    for path in sorted(root.rglob("*")):
        if path.is_file():
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(root).as_posix()}", Body=path.read_bytes())


@pytest.fixture
def uploaded(upstream_copy, s3_bucket):
    root, logs = upstream_copy
    upload(root, s3_bucket, "fleet/spill-root")
    return root, logs, f"s3://{s3_bucket}/fleet/spill-root"


def _json(proc: subprocess.CompletedProcess[bytes]) -> dict:
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return json.loads(proc.stdout)


def _relative(data, local: str, remote: str, *also: tuple[str, str]):
    """JSON with both roots replaced by ROOT (and no times), to compare a local and a remote run."""
    text = json.dumps(data)
    for old, new in also:
        text = text.replace(old, new)
    text = text.replace(remote, "ROOT").replace(local, "ROOT")
    value = json.loads(text)

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("mtime", "ageSeconds")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(value)


def test_ls_is_the_same_as_the_local_copy(uploaded):
    root, logs, url = uploaded
    local = _json(run("ls", str(root), "--json"))
    remote = _json(run("ls", url, "--json", env=reader_env()))
    assert remote["root"] == url
    assert sum(len(s["artifacts"]) for s in remote["sessions"]) == 17
    assert _relative(remote, str(root), url) == _relative(local, str(root), url)
    # with logs: session ids, links and findings the same too
    local = _json(run("ls", str(root), "--logs", str(logs), "--json"))
    remote = _json(run("ls", url, "--logs", str(logs), "--rebase", str(root), "--json", env=reader_env()))
    assert _relative(remote, str(root), url) == _relative(local, str(root), url)
    human = run("ls", url, env=reader_env())
    assert human.returncode == 0 and human.stdout.decode().startswith(f"{url}  (7 sessions, 17 artifacts, ")


def test_verify_is_the_same_with_rebase_from_the_local_root(uploaded):
    root, logs, url = uploaded
    local = _json(run("verify", str(root), "--logs", str(logs), "--json"))
    remote = _json(run("verify", url, "--logs", str(logs), "--rebase", str(root), "--json", env=reader_env()))
    assert _relative(remote, str(root), url) == _relative(local, str(root), url)
    assert local["findings"], "the upstream root has findings to compare"
    # without --rebase the local locators are outside an s3:// root, and said so
    plain = _json(run("verify", url, "--logs", str(logs), "--json", env=reader_env()))
    assert plain["summary"].get("outside-root", 0) > 0


def test_verify_with_rebase_from_another_prefix_and_expired_keys(uploaded, s3_bucket, tmp_path):
    root, logs, url = uploaded
    moved = tmp_path / "logs-old-prefix"
    old = f"s3://{s3_bucket}/old/prefix"
    for log in logs.rglob("*"):
        if log.is_file():
            target = moved / log.relative_to(logs)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(log.read_bytes().replace(str(root).encode(), old.encode()))
    local = _json(run("verify", str(root), "--logs", str(logs), "--json"))
    remote = _json(run("verify", url, "--logs", str(moved), "--rebase", old, "--json", env=reader_env()))
    same = (old, "ROOT"), (str(moved), str(logs))
    assert _relative(remote, str(root), url, *same) == _relative(local, str(root), url)
    # a key that is gone: expired-locator, exactly as a deleted local file
    listing = _json(run("ls", url, "--json"))
    victim = next(a for s in listing["sessions"] for a in s["artifacts"] if a["kind"] == "session-reference-transcript")
    boto3.client("s3").delete_object(Bucket=s3_bucket, Key=victim["path"].split("/", 3)[3])
    Path(victim["path"].replace(url, str(root))).unlink()
    local = _json(run("verify", str(root), "--logs", str(logs), "--json"))
    remote = _json(run("verify", url, "--logs", str(moved), "--rebase", old, "--json", env=reader_env()))
    expired = [f for f in remote["findings"] if f["code"] == "expired-locator"]
    assert any(f["locator"] == victim["path"].replace(url, old) for f in expired)
    assert _relative(remote, str(root), url, *same) == _relative(local, str(root), url)
    assert "insecure-permissions" not in remote["summary"]


@pytest.mark.parametrize("pattern", [["界 and 😀"], ["-i", "SUMMARY SENTENCE"], ["-E", "[0-9]{3,}"], ["--json-pattern", '"\\n"']])
def test_grep_is_the_same_as_the_local_copy(uploaded, pattern):
    """grep reads an s3:// root through ranged GETs: the same hits, offsets and seen/omitted
    as on the local copy (with the logs, rebased onto the bucket), as the read-only identity."""
    root, logs, url = uploaded
    local = run("grep", *pattern, str(root), "--logs", str(logs), "--json")
    remote = run("grep", *pattern, url, "--logs", str(logs), "--rebase", str(root), "--json", env=reader_env())
    assert (remote.returncode, remote.stderr.replace(url.encode(), b"R")) == \
        (local.returncode, local.stderr.replace(str(root).encode(), b"R"))
    hits = [json.loads(line) for line in remote.stdout.splitlines()]
    assert local.returncode == 0 and hits, local.stderr.decode()
    assert all(h["path"].startswith(url + "/") for h in hits)
    assert [_relative(h, str(root), url) for h in hits] == \
        [_relative(json.loads(line), str(root), url) for line in local.stdout.splitlines()]
    assert any(h["seen"] is not None for h in hits)


def test_grep_on_a_missing_bucket_is_a_one_line_error(s3_bucket):
    proc = run("grep", "x", f"s3://{s3_bucket}-missing/root", env=reader_env())
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1 and b"Traceback" not in proc.stderr


def test_cat_is_the_same_for_every_artifact(uploaded):
    root, logs, url = uploaded
    listing = _json(run("ls", url, "--json"))
    paths = [a["path"] for s in listing["sessions"] for a in s["artifacts"]]
    assert len(paths) == 17
    for path in paths:
        local_path = path.replace(url, str(root))
        for flags in (["--json"], []):
            a, b = run("cat", local_path, *flags), run("cat", path, *flags, env=reader_env())
            assert (b.returncode, b.stderr.replace(path.encode(), b"P")) == (a.returncode, a.stderr.replace(local_path.encode(), b"P"))
            assert b.stdout.replace(json.dumps(path).encode(), b"P") == a.stdout.replace(json.dumps(local_path).encode(), b"P"), path
    one = next(p for p in paths if p.endswith("session-reference-2.txt"))
    a, b = run("cat", one.replace(url, str(root)), "--message", "2", "--json"), run("cat", one, "--message", "2", "--json")
    assert b.returncode == a.returncode and b.stdout.replace(json.dumps(one).encode(), b"P") == \
        a.stdout.replace(json.dumps(one.replace(url, str(root))).encode(), b"P")


def test_cat_of_a_gone_key_and_bad_roots_are_one_line_errors(s3_bucket):
    gone = run("cat", f"s3://{s3_bucket}/p/session-000000000000/000000000000-bash.txt")
    assert gone.returncode == 2 and gone.stderr.decode().count("\n") == 1 and "expired or never written" in gone.stderr.decode()
    missing = run("ls", "s3://no-such-bucket-here/p")
    assert missing.returncode == 2 and missing.stderr.decode() == "spillscope: s3://no-such-bucket-here/p: bucket 'no-such-bucket-here' does not exist\n"
    empty = _json(run("ls", f"s3://{s3_bucket}/nothing-here", "--json"))
    assert empty["sessions"] == [] and empty["findings"] == []


def test_stray_keys_are_unexpected_entries(s3_bucket):
    client = boto3.client("s3")
    for key in ("r/README", "r/session-0123456789ab/0123456789ab-bash.txt", "r/session-0123456789ab/notes",
                "r/session-0123456789ab/deep/0123456789ab-x.txt", "r/session-XYZ/0123456789ab-bash.txt"):
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"x")
    data = _json(run("ls", f"s3://{s3_bucket}/r", "--json"))
    assert [a["name"] for s in data["sessions"] for a in s["artifacts"]] == ["0123456789ab-bash.txt", "notes"]
    unexpected = sorted(f["path"].split("/r/", 1)[1] for f in data["findings"] if f["code"] == "unexpected-entry")
    assert unexpected == ["README", "session-0123456789ab/deep/0123456789ab-x.txt", "session-0123456789ab/notes",
                          "session-XYZ/0123456789ab-bash.txt"]


def test_missing_extra_is_a_one_line_error(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "boto3.py").write_text("raise ImportError('No module named boto3')\n")
    env = dict(os.environ, PYTHONPATH=str(shim))
    proc = run("ls", "s3://bucket/prefix", env=env)
    assert proc.returncode == 2
    assert proc.stderr.decode() == "spillscope: S3 support needs the s3 extra: pip install 'spillscope[s3]' (boto3 is not installed)\n"


def test_the_inspector_client_refuses_writes_before_sending():
    from spillscope.spill.s3 import ReadOnlyViolation, s3_client

    client = s3_client("read")
    for call in (lambda: client.put_object(Bucket="b", Key="k", Body=b"x"), lambda: client.delete_object(Bucket="b", Key="k"),
                 lambda: client.delete_objects(Bucket="b", Delete={"Objects": [{"Key": "k"}]})):
        with pytest.raises(ReadOnlyViolation):
            call()


def test_an_unreachable_endpoint_is_a_one_line_error():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    for args in (("ls", "s3://bucket/p"), ("verify", "s3://bucket/p"), ("cat", "s3://bucket/p/session-000000000000/000000000000-bash.txt")):
        proc = run(*args, env=env)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and err.count("\n") == 1 and "Could not connect" in err, (args, err)


def test_stats_on_a_bucket_equal_the_local_copy(uploaded):
    root, logs, url = uploaded
    local = _json(run("stats", str(root), "--logs", str(logs), "--json"))
    remote = _json(run("stats", url, "--logs", str(logs), "--rebase", str(root), "--json", env=reader_env()))
    for key in ("totals", "kinds", "tools", "findings"):
        expected = local[key]
        if key in ("totals",):  # the local root gets a sweep forecast (past-retention findings); a bucket none
            expected = {**expected, "findings": expected["findings"] - local["sweep"]["files"]}
        elif key == "findings":
            expected = [f for f in expected if f["code"] != "past-retention"]
        if key in ("kinds", "tools"):
            continue  # their findings differ by the same forecast; files and bytes are checked below
        assert remote[key] == expected, key
    assert [(k["kind"], k["files"], k["bytes"]) for k in remote["kinds"]] == \
        [(k["kind"], k["files"], k["bytes"]) for k in local["kinds"]]
    assert remote["sweep"]["applies"] is False and "s3://" in remote["sweep"]["why"]
