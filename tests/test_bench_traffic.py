"""The benchmarks' traffic is what they say it is: real wrk runs their Lua scripts against a
server on loopback that records every request (and answers 200), and each request is read back
as a lab state through the lab's own parser."""

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qsl, urlsplit

import pytest
from starlette.datastructures import QueryParams

from app.lab.query import encode, lab_query_pairs, parse_lab
from bench import drag, load
from bench._wrk import run_wrk
from tests.conftest import require_wrk

# Real wrk against a recording server on loopback.
pytestmark = pytest.mark.server

require_wrk(module=True)

Seen = list[tuple[str, dict[str, str]]]


class Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[Seen] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recorded() -> Iterator[tuple[str, Seen]]:
    seen: ClassVar[Seen] = []
    handler = type("Handler", (Recorder,), {"seen": seen, "protocol_version": "HTTP/1.1"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def run(url: str, target: load.Target, seconds: float = 2) -> None:
    result = run_wrk(
        url + target.path,
        connections=target.connections,
        seconds=seconds,
        headers=target.headers,
        request_lua=target.request_lua,
    )
    assert result.errors == 0


def canonical(path: str) -> str:
    """The state's canonical query, as the app writes it (a resized P included)."""
    state = parse_lab(QueryParams(urlsplit(path).query)).state
    assert state is not None, path
    return encode(lab_query_pairs(state))


# A number as the browser writes a slider's value (JavaScript's number to string): no trailing
# zeros after the point, no point without digits after it, no sign on zero.
BROWSER_NUMBER = re.compile(r"0|-?(?:[1-9][0-9]*(?:\.[0-9]*[1-9])?|0\.[0-9]*[1-9])")


def written_as_a_browser_does(path: str) -> bool:
    values = [v for _, value in parse_qsl(urlsplit(path).query) for v in value.split(",")]
    return all(BROWSER_NUMBER.fullmatch(v) for v in values)


def state_of(path: str) -> None:
    """The lab state a request names, validated as the app validates it."""
    parts = urlsplit(path)
    assert parts.path == "/lab"
    parsed = parse_lab(QueryParams(parts.query))
    assert parsed.state is not None, (path, parsed.errors)
    counts = parsed.state.counts or []
    assert 2 <= len(counts) <= 8, path
    assert all(0 <= c <= 64 for c in counts), path
    assert counts[0] >= 1, path


def test_new_state_traffic_sends_a_new_valid_state_each_time(
    recorded: tuple[str, Seen],
) -> None:
    url, seen = recorded
    target = next(t for t in load.TARGETS if t.name == load.GOAL_TARGET)
    run(url, target)
    assert len(seen) > 200
    for path, headers in seen:
        state_of(path)
        assert written_as_a_browser_does(path), path
        assert headers["hx-target"] == "lab-results"
        assert "gzip" in headers["accept-encoding"]
    # New states, not one URL over and over (a random P of 2-8 and 2-16 draws rarely repeat).
    assert len({path for path, _ in seen}) > 0.95 * len(seen)


def test_a_dragging_class_moves_one_slider_a_step_and_asks_for_what_the_page_asks(
    recorded: tuple[str, Seen],
) -> None:
    url, seen = recorded
    run(url, drag.CLASS, seconds=3)
    by_target: dict[str, list[str]] = {"lab-results": [], "lab-charts": [], "lab-details": []}
    for path, headers in seen:
        by_target[headers["hx-target"]].append(path)
    panes, charts, details = by_target.values()
    assert len(panes) + len(charts) + len(details) == len(seen)
    # 60 students, one input event every 40-93 ms each (about 900 panes a second) and the
    # requests beside them (a few hundred): fewer where this recorder (a Python thread per
    # request) is slow to answer, as on a busy machine (433 a second seen in a full run).
    assert 200 < len(seen) / 3 < 1500
    # A gesture is 4 to 20 steps, then one request for the details: at most 1 in 4 panes, and
    # at least 1 in 20 of the panes of finished gestures. wrk's one thread takes the students in
    # turn, so each student's last gesture may be cut off by the run's end (up to 20 panes each):
    # in a run of 3 s a student makes only 10 to 20 steps, fewer on a busy machine.
    assert 0 < len(details) < len(panes) / 4
    assert len(details) >= len(panes) / 20 - drag.STUDENTS
    # The pictures: a gesture's first step, every third step after it, and its end (unless its
    # last step asked): about a third of the panes and once per gesture more, never per pane.
    assert len(panes) / 3 < len(charts) < len(panes) / 3 + 2 * len(details) + 60
    for path, headers in seen:
        state_of(path)
        assert written_as_a_browser_does(path), path
        assert "gzip" in headers["accept-encoding"]
        assert headers["hx-request"] == "true"
    # A student's walk: each request differs from the one before by one slider step, so most
    # consecutive pane requests of the class are new states.
    assert len(set(panes)) > 0.5 * len(panes)
    # The pictures and the details ask for a state the student's drag reached: one a pane
    # request shows, sent beside it, so either may arrive first, and the run's end may cut
    # the pane off (one per connection at most).
    shown = {canonical(path) for path in panes}
    unseen = [path for path in (*charts, *details) if canonical(path) not in shown]
    assert len(unseen) <= drag.STUDENTS, unseen
    assert len(unseen) < 0.05 * (len(charts) + len(details)), unseen
