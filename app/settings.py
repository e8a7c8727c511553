"""One settings object, read from the environment with the prefix ``ATLAS_``."""

import hashlib
import os
import tempfile
from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app import PROJECT_DIR

# One pool per user and checkout by default: every web worker of this server shares it.
DEFAULT_RUNTIME_DIR = Path(tempfile.gettempdir()) / (
    f"atlas-confirm-{os.getuid()}-{hashlib.sha256(bytes(PROJECT_DIR)).hexdigest()[:10]}"
)
DEFAULT_LESSON = PROJECT_DIR / "lesson_data" / "atlas-lesson-distributed-gradient-weighting.json"


class Settings(BaseSettings):
    """Every knob of the app; each field is documented in the README's settings table."""

    model_config = SettingsConfigDict(env_prefix="ATLAS_", extra="ignore")

    lesson_path: Path = Field(
        default=DEFAULT_LESSON,
        description=(
            "The published Atlas lesson record (JSON) to serve at /, or a folder of records"
            " (a course: the index at /, each lesson at /learn/<slug>/)."
        ),
    )
    templates_dir: Path = Field(
        default=PROJECT_DIR / "templates",
        description="Jinja2 templates folder.",
    )
    static_dir: Path = Field(
        default=PROJECT_DIR / "static",
        description="Static assets folder (CSS, vendored htmx and math font).",
    )
    secret_key: str = Field(
        default="atlas-lesson-dev-key-change-me",
        description=(
            "Key that signs the quiz-score cookie. Every worker of one deployment must share it;"
            " set your own in production."
        ),
    )

    confirm_enabled: bool = Field(
        default=True,
        description=(
            "Run the real torch.distributed confirmation. false: /api/confirm answers 503 as if"
            " torch were not installed, and no torch process starts."
        ),
    )
    confirm_world_size: int = Field(
        default=8,
        ge=1,
        le=8,
        description=(
            "Ranks in the warm gloo pool, the most a confirmation can use; also the number of"
            " torch processes the whole server (all web workers) ever runs."
        ),
    )
    confirm_queue_limit: int = Field(
        default=16,
        ge=0,
        description="Confirmation requests that may wait behind the running one; more get 429.",
    )
    confirm_cache_size: int = Field(
        default=64,
        ge=0,
        description="Finished confirmations kept to answer identical requests (0 turns it off).",
    )
    confirm_job_timeout_s: float = Field(
        default=4.0,
        gt=0,
        description=(
            "Deadline for one confirmation job in the pool; past it every rank is killed, the"
            " pool rebuilt and the job retried once."
        ),
    )
    confirm_group_timeout_s: float = Field(
        default=3.0,
        gt=0,
        description="Timeout of each gloo process group: a collective waiting longer fails.",
    )
    confirm_start_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="How long the pool may take to start (import torch, join, warm up).",
    )
    confirm_runtime_dir: Path = Field(
        default=DEFAULT_RUNTIME_DIR,
        description=(
            "Folder for the pool's lock, socket and rendezvous file. Web workers that share it"
            " share one pool; give separate deployments on one host separate folders."
        ),
    )


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
