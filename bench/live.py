"""A live class at full size: real SSE clients against one server as ``python -m app`` starts it.

N students (default 500) join with a nickname each; each opens the class's event stream and
reads the current state; the instructor asks a question, and each student's clock stops when
their stream shows it; then every student answers at once. Goals: joining all takes ≤ 10 s,
the question reaches them with p99 ≤ 1 s, every answer is stored and counted (none lost, no
error) and acknowledged with p99 ≤ 1 s from its sending (≤ 2 s on replicas), each dashboard
event while the answers arrive is ≤ 10 KB per answer it adds to the count (the counts, the bars
and the dozen students the dashboard lists, never the roster; events coalesce what arrives within
0.1 s),
and the server holds each connected student in ≤ 300 KB (its RSS with every stream open, less
its RSS before they opened, per student).

With ``--replicas 2`` the class runs on two replicas sharing a private PostgreSQL
(bench/_stores.py): students join, listen and answer through either replica in turn, and the
instructor's dashboard is held on the last one; an answer given through another replica must
reach it with p99 ≤ 1 s, counted from the answer's acknowledgement to the first dashboard event
whose count of answers includes it (the k-th acknowledged answer: when the count first reaches k;
and from its sending, beside it).

    python -m bench.live [--students 500] [--workers 1] [--replicas 1]
"""

import argparse
import asyncio
import contextlib
import csv
import io
import os
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.lesson.loader import load_lesson
from app.lesson.render import render_lesson
from app.settings import Settings
from bench import _stores
from bench._procs import rss_bytes, web_processes
from bench._servers import Server, free_port, launch, stop
from bench._sse import request, stream_events

JOIN_GOAL_S = 10.0
P99_GOAL_S = 1.0
ACK_GOAL_S = {1: 1.0}  # one server; replicas: REPLICAS_ACK_GOAL_S
REPLICAS_ACK_GOAL_S = 2.0
EVENT_GOAL_BYTES = 10 * 1024
RSS_GOAL_BYTES = 300 * 1024
JOINING_AT_ONCE = 50  # a class arriving: many at once, not all in one millisecond


# The dashboard's count of answers (a hall's dashboard shows counts and bars, not every row).
ANSWER_COUNT = re.compile(r'id="answer-count" class="live-number">(\d+)<')


@dataclass
class Figures:
    students: int
    workers: int
    replicas: int
    join_s: float
    question_p50_s: float
    question_p99_s: float
    answers_sent: int
    answers_ok: int
    answers_stored: int
    answers_counted: int
    errors: int
    rss_per_student: float
    dashboard_p50_s: float
    dashboard_p99_s: float
    dashboard_p99_from_send_s: float
    dashboard_seen: int
    dashboard_expected: int
    ack_p50_s: float
    ack_p99_s: float
    event_bytes_p50: float
    event_bytes_max: int
    bytes_per_answer_max: float
    events: int

    @property
    def ack_goal_s(self) -> float:
        return ACK_GOAL_S.get(self.replicas, REPLICAS_ACK_GOAL_S)

    def problems(self) -> list[str]:
        found = []
        if self.ack_p99_s > self.ack_goal_s:
            found.append(f"answer acknowledged p99 {self.ack_p99_s:.2f} s > {self.ack_goal_s:g} s")
        if self.bytes_per_answer_max > EVENT_GOAL_BYTES:
            found.append(
                f"a dashboard event of {self.bytes_per_answer_max:.0f} bytes per answer it"
                f" carries > {EVENT_GOAL_BYTES}"
            )
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
        if self.dashboard_p99_s > P99_GOAL_S:
            found.append(f"answer to dashboard p99 {self.dashboard_p99_s:.2f} s > {P99_GOAL_S:g} s")
        if self.dashboard_seen != self.dashboard_expected:
            found.append(
                f"the dashboard showed {self.dashboard_seen} of {self.dashboard_expected} answers"
            )
        if self.rss_per_student > RSS_GOAL_BYTES:
            found.append(f"{self.rss_per_student / 1024:.0f} KB per student > 300 KB")
        return found


# The instructor password of the servers the bench starts (one per run).
PASSWORD = secrets.token_urlsafe(16)


def start(data_dir: Path, workers: int, shared: dict[str, str] | None = None) -> Server:
    """One server as ``python -m app`` starts it; ``shared``: the settings replicas share."""
    port = free_port()
    env = {
        **os.environ,
        "ATLAS_DATA_DIR": str(data_dir),
        "ATLAS_CONFIRM_ENABLED": "false",
        "ATLAS_INSTRUCTOR_PASSWORD": PASSWORD,
    }
    env.pop("ATLAS_SECRET_KEY", None)
    env.update(shared or {})
    command = [sys.executable, "-m", "app", "--port", str(port), "--workers", str(workers)]
    return launch([*command, "--log-level", "warning"], port=port, ready_path="/healthz", env=env)


