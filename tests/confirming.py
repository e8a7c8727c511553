"""Asking a real confirmation pool, for the tests that run one (fixture: ``confirm_client``)."""

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from fastapi.testclient import TestClient

T = TypeVar("T")


def confirm(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    """POST /api/confirm, which must answer 200; the JSON answer."""
    response = client.post("/api/confirm", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def run_own_loop(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(main())`` in a thread of its own: a test in the same session may hold a
    running loop in this thread (Playwright's sync API does, while its browser is open)."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(lambda: asyncio.run(main())).result()
