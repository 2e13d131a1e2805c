"""Shared test helpers: where the upstream fixtures live and how to rebase their locators."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
#: The machine's temp dir, taken before the run points TMPDIR at a private (0700) one:
#: a test that runs a command as another user (nobody) needs a dir that user can reach.
SYSTEM_TMP = tempfile.gettempdir()


def _find_fixtures() -> Path:
    env = os.environ.get("SPILLSCOPE_UPSTREAM_FIXTURES")
    candidates = [Path(env)] if env else []
    candidates += [REPO / "tests" / "fixtures" / "upstream", REPO.parent / "shared" / "fixtures" / "upstream"]
    for c in candidates:
        if (c / "manifest.json").is_file():
            return c
    raise RuntimeError("upstream fixtures not found")


UPSTREAM = _find_fixtures()


@pytest.fixture(scope="session")
def manifest() -> dict[str, Any]:
    return json.loads((UPSTREAM / "manifest.json").read_text("utf-8"))


@pytest.fixture(scope="session")
def vectors() -> dict[str, Any]:
    return json.loads((UPSTREAM / "vectors.json").read_text("utf-8"))


@pytest.fixture
def same_length_root():
    """A fresh root whose absolute path is as long as the upstream one (/tmp/dsh-spill-XXXXXX),
    so previews computed against it have the same byte budget as upstream's."""
    while True:
        root = Path("/tmp/dsh-spill-" + secrets.token_hex(3))
        try:
            root.mkdir(mode=0o700)
            break
        except FileExistsError:
            continue
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def upstream_copy(tmp_path: Path, manifest: dict[str, Any]) -> tuple[Path, Path]:
    """A writable copy of the upstream spill root and session logs, with the logged
    locators rewritten onto the copy (same rule as fixtures/README: rebase onto spill-root/)."""
    root = tmp_path / "spill-root"
    logs = tmp_path / "sessions"
    shutil.copytree(UPSTREAM / "spill-root", root)
    shutil.copytree(UPSTREAM / "sessions", logs)
    original = manifest["spillRoot"]["originalRoot"]
    for log in logs.rglob("session*.jsonl"):
        data = log.read_bytes()
        log.write_bytes(data.replace(original.encode(), str(root).encode()))
    for d in [root, *root.iterdir()]:
        d.chmod(0o700)
    for f in root.rglob("*.txt"):
        f.chmod(0o600)
    return root, logs


@pytest.fixture(autouse=True)
def _private_default_roots(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every LocalSpillStore starts an expiry sweep that discovers prior default roots in the
    temp dir: point that at an empty per-test dir so no test sweeps the machine's /tmp."""
    from spillscope.spill import local

    base = tmp_path_factory.mktemp("default-roots")
    monkeypatch.setattr(local, "default_roots_base", lambda: str(base))
    monkeypatch.setattr(local, "_private_root", None)


@pytest.fixture
def nobody_tmp():
    """A fresh dir in the sticky temp dir owned by ``nobody`` (65534): below it, nobody's
    ancestors are safe for the expiry sweep. Needs root (CI runs as root)."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="spillscope-nobody-", dir=SYSTEM_TMP))  # not the run's private 0700 temp dir: nobody must reach it
    try:
        os.chown(base, 65534, 65534)
    except PermissionError:
        shutil.rmtree(base)
        pytest.skip("making a dir owned by nobody needs root")
    yield base
    shutil.rmtree(base)


@pytest.fixture(scope="session", autouse=True)
def _private_temp_dir(tmp_path_factory):
    """Every test, its subprocesses and kernels get a temp dir of the test run's own: the
    user's `spillscope demo` (in the real temp dir) is never rewritten under an open TUI,
    whatever a test forgets to pass. It sits in the machine's temp dir and others may
    traverse it (0755, like /tmp without the write bit), so a test that runs a command as
    another user (nobody) can still reach the dirs it makes there."""
    # pytest's own tmp_path base stays where it was (its paths' lengths are part of some
    # tests' byte budgets): fix it before the temp dir moves.
    tmp_path_factory.getbasetemp()
    private = Path(tempfile.mkdtemp(prefix="spillscope-tests-", dir=SYSTEM_TMP))
    private.chmod(0o755)
    old_env, old_cached = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = str(private)
    tempfile.tempdir = str(private)
    try:
        yield private
    finally:
        tempfile.tempdir = old_cached
        if old_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = old_env
        for d, _, _ in os.walk(private):  # a test may leave a dir it made unreadable
            try:
                os.chmod(d, 0o755)
            except OSError:
                pass
        shutil.rmtree(private, ignore_errors=True)


@pytest.fixture(scope="session")
def s3_server():
    """A real SeaweedFS S3 server on loopback for the whole test session (tests/s3server.py),
    with the standard AWS_* variables pointing at it; stopped (its whole process group)
    at the end, also on failure or interrupt."""
    from s3server import weed_server

    saved = dict(os.environ)
    with weed_server() as server:
        os.environ.update(server.env())
        try:
            yield server
        finally:
            os.environ.clear()
            os.environ.update(saved)


@pytest.fixture
def s3_bucket(s3_server) -> str:
    """A fresh, empty bucket on the session's server (its name)."""
    from s3server import create_bucket

    name = "t-" + secrets.token_hex(6)
    create_bucket(s3_server, name)
    return name


@pytest.fixture(params=["avx2", "avx512"])
def nat(request):
    """The accelerator with the AVX-512BW twins of its kernels off (AVX2) and on, where the CPU
    has them (a test file's own ``nat`` fixture takes precedence)."""
    from spillscope.util import native

    if native.NATIVE is None or not native.NATIVE.simd():
        pytest.skip("these kernels need the C accelerator with AVX2")
    was = native.NATIVE.avx512()
    if native.NATIVE.avx512(request.param == "avx512") != (request.param == "avx512"):
        native.NATIVE.avx512(was)
        pytest.skip("this CPU has no AVX-512BW")
    yield native.NATIVE
    native.NATIVE.avx512(was)