def first_question() -> str:
    """The id of the lesson's first question, as its quiz forms send it."""
    lesson = render_lesson(load_lesson(Settings().lesson_path))
    return lesson.questions[0].question.id


def server_rss(servers: Sequence[Server]) -> int:
    return sum(rss_bytes(pid) for s in servers for pid in web_processes(s.process.pid))


@contextlib.contextmanager
def replicas(folder: Path, count: int, workers: int) -> Iterator[list[Server]]:
    """One server on SQLite, or ``count`` replicas on a private PostgreSQL."""
    with contextlib.ExitStack() as stack:
        shared: dict[str, str] = {}
        if count > 1:
            bin_dir = _stores.postgres_bin()
            if bin_dir is None:
                sys.exit("--replicas needs PostgreSQL 15+ (apt-get install postgresql)")
            postgres = stack.enter_context(_stores.running(_stores.new_postgres(bin_dir)))
            shared = {
                "ATLAS_DATABASE_URL": postgres.create_database(),
                "ATLAS_SECRET_KEY": secrets.token_urlsafe(32),
            }
        started: list[Server] = []
        for n in range(count):
            started.append(start(folder / f"data{n}", workers, shared))
            stack.callback(stop, started[-1])
        yield started


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("inf")


async def run_class(servers: Sequence[Server], students: int, workers: int) -> Figures:
    ports = [int(server.url.rsplit(":", 1)[1]) for server in servers]
    port = ports[0]
    started = await request(port, "POST", "/class/new", form={"password": PASSWORD})
    assert started.status == 303, started.status
    code = started.header("location").split("/")[2]
    host = started.cookie("atlas-host-")
    question = first_question()

    gate = asyncio.Semaphore(JOINING_AT_ONCE)

    def port_of(n: int) -> int:
        return ports[n % len(ports)]

    async def join(n: int) -> str:
        async with gate:
            joined = await request(
                port_of(n), "POST", "/join", form={"code": code, "nickname": f"s{n}"}
            )
        assert joined.status == 303, joined.status
        return joined.cookie("atlas-class-")

    clock = time.monotonic()
    cookies = await asyncio.gather(*(join(n) for n in range(students)))
    join_s = time.monotonic() - clock

    rss_before = server_rss(servers)
    opened = [asyncio.Event() for _ in range(students)]
    arrived: list[float] = []
    asked_at = [0.0]
    errors = Counter[str]()

    async def listen(n: int) -> None:
        marker = f'value="{question}"'
        try:
            async for event in stream_events(port_of(n), f"/class/{code}/events", cookies[n]):
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
    rss_per_student = (server_rss(servers) - rss_before) / students

    asked_at[0] = time.monotonic()
    asked = await request(port, "POST", f"/class/{code}/ask", host, {"question": question})
    assert asked.status == 303, asked.status
    await asyncio.wait_for(asyncio.gather(*listeners), 60)

    # The instructor's dashboard, on the last replica: when its count of answers reaches each
    # number (a hall's dashboard counts the answers; it lists a dozen students, not each row).
    reached: dict[int, float] = {}  # a count of answers → when the dashboard first showed it
    dashboard_open = asyncio.Event()
    sizes: list[int] = []  # of each event after the first (the whole state)
    per_answer: list[float] = []  # an event's bytes over the answers it adds to the count

    async def watch() -> None:
        path = f"/class/{code}/events?view=host"
        counted = 0
        async for event in stream_events(ports[-1], path, host):
            now = time.monotonic()
            found = ANSWER_COUNT.search(event.data)
            count = int(found.group(1)) if found else counted
            if dashboard_open.is_set():
                sizes.append(len(event.data.encode()))
                per_answer.append(sizes[-1] / max(count - counted, 1))
            dashboard_open.set()
            for k in range(counted + 1, count + 1):
                reached.setdefault(k, now)
            counted = max(counted, count)
            if counted == students:
                return

    watcher = asyncio.create_task(watch())
    await asyncio.wait_for(dashboard_open.wait(), 60)
    sent_at: dict[str, float] = {}
    acknowledged_at: dict[str, float] = {}

    async def answer(n: int) -> int:
        try:
            sent_at[f"s{n}"] = time.monotonic()
            sent = await request(
                port_of(n),
                "POST",
                f"/class/{code}/answer",
                cookies[n],
                {"question": question, "choice": str(1 + n % 3)},
            )
            acknowledged_at[f"s{n}"] = time.monotonic()
            return sent.status
        except Exception as error:
            errors[type(error).__name__] += 1
            return 0

    statuses = Counter(await asyncio.gather(*(answer(n) for n in range(students))))
    with contextlib.suppress(TimeoutError):  # counted below: answers it never showed
        await asyncio.wait_for(watcher, 30)
    # The k-th answer acknowledged shows when the dashboard's count first reaches k (answers
    # are counted, not named: the k-th acknowledgement is the first moment k answers are stored,
    # so the count may reach k through another answer, never before one is stored). Answers
    # given through another replica than the dashboard's (all of them on one server).
    acked = sorted((at, s) for s, at in acknowledged_at.items())
    elsewhere = {f"s{n}" for n in range(students) if len(ports) == 1 or port_of(n) != ports[-1]}
    arrived_from_ack = []
    arrived_from_send = []
    for k, (at, s) in enumerate(acked, start=1):
        if s in elsewhere and k in reached:
            arrived_from_ack.append(reached[k] - at)
            arrived_from_send.append(reached[k] - sent_at[s])
    exported = await request(port, "GET", f"/class/{code}/export.csv", host)
    stored = len(list(csv.reader(io.StringIO(exported.body.decode())))) - 1
    page = (await request(port, "GET", f"/class/{code}/host", host)).body.decode()
    counted = int(page.split('id="answer-count" class="live-number">', 1)[1].split("<", 1)[0])
    errors.update({f"HTTP {s}": c for s, c in statuses.items() if s not in (303,)})
    acks = [acknowledged_at[s] - sent_at[s] for s in acknowledged_at]
    return Figures(
        students=students,
        workers=workers,
        replicas=len(servers),
        join_s=join_s,
        question_p50_s=statistics.median(arrived),
        question_p99_s=percentile(arrived, 0.99),
        answers_sent=students,
        answers_ok=statuses.get(303, 0),
        answers_stored=stored,
        answers_counted=counted,
        errors=sum(errors.values()) + (students - len(arrived)),
        rss_per_student=rss_per_student,
        # An answer shown before its acknowledgement arrived counts as 0 s.
        dashboard_p50_s=max(0.0, statistics.median(arrived_from_ack)) if arrived_from_ack else 0,
        dashboard_p99_s=max(0.0, percentile(arrived_from_ack, 0.99)),
        dashboard_p99_from_send_s=percentile(arrived_from_send, 0.99),
        dashboard_seen=len(arrived_from_ack),
        dashboard_expected=len(elsewhere),
        ack_p50_s=statistics.median(acks) if acks else 0.0,
        ack_p99_s=percentile(acks, 0.99) if acks else 0.0,
        event_bytes_p50=statistics.median(sizes) if sizes else 0.0,
        event_bytes_max=max(sizes, default=0),
        bytes_per_answer_max=max(per_answer, default=0.0),
        events=len(sizes),
    )


