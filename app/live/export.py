"""``export.csv``: one row per student per answered question, safe to open in a spreadsheet."""

import csv
import io
from collections.abc import Sequence
from typing import Any

from starlette.responses import Response

from app.live.store import Answer

# round: 1, or 2 for a question's re-vote; confidence: "sure", "unsure", or empty.
COLUMNS = ("nickname", "question", "choice", "correct", "answered_at", "round", "confidence")
# A cell starting with one of these is run as a formula by Excel, LibreOffice and Sheets
# (OWASP's "CSV injection"); a leading apostrophe makes it text. Tab and CR start one too.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Excel opens a CSV in the system's ANSI code page unless it starts with UTF-8's byte order mark:
# without it a Cyrillic letter is mojibake.
BOM = "\ufeff"


def neutral(cell: str) -> str:
    """``cell`` as a spreadsheet shows it, never runs it."""
    return f"'{cell}" if cell.startswith(FORMULA_START) else cell


def _writer(out: io.StringIO) -> Any:
    """Every text cell quoted (numbers bare): a spreadsheet whose locale separates by ``;``
    reads ``x;=6+6`` as one cell, not a second one starting with ``=``; a quote, comma or line
    break inside a cell stays inside it."""
    return csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC)


def csv_text(rows: Sequence[tuple[str, Answer]]) -> str:
    out = io.StringIO()
    out.write(BOM)
    writer = _writer(out)
    writer.writerow(COLUMNS)
    for nickname, answer in rows:
        writer.writerow(
            (
                neutral(nickname),
                neutral(answer.question),
                answer.choice,
                "true" if answer.correct else "false",
                answer.answered_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                answer.round,
                answer.confidence or "",
            )
        )
    return out.getvalue()


def csv_response(code: str, rows: Sequence[tuple[str, Answer]]) -> Response:
    return Response(
        csv_text(rows),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="class-{code}.csv"',
            "Cache-Control": "no-store",
        },
    )
