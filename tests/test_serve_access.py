"""`spillscope serve` lets in the operator's own browser and nothing else (issue 23 item 1).

One real server, real HTTP and WebSocket clients (aiohttp), and every request kind the
server has (the page, a static file, the app's WebSocket, a download) sent with each
hostile ``Origin`` and ``Host`` of a generated class, and without the token: each must be
refused with 403, and a refused WebSocket must start no app. The positive controls (the
right host, origin and token) are checked against the same server, so a server that
refused everything could not pass.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from pathlib import Path

import pytest

from procs import children
from served import Served, wait

pytest.importorskip("textual_serve")
aiohttp = pytest.importorskip("aiohttp")

FIXTURE = "5a5ecd9a2f51-session-reference-1.txt"


def one_transcript_root(base: Path) -> tuple[Path, Path]:
    """A spill root holding one upstream transcript: Down, Down, Enter opens it in the reader."""
    from conftest import UPSTREAM

    root = base / "root"
    session = root / "session-5a5ecd9a2f51"
    session.mkdir(parents=True)
    src = next((UPSTREAM / "spill-root").rglob(FIXTURE))
    art = session / FIXTURE
    art.write_bytes(src.read_bytes())
    os.chmod(root, 0o700)
    os.chmod(session, 0o700)
    os.chmod(art, 0o600)
    return root, art


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root, _ = one_transcript_root(tmp_path_factory.mktemp("serve-access"))
    served = Served(root)
    try:
        yield served
    finally:
        served.stop()


def hostile_origins(port: int) -> list[str]:
    return [
        "http://evil.example", f"http://evil.example:{port}", "null", "file://", "",
        f"http://127.0.0.1:{port + 1}",  # the right host, another port (another local server)
        "http://127.0.0.1", "http://localhost", "http://[::1]",  # no port: port 80
        f"http://127.0.0.1.evil.example:{port}", f"http://localhost.evil.example:{port}",
        f"http://127.0.0.1:{port}.evil.example", f"http://evil.example/127.0.0.1:{port}",
        f"https://127.0.0.1:{port}", f"https://localhost:{port}",  # https is another origin
        f"ws://127.0.0.1:{port}", f"http://127.0.0.2:{port}", f"http://0.0.0.0:{port}",
        f"http://127.0.0.1:{port}, http://evil.example",
    ]


def hostile_hosts(port: int) -> list[str]:
    return [
        "evil.example", f"evil.example:{port}",  # a rebound name
        f"127.0.0.1.evil.example:{port}", f"localhost.evil.example:{port}", f"127.0.0.1:{port}.evil.example",
        f"127.0.0.1:{port + 1}", "127.0.0.1", "localhost", f"127.0.0.2:{port}", f"0.0.0.0:{port}",
        f"evil.example@127.0.0.1:{port}", f"127.0.0.1:{port} evil.example", "",
    ]


def request_kinds(server: Served) -> dict[str, str]:
    """Every kind of request the server answers, each with the right token."""
    t = server.token
    return {
        "page": f"/?token={t}",
        "static": f"/static/js/textual.js?token={t}",
        "websocket": f"/ws?width=80&height=24&token={t}",
        "download": f"/download/0123456789abcdef?token={t}",
    }


async def status(server: Served, path: str, headers: dict[str, str], *, ws: bool) -> int:
    """The HTTP status the server answers ``path`` with (a WebSocket that opens: 101)."""
    url = f"http://127.0.0.1:{server.port}{path}"
    async with aiohttp.ClientSession() as session:
        if ws:
            try:
                async with session.ws_connect(url, headers=headers, timeout=aiohttp.ClientWSTimeout(ws_close=2)):
                    return 101
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status
        async with session.get(url, headers=headers, allow_redirects=False) as resp:
            await resp.read()
            return resp.status


def _check_refused(server: Served, cases: list[tuple[str, str, dict[str, str]]]) -> None:
    before = set(children(server.proc.pid))
    accepted = []

    async def run() -> None:
        for what, path, headers in cases:
            code = await status(server, path, headers, ws=path.startswith("/ws"))
            if code != 403:
                accepted.append((what, headers, code))

    asyncio.run(run())
    assert accepted == [], accepted
    # A refused WebSocket started no app (none is running: nothing else connected).
    time.sleep(0.3)
    assert set(children(server.proc.pid)) - before == set()


def test_hostile_origins_are_refused_on_every_request_kind(server):
    cases = [(f"{kind} from {origin!r}", path, {"Origin": origin})
             for origin in hostile_origins(server.port) for kind, path in request_kinds(server).items()]
    # A WebSocket must name its origin (every browser does).
    cases.append(("websocket without Origin", request_kinds(server)["websocket"], {}))
    _check_refused(server, cases)


def test_rebound_and_wrong_hosts_are_refused_on_every_request_kind(server):
    origin = {"Origin": server.origin}
    cases = [(f"{kind} for Host {host!r}", path, {**origin, "Host": host})
             for host in hostile_hosts(server.port) for kind, path in request_kinds(server).items()]
    # The rebinding attack proper: the attacker's name, with the attacker's page as origin.
    cases += [(f"{kind} rebound", path, {"Host": f"evil.example:{server.port}",
                                          "Origin": f"http://evil.example:{server.port}"})
              for kind, path in request_kinds(server).items()]
    _check_refused(server, cases)


def test_another_sites_page_cannot_embed_or_fetch_even_with_the_cookie(server):
    """Another port of 127.0.0.1 is the same *site* (the SameSite cookie goes with its
    requests, and an <img> or <script> sends no Origin): the browser's Sec-Fetch headers
    say where a request comes from, and only a top-level navigation may come from elsewhere."""
    cookie = {"Cookie": f"spillscope-token-{server.port}={server.token}"}
    cases = []
    for site in ("same-site", "cross-site"):
        for mode, dest in (("no-cors", "image"), ("no-cors", "script"), ("cors", "empty"), ("navigate", "iframe"),
                           ("no-cors", "style"), ("websocket", "websocket")):
            headers = {**cookie, "Sec-Fetch-Site": site, "Sec-Fetch-Mode": mode, "Sec-Fetch-Dest": dest}
            cases += [(f"{kind} as {site} {dest}", re.sub(r"[?&]token=[^&]*", "", path),
                       {**headers, **({"Origin": server.origin} if kind == "websocket" else {})})
                      for kind, path in request_kinds(server).items()]
    _check_refused(server, cases)

    async def navigate() -> int:  # a link to the printed URL on another site's page still opens it
        return await status(server, request_kinds(server)["page"], {
            "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, ws=False)

    assert asyncio.run(navigate()) == 200


def test_every_request_kind_needs_the_token(server):
    good = {"Origin": server.origin}
    wrong = ["", "x", server.token[:-1], server.token + "x", server.token.upper(), "é" * 43, "%00"]
    cases = []
    for kind, path in request_kinds(server).items():
        bare = re.sub(r"[?&]token=[^&]*", "", path)
        sep = "&" if "?" in bare else "?"
        cases.append((f"{kind} without a token", bare, good))
        cases += [(f"{kind} with token {w!r}", f"{bare}{sep}token={w}", good) for w in wrong]
        # Another port's cookie (cookies are per host, not per port) does not open this one.
        cases.append((f"{kind} with another server's cookie", bare,
                      {**good, "Cookie": f"spillscope-token-{server.port + 1}={server.token}"}))
        cases.append((f"{kind} with a wrong cookie", bare, {**good, "Cookie": f"spillscope-token-{server.port}=x"}))
    _check_refused(server, cases)


def test_the_right_browser_gets_in_with_the_token_then_its_cookie(server):
    """The positive control: the printed URL opens the page, sets the cookie, and the page's
    own requests (no token in their URLs) and the WebSocket get through with it."""
    assert re.fullmatch(rf"http://127\.0\.0\.1:{server.port}/\?token=[A-Za-z0-9_-]{{43}}", server.url), server.url

    async def run() -> None:
        # unsafe: keep cookies for an IP address, as a browser does.
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            async with session.get(server.url) as resp:
                assert resp.status == 200
                page = await resp.text()
                cookie = resp.cookies[f"spillscope-token-{server.port}"]
                assert cookie.value == server.token and cookie["httponly"] and cookie["samesite"] == "Strict"
                assert resp.headers["X-Frame-Options"] == "DENY" and resp.headers["Referrer-Policy"] == "no-referrer"
            # The page's URLs name the host the browser used (the cookie is per host).
            assert f'data-session-websocket-url="ws://127.0.0.1:{server.port}/ws"' in page
            base = f"http://127.0.0.1:{server.port}"
            async with session.get(f"{base}/static/js/textual.js") as resp:  # with the cookie alone
                assert resp.status == 200
            async with session.ws_connect(f"{base}/ws?width=80&height=24", origin=server.origin) as ws:
                msg = await ws.receive(timeout=30)
                assert msg.type == aiohttp.WSMsgType.BINARY  # the app draws
        # Other loopback names of the same server work too (a browser may use any).
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{server.port}/?token={server.token}"
            async with session.get(url, headers={"Host": f"localhost:{server.port}",
                                                 "Origin": f"http://localhost:{server.port}"}) as resp:
                assert resp.status == 200
                assert f"ws://localhost:{server.port}/ws" in await resp.text()

    asyncio.run(run())
    assert "refused" in server.stderr()  # the refusals of the tests above were logged


def test_each_run_has_its_own_token(tmp_path):
    root, _ = one_transcript_root(tmp_path)
    a, b = Served(root), Served(root)
    try:
        assert a.token and b.token and a.token != b.token
    finally:
        a.stop()
        b.stop()


def test_port_zero_prints_the_real_port(tmp_path):
    root, _ = one_transcript_root(tmp_path)
    served = Served(root, port=0)
    try:
        m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/\?token=\S+", served.url)
        assert m and int(m.group(1)) != 0, served.url
    finally:
        served.stop()


ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


class Tab:
    """A browser tab's socket: keys in, the screen's text and the app's messages out."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.screen = bytearray()
        self.texts: list[str] = []

    def text(self, since: int = 0) -> str:
        return ANSI.sub(b"", bytes(self.screen[since:])).decode("utf-8", "replace")

    async def pump(self, until, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if until():
                return True
            try:
                msg = await self.ws.receive(timeout=0.25)
            except asyncio.TimeoutError:
                continue
            if msg.type == aiohttp.WSMsgType.BINARY:
                self.screen.extend(msg.data)
            elif msg.type == aiohttp.WSMsgType.TEXT:
                self.texts.append(msg.data)
            else:
                return until()
        return until()

    async def keys(self, *keys: str, settle: float = 0.5) -> None:
        for key in keys:
            await self.ws.send_json(["stdin", key])
            await self.pump(lambda: False, settle)

    def deliveries(self) -> list[str]:
        import json

        return [m[1] for m in map(json.loads, self.texts) if m and m[0] == "deliver_file_start"]


def test_the_export_key_in_a_browser_writes_nothing_on_the_server(tmp_path):
    """Through the app's socket, `e` (then Enter: the old prompt's default, a file in the
    server's cwd) and `e` with a typed path write nothing on the server: the message
    goes to the browser as a download, its exact UTF-8."""
    from spillscope.formats.transcript.reader import read_transcript
    from spillscope.util.text import js_utf8

    root, art = one_transcript_root(tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    typed = tmp_path / "typed" / "written-by-a-browser.txt"
    typed.parent.mkdir()
    served = Served(root, cwd=cwd)
    downloads: list[bytes] = []

    async def run() -> None:
        base = f"http://127.0.0.1:{served.port}"
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{base}/ws?width=120&height=30&token={served.token}",
                                          origin=served.origin) as ws:
                tab = Tab(ws)
                assert await tab.pump(lambda: FIXTURE in tab.text(), 60), tab.text()[-2000:]
                mark = len(tab.screen)
                await tab.keys("\x1b[B", "\x1b[B", "\r")  # Down, Down, Enter: the reader
                assert await tab.pump(lambda: "msg 1/" in tab.text(mark), 30), tab.text(mark)[-2000:]
                await tab.keys("e", settle=1.5)
                await tab.keys("\r", settle=1.5)
                await tab.keys("e", settle=1.5)
                await tab.keys("\x15", *str(typed), "\r", settle=0.1)
                await tab.pump(lambda: False, 2)
                for key in tab.deliveries():
                    async with session.get(f"{base}/download/{key}?token={served.token}") as resp:
                        assert resp.status == 200
                        assert "attachment" in resp.headers["Content-Disposition"]
                        downloads.append(await resp.read())

    try:
        asyncio.run(run())
    finally:
        served.stop()
    # (in the server's cwd, at the path it typed): nothing
    written = (sorted(p.name for p in cwd.iterdir()), typed.exists())
    assert written == ([], False), f"the browser wrote on the server: {written}"
    assert downloads, "the export reached the browser as no download"
    assert downloads[0] == js_utf8(read_transcript(art).messages[0].text)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stopping_serve_leaves_no_temp_dir(tmp_path, sig):
    root, _ = one_transcript_root(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    served = Served(root, env={**os.environ, "TMPDIR": str(tmp)})
    try:
        async def connect() -> None:
            async with aiohttp.ClientSession() as session:
                async with session.ws_connect(f"http://127.0.0.1:{served.port}/ws?token={served.token}",
                                              origin=served.origin) as ws:
                    await ws.receive(timeout=30)  # an app is running

        asyncio.run(connect())
        served.proc.send_signal(sig)
        assert wait(lambda: served.proc.poll() is not None, 60), "serve did not stop"
    finally:
        served.stop()
    assert sorted(p.name for p in tmp.iterdir()) == []


async def test_with_an_export_dir_the_export_key_writes_only_under_it(tmp_path):
    """`serve --allow-export DIR` runs each tab's app as `tui --export-dir DIR`: the prompt
    offers DIR, and a typed path outside it (or through a symlink out of it) is refused."""
    from textual.widgets import Input

    from spillscope.frontends.tui.app import SpillscopeApp
    from spillscope.frontends.tui.reader import ReaderScreen

    root, _ = one_transcript_root(tmp_path)
    allowed, outside = tmp_path / "exports", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "out").symlink_to(outside)
    app = SpillscopeApp(str(root), None, watch=False, export_dir=str(allowed))
    async with app.run_test(size=(120, 30)) as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            if app.verified:
                break
        await pilot.press("down", "down", "enter")
        for _ in range(200):
            await pilot.pause(0.05)
            if isinstance(app.screen, ReaderScreen):
                break

        async def export(path: str | None) -> None:
            await pilot.press("e")
            await pilot.pause(0.2)
            prompt = app.screen.query_one(Input)
            if path is None:
                assert prompt.value == str(allowed / f"{FIXTURE}.message-1.txt")
            else:
                prompt.value = path
            await pilot.press("enter")
            await pilot.pause(0.3)

        await export(None)
        for path in (tmp_path / "x.txt", outside / "x.txt", allowed / "out" / "x.txt", allowed / ".." / "y.txt",
                     allowed):
            await export(str(path))
        await pilot.pause(0.3)
    assert sorted(p.name for p in allowed.iterdir()) == [f"{FIXTURE}.message-1.txt", "out"]
    assert list(outside.iterdir()) == [] and not (tmp_path / "x.txt").exists() and not (tmp_path / "y.txt").exists()


def test_serve_passes_the_export_dir_on_only_when_given(tmp_path):
    from spillscope.frontends.serve.server import app_command

    assert "--export-dir" not in app_command(str(tmp_path), None, None, None, None)
    assert app_command(str(tmp_path), None, None, None, str(tmp_path)).endswith(f" --export-dir {tmp_path}")


def test_serve_without_its_extra_says_so_first_and_exits_2(tmp_path):
    """Checked before anything is printed or bound: no "serving …" line, exit 2."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['textual_serve'] = None\n"
            "from spillscope.frontends.cli.main import main\n"
            f"sys.exit(main(['serve', {str(tmp_path)!r}, '--port', '0']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode() == ("spillscope: serve needs the serve extra: pip install 'spillscope[serve]' "
                                    "(textual-serve is not installed)\n")


def test_the_hosts_a_server_answers_to_follow_its_bind_address():
    from spillscope.frontends.serve.access import Access

    loop = Access.for_bind("127.0.0.1", 8000, token="t")
    assert loop.hosts == {"127.0.0.1:8000", "localhost:8000", "[::1]:8000"}
    assert loop.url("127.0.0.1") == "http://127.0.0.1:8000/?token=t"
    six = Access.for_bind("::1", 8000, token="t")
    assert "[::1]:8000" in six.hosts and six.url("::1") == "http://[::1]:8000/?token=t"
    lan = Access.for_bind("192.0.2.7", 8000, token="t")
    assert "192.0.2.7:8000" in lan.hosts and "192.0.2.8:8000" not in lan.hosts
    assert lan.url("192.0.2.7") == "http://192.0.2.7:8000/?token=t"
    every = Access.for_bind("0.0.0.0", 8000, token="t")
    assert loop.hosts <= every.hosts and every.url("0.0.0.0") == "http://127.0.0.1:8000/?token=t"
    web = Access.for_bind("127.0.0.1", 80, token="t")  # a browser leaves port 80 out
    assert {"127.0.0.1", "127.0.0.1:80"} <= web.hosts and web.url("127.0.0.1") == "http://127.0.0.1/?token=t"
    assert web.refusal(host="localhost", origin="http://localhost", query="token=t", cookie=None,
                       websocket=True) is None
    # Tokens differ per run and are never compared as str (a hostile one need not be ASCII).
    assert Access.for_bind("127.0.0.1", 1).token != Access.for_bind("127.0.0.1", 1).token
    assert not loop.token_matches("\udcff") and not loop.token_matches("é") and loop.token_matches("t")
