"""No public signing key: without ATLAS_SECRET_KEY one is made once and kept in the data folder."""

import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup

from app import PACKAGE_DIR
from app.lesson.quiz import read_results, sign_results
from app.main import create_app
from app.settings import Settings
from app.web.secretkey import KEY_FILE, PASSWORD_FILE, SecretKeyError, kept_secret
from bench._http import TLS
from bench._procs import uvicorn_workers
from bench._servers import Server, free_port, launch, stop
from tests.test_classroom import cpu_ticks, fresh_connection_get, questions

OLD_PUBLIC_KEY = "atlas-lesson-dev-key-change-me"


def test_source_carries_no_key() -> None:
    assert Settings.model_fields["secret_key"].default == ""
    for path in PACKAGE_DIR.rglob("*.py"):
        assert OLD_PUBLIC_KEY not in path.read_text(), path


def test_app_without_key_signs_with_a_random_one(tmp_path: Path) -> None:
    settings = Settings(secret_key="", data_dir=tmp_path / "data", confirm_enabled=False)
    first = create_app(settings).state.settings.secret_key
    second = create_app(settings).state.settings.secret_key
    assert first == second, "two apps on one data folder signed with different keys"
    assert len(first) >= 40
    key_file = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    # A score signed with the old public key is not read as this server's.
    lesson_id = "atlas-lesson-distributed-gradient-weighting"
    forged = sign_results({questions()[0].id: True}, OLD_PUBLIC_KEY, lesson_id)
    assert read_results(forged, OLD_PUBLIC_KEY, questions(), lesson_id) != {}
    assert read_results(forged, first, questions(), lesson_id) == {}


def test_a_set_key_is_used_as_given(tmp_path: Path) -> None:
    settings = Settings(secret_key="mine", data_dir=tmp_path, confirm_enabled=False)
    assert create_app(settings).state.settings.secret_key == "mine"
    assert not (tmp_path / KEY_FILE).exists()


def test_an_open_data_folder_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    with pytest.raises(SecretKeyError, match="0700"):
        kept_secret(tmp_path)
    assert kept_secret(tmp_path / "new")
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700


def test_a_readable_key_file_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    kept_secret(tmp_path)
    (tmp_path / KEY_FILE).chmod(0o644)
    with pytest.raises(SecretKeyError, match="0600"):
        kept_secret(tmp_path)


# ---- real uvicorn with two workers, started without any key --------------------------------


def start_two_workers(data_dir: Path) -> Server:
    port = free_port()
    env = {name: value for name, value in os.environ.items() if name != "ATLAS_SECRET_KEY"}
    env.update({"ATLAS_CONFIRM_ENABLED": "false", "ATLAS_DATA_DIR": str(data_dir)})
    command = [
        *(sys.executable, "-m", "uvicorn", "--factory", "app.main:create_app"),
        *("--host", "127.0.0.1"),
        *("--port", str(port), "--workers", "2", "--log-level", "warning"),
    ]
    return launch(command, port=port, ready_path="/healthz", env=env)


def score_of(html: str) -> str:
    node = BeautifulSoup(html, "html.parser").select_one("#quiz-score")
    assert node is not None
    return node.get_text(" ", strip=True)


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    server = start_two_workers(tmp_path)
    try:
        yield server, tmp_path
    finally:
        stop(server)


@pytest.mark.server
def test_two_workers_share_the_generated_key_and_a_restart_keeps_scores(
    two_workers: tuple[Server, Path],
) -> None:
    server, data_dir = two_workers
    workers = uvicorn_workers(server.process.pid)
    assert len(workers) == 2
    first = questions()[0]
    with httpx.Client(base_url=server.url, timeout=30, verify=TLS) as student:
        answer = student.post(
            "/quiz", data={"question": first.id, "choice": str(first.answer_number)}
        )
        # A plain form post (no htmx) is scored and redirected to the page at the question.
        assert answer.status_code == 303
        assert answer.headers["location"] == f"/#{first.id}"
        cookies = student.cookies
    expected = f"Score: 1 of {len(questions())} correct"
    before = {pid: cpu_ticks(pid) for pid in workers}
    busy: list[int] = []
    # Fresh connections until both workers have spent CPU (a clock tick is 10 ms, a page a few
    # ms, and the kernel may hand most accepts to one worker): every page must show the score.
    for _ in range(600):
        page = fresh_connection_get(server.url + "/", cookies)
        assert score_of(page.text).startswith(expected)
        busy = [pid for pid in workers if cpu_ticks(pid) > before[pid]]
        if busy == workers:
            break
    assert busy == workers, "600 pages did not come from both workers"
    key = (data_dir / KEY_FILE).read_text()
    stop(server)

    restarted = start_two_workers(data_dir)
    try:
        page = fresh_connection_get(restarted.url + "/", cookies)
        assert score_of(page.text).startswith(expected), "a restart lost the score"
        assert (data_dir / KEY_FILE).read_text() == key, "the restart made a new key"
    finally:
        stop(restarted)


