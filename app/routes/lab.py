"""Placeholder router, being written now (see the open issues)."""

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter

router = APIRouter()


def page_context(query: Mapping[str, str]) -> dict[str, Any]:
    """Template context for the lab inside the lesson page, from the page's query string."""
    return {}
