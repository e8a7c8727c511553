"""Load the published lesson record: parse, check integrity, slice the sections.

How the publisher measured ``content``: the text is normalised to Unicode NFD (``ḡ`` becomes
``g`` followed by a combining macron), ``contentLength`` counts its code points and
``contentHash`` is the SHA-256 of its UTF-8 bytes. The section offsets index that NFD text.
The published JSON carries NFC text, so a naive ``len(content)`` is 3 short (three ``ḡ``).
"""

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from app.lesson.model import LessonRecord, SectionRef

SUPPORTED_SCHEMA = 1


class LessonLoadError(Exception):
    """The lesson file cannot be served: the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Section:
    """A section sliced from the content; ``markdown`` is NFC text that starts with its heading."""

    id: str
    title: str
    level: int
    markdown: str


@dataclass(frozen=True, slots=True)
class Lesson:
    record: LessonRecord
    preamble: str
    sections: tuple[Section, ...]
    path: Path


def measured_content(content: str) -> str:
    """The content as its publisher measured it (NFD), which ``contentHash`` describes."""
    return unicodedata.normalize("NFD", content)


def content_digest(content: str) -> tuple[int, str]:
    """``(contentLength, contentHash)`` of ``content`` as the publisher computes them."""
    text = measured_content(content)
    return len(text), hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_lesson(path: Path) -> Lesson:
    """Read, validate and slice the record at ``path``; raise :class:`LessonLoadError` if unfit."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LessonLoadError(f"{path}: cannot read the lesson file: {exc.strerror}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LessonLoadError(f"{path}: not a JSON lesson record: {exc}") from exc
    if not isinstance(raw, dict):
        raise LessonLoadError(f"{path}: the lesson record must be a JSON object")
    schema = raw.get("schemaVersion")
    if schema != SUPPORTED_SCHEMA:
        raise LessonLoadError(
            f"{path}: field schemaVersion: unknown schema {schema!r}"
            f" (this app reads schemaVersion {SUPPORTED_SCHEMA})"
        )
    try:
        record = LessonRecord.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(record)"
        raise LessonLoadError(f"{path}: field {field}: {first['msg']}") from exc
    _check_integrity(path, record)
    text = measured_content(record.content)
    preamble_end = record.sections[0].start
    return Lesson(
        record=record,
        preamble=unicodedata.normalize("NFC", text[:preamble_end]).strip(),
        sections=tuple(_slice(path, text, ref) for ref in _checked_refs(path, record)),
        path=path,
    )


def _check_integrity(path: Path, record: LessonRecord) -> None:
    length, digest = content_digest(record.content)
    if digest != record.content_hash:
        raise LessonLoadError(
            f"{path}: field contentHash does not match content:"
            f" expected {record.content_hash}, actual {digest}"
        )
    if length != record.content_length:
        raise LessonLoadError(
            f"{path}: field contentLength does not match content:"
            f" expected {record.content_length}, actual {length}"
        )


def _checked_refs(path: Path, record: LessonRecord) -> list[SectionRef]:
    previous_end = 0
    for index, ref in enumerate(record.sections):
        if ref.start < previous_end or ref.end > record.content_length:
            raise LessonLoadError(
                f"{path}: field sections.{index} ({ref.id}): offsets {ref.start}..{ref.end}"
                f" overlap the previous section or run past contentLength {record.content_length}"
            )
        previous_end = ref.end
    return list(record.sections)


def _slice(path: Path, text: str, ref: SectionRef) -> Section:
    chunk = unicodedata.normalize("NFC", text[ref.start : ref.end])
    first_line = chunk.split("\n", 1)[0]
    hashes = len(first_line) - len(first_line.lstrip("#"))
    heading = first_line[hashes:].strip()
    at_line_start = ref.start == 0 or text[ref.start - 1] == "\n"
    if (
        not at_line_start
        or not 1 <= hashes <= 6
        or first_line[hashes : hashes + 1] != " "
        or heading != ref.title
    ):
        raise LessonLoadError(
            f"{path}: field sections ({ref.id}): the slice {ref.start}..{ref.end} does not begin"
            f" with its heading {ref.title!r} (it begins {first_line[:60]!r})"
        )
    return Section(id=ref.id, title=ref.title, level=hashes, markdown=chunk)
