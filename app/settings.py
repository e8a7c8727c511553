"""One settings object, read from the environment with the prefix ``ATLAS_``."""

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app import PROJECT_DIR

DEFAULT_LESSON = PROJECT_DIR / "lesson_data" / "atlas-lesson-distributed-gradient-weighting.json"


class Settings(BaseSettings):
    """Every knob of the app; each field is documented in the README's settings table."""

    model_config = SettingsConfigDict(env_prefix="ATLAS_", extra="ignore")

    lesson_path: Path = Field(
        default=DEFAULT_LESSON,
        description="The published Atlas lesson record (JSON) to serve.",
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


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
