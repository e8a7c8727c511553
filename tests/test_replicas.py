"""Several replicas on real PostgreSQL, and their faults.

Each replica is a real uvicorn process on loopback; PostgreSQL is a private server started for
the test (tests/servers.py). The class is driven as browsers drive it, with cookies, and watched
through a real Server-Sent Events stream: a replica killed in the middle of a class, the
replicas' LISTEN connections terminated by PostgreSQL, PostgreSQL stopped and started again.

Every wait is for an event (an SSE event, a row in ``pg_stat_activity``, an answer from
``/healthz``); its timeout only guards against a hang, it measures nothing.
"""

import csv
import io
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from app.lesson.quiz import Question
from bench._http import TLS
from bench._servers import free_port, launch, stop
from tests.conftest import INSTRUCTOR_PASSWORD, ROOT, LiveServer, start_server
from tests.servers import Postgres, require
from tests.test_live import questions, wrong

KEY = "test-replicas-key"
# How long a wait for an event may take before the test fails: a guard against a hang on a busy
# machine, not a measure of speed (bench.live measures how fast a change crosses replicas).
WAIT_S = 30.0
# The same for a replica to answer /healthz after it is started: three starting at once on two
# busy cores have taken over 30 s to import and migrate.
START_WAIT_S = 90.0
DEPLOY = ROOT / "deploy"
pytestmark = pytest.mark.slow


@dataclass
class Events:
    """A real SSE client in a thread: every event received (its name and data)."""

    url: str
    cookies: httpx.Cookies
    received: list[tuple[str, str]] = field(default_factory=list)
    status: int | None = None
    _response: httpx.Response | None = None
    _arrived: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self._client = httpx.Client(
            cookies=self.cookies, timeout=httpx.Timeout(WAIT_S, read=None), verify=TLS
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        name, data = "message", []
        try:
            with self._client.stream("GET", self.url) as response:
                self._response = response
                self.status = response.status_code
                for line in response.iter_lines():
                    if line.startswith("event:"):
                        name = line[6:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                    elif not line and data:
                        with self._arrived:
                            self.received.append((name, "\n".join(data)))
                            self._arrived.notify_all()
                        name, data = "message", []
        except (httpx.HTTPError, OSError, RuntimeError):
            pass  # closed by close(), or by the server going away

    def wait_for(self, found: Callable[[str], bool]) -> str:
        """The data of the first event (from now on or already here) that satisfies ``found``;
        fails after ``WAIT_S``."""
        with self._arrived:
            if not self._arrived.wait_for(
                lambda: any(found(data) for _name, data in self.received), WAIT_S
            ):
                last = self.received[-1][1][:300] if self.received else "nothing"
                raise AssertionError(f"no such event within {WAIT_S} s; last: {last}")
            return next(data for _name, data in self.received if found(data))

    def close(self) -> None:
        if self._response is not None:
            self._response.close()
        self._client.close()
        self._thread.join(timeout=10)


def answered(count: int) -> Callable[[str], bool]:
    """An event of the dashboard that shows ``count`` answers to the current question."""
    return lambda html: re.search(rf'id="answer-count"[^>]*>{count}<', html) is not None


@dataclass
class Browser:
    """A browser: its own cookies, sent to whichever replica it talks to."""

    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=WAIT_S, verify=TLS))

    def post(self, server: LiveServer, path: str, **data: str) -> httpx.Response:
        return self.client.post(f"{server.url}{path}", data=data)

    def get(self, server: LiveServer, path: str) -> httpx.Response:
        return self.client.get(f"{server.url}{path}")


def replica(data_dir: Path, database_url: str) -> LiveServer:
    return start_server(
        {
            "ATLAS_DATABASE_URL": database_url,
            "ATLAS_SECRET_KEY": KEY,
            "ATLAS_DATA_DIR": str(data_dir),
            "ATLAS_CONFIRM_ENABLED": "false",
        },
        timeout=START_WAIT_S,
    )


@pytest.fixture
def replicas(tmp_path: Path, postgres_url: str) -> Iterator[list[LiveServer]]:
    started = [replica(tmp_path / f"r{n}", postgres_url) for n in range(2)]
    try:
        yield started
    finally:
        for server in started:
            stop(server)


def start_class(host: Browser, server: LiveServer, question: Question) -> str:
    started = host.client.post(
        f"{server.url}/class/new", data={"password": INSTRUCTOR_PASSWORD}, follow_redirects=False
    )
    assert started.status_code == 303, started.text[:300]
    code = started.headers["location"].split("/")[2]
    assert host.post(server, f"/class/{code}/ask", question=question.id).status_code < 400
    return code


