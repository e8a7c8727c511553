"""Asking a real confirmation pool, for the tests that run one (fixture: ``confirm_client``)."""

from typing import Any

from fastapi.testclient import TestClient


def confirm(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    """POST /api/confirm, which must answer 200; the JSON answer."""
    response = client.post("/api/confirm", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer
