"""Synthetic lesson records for tests: the shipped record's fields around new content.

Offsets, contentLength and contentHash are computed the way the publisher computes them (NFD
text, code points, SHA-256 of UTF-8), and the sections are the content's headings, so the
app's own loader verifies them as it verifies a published record.
"""

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from app.lesson.loader import Section
from app.lesson.quiz import Question, is_question, parse_question
from app.settings import DEFAULT_LESSON

ROOT = Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures" / "lessons"
SHARDED = FIXTURES / "atlas-lesson-sharded-matmul-ownership.json"
SHARDED_FILE_SHA256 = "f0daf80211bc4d9cce67e9661d43290eb4f262a3e2d08d7f4e66a9ca8a30f5d5"
_HEADING = re.compile(r"^(#{1,6}) (.+)$", re.MULTILINE)


def parse_questions(sections: Iterable[Section]) -> tuple[Question, ...]:
    """Every question of a lesson's sections, in order, numbered from 1."""
    found = [s for s in sections if is_question(s)]
    return tuple(parse_question(s, n) for n, s in enumerate(found, start=1))


def shipped() -> dict[str, Any]:
    record: dict[str, Any] = json.loads(DEFAULT_LESSON.read_text(encoding="utf-8"))
    return record


def make_record(content: str, slug: str, **fields: Any) -> dict[str, Any]:
    """A record of ``content`` with id ``atlas-lesson-<slug>``; ``fields`` override the rest."""
    nfd = unicodedata.normalize("NFD", content)
    heads = list(_HEADING.finditer(nfd))
    sections = [
        {
            "id": f"section-{n}",
            "title": unicodedata.normalize("NFC", head.group(2)),
            "start": head.start(),
            "end": heads[n].start() if n < len(heads) else len(nfd),
        }
        for n, head in enumerate(heads, start=1)
    ]
    record = shipped()
    record.update(
        id=f"atlas-lesson-{slug}",
        title=sections[0]["title"],
        description=f"A synthetic lesson ({slug}) for tests.",
        canonicalUrl=f"https://semiaifoundry.com/learn/atlas/{slug}/",
        interactiveUrl=f"https://semiaifoundry.com/ai-atlas/#{slug}",
        content=content,
        contentLength=len(nfd),
        contentHash=hashlib.sha256(nfd.encode("utf-8")).hexdigest(),
        sections=sections,
    )
    record.update(fields)
    return record


def write_record(folder: Path, record: dict[str, Any], name: str | None = None) -> Path:
    path = folder / (name or f"{record['id']}.json")
    path.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
    return path
