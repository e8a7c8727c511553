"""Security headers on every response, a plain 500 that carries them too, and same-origin state
changes; pure ASGI middlewares (no per-request task overhead)."""

from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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


class SecurityHeadersMiddleware:
    """Adds :data:`SECURITY_HEADERS` to every HTTP response that does not set them itself.

    An exception below that escaped before any answer began becomes a plain-text 500 sent from
    here, with these headers (Starlette's own 500 is sent outside every middleware, without
    them); the exception goes on up to be logged.
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
                raw += [pair for pair in RAW_SECURITY_HEADERS if pair[0] not in present]
                message["headers"] = raw
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            if not started:
                await SERVER_ERROR(scope, receive, send_with_headers)
            raise


SERVER_ERROR = PlainTextResponse(
    "Internal server error: the server could not answer this request. It has been logged.",
    status_code=500,
    headers={"Cache-Control": "no-store"},
)

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
                response = PlainTextResponse(
                    f"Cross-site request refused: {reason}. Changes are accepted only from this"
                    " site's own pages, or from scripts that send no Origin header.",
                    status_code=403,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
