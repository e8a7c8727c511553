"""The published record loads; tampering, bad schema and bad offsets are refused clearly."""

import hashlib
import json
import unicodedata
from pathlib import Path

import pytest

from app.lesson.loader import LessonLoadError, content_digest, load_lesson
from app.settings import DEFAULT_LESSON


@pytest.fixture
def raw() -> dict[str, object]:
    return json.loads(DEFAULT_LESSON.read_text(encoding="utf-8"))


def write(tmp_path: Path, record: object) -> Path:
    path = tmp_path / "lesson.json"
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return path


def test_published_record_loads_with_18_sections() -> None:
    lesson = load_lesson(DEFAULT_LESSON)
    assert lesson.record.id == "atlas-lesson-distributed-gradient-weighting"
    assert lesson.record.version == "1.3.0"
    assert [s.id for s in lesson.sections] == [f"section-{i}" for i in range(1, 19)]


def test_publisher_measures_nfd_utf8(raw: dict[str, object]) -> None:
    content = str(raw["content"])
    nfd = unicodedata.normalize("NFD", content)
    # An independent computation of what the record states, and proof the naive reading fails.
    assert hashlib.sha256(nfd.encode()).hexdigest() == raw["contentHash"]
    assert len(nfd) == raw["contentLength"]
    assert hashlib.sha256(content.encode()).hexdigest() != raw["contentHash"]
    assert content_digest(content) == (raw["contentLength"], raw["contentHash"])


def test_every_slice_begins_with_its_heading() -> None:
    lesson = load_lesson(DEFAULT_LESSON)
    for section in lesson.sections:
        heading = "#" * section.level + " " + section.title
        assert section.markdown.startswith(heading + "\n"), section.id
    by_id = {s.id: s for s in lesson.sections}
    assert by_id["section-5"].markdown.startswith("### Compensate a mean-across-ranks reducer")
    assert by_id["section-6"].markdown.startswith("## Engineering example")
    assert [s.level for s in lesson.sections][:6] == [1, 2, 2, 3, 3, 2]


def test_slices_are_nfc_text_for_display() -> None:
    lesson = load_lesson(DEFAULT_LESSON)
    body = "".join(s.markdown for s in lesson.sections)
    assert "ḡ" in body
    assert unicodedata.normalize("NFC", body) == body


def test_tampered_content_is_refused(tmp_path: Path, raw: dict[str, object]) -> None:
    raw["content"] = str(raw["content"]).replace("2.5", "2.6", 1)
    with pytest.raises(LessonLoadError) as caught:
        load_lesson(write(tmp_path, raw))
    message = str(caught.value)
    assert "lesson.json" in message
    assert "contentHash" in message
    assert str(raw["contentHash"]) in message
    _, actual = content_digest(str(raw["content"]))
    assert actual in message


def test_wrong_length_is_refused(tmp_path: Path, raw: dict[str, object]) -> None:
    raw["contentLength"] = int(str(raw["contentLength"])) + 1
    with pytest.raises(LessonLoadError, match="contentLength"):
        load_lesson(write(tmp_path, raw))


def test_unknown_schema_is_refused(tmp_path: Path, raw: dict[str, object]) -> None:
    raw["schemaVersion"] = 2
    with pytest.raises(LessonLoadError, match=r"lesson\.json: field schemaVersion: unknown schema"):
        load_lesson(write(tmp_path, raw))


def test_missing_field_is_named(tmp_path: Path, raw: dict[str, object]) -> None:
    del raw["rightsUrl"]
    with pytest.raises(LessonLoadError, match=r"lesson\.json: field rightsUrl"):
        load_lesson(write(tmp_path, raw))


def test_invalid_json_and_missing_file_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(LessonLoadError, match=r"broken\.json: not a JSON lesson record"):
        load_lesson(bad)
    with pytest.raises(LessonLoadError, match=r"absent\.json: cannot read"):
        load_lesson(tmp_path / "absent.json")


def test_shifted_offsets_are_refused(tmp_path: Path, raw: dict[str, object]) -> None:
    sections = raw["sections"]
    assert isinstance(sections, list)
    sections[4]["start"] += 1
    with pytest.raises(LessonLoadError, match=r"section-5.*does not begin with its heading"):
        load_lesson(write(tmp_path, raw))
