"""``spillscope serve``: the TUI in a browser tab, through textual-serve, with no internet.

textual-serve's page links one web font from a CDN. The page is served from a copy of
its template with that link replaced by an ``@font-face`` on the Roboto Mono that
textual-serve already ships in its static files, so nothing is fetched from outside.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from ..storage import normalize_root

CDN_LINK = re.compile(r'<link[^>]*href="https?://fonts\.googleapis\.com[^"]*"[^>]*/?>', re.S)
LOCAL_FONT = """<style>
      @font-face { font-family: "Roboto Mono"; font-style: normal;
        src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }
      @font-face { font-family: "Roboto Mono"; font-style: italic;
        src: url("{{ config.static.url }}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }
    </style>"""


def offline_templates() -> Path:
    """A private copy of textual-serve's templates with every CDN reference made local."""
    import textual_serve

    source = Path(textual_serve.__file__).parent / "templates"
    target = Path(tempfile.mkdtemp(prefix="spillscope-serve-"))
    for template in source.iterdir():
        text = template.read_text("utf-8")
        text = CDN_LINK.sub(LOCAL_FONT, text)
        if re.search(r'(src|href)="https?://', text):
            raise RuntimeError(f"{template.name} still loads something from the internet")
        (target / template.name).write_text(text, "utf-8")
    return target


def serve(root: str, logs: str | None = None, *, host: str = "127.0.0.1", port: int = 8000,
          rebase: str | None = None, limits: dict[str, int] | None = None, timeout: float | None = None) -> None:
    try:
        from textual_serve.server import Server
    except ImportError as exc:  # pragma: no cover - the extra is documented
        raise SystemExit("spillscope serve needs textual-serve: pip install 'spillscope[serve]'") from exc
    command = [sys.executable, "-m", "spillscope", "tui", normalize_root(root)]
    if logs:
        command += ["--logs", os.path.abspath(logs)]
    if rebase:
        command += ["--rebase", rebase]
    if timeout is not None:
        command += ["--timeout", repr(timeout)]
    for name, value in (limits or {}).items():
        command += ["--" + name.replace("_", "-"), str(value)]
    # `exec`: the app is the server's own child (no shell between them), so it can die
    # with the server (see _webguard) and the server can end it.
    server = Server("exec " + shlex.join(command), host=host, port=port, title="spillscope",
                    templates_path=offline_templates())
    try:
        server.serve()
    finally:
        # asyncio's child watcher would log each app that ends after the loop closed.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        stop_children()
        # The server's loop is closed now; letting the interpreter collect the app
        # processes' transports would print `RuntimeError: Event loop is closed`.
        sys.stdout.flush()
        sys.stderr.flush()
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
    import signal
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
