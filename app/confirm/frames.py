"""Length-prefixed frames: the one wire format of the confirmation (web worker <-> pool owner,
owner <-> ranks). Imports no torch.

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON: it carries a job of
any size, and a reader knows before reading how much to expect, so a corrupt or hostile length
is refused rather than buffered.
"""

import asyncio
import json
import struct
from io import BufferedIOBase
from typing import Any

HEADER = struct.Struct(">I")
# The largest job a valid request makes is a few MB (ATLAS_MAX_BODY_BYTES of items, plus their
# weights); 64 MiB leaves room and still refuses a length that is garbage.
MAX_FRAME_BYTES = 64 * 1024 * 1024


class FrameError(Exception):
    """The other side sent something that is not a frame (too long, cut short, not JSON)."""


def encode(message: Any) -> bytes:
    """``message`` as one frame: its length, then its JSON."""
    payload = json.dumps(message, separators=(",", ":")).encode()
    if len(payload) > MAX_FRAME_BYTES:
        raise FrameError(f"a message of {len(payload)} bytes is over {MAX_FRAME_BYTES}")
    return HEADER.pack(len(payload)) + payload


def _length(header: bytes) -> int:
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {length} bytes is over {MAX_FRAME_BYTES}")
    return int(length)


def _decode(payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except ValueError as exc:
        raise FrameError(f"a frame that is not JSON: {exc}") from exc


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next message; None when the other side closed between frames. Raises FrameError for
    a frame cut short or not JSON."""
    try:
        header = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError("the stream ended inside a frame's length") from exc
        return None
    try:
        payload = await reader.readexactly(_length(header))
    except asyncio.IncompleteReadError as exc:
        raise FrameError("the stream ended inside a frame") from exc
    return _decode(payload)


async def write_frame(writer: asyncio.StreamWriter, message: Any) -> None:
    """Send one message and wait until the transport has taken it."""
    writer.write(encode(message))
    await writer.drain()


def receive(stream: BufferedIOBase) -> Any:
    """:func:`read_frame` for a blocking binary stream (a rank's socket file), whose ``read(n)``
    returns n bytes, or fewer only at the end."""
    header = stream.read(HEADER.size)
    if not header:
        return None
    if len(header) < HEADER.size:
        raise FrameError("the stream ended inside a frame's length")
    length = _length(header)
    payload = stream.read(length)
    if len(payload) < length:
        raise FrameError("the stream ended inside a frame")
    return _decode(payload)


def send(stream: BufferedIOBase, message: Any) -> None:
    """:func:`write_frame` for a blocking binary stream."""
    stream.write(encode(message))
    stream.flush()
