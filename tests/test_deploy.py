"""deploy/: the compose file and nginx's configuration say what docs/deployment.md promises.

No container engine runs here, so these read the files: replicas, one torch pool, the servers'
versions, volumes and health checks, and nginx's routing checked against the app's real paths.
"""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.main import create_app
from app.settings import Settings

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
APP_SERVICES = ("app", "confirm")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose["services"]
    return found


def locations() -> dict[str, list[str]]:
    """Each ``location`` of nginx.conf (its pattern) -> its directives, one string each."""
    text = re.sub(r"#[^\n]*", "", (DEPLOY / "nginx.conf").read_text())
    found = {}
    for match in re.finditer(r"location\s+([^{]+?)\s*\{([^}]*)\}", text):
        found[match.group(1)] = [
            " ".join(d.split()) for d in match.group(2).split(";") if d.strip()
        ]
    return found


def routed_to(path: str) -> list[str]:
    """The directives nginx applies to ``path``: the first matching regex location wins over
    the prefix ``/`` (nginx's order for these two kinds)."""
    found = locations()
    for pattern, directives in found.items():
        if pattern.startswith("~ ") and re.search(pattern[2:], path):
            return directives
    return found["/"]


def seconds(value: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600}
    return int(value[:-1]) * units[value[-1]]


def test_two_or_more_app_replicas_without_torch(services: dict[str, dict[str, Any]]) -> None:
    app = services["app"]
    assert app["deploy"]["replicas"] >= 2
    assert app["environment"]["ATLAS_CONFIRM_ENABLED"] == "false"
    assert "ports" not in app  # reached only through the proxy


def test_exactly_one_service_runs_the_torch_pool(services: dict[str, dict[str, Any]]) -> None:
    enabled = [
        name
        for name, service in services.items()
        if service.get("environment", {}).get("ATLAS_CONFIRM_ENABLED", "true") == "true"
        and service.get("image", "").startswith("atlas-lesson")
    ]
    assert enabled == ["confirm"]
    assert services["confirm"].get("deploy", {}).get("replicas", 1) == 1


def test_every_replica_shares_the_key_and_database_and_waits_for_it(
    services: dict[str, dict[str, Any]],
) -> None:
    shared = [services[name]["environment"] for name in APP_SERVICES]
    for key in ("ATLAS_SECRET_KEY", "ATLAS_INSTRUCTOR_PASSWORD", "ATLAS_DATABASE_URL"):
        assert len({env[key] for env in shared}) == 1, key
    env = shared[0]
    for secret in ("ATLAS_SECRET_KEY", "ATLAS_INSTRUCTOR_PASSWORD"):
        assert env[secret].startswith(f"${{{secret}:?")  # no default
    # Straight to PostgreSQL (no pooler between): each worker LISTENs there for the changes.
    assert env["ATLAS_DATABASE_URL"].startswith("postgresql://atlas:${POSTGRES_PASSWORD:?")
    assert env["ATLAS_DATABASE_URL"].endswith("@postgres:5432/atlas")
    for name in APP_SERVICES:
        assert services[name]["depends_on"] == {"postgres": {"condition": "service_healthy"}}


def test_postgresql_15_or_later_is_the_only_store_with_its_volume_and_health_check(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    postgres = services["postgres"]
    postgres_major = re.search(r":(\d+)", postgres["image"])
    assert postgres_major is not None
    assert int(postgres_major.group(1)) >= 15
    volume, target = postgres["volumes"][0].split(":")
    assert target == "/var/lib/postgresql/data"
    assert set(compose["volumes"]) == {volume}
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    # The classes' changes travel by PostgreSQL's LISTEN/NOTIFY: no broker beside it.
    assert set(services) == {"proxy", "app", "confirm", "postgres"}


def test_the_proxy_is_the_only_way_in_and_waits_for_healthy_replicas(
    services: dict[str, dict[str, Any]],
) -> None:
    published = [name for name, service in services.items() if "ports" in service]
    assert published == ["proxy"]
    assert services["proxy"]["image"].split(":")[0].endswith("nginx")
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in services["proxy"]["volumes"]
    for name in APP_SERVICES:
        assert services["proxy"]["depends_on"][name]["condition"] == "service_healthy"


def test_class_streams_are_unbuffered_with_long_timeouts() -> None:
    stream = routed_to("/class/ABC234/events")
    assert "proxy_pass http://atlas" in stream
    assert "proxy_buffering off" in stream
    timeouts = [d.split()[1] for d in stream if d.startswith("proxy_read_timeout")]
    assert timeouts
    assert seconds(timeouts[0]) >= 3600
    # Only the stream: a class's pages and answers keep the ordinary timeout.
    assert "proxy_buffering off" not in routed_to("/class/ABC234")
    assert "proxy_buffering off" not in routed_to("/class/ABC234/answer")


def test_confirmation_paths_reach_the_torch_service_and_nothing_else_does() -> None:
    paths = list(create_app(Settings(confirm_enabled=False)).openapi()["paths"])
    confirm = [path for path in paths if "confirm" in path]
    assert len(confirm) >= 3
    for path in paths:
        expected = "atlas_confirm" if path in confirm else "atlas"
        assert f"proxy_pass http://{expected}" in routed_to(path), path


def test_upstreams_name_the_compose_services_on_the_entrypoints_port(
    services: dict[str, dict[str, Any]],
) -> None:
    text = (DEPLOY / "nginx.conf").read_text()
    entrypoint = (DEPLOY.parent / "scripts" / "docker-entrypoint").read_text()
    port = re.search(r"--port (\d+)", entrypoint)
    assert port is not None
    for upstream, service in (("atlas", "app"), ("atlas_confirm", "confirm")):
        block = re.search(rf"upstream {upstream} \{{([^}}]*)\}}", text)
        assert block is not None
        assert f"server {service}:{port.group(1)} resolve;" in block.group(1)
        assert service in services


def test_every_setting_compose_gives_is_one_the_app_reads(
    services: dict[str, dict[str, Any]],
) -> None:
    known = {f"ATLAS_{name.upper()}" for name in Settings.model_fields}
    for name in APP_SERVICES:
        given = {key for key in services[name]["environment"] if key.startswith("ATLAS_")}
        assert given <= known, given - known
