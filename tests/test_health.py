"""/healthz names the lesson served and whether torch is installed, without importing it."""

import importlib.util
import json
import subprocess
import sys

from fastapi.testclient import TestClient

from app.settings import DEFAULT_LESSON


def test_healthz_names_the_lesson_and_torch(client: TestClient) -> None:
    record = json.loads(DEFAULT_LESSON.read_text(encoding="utf-8"))
    body = client.get("/healthz").json()
    assert body == {
        "status": "ok",
        "lesson_id": record["id"],
        "lesson_version": record["version"],
        "lessons": [
            {
                "id": record["id"],
                "version": record["version"],
                "title": record["title"],
                "path": "/",
            }
        ],
        "skipped": [],
        "torch_installed": importlib.util.find_spec("torch") is not None,
        "database": "sqlite",
        "database_reachable": True,
        "changes": "polled",
    }


def test_healthz_does_not_import_torch() -> None:
    probe = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "from app.main import create_app\n"
        "from app.settings import Settings\n"
        "with TestClient(create_app(Settings(confirm_enabled=False))) as c:\n"
        "    assert c.get('/healthz').status_code == 200\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"
