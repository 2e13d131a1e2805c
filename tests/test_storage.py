"""Storage chosen once, at the edge (issue 24), and what that edge decides for every command
(issue 23 items 2 and 3, issue 27 item 7).

* No module outside ``spillscope/storage/`` tests a root's kind from its text (``is_remote``,
  ``startswith("s3://")``…): the source tree is read and such a test is a failure.
* Every command × every scheme form, run in a directory where ``./s3:/b/p`` is a local file:
  each is taken or refused by name (exit 2), and nothing on disk changes.
* A missing path gets one message from every command.
* S3 endpoints that accept and never answer, answer slowly, or refuse: each fails (or
  succeeds) within the bound, with a message that says which — real loopback sockets, and a
  delaying proxy in front of the real SeaweedFS.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import BinaryIO, Iterator

import pytest

import spillscope
from spillscope.frontends.cli.main import main
from spillscope.storage import (ObjectInfo, Reader, RootGone, RootProblem, Storage, UnsupportedRoot, open_storage,
                                set_request_timeout)
from spillscope.storage import s3 as s3mod

SRC = Path(spillscope.__file__).parent


@pytest.fixture(autouse=True)
def _request_timeout_reset() -> Iterator[None]:
    """``main([... "--timeout", N])`` sets this process's bound (a CLI run is one process):
    put it back for the next test."""
    yield
    set_request_timeout(None)

#: A root's kind tested from its text: what only storage/ may do.
KIND_TEST = re.compile(
    r"""is_remote\s*\(|is_s3\s*\("""
    r"""|startswith\([^)]*["'](?:s3|gs|gcs|az|abfss?|file|https?|s3a|s3n|r2|memory)[:/]"""
    r"""|["'](?:[a-z0-9]+)?://["']\s+(?:not\s+)?in\b"""
    r"""|==\s*["'](?:s3|gs|gcs|az)(?::[^"']*)?["']|==\s*["']file:""")


def kind_tests(text: str) -> list[str]:
    """The code lines of ``text`` that test a root's kind from its text (comments ignored)."""
    return [line.strip() for line in text.splitlines() if not line.lstrip().startswith("#") and KIND_TEST.search(line)]


def test_kind_tests_live_only_in_storage() -> None:
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "storage":
            continue
        found = kind_tests(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(rel)] = found
    assert not offenders, f"a root's kind tested outside spillscope/storage/: {offenders}"
    # The storage edge itself does test kinds: the check is not blind.
    assert kind_tests((SRC / "storage" / "local.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize("planted", [
    'if root.startswith("s3://"):', "if is_remote(path):", "local = not p.startswith(('file:', 's3:'))",
    'if "://" in root:', 'remote = url.startswith("gs://")', 'if scheme == "s3":',
])
def test_the_kind_check_sees_a_planted_test(planted: str) -> None:
    assert kind_tests(f"def f(root):\n    {planted}\n        pass\n") == [planted]


# -- every command x every scheme form -------------------------------------------------------

#: (form, what a command that takes s3:// says; None: it is taken, then the endpoint is asked).
#: A command that does not take s3:// says so for every form whose scheme is s3 with its //.
FORMS: list[tuple[str, str | None]] = [
    ("s3://b/p", None),
    ("S3://b/p", None),  # a scheme is case-insensitive (RFC 3986): the same root
    ("s3://b/p/", None),
    ("s3:/b/p", "malformed s3:// URL"),
    ("s3:b/p", "malformed s3:// URL"),
    ("s3:///p", "malformed s3:// URL"),
    ("s3://b/../p", "'..' segment"),
    ("gs://b/p", "gs:// roots are not supported"),
    ("GS://b/p", "gs:// roots are not supported"),
    ("http://h/p", "http:// roots are not supported"),
    ("https://h/p", "https:// roots are not supported"),
    ("az://c/p", "az:// roots are not supported"),
    ("s3a://b/p", "s3a:// roots are not supported"),
    ("file:///b/p", "file:// URLs are not taken"),
]

#: How each command is given a root (``ROOT`` replaced); which take s3:// at all.
COMMANDS: dict[str, tuple[list[str], bool]] = {
    "ls": (["ls", "ROOT", "--timeout", "2"], True),
    "ls --json": (["ls", "ROOT", "--json", "--timeout", "2"], True),
    "verify": (["verify", "ROOT", "--timeout", "2"], True),
    "grep": (["grep", "needle", "ROOT", "--timeout", "2"], True),
    "cat": (["cat", "ROOT", "--timeout", "2"], True),
    "stats": (["stats", "ROOT", "--timeout", "2"], True),
    "watch": (["watch", "ROOT", "--timeout", "2"], True),
    "tui": (["tui", "ROOT", "--timeout", "2"], True),
    "ROOT (the TUI)": (["ROOT", "--timeout", "2"], True),
    "serve": (["serve", "ROOT", "--timeout", "2", "--port", "0"], True),
    "prune": (["prune", "ROOT", "--apply"], False),
    "prune (dry run)": (["prune", "ROOT"], False),
    "demo": (["demo", "ROOT", "--no-tui"], False),
    "ls --logs": (["ls", ".", "--logs", "ROOT"], False),
    "verify --logs": (["verify", ".", "--logs", "ROOT"], False),
}


def _tree(where: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(where)): (p.read_bytes() if p.is_file() else None) for p in sorted(where.rglob("*"))}


@pytest.fixture
def url_lookalikes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cwd where every form, read as a local path, names a real file or directory, and an
    S3 endpoint that refuses (the URL forms never reach a store)."""
    for form, _ in FORMS:
        target = tmp_path / form
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("must survive\n")
    session = tmp_path / "s3:" / "session-0123456789ab"  # a spill root to prune, if prune took ./s3:
    session.mkdir(parents=True)
    old = session / "0123456789ab-bash.txt"
    old.write_text("old\n")
    os.utime(old, (0, 0))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_refused_port()}")
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "y"), ("AWS_DEFAULT_REGION", "us-east-1"),
                        ("AWS_CONFIG_FILE", os.devnull), ("AWS_SHARED_CREDENTIALS_FILE", os.devnull)):
        monkeypatch.setenv(name, value)
    s3mod.drop_clients("read")
    yield tmp_path
    s3mod.drop_clients("read")


@pytest.mark.parametrize("form,refusal", FORMS, ids=[f for f, _ in FORMS])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_takes_or_refuses_every_scheme_by_name(
        url_lookalikes: Path, capsys: pytest.CaptureFixture[str], command: str, form: str, refusal: str | None) -> None:
    argv, takes_s3 = COMMANDS[command]
    before = _tree(url_lookalikes)
    started = time.monotonic()
    status = main([form if a == "ROOT" else a for a in argv])
    err = capsys.readouterr().err
    assert status == 2, (command, form, err)
    if not takes_s3 and re.match(r"(?i)s3://[^/]", form):
        expected = f"{'--logs' if command.endswith('--logs') else command.split()[0]} does not support s3:// roots"
    elif refusal is not None:
        expected = refusal
    else:
        expected = "s3://b/p: endpoint unreachable"
    assert expected in err, (command, form, err)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert _tree(url_lookalikes) == before, "a URL was read as a local path"
    assert time.monotonic() - started < 10


def test_prune_of_an_s3_url_deletes_no_lookalike_local_file(url_lookalikes: Path) -> None:
    """The issue's own case, through the real entry point in a child process."""
    before = _tree(url_lookalikes)
    proc = subprocess.run([sys.executable, "-m", "spillscope", "prune", "s3://b/p", "--apply", "--older-than", "1s"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr == "spillscope: prune does not support s3:// roots\n"
    assert _tree(url_lookalikes) == before
    # The local directory of that name is reachable as a path: ./s3:/… is never a URL.
    proc = subprocess.run([sys.executable, "-m", "spillscope", "ls", "./s3:", "--json"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "0123456789ab-bash.txt" in proc.stdout


def test_the_edge_decides_kinds() -> None:
    assert open_storage("S3://Bucket/a/b/").root == "s3://Bucket/a/b"
    assert open_storage("notes:1").tree == os.path.abspath("notes:1")  # a colon alone is a file name
    assert open_storage("./s3:/b/p").tree == os.path.abspath("s3:/b/p")
    store = open_storage("/tmp")
    assert open_storage(store) is store
    for bad in ("s3:", "s3:/b/p", "s3:b", "s3://", "s3://b/../p", "gs://b", "file:///tmp", "http://x/"):
        with pytest.raises(UnsupportedRoot):
            open_storage(bad)
    with pytest.raises(UnsupportedRoot, match="prune does not support s3:// roots"):
        open_storage("s3://b/p", command="prune", supports=("local",))


# -- a missing path: one message everywhere ---------------------------------------------------

MISSING_COMMANDS = [["ls", "M"], ["ls", "M", "--json"], ["verify", "M"], ["grep", "x", "M"], ["stats", "M"],
                    ["tui", "M"], ["M"], ["serve", "M", "--port", "0"], ["prune", "M"], ["prune", "M", "--apply"],
                    ["ls", ".", "--logs", "M"], ["verify", ".", "--logs", "M"], ["prune", "P", "--logs", "M"]]


@pytest.mark.parametrize("argv", MISSING_COMMANDS, ids=" ".join)
def test_a_missing_path_gets_one_message_from_every_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "P").mkdir(mode=0o700)  # an empty spill root prune may take
    status = main(argv)
    assert status == 2
    assert capsys.readouterr().err == "spillscope: M: does not exist\n"


# -- S3 endpoints that do not answer, answer slowly, or refuse ---------------------------------

def _refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def silent_endpoint() -> Iterator[str]:
    """A loopback server that accepts every connection and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


class Proxy:
    """A loopback TCP proxy to ``upstream`` (the real SeaweedFS): each response is held
    ``delay`` seconds before its first byte (a slow endpoint), and once :attr:`silent` is
    set nothing more is passed on either way (an endpoint that stops answering)."""

    def __init__(self, upstream: str, delay: float = 0.0) -> None:
        self.host, port = upstream.split("://", 1)[1].rsplit(":", 1)
        self.port, self.delay = int(port), delay
        self.silent = threading.Event()
        self.stop = threading.Event()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.acceptor = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> Proxy:
        self.acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.acceptor.join()
        self.server.close()

    def _pump(self, src: socket.socket, dst: socket.socket, hold: bool) -> None:
        first = hold
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                if self.silent.is_set():
                    continue  # swallowed: the client waits for an answer that never comes
                if first:
                    time.sleep(self.delay)
                    first = False
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def _accept(self) -> None:
        self.server.settimeout(0.1)
        while not self.stop.is_set():
            try:
                client = self.server.accept()[0]
            except OSError:
                continue
            up = socket.create_connection((self.host, self.port))
            for args in ((client, up, False), (up, client, True)):
                threading.Thread(target=self._pump, args=args, daemon=True).start()


def _run(argv: list[str], endpoint: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    full = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID=os.environ.get("AWS_ACCESS_KEY_ID", "x"),
                AWS_SECRET_ACCESS_KEY=os.environ.get("AWS_SECRET_ACCESS_KEY", "y"), AWS_DEFAULT_REGION="us-east-1",
                AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, **env)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "spillscope", *argv], capture_output=True, text=True, timeout=120,
                          env=full)
    return proc, time.monotonic() - started


SILENT_COMMANDS = [["ls", "s3://b/p"], ["verify", "s3://b/p"], ["grep", "x", "s3://b/p"], ["cat", "s3://b/p/k"],
                   ["stats", "s3://b/p"], ["watch", "s3://b/p"], ["tui", "s3://b/p"]]


@pytest.mark.parametrize("argv", SILENT_COMMANDS, ids=" ".join)
def test_a_silent_endpoint_fails_within_the_timeout(argv: list[str]) -> None:
    with silent_endpoint() as endpoint:
        proc, took = _run([*argv, "--timeout", "1"], endpoint)
    assert proc.returncode == 2, proc.stderr
    assert "did not answer within 1 s" in proc.stderr and "--timeout SECONDS" in proc.stderr, proc.stderr
    assert took < 1 + 1 + 5  # the bound, botocore's backoff (under 1 s), the interpreter's start


def test_the_environment_sets_the_bound_and_a_bad_value_is_named() -> None:
    with silent_endpoint() as endpoint:
        proc, took = _run(["ls", "s3://b/p"], endpoint, SPILLSCOPE_S3_TIMEOUT="0.8")
        assert proc.returncode == 2 and "did not answer within 0.8 s" in proc.stderr, proc.stderr
        assert took < 0.8 + 1 + 5
        proc, _ = _run(["ls", "s3://b/p"], endpoint, SPILLSCOPE_S3_TIMEOUT="soon")
        assert proc.returncode == 2 and "SPILLSCOPE_S3_TIMEOUT='soon': not a positive number" in proc.stderr, proc.stderr
    proc, _ = _run(["ls", "s3://b/p", "--timeout", "0"], "http://127.0.0.1:9")
    assert proc.returncode == 2 and "must be more than 0 seconds" in proc.stderr


def test_the_default_bound_holds() -> None:
    """No --timeout, no environment: a silent endpoint still fails, in about 15 s (not 181)."""
    env = {k: v for k, v in os.environ.items() if k != "SPILLSCOPE_S3_TIMEOUT"}
    with silent_endpoint() as endpoint, _environ(env):
        proc, took = _run(["ls", "s3://b/p"], endpoint)
    assert proc.returncode == 2 and "did not answer within 15 s" in proc.stderr, proc.stderr
    assert 7 <= took < 15 + 1 + 5


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.mark.parametrize("argv", [["ls", "s3://b/p"], ["watch", "s3://b/p"], ["grep", "x", "s3://b/p"]], ids=" ".join)
def test_a_refused_endpoint_is_unreachable_at_once(argv: list[str]) -> None:
    proc, took = _run(argv, f"http://127.0.0.1:{_refused_port()}")
    assert proc.returncode == 2 and "endpoint unreachable" in proc.stderr, proc.stderr
    assert "waiting" not in proc.stderr  # watch does not wait for an endpoint that refuses
    assert took < 10


def test_a_slow_endpoint_is_waited_for_within_the_bound(s3_bucket: str, s3_server) -> None:  # type: ignore[no-untyped-def]
    import boto3

    boto3.client("s3").put_object(Bucket=s3_bucket, Key="p/session-0123456789ab/0123456789ab-bash.txt", Body=b"hi")
    with Proxy(s3_server.endpoint, 0.4) as proxy:
        endpoint = proxy.url
        proc, _ = _run(["ls", f"s3://{s3_bucket}/p", "--json", "--timeout", "4"], endpoint)
        assert proc.returncode == 0, proc.stderr
        assert "0123456789ab-bash.txt" in proc.stdout
        proc, took = _run(["ls", f"s3://{s3_bucket}/p", "--timeout", "0.3"], endpoint)
        assert proc.returncode == 2 and "did not answer within 0.3 s" in proc.stderr, proc.stderr


async def test_the_tui_says_stale_with_the_reason_when_the_store_stops_answering(
        tmp_path: Path, s3_bucket: str, s3_server, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from spillscope.frontends.demo import write_demo
    from spillscope.frontends.tui.app import SpillscopeApp
    from test_inspect_s3 import upload
    from test_tui import status_text, wait_for

    demo = write_demo(tmp_path / "demo")
    upload(demo.root, s3_bucket, "demo")
    with Proxy(s3_server.endpoint) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        monkeypatch.setenv("SPILLSCOPE_S3_TIMEOUT", "1")
        monkeypatch.setenv("SPILLSCOPE_S3_POLL_SECONDS", "0.3")
        s3mod.drop_clients("read")
        try:
            app = SpillscopeApp(f"s3://{s3_bucket}/demo", str(demo.logs), rebase=str(demo.root))
            async with app.run_test(size=(200, 40)) as pilot:
                await wait_for(pilot, lambda: app.watch_state == "live" and app.verified, timeout=30)
                proxy.silent.set()
                started = time.monotonic()
                # wait_for runs the app's loop: the interface keeps answering while the store does not.
                await wait_for(pilot, lambda: app.watch_state == "stale", timeout=15)
                assert time.monotonic() - started < 1 + 0.3 + 6
                assert "did not answer within 1 s" in (app.watch_detail or "")
                assert "stale since" in status_text(app) and "live" not in status_text(app)
                await pilot.press("down")  # keys are still handled
        finally:
            s3mod.drop_clients("read")


# -- a third kind of store is one module and one registration line --------------------------

class MemoryStorage(Storage):
    """An object store held in this process (``mem://name``): the whole interface a kind
    implements, and nothing registered anywhere but :data:`BACKENDS`."""

    scheme = "mem://"
    #: name → {key: (bytes, mtime)}
    buckets: dict[str, dict[str, tuple[bytes, float]]] = {}

    def __init__(self, text: str, *, timeout: float | None = None) -> None:
        super().__init__(text.rstrip("/"))
        # ``mem://NAME[/key]``: an artifact's own name opens its store too (cat, the reader).
        self.name = self.root[len(self.scheme):].partition("/")[0]
        self.base = self.scheme + self.name

    def _get(self, path: str) -> tuple[bytes, float]:
        try:
            return self.buckets[self.name][path[len(self.base) + 1:]]
        except KeyError:
            raise FileNotFoundError(2, "no such object", path) from None

    def problem(self) -> RootProblem | None:
        return None if self.name in self.buckets else RootProblem(f"{self.root}: no such store", missing=True)

    def objects(self) -> Iterator[ObjectInfo]:
        if self.name not in self.buckets:
            raise RootGone("no such store")
        for key, (data, mtime) in sorted(self.buckets[self.name].items()):
            yield ObjectInfo(key, f"{self.root}/{key}", len(data), mtime, str(hash(data)))

    def describe_error(self, exc: BaseException) -> str:
        return str(exc)

    def open_reader(self, path: str) -> Reader:
        data = self._get(path)[0]

        class _Reader:
            def pread(self, size: int, offset: int) -> bytes:
                return data[offset:offset + size]

            def close(self) -> None:
                pass

        return _Reader()

    def open_sized(self, path: str, buffering: int = 1 << 20) -> tuple[BinaryIO, int]:
        data = self._get(path)[0]
        return io.BufferedReader(io.BytesIO(data), buffer_size=buffering), len(data)  # type: ignore[arg-type]

    def size(self, path: str) -> int:
        return len(self._get(path)[0])

    def resolve(self, locator: str) -> tuple[str | None, str]:
        if not locator.startswith(self.root + "/"):
            return None, "locator is outside the inspected root"
        return locator, ""


def test_a_third_kind_of_store_is_one_class_and_one_registration_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from spillscope.frontends.demo import write_demo
    from spillscope.inspect.watch.poll import PollingWatcher
    from spillscope.inspect.watch.root import open_watcher
    from spillscope.storage import BACKENDS

    demo = write_demo(tmp_path / "demo")
    MemoryStorage.buckets["demo"] = {str(p.relative_to(demo.root)): (p.read_bytes(), p.stat().st_mtime)
                                     for p in demo.root.rglob("*") if p.is_file()}
    monkeypatch.setitem(BACKENDS, "mem", f"{__name__}:MemoryStorage")  # the one line
    try:
        assert main(["ls", str(demo.root), "--json"]) == 0
        local = json.loads(capsys.readouterr().out)
        assert main(["ls", "mem://demo", "--json"]) == 0
        remote = json.loads(capsys.readouterr().out)
        names = [[a["name"] for a in s["artifacts"]] for s in remote["sessions"]]
        # The same artifacts, session by session (an object store has no empty "dir").
        assert names == [n for n in ([a["name"] for a in s["artifacts"]] for s in local["sessions"]) if n] and names
        # grep reads the objects through the store; cat by name; watch polls its listing.
        assert main(["grep", "the", "mem://demo", "--json"]) == 0
        hits = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert hits and all(h["path"].startswith("mem://demo/") for h in hits)
        assert main(["cat", hits[0]["path"]]) == 0 and capsys.readouterr().out
        assert isinstance(open_watcher("mem://demo"), PollingWatcher)
        # And a command that takes local directories only says so, by name.
        assert main(["prune", "mem://demo"]) == 2
        assert capsys.readouterr().err == "spillscope: prune does not support mem:// roots\n"
    finally:
        MemoryStorage.buckets.pop("demo", None)