def report(figures: Figures) -> str:
    return "\n".join(
        [
            f"students {figures.students}, replicas {figures.replicas},"
            f" workers {figures.workers} each"
            + (", PostgreSQL" if figures.replicas > 1 else ", SQLite"),
            f"join all            {figures.join_s:6.2f} s   (goal ≤ {JOIN_GOAL_S:g} s)",
            f"question p50        {figures.question_p50_s:6.3f} s",
            f"question p99        {figures.question_p99_s:6.3f} s   (goal ≤ {P99_GOAL_S:g} s)",
            f"answers at once     {figures.answers_ok}/{figures.answers_sent} accepted,"
            f" {figures.answers_stored} stored, {figures.answers_counted} counted",
            f"answer acknowledged p50 {figures.ack_p50_s:.3f} s, p99 {figures.ack_p99_s:.3f} s"
            f" from sending (goal ≤ {figures.ack_goal_s:g} s)",
            f"dashboard events    {figures.events} while answering, median"
            f" {figures.event_bytes_p50:.0f} bytes, largest {figures.event_bytes_max} bytes;"
            f" at most {figures.bytes_per_answer_max:.0f} bytes per answer carried"
            f" (goal ≤ {EVENT_GOAL_BYTES})",
            f"answer → dashboard  p50 {figures.dashboard_p50_s:.3f} s,"
            f" p99 {figures.dashboard_p99_s:.3f} s (goal ≤ {P99_GOAL_S:g} s;"
            f" {figures.dashboard_seen}/{figures.dashboard_expected} answers"
            + (" given on another replica" if figures.replicas > 1 else "")
            + f"; p99 from sending {figures.dashboard_p99_from_send_s:.3f} s)",
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
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="servers: 1 on SQLite, or several sharing a private PostgreSQL",
    )
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be 1 or more")
    with (
        tempfile.TemporaryDirectory() as folder,
        replicas(Path(folder), args.replicas, args.workers) as servers,
    ):
        figures = asyncio.run(run_class(servers, args.students, args.workers))
    print(report(figures))
    problems = figures.problems()
    for problem in problems:
        print(f"NOT MET: {problem}")
    if not problems:
        print("every goal met")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
