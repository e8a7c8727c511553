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
import concurrent.futures
import contextlib
import csv
import io
import multiprocessing
import os
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from app.lesson.loader import load_lesson
from app.lesson.render import render_lesson
from app.settings import Settings
from bench import _stores
from bench._procs import cpu_seconds, rss_bytes, web_processes
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


async def start_class(port: int) -> tuple[str, str]:
    """A new class, as its instructor starts it: its code and the host's cookie."""
    started = await request(port, "POST", "/class/new", form={"password": PASSWORD})
    assert started.status == 303, started.status
    return started.header("location").split("/")[2], started.cookie("atlas-host-")


async def run_class(servers: Sequence[Server], students: int, workers: int) -> Figures:
    ports = [int(server.url.rsplit(":", 1)[1]) for server in servers]
    port = ports[0]
    code, host = await start_class(port)
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
    # The answers are sent from ANSWER_PROCESSES processes of their own (a hall's answers come
    # from a thousand devices): from this one, beside 1,000 streams, the acknowledgements waited
    # on this process's own turns. The monotonic clock is the machine's, the same in each.
    with client_processes(ANSWER_PROCESSES) as (run, start_at):
        parts = [
            run(
                answer_students,
                [(n, port_of(n), cookies[n]) for n in range(k, students, ANSWER_PROCESSES)],
                code,
                question,
                start_at,
            )
            for k in range(ANSWER_PROCESSES)
        ]
        sent_at: dict[str, float] = {}
        acknowledged_at: dict[str, float] = {}
        statuses = Counter[int]()
        for part in await asyncio.gather(*parts):
            for n, sent, acknowledged, status, error in part:
                sent_at[f"s{n}"] = sent
                statuses[status] += 1
                if error:
                    errors[error] += 1
                else:
                    acknowledged_at[f"s{n}"] = acknowledged
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


# ---- the lab inside the class: students dragging -------------------------------------------

DRAG_GOAL_EVENTS_PER_S = 2
DRAG_GOAL_EVENT_BYTES = 20 * 1024
DRAG_GOAL_CORES = 1.0
CHANGES_PER_S = 2.0  # a student's state changes twice a second ...
SHARE_GAP_S = 1.0  # ... and their page sends it at most once a second (static/js/live.js)


@dataclass
class DragFigures:
    students: int
    workers: int
    seconds: float
    shares_sent: int
    shares_ok: int
    errors: int
    dashboard_events: int
    dashboard_most_per_s: int  # events in one second, but the asked question's own
    updates_bytes_max: int  # of those events
    pictures: int  # events carrying the lab states' picture (#class-labs)
    pictures_most_per_s: int
    picture_bytes_max: int
    dashboard_bytes_max: int
    picture_states: int
    cpu_cores: float
    load_before: float
    load_during: float
    question_p50_s: float
    question_p99_s: float
    question_seen: int

    def problems(self) -> list[str]:
        found = []
        if self.dashboard_most_per_s > DRAG_GOAL_EVENTS_PER_S:
            found.append(
                f"the dashboard got {self.dashboard_most_per_s} updates in one second"
                f" > {DRAG_GOAL_EVENTS_PER_S}"
            )
        if self.updates_bytes_max > DRAG_GOAL_EVENT_BYTES:
            found.append(f"a dashboard update of {self.updates_bytes_max} bytes > 20 KB")
        if self.pictures_most_per_s > DRAG_GOAL_EVENTS_PER_S:
            found.append(
                f"the dashboard got {self.pictures_most_per_s} lab pictures in one second"
                f" > {DRAG_GOAL_EVENTS_PER_S}"
            )
        if self.picture_bytes_max > DRAG_GOAL_EVENT_BYTES:
            found.append(f"a lab picture event of {self.picture_bytes_max} bytes > 20 KB")
        if self.cpu_cores > DRAG_GOAL_CORES:
            found.append(f"the server used {self.cpu_cores:.2f} cores > {DRAG_GOAL_CORES:g}")
        if self.question_p99_s > P99_GOAL_S or self.question_seen != self.students:
            found.append(
                f"question p99 {self.question_p99_s:.2f} s (goal {P99_GOAL_S:g} s),"
                f" seen by {self.question_seen} of {self.students}"
            )
        if self.errors or self.shares_ok != self.shares_sent:
            found.append(f"{self.errors} errors, {self.shares_ok}/{self.shares_sent} states taken")
        if self.picture_states != self.students:
            found.append(f"the last picture counts {self.picture_states} of {self.students}")
        return found