def test_start_logs_where_the_key_is_kept(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name != "ATLAS_SECRET_KEY"}
    env["ATLAS_DATA_DIR"] = str(tmp_path / "data")
    result = subprocess.run(
        [sys.executable, "-c", "from app.main import create_app; create_app()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert f"kept in {tmp_path / 'data' / KEY_FILE}" in result.stderr


def test_an_unusable_data_folder_stops_the_app_from_starting(tmp_path: Path) -> None:
    """No key of its own per process: with several workers each would sign with another."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    settings = Settings(secret_key="", data_dir=blocker / "data", confirm_enabled=False)
    with pytest.raises(SecretKeyError, match="set ATLAS_SECRET_KEY"):
        create_app(settings)


# ---- python -m app: the key and the password made once, before its workers start ------------


def without_secrets(data_dir: Path) -> dict[str, str]:
    unset = ("ATLAS_SECRET_KEY", "ATLAS_INSTRUCTOR_PASSWORD")
    env = {name: value for name, value in os.environ.items() if name not in unset}
    env.update({"ATLAS_CONFIRM_ENABLED": "false", "ATLAS_DATA_DIR": str(data_dir)})
    return env


@pytest.mark.server
def test_python_m_app_refuses_a_data_folder_others_can_read(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    data_dir.chmod(0o755)
    command = [sys.executable, "-m", "app", "--port", str(free_port()), "--workers", "2"]
    done = subprocess.run(
        command, env=without_secrets(data_dir), capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "refusing to start" in done.stderr
    assert f"chmod 700 {data_dir}" in done.stderr
    assert not (data_dir / KEY_FILE).exists()


@pytest.mark.server
def test_python_m_app_prints_the_password_and_every_worker_shares_key_and_password(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    command = [sys.executable, "-m", "app", "--port", str(port), "--workers", "2"]
    with (tmp_path / "log").open("wb") as log:
        server = launch(
            [*command, "--log-level", "warning"],
            port=port,
            ready_path="/healthz",
            env=without_secrets(data_dir),
            log=log,
        )
    try:
        said = (tmp_path / "log").read_text()
        printed = re.search(
            rf"Start a live class at http://127\.0\.0\.1:{port}/class/new with the instructor"
            r" password: (\S+)",
            said,
        )
        assert printed is not None, said
        password = printed.group(1)
        assert (data_dir / PASSWORD_FILE).read_text() == password
        assert stat.S_IMODE((data_dir / PASSWORD_FILE).stat().st_mode) == 0o600
        assert str(data_dir / PASSWORD_FILE) in said
        workers = uvicorn_workers(server.process.pid)
        assert len(workers) == 2
        with httpx.Client(base_url=server.url, timeout=30, verify=TLS) as host:
            started = host.post("/class/new", data={"password": password})
            assert started.status_code == 303, started.text[:300]
            code = started.headers["location"].split("/")[2]
            cookies = host.cookies
        # Fresh connections reach both workers (app.web.listeners spreads them): the host
        # cookie holds on every one, and every worker asks the printed password.
        for _ in range(20):
            page = fresh_connection_get(f"{server.url}/class/{code}/host", cookies)
            assert page.status == 200
        with httpx.Client(base_url=server.url, timeout=30, verify=TLS) as other:
            for _ in range(2):
                again = other.post("/class/new", data={"password": password})
                assert again.status_code == 303
                other.cookies.clear()
    finally:
        stop(server)
