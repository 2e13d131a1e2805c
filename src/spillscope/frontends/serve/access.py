"""Who may talk to ``spillscope serve``: the operator's own browser, and nothing else.

A server on 127.0.0.1 is reachable by every web page the operator's browser opens: a page
on ``http://evil.example`` can open a WebSocket to it (browsers do not apply the
same-origin policy to WebSockets), and a name the attacker controls can be re-pointed at
127.0.0.1 (DNS rebinding), making the attacker's page "same origin" with the server. So
every request, the WebSocket included, must pass three checks:

* ``Host`` names this server: one of its loopback names (or the address it was bound
  to) with its port — a rebound name is refused;
* ``Origin``, when sent, is this server's own origin (``http://<an allowed host>``);
  the WebSocket must send one (every browser does);
* the per-run token (``secrets.token_urlsafe``) printed in the URL, given as the
  ``token`` query parameter or in the cookie set by the first request that gave it.

Separate from server.py because the rule is the security boundary: it is a pure function
of a request's headers, unit-tested alone, and the aiohttp middleware only applies it.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

#: Names every loopback-bound server answers to (a browser may be pointed at any of them).
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: Addresses that mean "every interface".
WILDCARDS = ("", "0.0.0.0", "::", "[::]")


def url_host(host: str) -> str:
    """``host`` as it is written in a URL and a ``Host`` header (an IPv6 address in brackets)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def is_loopback(host: str) -> bool:
    name = url_host(host).strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _machine_names() -> set[str]:
    """This machine's own names and addresses, for a server bound to every interface."""
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            names |= {str(info[4][0]) for info in socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)}
        except OSError:
            continue
    return {url_host(n) for n in names if n}


@dataclass(frozen=True)
class Access:
    """The checks for one run of the server: its token and the hosts it answers to."""

    token: str
    port: int
    #: Allowed ``Host`` header values (lower case, ``name:port``; the bare name too on port 80).
    hosts: frozenset[str]

    @classmethod
    def for_bind(cls, host: str, port: int, token: str | None = None) -> Access:
        """The checks for a server bound to ``host``:``port`` (``port`` the real one, never 0).

        Loopback names are always allowed (the operator's browser on this machine); a
        specific address or name the server was bound to is allowed too; a server bound
        to every interface answers to this machine's names and addresses."""
        names = set(LOOPBACK_NAMES)
        bound = url_host(host)
        if bound in WILDCARDS:
            names |= _machine_names()
        else:
            names.add(bound)
        hosts = {f"{n}:{port}" for n in names}
        if port == 80:  # a browser leaves the default port out of Host and Origin
            hosts |= names
        return cls(token or secrets.token_urlsafe(32), port, frozenset(hosts))

    @property
    def cookie_name(self) -> str:
        # Cookies are per host name, not per port: a second server on another port of
        # 127.0.0.1 must neither read nor overwrite this one's.
        return f"spillscope-token-{self.port}"

    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{h}" for h in self.hosts)

    def token_matches(self, given: str | None) -> bool:
        if not given:
            return False
        # Bytes: compare_digest refuses a str that is not ASCII (a hostile query is anything).
        return secrets.compare_digest(given.encode("utf-8", "surrogatepass"), self.token.encode("ascii"))

    def cookie_token(self, cookie_header: str | None) -> str | None:
        if not cookie_header:
            return None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(cookie_header)
        except CookieError:
            return None
        morsel = jar.get(self.cookie_name)
        return morsel.value if morsel is not None else None

    def refusal(self, *, host: str | None, origin: str | None, query: str, cookie: str | None,
                websocket: bool, fetch_site: str | None = None, fetch_mode: str | None = None,
                fetch_dest: str | None = None) -> str | None:
        """Why a request with these headers is refused, or ``None`` when it may go on.
        ``fetch_*`` are the browser's ``Sec-Fetch-Site``/``-Mode``/``-Dest`` headers."""
        if host is None or host.lower() not in self.hosts:
            return f"Host {host!r} is not this server (DNS rebinding?)"
        if (fetch_site in ("cross-site", "same-site")
                and not (fetch_mode == "navigate" and fetch_dest == "document")):
            # A page elsewhere (another port of 127.0.0.1 is "same-site": the cookie goes
            # with it) embedding or fetching from this server. Only a top-level
            # navigation (a link to the printed URL) may come from another page.
            return f"a {fetch_dest or 'request'} from another site's page"
        if origin is None:
            if websocket:
                # Every browser sends Origin on a WebSocket; a request without one is
                # not from a page this server can vouch for.
                return "a WebSocket without an Origin"
        elif origin.lower() not in self.origins():
            return f"Origin {origin!r} is not this server's"
        given = parse_qs(query).get("token", [None])[-1]
        if not self.token_matches(given) and not self.token_matches(self.cookie_token(cookie)):
            return "no valid token (open the URL with ?token=… that `spillscope serve` printed)"
        return None

    def url(self, host: str) -> str:
        """The URL to print for a server bound to ``host``, with the token."""
        name = url_host(host)
        if name in WILDCARDS:  # the operator's own browser, on this machine
            name = "[::1]" if ":" in name else "127.0.0.1"
        where = name if self.port == 80 else f"{name}:{self.port}"
        return f"http://{where}/?token={self.token}"


__all__ = ["Access", "LOOPBACK_NAMES", "is_loopback", "url_host"]