def join(server: LiveServer, code: str, nickname: str) -> Browser:
    student = Browser()
    joined = student.client.post(
        f"{server.url}/join", data={"code": code, "nickname": nickname}, follow_redirects=False
    )
    assert joined.status_code == 303, joined.text[:300]
    return student


def answer(
    student: Browser, server: LiveServer, code: str, question: Question, choice: int
) -> None:
    sent = student.post(server, f"/class/{code}/answer", question=question.id, choice=str(choice))
    # Stored, then back to the class's page (a form without JavaScript: post, redirect, get).
    assert sent.status_code == 303, sent.text[:300]
    assert sent.headers["location"] == f"/class/{code}"


def export(host: Browser, server: LiveServer, code: str) -> list[dict[str, str]]:
    got = host.get(server, f"/class/{code}/export.csv")
    assert got.status_code == 200
    return list(csv.DictReader(io.StringIO(got.content.decode("utf-8-sig"))))


def test_a_student_goes_on_through_any_replica_and_a_killed_one_loses_nothing(
    replicas: list[LiveServer],
) -> None:
    first, second = replicas
    q1, q2 = questions()[:2]
    host = Browser()
    code = start_class(host, first, q1)
    # Half the class joins through each replica.
    students = [(join(replicas[n % 2], code, f"S{n}"), replicas[n % 2]) for n in range(8)]
    dashboard = Events(f"{second.url}/class/{code}/events?view=host", host.client.cookies)
    try:
        dashboard.wait_for(answered(0))
        # Those who joined through the first replica answer wrong at first, the others right.
        for student, server in students:
            answer(student, server, code, q1, wrong(q1) if server is first else q1.answer_number)
        # Answers given through the first replica reach the dashboard held by the second.
        dashboard.wait_for(answered(8))

        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=10)
        # Everyone goes on through the second replica with the cookies they have: the ones who
        # joined through the first change their answer, the instructor asks the next question.
        for student, server in students:
            if server is first:
                answer(student, second, code, q1, q1.answer_number)
        assert host.post(second, f"/class/{code}/ask", question=q2.id).status_code < 400
        for student, _server in students:
            answer(student, second, code, q2, q2.answer_number)
        dashboard.wait_for(answered(8))
    finally:
        dashboard.close()
    rows = export(host, second, code)
    assert sorted((row["nickname"], row["question"], row["choice"]) for row in rows) == sorted(
        (f"S{n}", q.id, str(q.answer_number)) for n in range(8) for q in (q1, q2)
    )


def listening(postgres: Postgres, database_url: str) -> set[int]:
    """The server processes of the connections that LISTEN on the test's database (one per
    replica's worker: app/live/notify.py)."""
    found = postgres.psql(
        "SELECT string_agg(pid::text, ',') FROM pg_stat_activity"
        " WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
        database_url.rsplit("/", 1)[1],
    )
    return {int(pid) for pid in found.split(",") if pid}


def test_listen_connections_terminated_lose_no_answer_and_live_updates_resume(
    replicas: list[LiveServer], postgres_server: Postgres, postgres_url: str
) -> None:
    """PostgreSQL ends the replicas' LISTEN connections (an administrator, an idle timeout, a
    failover would): the replica holding the dashboard misses the notices sent meanwhile, yet
    connects again by itself, looks at the class again and shows every answer; then changes
    cross replicas live again. The second replica is held still (SIGSTOP) from before its
    connection ends until the answers are stored, so that they surely fall while it does not
    listen, whatever the machine's speed."""
    first, second = replicas
    q1 = questions()[0]
    host = Browser()
    code = start_class(host, first, q1)
    students = [join(first, code, f"S{n}") for n in range(6)]
    dashboard = Events(f"{second.url}/class/{code}/events?view=host", host.client.cookies)
    try:
        dashboard.wait_for(answered(0))
        answer(students[0], first, code, q1, q1.answer_number)
        dashboard.wait_for(answered(1))
        wait_until(lambda: len(listening(postgres_server, postgres_url)) == 2)
        old = listening(postgres_server, postgres_url)

        second.process.send_signal(signal.SIGSTOP)
        try:
            ended = postgres_server.psql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
                postgres_url.rsplit("/", 1)[1],
            )
            assert ended.split() == ["t", "t"]
            # Gone, so that no notice can still reach the second replica's old connection.
            wait_until(lambda: not listening(postgres_server, postgres_url) & old)
            # Students still answer: the database has it all.
            for student in students[1:4]:
                answer(student, first, code, q1, q1.answer_number)
        finally:
            second.process.send_signal(signal.SIGCONT)
        # Never told of these answers, the second replica finds them when it listens again.
        dashboard.wait_for(answered(4))
        wait_until(
            lambda: (
                len(listening(postgres_server, postgres_url) - old) == 2
                and all(health(server)["changes"] == "listening" for server in replicas)
            )
        )
        for student in students[4:]:
            answer(student, first, code, q1, q1.answer_number)
        dashboard.wait_for(answered(6))
    finally:
        dashboard.close()
    assert len(export(host, second, code)) == 6