@contextlib.contextmanager
def client_processes(
    count: int,
) -> Iterator[tuple[Callable[..., asyncio.Future[Any]], float]]:
    """``count`` processes for clients of their own: ``run(function, *args)`` runs one in them
    (a future of its result), and the ``time.time()`` at which each is to begin, together."""
    loop = asyncio.get_running_loop()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(count, mp_context=context) as pool:

        def run(function: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
            return loop.run_in_executor(pool, function, *args)

        yield run, time.time() + 2.0


ANSWER_PROCESSES = 2


def answer_students(
    students: Sequence[tuple[int, int, str]], code: str, question: str, start_at: float
) -> list[tuple[int, float, float, int, str]]:
    """Some students answering at once (in a process of their own), each on a connection of
    its own: ``(n, sent, acknowledged, status, error)`` by ``time.monotonic()``."""
    return asyncio.run(_answer_students(students, code, question, start_at))


async def _answer_students(
    students: Sequence[tuple[int, int, str]], code: str, question: str, start_at: float
) -> list[tuple[int, float, float, int, str]]:
    await asyncio.sleep(max(0.0, start_at - time.time()))

    async def answer(n: int, port: int, cookie: str) -> tuple[int, float, float, int, str]:
        sent = time.monotonic()
        form = {"question": question, "choice": str(1 + n % 3)}
        try:
            answered = await request(port, "POST", f"/class/{code}/answer", cookie, form)
        except Exception as error:  # counted: an answer lost is an error of the run
            return n, sent, time.monotonic(), 0, type(error).__name__
        return n, sent, time.monotonic(), answered.status, ""

    return await asyncio.gather(*(answer(*student) for student in students))


DRAG_PROCESSES = 2


def drag_students(
    port: int, code: str, cookies: dict[int, str], students: int, seconds: float, start_at: float
) -> tuple[Counter[int], Counter[str]]:
    """Some students' pages dragging (in a process of their own): each sends its state every
    SHARE_GAP_S on a kept-alive connection, as a browser does; their statuses and errors."""
    return asyncio.run(_drag_students(port, code, cookies, students, seconds, start_at))


async def _drag_students(
    port: int, code: str, cookies: dict[int, str], students: int, seconds: float, start_at: float
) -> tuple[Counter[int], Counter[str]]:
    statuses, errors = Counter[int](), Counter[str]()
    await asyncio.sleep(max(0.0, start_at - time.time()))
    begun = time.monotonic()

    async def drag(n: int) -> None:
        offset = (n / students) * SHARE_GAP_S  # pages send out of step with each other
        await asyncio.sleep(offset)
        connection = await asyncio.open_connection("127.0.0.1", port)
        sent = 0
        try:
            while (now := time.monotonic() - begun) < seconds:
                step = int(now * CHANGES_PER_S)  # the state has changed this often by now
                try:
                    status = await post_kept_alive(
                        connection, port, f"/class/{code}/state", cookies[n], drag_state(n, step)
                    )
                    statuses[status] += 1
                except Exception as error:
                    errors[type(error).__name__] += 1
                    connection[1].close()
                    connection = await asyncio.open_connection("127.0.0.1", port)
                sent += 1
                wake_at = begun + offset + sent * SHARE_GAP_S
                await asyncio.sleep(max(0.0, wake_at - time.monotonic()))
        finally:
            connection[1].close()

    await asyncio.gather(*(drag(n) for n in cookies))
    return statuses, errors


async def post_kept_alive(
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    port: int,
    path: str,
    cookie: str,
    form: dict[str, str],
) -> int:
    """One POST of a form on an open connection (HTTP/1.1 keep-alive), as live.js sends it."""
    reader, writer = connection
    body = urlencode(form).encode()
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Cookie: {cookie}",
        "HX-Request: true",
        "Content-Type: application/x-www-form-urlencoded",
        f"Content-Length: {len(body)}",
    ]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    await writer.drain()
    line = await reader.readline()
    if not line:
        raise ConnectionError("the server closed the connection")
    length = 0
    while (header := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    if length:
        await reader.readexactly(length)
    return int(line.split()[1])


def drag_state(n: int, step: int) -> dict[str, str]:
    """Student n's state after ``step`` changes: rank 0's count walks 1 … 64 (the slider's
    reach), the rest as the lesson's example; the lab's canonical fields."""
    count = 1 + (n * 7 + step) % 64
    return {"counts": f"{count},6", "means": "1,3", "eta": "0.1", "w": "10"}


async def run_drag(server: Server, students: int, workers: int, seconds: float) -> DragFigures:
    """Students join and listen; for ``seconds`` each one's state changes CHANGES_PER_S times a
    second and their page sends it every SHARE_GAP_S (what live.js lets through); halfway the
    instructor asks a question. The dashboard's events, the server's CPU and the question's
    latency are read meanwhile."""
    port = int(server.url.rsplit(":", 1)[1])
    code, host = await start_class(port)
    question = first_question()
    gate = asyncio.Semaphore(JOINING_AT_ONCE)

    async def join(n: int) -> str:
        async with gate:
            joined = await request(port, "POST", "/join", form={"code": code, "nickname": f"s{n}"})
        assert joined.status == 303, joined.status
        return joined.cookie("atlas-class-")

    cookies = await asyncio.gather(*(join(n) for n in range(students)))
    errors = Counter[str]()
    opened = [asyncio.Event() for _ in range(students)]
    arrived: list[float] = []
    asked_at = [0.0]

    async def listen(n: int) -> None:
        marker = f'value="{question}"'
        try:
            async for event in stream_events(port, f"/class/{code}/events", cookies[n]):
                opened[n].set()
                if asked_at[0] and marker in event.data:
                    arrived.append(time.monotonic() - asked_at[0])
                    return
        except Exception as error:
            errors[type(error).__name__] += 1
            opened[n].set()

    listeners = [asyncio.create_task(listen(n)) for n in range(students)]
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in opened)), 60)

    dashboard: list[tuple[float, int, str]] = []  # arrival, bytes, data
    dashboard_open = asyncio.Event()

    async def watch() -> None:
        async for event in stream_events(port, f"/class/{code}/events?view=host", host):
            dashboard.append((time.monotonic(), len(event.data.encode()), event.data))
            dashboard_open.set()

    watcher = asyncio.create_task(watch())
    await asyncio.wait_for(dashboard_open.wait(), 60)
    pids = web_processes(server.process.pid)

    async def ask_halfway() -> None:
        await asyncio.sleep(seconds / 2)
        asked_at[0] = time.monotonic()
        asked = await request(port, "POST", f"/class/{code}/ask", host, {"question": question})
        assert asked.status == 303, asked.status

    # The dragging pages run in DRAG_PROCESSES processes of their own: in this one, beside 500
    # streams, they sent a fifth of what they should (the machine is shared, 2 cores).
    with client_processes(DRAG_PROCESSES) as (run, start_at):
        parts = [
            run(
                drag_students,
                port,
                code,
                {n: cookies[n] for n in range(k, students, DRAG_PROCESSES)},
                students,
                seconds,
                start_at,
            )
            for k in range(DRAG_PROCESSES)
        ]
        await asyncio.sleep(max(0.0, start_at - time.time()))
        begun = time.monotonic()
        cpu_before, load_before = cpu_seconds(pids), os.getloadavg()[0]
        results = await asyncio.gather(ask_halfway(), *parts)
    elapsed = time.monotonic() - begun
    statuses = Counter[int]()
    for part_statuses, part_errors in results[1:]:
        statuses.update(part_statuses)
        errors.update(part_errors)
    cpu_cores = (cpu_seconds(pids) - cpu_before) / elapsed
    load_during = os.getloadavg()[0]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*listeners), 30)
    # The dashboard's picture after the last states: held back at most DETAILS_GAP_S.
    await asyncio.sleep(1.0)
    watcher.cancel()
    during = [(at, size, data) for at, size, data in dashboard[1:] if at <= begun + elapsed]
    # The dashboard's updates while the students drag: every event but the asked question's
    # own (the instructor's action, which goes at once).
    updates = [(at, size) for at, size, data in during if 'id="current-question"' not in data]
    per_second = Counter(int(at - begun) for at, _ in updates)
    # A picture's bytes: its own part (#class-labs) of the event that carries it (the question's
    # event also carries the whole roster, as it does without students dragging).
    pictures = [(at, picture_bytes(data)) for at, _, data in during if 'id="class-labs"' in data]
    pictures_per_second = Counter(int(at - begun) for at, _ in pictures)
    last_picture = next(
        (data for _, _, data in reversed(dashboard) if 'id="class-labs"' in data), ""
    )
    states = re.search(r'data-value="states">(\d+)<', last_picture)
    return DragFigures(
        students=students,
        workers=workers,
        seconds=elapsed,
        shares_sent=sum(statuses.values()),
        shares_ok=statuses.get(204, 0),
        errors=sum(errors.values()) + sum(c for s, c in statuses.items() if s != 204),
        dashboard_events=len(during),
        dashboard_most_per_s=max(per_second.values(), default=0),
        updates_bytes_max=max((size for _, size in updates), default=0),
        pictures=len(pictures),
        pictures_most_per_s=max(pictures_per_second.values(), default=0),
        picture_bytes_max=max((size for _, size in pictures), default=0),
        dashboard_bytes_max=max((size for _, size, _ in during), default=0),
        picture_states=int(states.group(1)) if states else 0,
        cpu_cores=cpu_cores,
        load_before=load_before,
        load_during=load_during,
        question_p50_s=statistics.median(arrived) if arrived else float("inf"),
        question_p99_s=percentile(arrived, 0.99),
        question_seen=len(arrived),
    )


