"""Which interactive parts belong to which lesson: a lab shows only beside the lesson it is for.

The gradient lab (with its torch.distributed confirmation) is built for one lesson, named here by
its id. The ring all-reduce panel goes with every lesson whose text cites the ideal ring
all-reduce lab. Any other lesson gets no interactive part: its page is the lesson alone.
"""

import re
from dataclasses import dataclass

from app.lesson.loader import Lesson

GRADIENT_LESSON_ID = "atlas-lesson-distributed-gradient-weighting"
# How a lesson cites the ring lab ("The ideal ring all-reduce lab varies communication payload…").
RING_LAB_CITATION = re.compile(r"\bideal ring all-reduce lab\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class LessonParts:
    """The interactive parts one lesson shows, and where."""

    gradient_lab: bool = False
    confirm: bool = False
    ring_panel: bool = False
    # The section the interactive parts follow (its id), and the name the contents give them.
    after_section: str | None = None
    title: str | None = None

    @property
    def any(self) -> bool:
        return self.gradient_lab or self.ring_panel


# Lessons with a lab built for them, by id; the section after which it goes (the engineering
# example it works through) and its title in the table of contents.
_LABS = {
    GRADIENT_LESSON_ID: LessonParts(
        gradient_lab=True,
        confirm=True,
        ring_panel=True,
        after_section="section-6",
        title="Gradient lab",
    ),
}
RING_TITLE = "Ring all-reduce lab"


def parts_for(lesson: Lesson) -> LessonParts:
    """The interactive parts of ``lesson``.

    A lesson that cites the ring lab shows the ring panel right after the section that cites it.
    """
    record = lesson.record
    if record.id in _LABS:
        return _LABS[record.id]
    for section in lesson.sections:
        if RING_LAB_CITATION.search(section.markdown):
            return LessonParts(ring_panel=True, after_section=section.id, title=RING_TITLE)
    return LessonParts()
