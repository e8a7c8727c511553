"""``python -m app.confirm``: the local launcher and a real torchrun, each a cold gloo job."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.distributed

TORCHRUN = Path(sys.executable).parent / "torchrun"
LESSON_FLAGS = ["--counts", "2,6", "--means", "1,3", "--eta", "0.1", "--w", "10"]


def run(
    command: list[str], stdin: str | None = None, **settings: str
) -> subprocess.CompletedProcess[str]:
    # One host: gloo on loopback, whatever the container's hostname resolves to.
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", **settings}
    return subprocess.run(
        command,
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def single_json(stdout: str) -> dict[str, Any]:
    """Only rank 0 reports: stdout is exactly one JSON document."""
    answer: dict[str, Any] = json.loads(stdout)
    return answer


def test_launcher_runs_the_lesson_example_on_two_local_ranks() -> None:
    done = run([sys.executable, "-m", "app.confirm", *LESSON_FLAGS])
    assert done.returncode == 0, done.stderr
    answer = single_json(done.stdout)
    assert answer["world_size"] == 2
    assert answer["ddp_default"]["grad"] == [2.0, 2.0]
    assert answer["comm_hook"]["w_new"] == [9.75, 9.75]
    assert answer["compensated"]["matches_reference"] is True
    assert answer["engine_agrees"] is True


def test_torchrun_runs_a_json_body_from_a_file(tmp_path: Path) -> None:
    body = {"microbatches": [[[9, 9], [7]], [[7, 7, 7]], [[]]], "eta": 0.1, "w": 10}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    command = [str(TORCHRUN), "--standalone", "--nproc-per-node", "3", "-m", "app.confirm"]
    done = run([*command, str(path)])
    assert done.returncode == 0, done.stderr
    answer = single_json(done.stdout)
    assert answer["world_size"] == 3
    assert answer["form"] == "accumulation"
    assert answer["counts"] == [3.0, 3.0, 0.0]
    assert answer["replicas_agree"] is True
    assert answer["engine_agrees"] is True
    assert answer["comm_hook"]["grad"][2] == answer["reference"]["grad"]


def test_bad_input_exits_2_with_the_field_before_any_rank_starts() -> None:
    body = json.dumps({"counts": [1], "means": [1, 2], "eta": 0.1, "w": 1})
    done = run([sys.executable, "-m", "app.confirm", "-"], stdin=body)
    assert done.returncode == 2
    assert "means" in done.stderr
    assert done.stdout == ""
    done = run([sys.executable, "-m", "app.confirm", "--targets", "1;2", "--eta", "0.1"])
    assert done.returncode == 2
    assert "w: Field required" in done.stderr


@pytest.mark.parametrize("timeout", ["0", "-3", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_number_exits_2_naming_it(timeout: str) -> None:
    done = run([sys.executable, "-m", "app.confirm", *LESSON_FLAGS, "--timeout", timeout])
    assert done.returncode == 2
    assert "--timeout" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_setting_of_the_environment_exits_2_naming_it() -> None:
    settings = {"ATLAS_CONFIRM_START_TIMEOUT_S": "-1"}
    done = run([sys.executable, "-m", "app.confirm", *LESSON_FLAGS], **settings)
    assert done.returncode == 2
    assert "ATLAS_CONFIRM_START_TIMEOUT_S" in done.stderr
    assert "Traceback" not in done.stderr
