"""One settings object, read from the environment with the prefix ``ATLAS_``."""

import hashlib
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app import PROJECT_DIR

# One pool per user and checkout by default: every web worker of this server shares it.
DEFAULT_RUNTIME_DIR = Path(tempfile.gettempdir()) / (
    f"atlas-confirm-{os.getuid()}-{hashlib.sha256(bytes(PROJECT_DIR)).hexdigest()[:10]}"
)
DEFAULT_LESSON = PROJECT_DIR / "lesson_data" / "atlas-lesson-distributed-gradient-weighting.json"


class Settings(BaseSettings):
    """Every knob of the app; each field is documented in the README's settings table."""

    # A field's docstring is its description.
    model_config = SettingsConfigDict(
        env_prefix="ATLAS_", extra="ignore", use_attribute_docstrings=True
    )

    lesson_path: Path = DEFAULT_LESSON
    """The published Atlas lesson record (JSON) to serve at /, or a folder of records (a course: the
    index at /, each lesson at /learn/<slug>/)."""
    templates_dir: Path = PROJECT_DIR / "templates"
    """Jinja2 templates folder."""
    static_dir: Path = PROJECT_DIR / "static"
    """Static assets folder (CSS, vendored htmx and math font)."""
    secret_key: str = ""
    """Key that signs the quiz-score cookie and the live class's cookies. Empty: a random key is
    made once and kept in the data folder (secret-key, mode 0600), so every worker and every restart
    on that folder shares it. Set your own to share it across hosts."""
    trusted_hosts: Annotated[list[str], NoDecode] = ["*"]
    """Host headers the server answers, comma-separated (e.g. 'lab.example.org,localhost'); '*'
    answers any. Others get 400 before anything else runs."""
    max_url_bytes: int = Field(16_384, ge=256)
    """Longest path plus query string accepted, in bytes; longer gets 414."""
    max_body_bytes: int = Field(1_048_576, ge=1_024)
    """Largest request body accepted, in bytes; larger gets 413 before it is parsed."""
    body_timeout_s: float = Field(10.0, gt=0)
    """Longest wait for the next part of a request body; a stalled upload gets 408. Also the grace
    before ATLAS_MIN_UPLOAD_RATE applies. Needs `python -m app`."""
    min_upload_rate: float = Field(1_000.0, gt=0)
    """Slowest a request body may arrive, in bytes a second on average, after the first
    ATLAS_BODY_TIMEOUT_S; slower gets 408. Needs `python -m app`."""
    request_timeout_s: float = Field(30.0, gt=0)
    """Longest time a request's head and body together may take to arrive, from its first byte; then
    it gets 408. Needs `python -m app`."""
    write_timeout_s: float = Field(30.0, gt=0)
    """Longest time an answer may wait for its client to read it; then the connection is dropped.
    Needs `python -m app`."""
    header_timeout_s: float = Field(10.0, gt=0)
    """Longest time a connection may take to send a request's headers (from connecting, or from the
    end of the previous answer); then it is closed. Needs `python -m app`."""
    max_header_bytes: int = Field(65_536, ge=4_096)
    """Largest request head (request line and headers) in bytes; larger gets 431. Needs
    `python -m app`."""
    max_connections: int = Field(1_000, ge=1)
    """Open connections per worker, not counting those that carry a live-class stream
    (ATLAS_MAX_STREAMS). Past it the connection that has gone longest without sending a byte or
    reading its answer is closed; one whose app is working or whose client reads is never closed,
    and if all are such the new one gets 503. Needs `python -m app`."""
    max_streams: int = Field(1_000, ge=1)
    """Live-class streams (Server-Sent Events) open per worker, counted apart from
    ATLAS_MAX_CONNECTIONS. A page view has one: a newer stream of the same student's page,
    dashboard or projector ends the older. At the cap the client (address) holding the most streams
    loses its oldest."""
    keep_alive_s: float = Field(5.0, gt=0)
    """How long an idle keep-alive connection stays open. Used by `python -m app`."""
    opentelemetry: bool = False
    """FastAPI's own OpenTelemetry traces, metrics and logs, for an OpenTelemetry SDK configured
    around the server. false: each request skips FastAPI's check for one."""

    confirm_enabled: bool = True
    """Run the real torch.distributed confirmation. false: /api/confirm answers 503 as if torch were
    not installed, and no torch process starts."""
    confirm_world_size: int = Field(8, ge=1, le=8)
    """Ranks in the warm gloo pool, the most a confirmation can use; also the number of torch
    processes the whole server (all web workers) ever runs."""
    confirm_queue_limit: int = Field(16, ge=0)
    """Confirmation requests that may wait behind the running one; more get 429."""
    confirm_client_limit: int = Field(2, ge=1)
    """Confirmations one client (a live class's participant, else its address) may have waiting or
    running; more get 429. The queue serves clients in turn."""
    confirm_cache_size: int = Field(64, ge=0)
    """Finished confirmations kept to answer identical requests (0 turns it off)."""
    confirm_job_timeout_s: float = Field(4.0, gt=0)
    """Deadline for one confirmation job in the pool; past it every rank is killed, the pool rebuilt
    and the job retried once."""
    confirm_group_timeout_s: float = Field(3.0, gt=0)
    """Timeout of each gloo process group: a collective waiting longer fails."""
    confirm_start_timeout_s: float = Field(60.0, gt=0)
    """How long the pool may take to start (import torch, join, warm up)."""
    confirm_runtime_dir: Path = DEFAULT_RUNTIME_DIR
    """Folder for the pool's lock, socket and rendezvous file. Web workers that share it share one
    pool; give separate deployments on one host separate folders."""

    data_dir: Path = PROJECT_DIR / "data"
    """Folder kept across restarts: the live classes' database (SQLite) and the generated signing
    key. The image declares /data a volume and sets this to it."""
    database_url: str = ""
    """The live classes' database: 'postgresql://user:password@host:port/db' for several replicas
    (needs ATLAS_SECRET_KEY), or another SQLAlchemy URL with an async driver. Empty: SQLite in the
    data folder (classes.sqlite3)."""
    instructor_password: str = ""
    """Password asked for when starting a class (the form's field ``password``); a device that
    gave it is remembered by a signed cookie for ATLAS_CLASS_RETENTION_DAYS. Empty: a random one
    is made at first start, kept in the data folder (instructor-password, mode 0600) and printed
    by `python -m app` at start. Required with PostgreSQL (the same on every replica)."""
    class_limit: int = Field(200, ge=1)
    """Classes kept at once; past it starting another is refused (429) until one is deleted or
    expires. Holds however many start at once, on every worker and replica. A class no student
    joined stops counting a day after it started (and the next purge deletes it)."""
    public_url: str = ""
    """The address students reach the server at, as scheme and host ('https://lab.example.org',
    no path): the join link, its QR code and the co-host and projector links are written with it.
    Empty: they follow the address the dashboard was opened at (its Host header; see
    docs/deployment.md)."""
    class_size: int = Field(1_000, ge=1)
    """Students one class takes; past it a join is refused (409, "the class is full"). The host
    can also close joining (lock) at any time."""
    code_misses_per_minute: int = Field(20, ge=1)
    """Join codes of no class one client (address) may try in a minute at full speed, per worker;
    past it each code it looks up waits its turn, one a second, or gets 429 with Retry-After."""
    class_retention_days: float = Field(30, gt=0)
    """Classes older than this many days (and those no student joined, after a day) are deleted
    with everything in them, when the server starts, daily, and by `python -m app purge`."""

    @field_validator("public_url")
    @classmethod
    def _origin_only(cls, value: str) -> str:
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must start with http:// or https:// and name a host")
        if parts.path.strip("/") or parts.query or parts.fragment or parts.username:
            raise ValueError("must be a scheme and host only (a path prefix is --root-path)")
        return f"{parts.scheme}://{parts.netloc}"

    @field_validator("trusted_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            return [host.strip() for host in value.split(",") if host.strip()]
        return value


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