def picture_bytes(data: str) -> int:
    """The bytes of the lab states' picture (#class-labs) in a dashboard event."""
    start = data.index('<section id="class-labs"')
    return len(data[start : data.index("</section>", start) + len("</section>")].encode())


def drag_report(figures: DragFigures) -> str:
    rate = figures.shares_sent / figures.seconds
    return "\n".join(
        [
            f"students {figures.students} dragging for {figures.seconds:.1f} s, 1 server,"
            f" {figures.workers} workers, SQLite (machine load {figures.load_before:.2f}"
            f" before, {figures.load_during:.2f} at the end)",
            f"states sent         {figures.shares_sent} ({rate:.0f}/s), {figures.shares_ok}"
            " taken (204)",
            f"lab pictures        {figures.pictures} events, at most"
            f" {figures.pictures_most_per_s} in one second (goal ≤ {DRAG_GOAL_EVENTS_PER_S}),"
            f" largest {figures.picture_bytes_max} bytes (goal ≤ {DRAG_GOAL_EVENT_BYTES})",
            f"dashboard updates   {figures.dashboard_events} events, at most"
            f" {figures.dashboard_most_per_s} in one second but the question's own (goal ≤"
            f" {DRAG_GOAL_EVENTS_PER_S}), largest {figures.updates_bytes_max} bytes (goal ≤"
            f" {DRAG_GOAL_EVENT_BYTES}; with the question's {figures.dashboard_bytes_max})",
            f"last picture        {figures.picture_states} states",
            f"server CPU          {figures.cpu_cores:.2f} cores on average (goal ≤"
            f" {DRAG_GOAL_CORES:g})",
            f"question meanwhile  p50 {figures.question_p50_s:.3f} s, p99"
            f" {figures.question_p99_s:.3f} s (goal ≤ {P99_GOAL_S:g} s), seen by"
            f" {figures.question_seen}/{figures.students}",
            f"errors              {figures.errors}",
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
    parser.add_argument(
        "--drag",
        type=float,
        default=0,
        metavar="SECONDS",
        help="instead: every student drags the lab's slider for SECONDS (their state changes"
        " twice a second, their page sends it once a second), a question asked halfway",
    )
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be 1 or more")
    if args.drag:
        with (
            tempfile.TemporaryDirectory() as folder,
            replicas(Path(folder), 1, args.workers) as servers,
        ):
            dragged = asyncio.run(run_drag(servers[0], args.students, args.workers, args.drag))
        print(drag_report(dragged))
        return _verdict(dragged.problems())
    with (
        tempfile.TemporaryDirectory() as folder,
        replicas(Path(folder), args.replicas, args.workers) as servers,
    ):
        figures = asyncio.run(run_class(servers, args.students, args.workers))
    print(report(figures))
    return _verdict(figures.problems())


def _verdict(problems: list[str]) -> int:
    for problem in problems:
        print(f"NOT MET: {problem}")
    if not problems:
        print("every goal met")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
