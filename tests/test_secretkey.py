"""No public signing key: without ATLAS_SECRET_KEY each server run makes one for its workers."""

import os
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
from app.web.secretkey import PREFIX, SecretKeyError, private_folder, server_secret
from bench._procs import uvicorn_workers
from bench._servers import Server, free_port, launch, stop
from tests.test_classroom import cpu_ticks, fresh_connection_get, questions

OLD_PUBLIC_KEY = "atlas-lesson-dev-key-change-me"


def test_source_carries_no_key() -> None:
    assert Settings.model_fields["secret_key"].default == ""
    for path in PACKAGE_DIR.rglob("*.py"):
        assert OLD_PUBLIC_KEY not in path.read_text(), path


def test_app_without_key_signs_with_a_random_one(tmp_path: Path) -> None:
    settings = Settings(secret_key="", confirm_runtime_dir=tmp_path, confirm_enabled=False)
    first = create_app(settings).state.settings.secret_key
    second = create_app(settings).state.settings.secret_key
    assert first == second, "two apps of one server run signed with different keys"
    assert len(first) >= 40
    (key_file,) = tmp_path.glob(f"{PREFIX}*")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
    # A score signed with the old public key is not read as this server's.
    lesson_id = "atlas-lesson-distributed-gradient-weighting"
    forged = sign_results({questions()[0].id: True}, OLD_PUBLIC_KEY, lesson_id)
    assert read_results(forged, OLD_PUBLIC_KEY, questions(), lesson_id) != {}
    assert read_results(forged, first, questions(), lesson_id) == {}


def test_a_set_key_is_used_as_given(tmp_path: Path) -> None:
    settings = Settings(secret_key="mine", confirm_runtime_dir=tmp_path, confirm_enabled=False)
    assert create_app(settings).state.settings.secret_key == "mine"
    assert not list(tmp_path.glob(f"{PREFIX}*"))


def test_an_open_runtime_folder_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    with pytest.raises(SecretKeyError, match="0700"):
        server_secret(tmp_path)
    assert private_folder(tmp_path / "new") == tmp_path / "new"


def test_keys_of_finished_runs_are_removed(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    stale = tmp_path / f"{PREFIX}999999999-1"
    stale.write_text("old")
    server_secret(tmp_path)
    assert not stale.exists()


# ---- real uvicorn with two workers, started without any key --------------------------------


def start_two_workers(runtime_dir: Path) -> Server:
    port = free_port()
    env = {name: value for name, value in os.environ.items() if name != "ATLAS_SECRET_KEY"}
    env.update({"ATLAS_CONFIRM_ENABLED": "false", "ATLAS_CONFIRM_RUNTIME_DIR": str(runtime_dir)})
    command = [
        *(sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1"),
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


def test_two_workers_share_the_generated_key_and_a_restart_resets_scores(
    two_workers: tuple[Server, Path],
) -> None:
    server, runtime = two_workers
    workers = uvicorn_workers(server.process.pid)
    assert len(workers) == 2
    first = questions()[0]
    with httpx.Client(base_url=server.url, timeout=30) as student:
        answer = student.post(
            "/quiz", data={"question": first.id, "choice": str(first.answer_number)}
        )
        assert answer.status_code in (200, 303)  # a plain form post is redirected to the page
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
    assert len(list(runtime.glob(f"{PREFIX}*"))) == 1
    stop(server)

    restarted = start_two_workers(runtime)
    try:
        page = fresh_connection_get(restarted.url + "/", cookies)
        assert score_of(page.text).startswith(f"Score: 0 of {len(questions())}")
        assert len(list(runtime.glob(f"{PREFIX}*"))) == 1, "the old run's key was kept"
    finally:
        stop(restarted)


def test_start_logs_that_scores_reset(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name != "ATLAS_SECRET_KEY"}
    env["ATLAS_CONFIRM_RUNTIME_DIR"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", "import app.main"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "scores reset when the server restarts" in result.stderr


def test_an_unusable_runtime_folder_still_starts_with_a_key_of_its_own(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    settings = Settings(secret_key="", confirm_runtime_dir=blocker / "pool", confirm_enabled=False)
    with caplog.at_level("ERROR", logger="atlas"):
        key = create_app(settings).state.settings.secret_key
    assert len(key) >= 40
    assert "set ATLAS_SECRET_KEY" in caplog.text
