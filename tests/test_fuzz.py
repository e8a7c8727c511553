"""Schemathesis against a live uvicorn: every operation in the OpenAPI schema, every check.

Each response must match its documented status, content type, headers and schema, no input may
produce a 5xx, invalid input must be rejected and valid input accepted. Bounded: at most
FUZZ_EXAMPLES cases per operation (CONFIRM_EXAMPLES for /api/confirm, where each new case is a
real gloo DDP job on the pool; identical requests come from its cache).

One built-in check is replaced by a stricter form of itself: "valid data is accepted" (ST202)
cannot know the rules that span fields (weights nested exactly like microbatches; a quiz
``choice`` among that question's options), so a schema-valid request may get 422, but only with
an answer that names the field at fault.
"""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import CheckContext, Response
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig

from app.main import create_app
from app.settings import Settings
from bench._servers import APP, Server, serve

# Schemathesis against a real uvicorn with its own pool.
pytestmark = pytest.mark.server

FUZZ_EXAMPLES = 150
CONFIRM_EXAMPLES = 20

load_all_checks()
FIELD_IN_QUOTES = "[“\"']{}[”\"']"


def rejects_valid_data_only_naming_a_field(
    ctx: CheckContext, response: Response, case: schemathesis.Case
) -> None:
    """ST202, except that a 422 naming a sent field (a rule across fields) is allowed."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return
    # Other statuses are ST202's own exceptions, or the business of not_a_server_error.
    if (
        response.status_code < 400
        or response.status_code in (404, 409, 429)
        or response.status_code >= 500
    ):
        return
    fields = set(case.body) if isinstance(case.body, dict) else set()
    if not fields:  # no field sent (the schema lets the form be left out): it may name one it needs
        fields = {
            name
            for body in case.operation.body
            for name in body.definition.get("schema", {}).get("required", [])
        }
    assert response.status_code == 422, f"schema-valid data rejected with {response.status_code}"
    if "json" in response.headers.get("content-type", [""])[0]:
        named = {str(part) for item in response.json()["detail"] for part in item["loc"]}
    else:
        named = {
            f for f in fields if re.search(FIELD_IN_QUOTES.format(re.escape(f)), response.text)
        }
    assert named & fields, f"422 for schema-valid data names none of {sorted(fields)}"


ALL_CHECKS = [
    check for check in CHECKS.get_all() if check.__name__ != "positive_data_acceptance"
] + [rejects_valid_data_only_naming_a_field]


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # Its own confirmation pool: answers do not depend on other servers of this checkout.
    pool_dir: Path = tmp_path_factory.mktemp("fuzz-pool")
    # Random class codes are guesses: at full speed here (the limit is test_live_students's).
    env = {"ATLAS_CONFIRM_RUNTIME_DIR": str(pool_dir), "ATLAS_CODE_MISSES_PER_MINUTE": "1000000"}
    with serve(APP, workers=1, ready_path="/healthz", env=env) as server:
        yield server


# The schema the server publishes, read from the same app at collection time (schemathesis's lazy
# fixture loader does not run under pytest 9); the cases go to the live server.
# A body over ATLAS_MAX_BODY_BYTES is refused by its size (413, documented) before anything
# parses it: for invalid data as right an answer as a 422 (the generator does write such bodies).
# The check's own defaults come from its public configuration, so a schemathesis upgrade that
# changes them changes them here too.
DEFAULT_REJECTIONS = (
    SchemathesisConfig().projects.default.checks.negative_data_rejection.expected_statuses
)
REJECTIONS = [*DEFAULT_REJECTIONS, "413"]
CONFIG = SchemathesisConfig.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": REJECTIONS}}}
)
schema = schemathesis.openapi.from_dict(create_app(Settings()).openapi(), config=CONFIG)
FUZZ_SETTINGS = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@schema.exclude(path="/api/confirm").parametrize()
@settings(FUZZ_SETTINGS, max_examples=FUZZ_EXAMPLES)
def test_every_operation_keeps_its_contract(case: schemathesis.Case, fuzz_server: Server) -> None:
    case.call_and_validate(base_url=fuzz_server.url, checks=ALL_CHECKS)


@pytest.mark.distributed
@schema.include(path="/api/confirm").parametrize()
@settings(FUZZ_SETTINGS, max_examples=CONFIRM_EXAMPLES)
def test_confirm_keeps_its_contract(case: schemathesis.Case, fuzz_server: Server) -> None:
    case.call_and_validate(base_url=fuzz_server.url, checks=ALL_CHECKS, timeout=120)
