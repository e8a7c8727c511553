"""gzip for the answers a client accepts it for, compressed by ISA-L (the ``isal`` package).

Every slider drag in a class is a compressed answer, so its compression is on the hot path:
ISA-L's level 1 compresses the lab's results pane (9 kB) in about 20 µs, smaller than zlib's
fastest level does it in 45-90 µs (bench/README.md). A pure ASGI middleware: it reads the
response's start message once, compresses a whole body in one call and a streamed one (a static
file) chunk by chunk, and leaves alone what is already compressed or too small to gain.
"""

from isal import isal_zlib
from starlette.types import ASGIApp, Message, Receive, Scope, Send

GZIP_WBITS = 16 + 15  # a gzip header and trailer around a 32 KiB-window deflate stream

# Media types that are compressed already (or must reach the client unbuffered): sent as they
# are. A type ending in "/" stands for its whole family. Images are named one by one: SVG is
# text and compresses well.
INCOMPRESSIBLE = (
    b"image/avif",
    b"image/gif",
    b"image/jpeg",
    b"image/png",
    b"image/webp",
    b"audio/",
    b"video/",
    b"font/woff",
    b"font/woff2",
    b"application/gzip",
    b"application/x-gzip",
    b"application/zip",
    b"text/event-stream",
)
_FAMILIES = tuple(kind for kind in INCOMPRESSIBLE if kind.endswith(b"/"))
_TYPES = frozenset(kind for kind in INCOMPRESSIBLE if not kind.endswith(b"/"))


def accepts_gzip(value: bytes) -> bool:
    """Whether an ``Accept-Encoding`` value accepts gzip: named (or ``*``) without ``q=0``."""
    for item in value.lower().split(b","):
        coding, _, params = item.partition(b";")
        if coding.strip() not in (b"gzip", b"*"):
            continue
        _, _, quality = params.partition(b"q=")
        try:
            return not quality or float(quality) > 0
        except ValueError:
            return False
    return False


def incompressible(media_type: bytes) -> bool:
    """Whether a Content-Type names data already compressed (images, fonts, audio, video) or a
    stream that must not wait for a compressor's buffer: by its type, or by its family."""
    media_type = media_type.partition(b";")[0].strip().lower()
    return media_type in _TYPES or media_type.startswith(_FAMILIES)


def _answer_headers(
    headers: list[tuple[bytes, bytes]], encoded_length: int | None, compressed: bool
) -> list[tuple[bytes, bytes]]:
    """``headers`` with Accept-Encoding named in Vary (caches must keep both encodings apart)
    and, for a compressed answer, its Content-Encoding and the Content-Length of the encoded
    body (none for a streamed one, ``encoded_length`` None). One pass: every answer a client
    accepts gzip for comes through here, a drag's among them."""
    out = []
    named = False
    for name, value in headers:
        lower = name.lower()
        if lower == b"vary":
            named = True
            if b"accept-encoding" not in value.lower():
                value += b", Accept-Encoding"
        elif compressed and lower == b"content-length":
            continue
        out.append((name, value))
    if not named:
        out.append((b"vary", b"Accept-Encoding"))
    if compressed:
        out.append((b"content-encoding", b"gzip"))
        if encoded_length is not None:
            out.append((b"content-length", str(encoded_length).encode("latin-1")))
    return out


class GzipMiddleware:
    """Compress an HTTP answer with gzip when the request accepts it and it gains by it.

    Answers of at least ``minimum_size`` bytes whose media type compresses are compressed at
    ISA-L ``level`` (0-3); every such answer names Accept-Encoding in Vary, compressed or not.
    Left as they are: answers that carry a Content-Encoding already, partial content (206),
    incompressible media types and smaller answers.
    """

    def __init__(self, app: ASGIApp, minimum_size: int = 500, level: int = 1) -> None:
        if not isal_zlib.ISAL_BEST_SPEED <= level <= isal_zlib.ISAL_BEST_COMPRESSION:
            raise ValueError(f"ISA-L compresses at levels 0-3, not {level}")
        self.app = app
        self.minimum_size = minimum_size
        self.level = level

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        wanted = False
        for name, value in scope["headers"]:
            if name == b"accept-encoding":
                wanted = accepts_gzip(value)
                break
        level = self.level
        minimum_size = self.minimum_size
        start: Message | None = None  # held until the first body shows how to answer
        compressor = None  # a streamed answer's, once it is being compressed

        async def send_compressed(message: Message) -> None:
            nonlocal start, compressor
            kind = message["type"]
            if kind == "http.response.start":
                headers = list(message.get("headers", ()))
                for name, value in headers:
                    lower = name.lower()
                    if lower == b"content-encoding" or (
                        lower == b"content-type" and incompressible(value)
                    ):
                        break
                else:
                    if message["status"] != 206:
                        message["headers"] = headers
                        start = message
                        return
                await send(message)
                return
            if start is None:  # passed through, or past its first body
                if compressor is not None and kind == "http.response.body":
                    more = message.get("more_body", False)
                    chunk = compressor.compress(message.get("body", b""))
                    flush = isal_zlib.Z_SYNC_FLUSH if more else isal_zlib.Z_FINISH
                    message["body"] = chunk + compressor.flush(flush)
                await send(message)
                return
            body = message.get("body", b"") if kind == "http.response.body" else b""
            more = kind == "http.response.body" and message.get("more_body", False)
            compressed = (
                wanted and kind == "http.response.body" and (more or len(body) >= minimum_size)
            )
            if compressed:
                if more:
                    compressor = isal_zlib.compressobj(level, isal_zlib.DEFLATED, GZIP_WBITS)
                    body = compressor.compress(body) + compressor.flush(isal_zlib.Z_SYNC_FLUSH)
                else:
                    body = isal_zlib.compress(body, level, GZIP_WBITS)
                message["body"] = body
            length = None if more or not compressed else len(body)
            start["headers"] = _answer_headers(start["headers"], length, compressed)
            await send(start)
            start = None
            await send(message)

        await self.app(scope, receive, send_compressed)
