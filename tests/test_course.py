"""A course from a folder: every record verified, a bad one reported and skipped, links local."""

import json
import logging
import shutil
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from app.lesson.course import load_course, slug_of
from app.lesson.loader import LessonLoadError, load_lesson
from app.lesson.parts import GRADIENT_LESSON_ID
from app.settings import DEFAULT_LESSON
from tests.records import SHARDED, make_record, write_record

FLOAT_SLUG = "floating-point-reduction-order"
FLOAT_CONTENT = """Executable software · Atlas v1.3.0

# Floating-point reductions and compiler permissions

Reduction order changes rounding.

## The mechanism

Rounding with fl(a+b) is not associative.

## Continue exploring

### Related lessons

-   [Sharded matrix multiplication and result ownership](https://semiaifoundry.com/learn/atlas/sharded-matmul-ownership/)
-   [Somewhere else](https://semiaifoundry.com/learn/atlas/not-in-this-folder/)
"""


def course_folder(folder: Path) -> Path:
    """The shipped lesson, the development record, a synthetic lesson and three bad files."""
    shutil.copy(DEFAULT_LESSON, folder / DEFAULT_LESSON.name)
    shutil.copy(SHARDED, folder / SHARDED.name)
    write_record(folder, make_record(FLOAT_CONTENT, FLOAT_SLUG))
    tampered = make_record(FLOAT_CONTENT, "tampered")
    tampered["content"] = FLOAT_CONTENT.replace("changes", "alters")  # its hash no longer holds
    write_record(folder, tampered, "bad-hash.json")
    (folder / "not-json.json").write_text("{ not json", encoding="utf-8")
    write_record(folder, json.loads(SHARDED.read_text(encoding="utf-8")), "zz-duplicate.json")
    (folder / "notes.txt").write_text("not a record", encoding="utf-8")
    return folder


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return course_folder(tmp_path)


def test_a_folder_serves_every_good_record_and_skips_the_bad(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="atlas"):
        course = load_course(folder)
    assert course.folder
    assert [item.slug for item in course.lessons] == [
        "distributed-gradient-weighting",
        FLOAT_SLUG,
        "sharded-matmul-ownership",
    ]
    skipped = {item.file: item.error for item in course.skipped}
    assert set(skipped) == {"bad-hash.json", "not-json.json", "zz-duplicate.json"}
    assert "field contentHash does not match content" in skipped["bad-hash.json"]
    assert "not a JSON lesson record" in skipped["not-json.json"]
    assert (
        "already served from atlas-lesson-sharded-matmul-ownership.json"
        in skipped["zz-duplicate.json"]
    )
    logged = [r.getMessage() for r in caplog.records]
    for error in skipped.values():
        assert any(error in line for line in logged), error


def test_links_to_a_lesson_in_the_folder_go_to_the_local_copy(folder: Path) -> None:
    course = load_course(folder)
    for slug in ("sharded-matmul-ownership", "distributed-gradient-weighting"):
        item = course.lesson(slug)
        assert item is not None
        html = "".join(str(b.html) for s in item.rendered.sections for c in s.children
                       for b in c.blocks if b.kind == "html")  # fmt: skip
        links = {a.get_text(): a["href"] for a in BeautifulSoup(html, "html.parser").find_all("a")}
        assert links["Floating-point reductions and compiler permissions"] == f"../{FLOAT_SLUG}/"
        # A lesson not in the folder is still the publisher's.
        assert str(links["Data, tensor, pipeline, and state parallelism"]).startswith(
            "https://semiaifoundry.com/learn/atlas/parallelism/"
        )
    floating = course.lesson(FLOAT_SLUG)
    assert floating is not None
    html = "".join(str(b.html) for s in floating.rendered.sections for c in s.children
                   for b in c.blocks if b.kind == "html")  # fmt: skip
    soup = BeautifulSoup(html, "html.parser")
    assert (
        soup.find("a", string="Sharded matrix multiplication and result ownership")["href"]
        == "../sharded-matmul-ownership/"
    )
    assert soup.find("a", string="Somewhere else")["href"] == (
        "https://semiaifoundry.com/learn/atlas/not-in-this-folder/"
    )


def test_a_single_file_links_to_the_publisher() -> None:
    course = load_course(SHARDED)
    assert not course.folder
    assert [item.slug for item in course.lessons] == [""]
    assert course.skipped == ()


def test_parts_follow_the_lesson(folder: Path) -> None:
    course = load_course(folder)
    parts = {item.lesson.record.id: item.parts for item in course.lessons}
    gradient = parts[GRADIENT_LESSON_ID]
    assert (gradient.gradient_lab, gradient.confirm, gradient.ring_panel) == (True, True, True)
    assert gradient.after_section == "section-6"
    sharded = parts["atlas-lesson-sharded-matmul-ownership"]
    assert (sharded.gradient_lab, sharded.confirm, sharded.ring_panel) == (False, False, True)
    # Right after the section that cites the ring lab ("Evidence and scope").
    assert sharded.after_section == "section-14"
    assert not parts[f"atlas-lesson-{FLOAT_SLUG}"].any


def test_a_folder_with_nothing_to_serve_refuses(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("[]", encoding="utf-8")
    with pytest.raises(LessonLoadError, match="no lesson record in this folder can be served"):
        load_course(tmp_path)
    with pytest.raises(LessonLoadError):
        load_course(tmp_path / "missing.json")


def test_slug_comes_from_the_canonical_url_else_the_id(tmp_path: Path) -> None:
    assert slug_of(load_lesson(SHARDED)) == "sharded-matmul-ownership"
    odd = make_record(FLOAT_CONTENT, "odd", canonicalUrl="https://example.org/Lesson_One")
    assert slug_of(load_lesson(write_record(tmp_path, odd))) == "odd"
    bad = make_record(FLOAT_CONTENT, "x", id="Atlas Lesson", canonicalUrl="https://e.org/")
    with pytest.raises(LessonLoadError, match="field id"):
        slug_of(load_lesson(write_record(tmp_path, bad, "bad.json")))
