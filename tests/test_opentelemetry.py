"""ATLAS_OPENTELEMETRY: FastAPI's own OpenTelemetry runs only when asked for. Each case runs in a
fresh interpreter: a tracer provider can be set once per process."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT

# A configured tracer provider (not OpenTelemetry's deferred proxy) that counts the tracers asked
# of it; FastAPI asks for one when it traces a request.
SCRIPT = """
import sys
from fastapi.testclient import TestClient
from opentelemetry import trace
from app.main import create_app
from app.settings import Settings

class Counting(trace.TracerProvider):
    asked = 0
    def get_tracer(self, *args, **kwargs):
        Counting.asked += 1
        return trace.NoOpTracer()

trace.set_tracer_provider(Counting())
with TestClient(create_app(Settings(opentelemetry=sys.argv[1] == "true"))) as client:
    for path in ("/healthz", "/lab?counts=2,6&means=1,3"):
        assert client.get(path, headers={"HX-Request": "true"}).status_code == 200
print(Counting.asked)
"""


# slow: each case starts an interpreter that imports the whole app (3 to 7 s of a quick run).
@pytest.mark.slow
@pytest.mark.parametrize(("setting", "traced"), [("false", False), ("true", True)])
def test_fastapi_traces_requests_only_when_the_setting_asks(setting: str, traced: bool) -> None:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, setting],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "ATLAS_CONFIRM_ENABLED": "false"},
    )
    assert run.returncode == 0, run.stderr
    assert (int(run.stdout.split()[-1]) > 0) is traced
