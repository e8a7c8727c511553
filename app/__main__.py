"""``python -m app``: uvicorn with ``app.web.server``'s protocol limits and keep-alive timeout;
it makes the signing key and instructor password (unless set) before any worker starts, and
says where to start a class and with which password. ``python -m app purge`` deletes the live
classes past ``ATLAS_CLASS_RETENTION_DAYS`` (or never joined) now; ``python -m app migrate``
applies the database migrations alone (a server applies them too, at start, under a lock: this
is for a deployment that migrates before its replicas start).

    python -m app --host 0.0.0.0 --port 8000 --workers 2

is ``uvicorn --factory app.main:create_app`` plus ``--http app.web.server:GuardedHttpProtocol
--timeout-keep-alive $ATLAS_KEEP_ALIVE_S``. ``--workers`` defaults to ``$WEB_CONCURRENCY`` (else
1), as uvicorn's does; on Linux several workers each listen on a socket of their own
(``app.web.listeners``), so a class's connections are spread evenly across them. The
confirmation's torch pool runs in a process of its own, started by whichever web worker takes
its lock (``app.confirm.launcher``); every web worker asks it.
"""

import argparse
import os
import sys
from collections.abc import Sequence

from app.live.database import SharedKeyError, require_shared_key
from app.settings import Settings, get_settings
from app.web import listeners
from app.web.secretkey import PASSWORD_FILE, SecretKeyError, kept_secrets

# Each worker builds the app when it starts (uvicorn --factory).
APP = "app.main:create_app"
PROTOCOL = "app.web.server:GuardedHttpProtocol"


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("WEB_CONCURRENCY", "1")),
        help="worker processes (default $WEB_CONCURRENCY or 1)",
    )
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    parser.add_argument("--no-access-log", action="store_true", help="no per-request log lines")
    parser.add_argument(
        "--no-server-header", action="store_true", help="no 'server: uvicorn' header"
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        default=None,
        help="proxy addresses whose X-Forwarded-For/-Proto are trusted (uvicorn's default)",
    )
    parser.add_argument("--root-path", default="", help="path prefix the proxy serves the app at")
    return parser.parse_args(argv)


def purge() -> None:
    """Delete the classes past their retention, now, and say how many."""
    from app.live.lifecycle import purge_now  # only this command opens the database here
    from app.live.store import UNJOINED_HOURS

    settings = get_settings()
    removed = purge_now(settings)
    print(
        f"deleted {removed} {'class' if removed == 1 else 'classes'} older than"
        f" {settings.class_retention_days:g} days or never joined within {UNJOINED_HOURS} hours"
    )


def migrate() -> None:
    """Bring the classes' database to the newest revision, and say where it is."""
    from app.live.lifecycle import migrate_now  # only this command opens the database here

    print(f"migrated: {migrate_now(get_settings())}")


COMMANDS = {"purge": purge, "migrate": migrate}


def banner(settings: Settings, args: argparse.Namespace, password_set: bool) -> str:
    """Where to start a class and with which password, said at start as Jupyter says its token
    (a generated password is shown; a configured one is not repeated)."""
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
    shown = f"[{shown}]" if ":" in shown else shown
    origin = settings.public_url or f"http://{shown}:{args.port}"
    where = f"{origin}{args.root_path}/class/new"
    if password_set:
        return f"  Start a live class at {where} with ATLAS_INSTRUCTOR_PASSWORD."
    return (
        f"  Start a live class at {where} with the instructor password:"
        f" {settings.instructor_password}\n  (kept in {settings.data_dir / PASSWORD_FILE};"
        " set ATLAS_INSTRUCTOR_PASSWORD to choose another)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments and arguments[0] in COMMANDS:
        COMMANDS[arguments[0]]()
        return
    args = parse(arguments)
    configured = get_settings()
    try:
        require_shared_key(
            configured.database_url, configured.secret_key, configured.instructor_password
        )
        # Made here, once, before any worker starts: every worker reads the same files.
        settings = kept_secrets(configured)
    except (SharedKeyError, SecretKeyError) as error:  # said once, plainly
        sys.exit(f"python -m app: refusing to start: {error}")
    print(banner(settings, args, bool(configured.instructor_password)), flush=True)
    listeners.run(
        APP,
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        http=PROTOCOL,
        timeout_keep_alive=max(1, round(settings.keep_alive_s)),
        log_level=args.log_level,
        access_log=not args.no_access_log,
        server_header=not args.no_server_header,
        forwarded_allow_ips=args.forwarded_allow_ips,
        root_path=args.root_path,
    )


if __name__ == "__main__":
    main()
