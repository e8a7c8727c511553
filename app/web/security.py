"""Security headers on every response, a 500 that carries them too, redirects that stay on this
site, trusted hosts and same-origin state changes; pure ASGI middlewares (no per-request task
overhead). Every refusal is answered by :func:`app.web.errors.error_response`."""

from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.errors import error_response

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    ]
)

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


# As ASGI sends them: lower-case names, latin-1 bytes.
RAW_SECURITY_HEADERS = tuple(
    (name.lower().encode("latin-1"), value.encode("latin-1"))
    for name, value in SECURITY_HEADERS.items()
)


def _own_host(scope: Scope) -> str:
    host = Headers(scope=scope).get("host")
    if host is None and scope.get("server"):
        name, port = scope["server"]
        host = f"{name}:{port}"
    return (host or "").lower()


def relative_location(location: str, scope: Scope) -> str:
    """A redirect's ``Location`` as a path when it names this server (as the request's ``Host``
    did): what a client sent as ``Host`` is never sent back as an address. A path that a browser
    would read as another host's (``//host``, ``/\\host``) keeps one slash."""
    parts = urlsplit(location)
    if parts.scheme in {"http", "https"} and parts.netloc.lower() == _own_host(scope):
        location = urlunsplit(("", "", parts.path or "/", parts.query, parts.fragment))
    if location[:2] in {"//", "/\\"}:
        location = "/" + location.lstrip("/\\")
    return location


class SecurityHeadersMiddleware:
    """Adds :data:`SECURITY_HEADERS` to every HTTP response that does not set them itself, and
    makes a ``Location`` naming this server a path (:func:`relative_location`).

    An exception below that escaped before any answer began becomes a 500 sent from here (a page
    for a browser, else JSON), with these headers (Starlette's own 500 is sent outside every
    middleware, without them); the exception goes on up to be logged.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                # One pass over the response's own headers (a name it sets itself wins).
                raw = list(message.get("headers", ()))
                present = {name.lower() for name, _ in raw}
                if b"location" in present:
                    raw = [
                        (name, _location(value, scope) if name.lower() == b"location" else value)
                        for name, value in raw
                    ]
                raw += [pair for pair in RAW_SECURITY_HEADERS if pair[0] not in present]
                message["headers"] = raw
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            if not started:
                response = error_response(
                    scope, 500, SERVER_ERROR, headers={"Cache-Control": "no-store"}
                )
                await response(scope, receive, send_with_headers)
            raise


def _location(value: bytes, scope: Scope) -> bytes:
    return relative_location(value.decode("latin-1"), scope).encode("latin-1")


SERVER_ERROR = (
    "Internal server error: the server could not answer this request. It has been logged."
)


def _host_name(host: str) -> str:
    """The name in a ``Host`` header or a trusted-host entry, without port or IPv6 brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.split(":", 1)[0] if host.count(":") == 1 else host


class TrustedHostsMiddleware:
    """400 (through the one error handler) for a request whose ``Host`` is not served.

    ``allowed_hosts``: names (``lab.example.org``), IP addresses (``[::1]`` or ``::1``), or a
    domain's subdomains (``*.example.org``); ``*`` answers any.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str]) -> None:
        for host in allowed_hosts:
            if "*" in host and host != "*" and not (host.startswith("*.") and host.count("*") == 1):
                raise ValueError(f"trusted host {host!r}: '*' only alone or as '*.domain'")
        self.app = app
        self.any = "*" in allowed_hosts
        self.names = {_host_name(host) for host in allowed_hosts if not host.startswith("*")}
        self.domains = tuple(host[1:].lower() for host in allowed_hosts if host.startswith("*."))

    def serves(self, host: str) -> bool:
        name = _host_name(host)
        return name in self.names or (bool(name) and name.endswith(self.domains))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The app serves no WebSocket: only HTTP requests reach anything of it.
        if self.any or scope["type"] != "http" or self.serves(Headers(scope=scope).get("host", "")):
            await self.app(scope, receive, send)
            return
        # The Host received is not quoted back: it may be anything, of any length.
        response = error_response(
            scope,
            400,
            "Invalid Host header: this server answers only the names it is configured for"
            " (ATLAS_TRUSTED_HOSTS).",
        )
        await response(scope, receive, send)


# Sec-Fetch-Site values a browser sends for a request this site itself made (or typed in).
SAME_SITE_FETCH = {"same-origin", "none"}
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def cross_site_reason(method: str, headers: Headers) -> str | None:
    """Why a state-changing request comes from another site, or None if it does not.

    Browsers mark every request with ``Sec-Fetch-Site`` (and a POST with ``Origin``); a request
    with neither is not a browser's cross-site request (curl, scripts), so it passes. Same-site
    subdomains count as other sites. ``Origin`` is compared with ``Host`` by host and port only:
    behind a TLS proxy the app itself may see plain http.
    """
    if method in SAFE_METHODS:
        return None
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None:
        if fetch_site in SAME_SITE_FETCH:
            return None
        return f"the browser marked it Sec-Fetch-Site: {fetch_site[:40]}"
    origin = headers.get("origin")
    if origin is None:
        return None
    parts = urlsplit(origin)
    host = headers.get("host")
    if origin == "null" or not host or parts.netloc != host:
        return f"it comes from Origin {origin[:80]!r}, not from this site"
    return None


class SameOriginMiddleware:
    """403 for a POST (or any unsafe method) that a browser sends from another site.

    Such a request could change a visitor's quiz score or queue confirmation runs behind their
    back; forms and htmx on the lab's own pages are same-origin and pass.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            reason = cross_site_reason(scope["method"], Headers(scope=scope))
            if reason is not None:
                response = error_response(
                    scope,
                    403,
                    f"Cross-site request refused: {reason}. Changes are accepted only from this"
                    " site's own pages, or from scripts that send no Origin header.",
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
