"""Placeholder router, being written now (see the open issues)."""

from fastapi import APIRouter

router = APIRouter()