def health(server: LiveServer) -> dict[str, object]:
    got = httpx.get(f"{server.url}/healthz", timeout=WAIT_S, verify=TLS)
    assert got.status_code == 200
    body: dict[str, object] = got.json()
    return body


def wait_until(condition: Callable[[], bool]) -> None:
    """Ask until ``condition`` holds (what it watches tells no one: a query, ``/healthz``);
    fails after ``WAIT_S``."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {WAIT_S} s"
        time.sleep(0.1)


def test_postgresql_stopped_answers_503_with_retry_after_and_recovers(
    tmp_path: Path, private_postgres: Postgres
) -> None:
    database_url = private_postgres.create_database()
    server = replica(tmp_path / "data", database_url)
    try:
        q1 = questions()[0]
        host = Browser()
        code = start_class(host, server, q1)
        student = join(server, code, "Ada")
        answer(student, server, code, q1, wrong(q1))
        dashboard = Events(f"{server.url}/class/{code}/events?view=host", host.client.cookies)
        try:
            dashboard.wait_for(answered(1))
            private_postgres.stop()
            for method, path, data in (
                ("GET", f"/class/{code}", None),
                ("GET", f"/class/{code}/host", None),
                ("POST", f"/class/{code}/answer", {"question": q1.id, "choice": "1"}),
                ("POST", "/join", {"code": code, "nickname": "Late"}),
            ):
                client = host.client if "host" in path else student.client
                # No hang: the answer comes once the app gives up connecting (3 s), well before
                # this client's own timeout would raise.
                got = client.request(method, f"{server.url}{path}", data=data, timeout=WAIT_S)
                assert got.status_code == 503, (path, got.status_code, got.text[:200])
                assert got.headers["retry-after"].isdigit()
                assert "database cannot be reached" in got.text
            now = health(server)
            assert now["database_reachable"] is False
            assert now["status"] == "degraded"
            # The lesson itself needs no database.
            assert httpx.get(f"{server.url}/", timeout=WAIT_S, verify=TLS).status_code == 200

            private_postgres.start()
            wait_until(lambda: health(server)["database_reachable"] is True)
            answer(student, server, code, q1, q1.answer_number)
            late = join(server, code, "Late")
            answer(late, server, code, q1, q1.answer_number)
            # The stream opened before the outage goes on by itself.
            dashboard.wait_for(answered(2))
        finally:
            dashboard.close()
        rows = export(host, server, code)
        assert sorted((row["nickname"], row["choice"]) for row in rows) == [
            ("Ada", str(q1.answer_number)),
            ("Late", str(q1.answer_number)),
        ]
    finally:
        stop(server)


def test_replicas_starting_together_migrate_once(tmp_path: Path, postgres_url: str) -> None:
    """Three replicas start at once on an empty database: the advisory lock lets one migrate,
    the others find the schema there; all three serve."""
    started: list[LiveServer] = []
    threads = [
        threading.Thread(
            target=lambda n=n: started.append(replica(tmp_path / f"r{n}", postgres_url))
        )
        for n in range(3)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(started) == 3
        for server in started:
            assert health(server)["database_reachable"] is True
    finally:
        for server in started:
            stop(server)


def test_python_m_app_migrate_runs_the_migrations_alone(
    postgres_server: Postgres, postgres_url: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app", "migrate"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "ATLAS_DATABASE_URL": postgres_url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    database = postgres_url.rsplit("/", 1)[1]
    tables = postgres_server.psql(
        "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables"
        " WHERE schemaname = 'public'",
        database,
    )
    assert tables == "alembic_version,live_answers,live_classes,live_participants,live_removed"


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ({}, "ATLAS_SECRET_KEY and ATLAS_INSTRUCTOR_PASSWORD"),
        ({"ATLAS_SECRET_KEY": KEY}, "ATLAS_INSTRUCTOR_PASSWORD"),
        ({"ATLAS_INSTRUCTOR_PASSWORD": INSTRUCTOR_PASSWORD}, "ATLAS_SECRET_KEY"),
    ],
)
def test_postgresql_without_a_shared_key_or_password_refuses_to_start(
    postgres_url: str, given: dict[str, str], missing: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app", "--port", "0"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "ATLAS_DATABASE_URL": postgres_url, **given},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "python -m app: refusing to start: ATLAS_DATABASE_URL names PostgreSQL" in done.stderr
    assert f"set {missing}, the same on every replica" in done.stderr


def proxy_config(tmp: Path, port: int, replica_ports: list[int]) -> str:
    """deploy/nginx.conf as compose runs it, on loopback: the compose services' names (found by
    Docker's resolver) become the replicas' ports, and nginx's files go to ``tmp``."""
    text = (DEPLOY / "nginx.conf").read_text()
    servers = " ".join(f"server 127.0.0.1:{p};" for p in replica_ports)
    for compose_only, local in (
        (re.compile(r"^\s*resolver [^;]*;", re.M), ""),
        (re.compile(r"server app:8000 resolve;"), servers),
        (re.compile(r"server confirm:8000 resolve;"), f"server 127.0.0.1:{replica_ports[0]};"),
        (re.compile(r"listen 80;"), f"listen 127.0.0.1:{port};"),
        (re.compile(r"access_log [^;]*;"), "access_log off;"),
        (re.compile(r"error_log [^;]*;"), f"error_log {tmp}/error.log warn;"),
    ):
        text, found = compose_only.subn(local, text)
        assert found == 1, compose_only.pattern  # the file still reads as this test expects
    files = f"client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;"
    text = re.sub(r"^http \{", "http {\n" + files, text, count=1, flags=re.M)
    return f"daemon off;\nuser root;\npid {tmp}/nginx.pid;\n{text}"


