"""A live class at full size: real SSE clients against one server as ``python -m app`` starts it.

N students (default 500) join with a nickname each; each opens the class's event stream and
reads the current state; the instructor asks a question, and each student's clock stops when
their stream shows it; then every student answers at once. Goals (issue 31): joining all takes
≤ 10 s, the question reaches them with p99 ≤ 1 s, every answer is stored and counted (none lost,
no error), and the server holds each connected student in ≤ 300 KB (its RSS with every stream
open, less its RSS before they opened, per student).

    python -m bench.live [--students 500] [--workers 1]
"""

import argparse
import asyncio
import csv
import io
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from app.lesson.loader import load_lesson
from app.lesson.render import render_lesson
from app.settings import Settings
from bench._procs import rss_bytes, web_processes
from bench._servers import Server, free_port, launch, stop
from bench._sse import request, stream_events

JOIN_GOAL_S = 10.0
P99_GOAL_S = 1.0
RSS_GOAL_BYTES = 300 * 1024
JOINING_AT_ONCE = 50  # a class arriving: many at once, not all in one millisecond


@dataclass
class Figures:
    students: int
    workers: int
    join_s: float
    question_p50_s: float
    question_p99_s: float
    answers_sent: int
    answers_ok: int
    answers_stored: int
    answers_counted: int
    errors: int
    rss_per_student: float

    def problems(self) -> list[str]:
        found = []
        if self.join_s > JOIN_GOAL_S:
            found.append(f"joining took {self.join_s:.1f} s > {JOIN_GOAL_S:g} s")
        if self.question_p99_s > P99_GOAL_S:
            found.append(f"question p99 {self.question_p99_s:.2f} s > {P99_GOAL_S:g} s")
        if not self.answers_ok == self.answers_stored == self.answers_counted == self.students:
            found.append(
                f"answers: {self.answers_ok} accepted, {self.answers_stored} stored,"
                f" {self.answers_counted} counted of {self.students}"
            )
        if self.errors:
            found.append(f"{self.errors} errors")
        if self.rss_per_student > RSS_GOAL_BYTES:
            found.append(f"{self.rss_per_student / 1024:.0f} KB per student > 300 KB")
        return found


def start(data_dir: Path, workers: int) -> Server:
    port = free_port()
    env = {
        **os.environ,
        "ATLAS_DATA_DIR": str(data_dir),
        "ATLAS_CONFIRM_ENABLED": "false",
    }
    env.pop("ATLAS_SECRET_KEY", None)
    command = [sys.executable, "-m", "app", "--port", str(port), "--workers", str(workers)]
    return launch([*command, "--log-level", "warning"], port=port, ready_path="/healthz", env=env)


def first_question() -> str:
    """The id of the lesson's first question, as its quiz forms send it."""
    lesson = render_lesson(load_lesson(Settings().lesson_path))
    return lesson.questions[0].question.id


def server_rss(server: Server) -> int:
    return sum(rss_bytes(pid) for pid in web_processes(server.process.pid))


async def run_class(server: Server, students: int, workers: int) -> Figures:
    port = int(server.url.rsplit(":", 1)[1])
    started = await request(port, "POST", "/class/new")
    assert started.status == 303, started.status
    code = started.header("location").split("/")[2]
    host = started.cookie("atlas-host-")
    question = first_question()

    gate = asyncio.Semaphore(JOINING_AT_ONCE)

    async def join(n: int) -> str:
        async with gate:
            joined = await request(port, "POST", "/join", form={"code": code, "nickname": f"s{n}"})
        assert joined.status == 303, joined.status
        return joined.cookie("atlas-class-")

    clock = time.monotonic()
    cookies = await asyncio.gather(*(join(n) for n in range(students)))
    join_s = time.monotonic() - clock

    rss_before = server_rss(server)
    opened = [asyncio.Event() for _ in range(students)]
    arrived: list[float] = []
    asked_at = [0.0]
    errors = Counter[str]()

    async def listen(n: int) -> None:
        marker = f'value="{question}"'
        try:
            async for event in stream_events(port, f"/class/{code}/events", cookies[n]):
                opened[n].set()
                if marker in event.data:
                    arrived.append(time.monotonic() - asked_at[0])
                    return
        except Exception as error:  # counted: a dropped stream is an error of the run
            errors[type(error).__name__] += 1
            opened[n].set()

    listeners = [asyncio.create_task(listen(n)) for n in range(students)]
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in opened)), 60)
    await asyncio.sleep(1.0)  # let the server settle before reading its memory
    rss_per_student = (server_rss(server) - rss_before) / students

    asked_at[0] = time.monotonic()
    asked = await request(port, "POST", f"/class/{code}/ask", host, {"question": question})
    assert asked.status == 303, asked.status
    await asyncio.wait_for(asyncio.gather(*listeners), 60)

    async def answer(n: int) -> int:
        try:
            sent = await request(
                port,
                "POST",
                f"/class/{code}/answer",
                cookies[n],
                {"question": question, "choice": str(1 + n % 3)},
            )
            return sent.status
        except Exception as error:
            errors[type(error).__name__] += 1
            return 0

    statuses = Counter(await asyncio.gather(*(answer(n) for n in range(students))))
    exported = await request(port, "GET", f"/class/{code}/export.csv", host)
    stored = len(list(csv.reader(io.StringIO(exported.body.decode())))) - 1
    page = (await request(port, "GET", f"/class/{code}/host", host)).body.decode()
    counted = int(page.split('id="answer-count" class="live-number">', 1)[1].split("<", 1)[0])
    errors.update({f"HTTP {s}": c for s, c in statuses.items() if s not in (303,)})
    ordered = sorted(arrived)
    return Figures(
        students=students,
        workers=workers,
        join_s=join_s,
        question_p50_s=statistics.median(ordered),
        question_p99_s=ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        answers_sent=students,
        answers_ok=statuses.get(303, 0),
        answers_stored=stored,
        answers_counted=counted,
        errors=sum(errors.values()) + (students - len(ordered)),
        rss_per_student=rss_per_student,
    )


def report(figures: Figures) -> str:
    return "\n".join(
        [
            f"students {figures.students}, workers {figures.workers}",
            f"join all            {figures.join_s:6.2f} s   (goal ≤ {JOIN_GOAL_S:g} s)",
            f"question p50        {figures.question_p50_s:6.3f} s",
            f"question p99        {figures.question_p99_s:6.3f} s   (goal ≤ {P99_GOAL_S:g} s)",
            f"answers at once     {figures.answers_ok}/{figures.answers_sent} accepted,"
            f" {figures.answers_stored} stored, {figures.answers_counted} counted",
            f"errors              {figures.errors}",
            f"memory per student  {figures.rss_per_student / 1024:6.1f} KB (goal ≤ 300 KB)",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.live", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--students", type=int, default=500, help="students in the class")
    parser.add_argument("--workers", type=int, default=1, help="server workers (python -m app)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        server = start(Path(folder) / "data", args.workers)
        try:
            figures = asyncio.run(run_class(server, args.students, args.workers))
        finally:
            stop(server)
    print(report(figures))
    problems = figures.problems()
    for problem in problems:
        print(f"NOT MET: {problem}")
    if not problems:
        print("every goal met")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
