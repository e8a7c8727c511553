"""Liveness and what this server runs."""

from fastapi import APIRouter, Request
from pydantic import BaseModel

from app.confirm.service import torch_installed

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str
    lesson_id: str
    lesson_version: str
    torch_installed: bool


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