@pytest.fixture
def proxy(tmp_path: Path, replicas: list[LiveServer]) -> Iterator[LiveServer]:
    """Real nginx with deploy/nginx.conf in front of the two replicas."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
    nginx = require(Path(found) if found else None, "no nginx (apt-get install -y nginx)")
    port = free_port()
    folder = tmp_path / "nginx"
    folder.mkdir()
    conf = folder / "nginx.conf"
    replica_ports = [int(server.url.rsplit(":", 1)[1]) for server in replicas]
    conf.write_text(proxy_config(folder, port, replica_ports))
    nginx_server = launch(
        [str(nginx), "-c", str(conf), "-p", str(folder)], port=port, ready_path="/healthz"
    )
    front = LiveServer(nginx_server.url, nginx_server.process, nginx_server.startup_s)
    try:
        yield front
    finally:
        stop(front)


def test_a_class_through_the_compose_proxy_streams_live_and_outlives_a_replica(
    proxy: LiveServer, replicas: list[LiveServer]
) -> None:
    """deploy/nginx.conf for real: the class's streams pass through unbuffered, every request
    reaches a replica, and when one replica is killed the students go on through the proxy with
    no error (nginx sends them to the other)."""
    q1, q2 = questions()[:2]
    host = Browser()
    code = start_class(host, proxy, q1)
    students = [join(proxy, code, f"S{n}") for n in range(8)]
    pupil = Events(f"{proxy.url}/class/{code}/events", students[0].client.cookies)
    dashboard = Events(f"{proxy.url}/class/{code}/events?view=host", host.client.cookies)
    try:
        dashboard.wait_for(answered(0))
        assert pupil.status == 200
        for student in students:
            answer(student, proxy, code, q1, q1.answer_number)
        dashboard.wait_for(answered(8))
        # A change reaches a student's open stream through the proxy within seconds.
        assert host.post(proxy, f"/class/{code}/ask", question=q2.id).status_code < 400
        pupil.wait_for(lambda html: f'value="{q2.id}"' in html)
    finally:
        pupil.close()
        dashboard.close()

    replicas[0].process.send_signal(signal.SIGKILL)
    replicas[0].process.wait(timeout=10)
    for student in students:
        answer(student, proxy, code, q2, q2.answer_number)
    dashboard = Events(f"{proxy.url}/class/{code}/events?view=host", host.client.cookies)
    try:
        dashboard.wait_for(answered(8))
    finally:
        dashboard.close()
    rows = export(host, proxy, code)
    assert sorted((row["nickname"], row["question"]) for row in rows) == sorted(
        (f"S{n}", q.id) for n in range(8) for q in (q1, q2)
    )
