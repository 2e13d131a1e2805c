"""The server: textual-serve's ``Server`` with every request checked (access.py), its page
made offline, the URL with the token printed once it listens, and a clean end.

textual-serve's page links one web font from a CDN. The page is served from a copy of its
template, held in memory (no temp dir to leave behind, even on SIGKILL), with that link
replaced by an ``@font-face`` on the Roboto Mono textual-serve already ships in its static
files, so nothing is fetched from outside.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import re
import shlex
import signal
import socket
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable, TextIO

from ...storage import normalize_root
from ...util.text import visible
from .access import Access, is_loopback, url_host

CDN_LINK = re.compile(r'<link[^>]*href="https?://fonts\.googleapis\.com[^"]*"[^>]*/?>', re.S)
LOCAL_FONT = """<style>
      @font-face { font-family: "Roboto Mono"; font-style: normal;
        src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }
      @font-face { font-family: "Roboto Mono"; font-style: italic;
        src: url("{{ config.static.url }}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }
    </style>"""

MISSING_EXTRA = "serve needs the serve extra: pip install 'spillscope[serve]' (textual-serve is not installed)"

#: Headers on every response: the app is never framed by another page (clickjacking), a
#: URL with the token never leaves in a Referer, and nothing is sniffed into another type.
SAFE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


class MissingServeExtra(ImportError):
    """textual-serve is not installed: ``str(exc)`` is the one-line fix."""


def require_textual_serve() -> None:
    """Raise :class:`MissingServeExtra` unless the serve extra is importable (checked
    before anything is printed or bound)."""
    try:
        importlib.import_module("textual_serve.server")  # (it imports aiohttp)
    except ImportError:
        raise MissingServeExtra(MISSING_EXTRA) from None


def offline_templates() -> dict[str, str]:
    """textual-serve's templates, by name, with every CDN reference made local."""
    import textual_serve

    source = Path(textual_serve.__file__).parent / "templates"
    templates: dict[str, str] = {}
    for template in source.iterdir():
        text = CDN_LINK.sub(LOCAL_FONT, template.read_text("utf-8"))
        if re.search(r'(src|href)="https?://', text):
            raise RuntimeError(f"{template.name} still loads something from the internet")
        templates[template.name] = text
    return templates


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0: any free one), bound before anything
    is printed, so the URL names the real port and a busy port is an error, not a lie."""
    infos = socket.getaddrinfo(url_host(host).strip("[]") or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    return socket.create_server(address[:2], family=family)


def app_command(root: str, logs: str | None, rebase: str | None, limits: dict[str, int] | None,
                export_dir: str | None, timeout: float | None = None, agent: str | None = None) -> str:
    """The command textual-serve runs for each tab: ``spillscope tui`` on the same root (with
    ``--agent``: another agent's tree, as the server's own detection decided it)."""
    command = [sys.executable, "-m", "spillscope", "tui", normalize_root(root)]
    if agent is not None:
        command += ["--agent", agent]
    if logs:
        command += ["--logs", os.path.abspath(logs)]
    if rebase:
        command += ["--rebase", rebase]
    if export_dir:
        command += ["--export-dir", os.path.abspath(export_dir)]
    if timeout is not None:
        command += ["--timeout", repr(timeout)]
    for name, value in (limits or {}).items():
        command += ["--" + name.replace("_", "-"), str(value)]
    # `exec`: the app is the server's own child (no shell between them), so it can die
    # with the server (see webguard) and the server can end it.
    return "exec " + shlex.join(command)


def _guarded_server(command: str, access: Access, err: TextIO) -> Any:
    """textual-serve's Server, subclassed where it builds its aiohttp app and its page."""
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.server import Server, to_int

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        # The app's socket by its route, not only by a header a client may leave out.
        websocket = request.path == "/ws" or request.headers.get("Upgrade", "").lower() == "websocket"
        why = access.refusal(host=request.headers.get("Host"), origin=request.headers.get("Origin"),
                             query=request.query_string, cookie=request.headers.get("Cookie"),
                             websocket=websocket, fetch_site=request.headers.get("Sec-Fetch-Site"),
                             fetch_mode=request.headers.get("Sec-Fetch-Mode"),
                             fetch_dest=request.headers.get("Sec-Fetch-Dest"))
        if why is not None:
            err.write(visible(f"spillscope serve: refused {request.method} {request.path}: {why}", one_line=True)
                      + "\n")
            err.flush()
            return web.Response(status=403, text=f"403 Forbidden: {why}\n")
        response = await handler(request)
        if access.token_matches(request.query.get("token")) and not response.prepared:
            # The page's own requests (static files, the WebSocket, downloads) carry no
            # token in their URLs: the cookie carries it. Strict: never sent by another site.
            response.set_cookie(access.cookie_name, access.token, httponly=True, samesite="Strict", path="/")
        return response

    async def safe_headers(request: web.Request, response: web.StreamResponse) -> None:
        for name, value in SAFE_HEADERS.items():
            response.headers.setdefault(name, value)

    class GuardedServer(Server):
        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            aiohttp_jinja2.setup(app, loader=jinja2.DictLoader(offline_templates()))
            app.middlewares.append(check)
            app.on_response_prepare.append(safe_headers)
            return app

        async def on_startup(self, app: web.Application) -> None:
            pass  # textual-serve's banner names a URL without the token; serve prints its own

        @aiohttp_jinja2.template("app_index.html")
        async def handle_index(self, request: web.Request) -> dict[str, Any]:
            # textual-serve builds the page's URLs from the address it was given; here they
            # follow the (checked) Host the browser used, as the token cookie is per host.
            base = f"http://{request.host}"
            return {
                "font_size": to_int(request.query.get("fontsize", "16"), 16),
                "app_websocket_url": f"ws://{request.host}/ws",
                "config": {"static": {"url": f"{base}/static/"}},
                "application": {"name": self.title},
            }

    return GuardedServer(command, title="spillscope")


def serve(root: str, logs: str | None = None, *, host: str = "127.0.0.1", port: int = 8000,
          rebase: str | None = None, limits: dict[str, int] | None = None, export_dir: str | None = None,
          out: TextIO | None = None, err: TextIO | None = None, timeout: float | None = None,
          agent: str | None = None) -> None:
    """Serve the TUI on ``root`` until SIGINT or SIGTERM; never returns (the process exits).
    ``out`` and ``err``: sys.stdout and sys.stderr as they are when called; ``agent``: the
    tree is that agent's (its view, as ``spillscope tui ROOT --agent NAME`` shows it)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    require_textual_serve()
    from aiohttp import web

    sock = bind(host, port)
    access = Access.for_bind(host, sock.getsockname()[1])
    server = _guarded_server(app_command(root, logs, rebase, limits, export_dir, timeout, agent), access, err)

    def announce(*_: object) -> None:
        # Called by aiohttp once the site listens: the URL is printed only when it works.
        out.write(f"serving {visible(root, one_line=True)} on {access.url(host)}\n")
        if not is_loopback(host):
            out.write("warning: listening beyond this machine, over plain HTTP; anyone who has this URL "
                      "(with its token) can read the root\n")
        if export_dir:
            out.write(f"exports from the browser are written under {visible(os.path.abspath(export_dir), one_line=True)}\n")
        out.flush()

    server.initialize_logging()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, server.request_exit)
    try:
        web.run_app(server._make_app(), sock=sock, handle_signals=False, loop=loop, print=announce)
    finally:
        # asyncio's child watcher would log each app that ends after the loop closed.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        stop_children()
        # The server's loop is closed now; letting the interpreter collect the app
        # processes' transports would print `RuntimeError: Event loop is closed`.
        out.flush()
        err.flush()
        os._exit(0)


def _children() -> list[int]:
    """This process's live children (Linux /proc; elsewhere none are known)."""
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            continue
    return pids


def stop_children(grace: float = 3.0) -> None:
    """TERM the app processes still running, KILL what is left after ``grace``, reap all."""
    import time

    pids = _children()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace
        while pids and time.monotonic() < end:
            for pid in list(pids):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid
                if done:
                    pids.remove(pid)
            time.sleep(0.05)
        if not pids:
            return
