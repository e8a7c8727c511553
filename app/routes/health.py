"""Liveness and what this server runs."""

import importlib.util

from fastapi import APIRouter, Request
from pydantic import BaseModel

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str
    lesson_id: str
    lesson_version: str
    torch_installed: bool


def torch_installed() -> bool:
    """Whether torch can be imported, found without importing it in this process."""
    return importlib.util.find_spec("torch") is not None


@router.get("/healthz", response_model=Health)
def healthz(request: Request) -> Health:
    """Liveness: the lesson served and whether the torch extra is installed."""
    record = request.app.state.lesson.record
    return Health(
        status="ok",
        lesson_id=record.id,
        lesson_version=record.version,
        torch_installed=torch_installed(),
    )
