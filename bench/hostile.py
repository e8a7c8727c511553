"""Hostile clients on the classroom network, against a real ``python -m app`` (one worker).

    .venv/bin/python -m bench.hostile                   # every attack
    .venv/bin/python -m bench.hostile --only slow-bodies --app-dir /tmp/old   # an older checkout

Each attack runs against a fresh server (confirmation off, log level info, access log off, its
log captured), and while it lasts ``/healthz`` and the lesson page ``/`` are asked for on new
connections, one after the other; a row gives the attack's size, the probes' worst time and
status, and what the attack cost the server (its open files, its log):

* **slow-bodies**: 1,000 connections each send a POST's head, then one byte of its body every 7 s;
* **slow-readers**: 200 connections each pipeline 20 requests for the lesson page and never read
  (probed once each has the start of its first answer);
* **one-address**: 500 clients from one address (a school's NAT), each 3 requests on one
  connection, all at once: every answer must be 200;
* **hang-ups**: 20 clients each pipeline 5 requests to the JSON API and close at once: the
  log's growth and its tracebacks.

Probes come from 127.0.0.2, the attacks from 127.0.0.1. ``--nginx`` puts nginx in front with
docs/deployment.md's configuration (per-address limits, timeouts; no TLS) and attacks through it.
Results go to ``bench/results/hostile.json`` (``hostile-nginx.json``). Probes give up after 15 s
(shown as "timeout").
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from bench._servers import ROOT, Server, free_port, launch, stop, wait_ready

RESULTS = ROOT / "bench" / "results"
PROBE_TIMEOUT_S = 15.0
HOST = "127.0.0.1"
# The probes come from another loopback address than the attacks, as another student's machine
# would: a proxy's per-address limits then tell them apart (the app alone has none).
PROBE_FROM = ("127.0.0.2", 0)


def request(path: str, *, close: bool = True) -> bytes:
    connection = b"Connection: close\r\n" if close else b""
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: lab\r\n" + connection + b"\r\n"


async def probe(port: int, path: str) -> tuple[float, str]:
    """One GET on a new connection, read to the end: (seconds, status or what went wrong)."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            reader, writer = await asyncio.open_connection(HOST, port, local_addr=PROBE_FROM)
            writer.write(request(path))
            answer = await reader.read()
            writer.close()
    except TimeoutError:
        return time.monotonic() - started, "timeout"
    except OSError as exc:
        return time.monotonic() - started, type(exc).__name__
    status = answer[9:12].decode() if answer.startswith(b"HTTP/1.1 ") else "no answer"
    return time.monotonic() - started, status


async def probes(port: int, rounds: int = 5) -> dict[str, Any]:
    """``rounds`` probes of /healthz and of the lesson page, a second apart."""
    found: dict[str, list[tuple[float, str]]] = {"/healthz": [], "/": []}
    for _ in range(rounds):
        for path, seen in found.items():
            seen.append(await probe(port, path))
        await asyncio.sleep(1.0)
    return {
        path: {
            "worst_s": round(max(s for s, _ in seen), 3),
            "median_s": round(sorted(s for s, _ in seen)[len(seen) // 2], 3),
            "statuses": sorted({status for _, status in seen}),
        }
        for path, seen in found.items()
    }


async def hold(port: int, count: int, first: bytes) -> list[asyncio.StreamWriter]:
    """``count`` connections, each having sent ``first``."""
    writers = []
    for _ in range(count):
        try:
            _, writer = await asyncio.open_connection(HOST, port)
        except OSError:
            continue
        writer.write(first)
        writers.append(writer)
    return writers


def close_all(writers: list[asyncio.StreamWriter]) -> None:
    for writer in writers:
        writer.transport.abort()


async def slow_bodies(port: int, count: int = 1000) -> dict[str, Any]:
    head = (
        b"POST /api/gradient HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n"
    )
    writers = await hold(port, count, head)

    async def trickle() -> None:
        while True:
            await asyncio.sleep(7)
            for writer in writers:
                if not writer.transport.is_closing():
                    writer.write(b" ")

    dripping = asyncio.create_task(trickle())
    await asyncio.sleep(2)
    try:
        found = await probes(port, rounds=10)
    finally:
        dripping.cancel()
        close_all(writers)
    return {"connections": len(writers), "probes": found}


async def slow_readers(port: int, count: int = 200, pipelined: int = 20) -> dict[str, Any]:
    readers, writers = [], []
    for _ in range(count):
        reader, writer = await asyncio.open_connection(HOST, port)
        writer.write(request("/", close=False) * pipelined)
        readers.append(reader)
        writers.append(writer)
    # Probe once the attack is in place: each has the start of its first answer (200 lesson
    # pages asked for at once are a burst of work whoever asks). asyncio's reader takes up to
    # 128 KiB from the socket and then stops reading, as a client that never reads.
    started = time.monotonic()
    async with asyncio.timeout(120):
        for reader in readers:
            await reader.readexactly(1)
    in_place_s = round(time.monotonic() - started, 2)
    try:
        found = await probes(port, rounds=10)
    finally:
        close_all(writers)
    return {
        "connections": len(writers),
        "pipelined": pipelined,
        "first_answers_s": in_place_s,
        "probes": found,
    }


async def one_address(port: int, clients: int = 500, each: int = 3) -> dict[str, Any]:
    async def client() -> list[str]:
        statuses = []
        try:
            async with asyncio.timeout(60):
                reader, writer = await asyncio.open_connection(HOST, port)
                for _ in range(each):
                    writer.write(request("/healthz", close=False))
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = next(
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                    await reader.readexactly(length)
                    statuses.append(head[9:12].decode())
                    await asyncio.sleep(0.2)
                writer.close()
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            statuses.append(type(exc).__name__)
        return statuses

    started = time.monotonic()
    answers = [
        status
        for got in await asyncio.gather(*(client() for _ in range(clients)))
        for status in got
    ]
    return {
        "clients": clients,
        "requests": clients * each,
        "ok": answers.count("200"),
        "other": sorted(set(answers) - {"200"}),
        "seconds": round(time.monotonic() - started, 2),
    }


async def hang_ups(port: int, clients: int = 20, pipelined: int = 5) -> dict[str, Any]:
    body = b'{"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10}'
    post = (
        b"POST /api/gradient HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    for _ in range(clients):
        _, writer = await asyncio.open_connection(HOST, port)
        writer.write(post * pipelined)
        await writer.drain()
        writer.transport.abort()
    await asyncio.sleep(3)
    return {"clients": clients, "pipelined": pipelined}


ATTACKS: dict[str, Callable[[int], Coroutine[Any, Any, dict[str, Any]]]] = {
    "slow-bodies": slow_bodies,
    "slow-readers": slow_readers,
    "one-address": one_address,
    "hang-ups": hang_ups,
}


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# deployment.md's nginx front, on loopback without TLS: per-address limits and timeouts.
NGINX_CONF = """
daemon off;
user root;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    limit_conn_zone $binary_remote_addr zone=atlas_conn:10m;
    limit_req_zone  $binary_remote_addr zone=atlas_req:10m rate=20r/s;
    upstream atlas {{ server 127.0.0.1:{app_port}; keepalive 32; }}
    server {{
        listen 127.0.0.1:{port};
        client_header_timeout 10s;
        client_body_timeout   10s;
        send_timeout          30s;
        keepalive_timeout     15s;
        client_max_body_size        1m;
        large_client_header_buffers 4 32k;
        limit_conn atlas_conn 20;
        limit_req  zone=atlas_req burst=40 nodelay;
        limit_conn_status 429;
        limit_req_status  429;
        location / {{
            proxy_pass http://atlas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
        }}
    }}
}}
"""


@contextmanager
def nginx_in_front(app_port: int) -> Iterator[int]:
    """nginx (deployment.md's configuration) in front of the app on ``app_port``: its port."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "nginx.conf"
        conf.write_text(NGINX_CONF.format(tmp=tmp, app_port=app_port, port=port))
        process = subprocess.Popen(["nginx", "-c", str(conf), "-p", tmp])
        try:
            wait_ready(Server(f"http://{HOST}:{port}", process), "/healthz")
            yield port
        finally:
            process.terminate()
            process.wait(timeout=30)


def run_attack(name: str, app_dir: Path, log: Path, *, nginx: bool) -> dict[str, Any]:
    port = free_port()
    command = [sys.executable, "-m", "app", "--host", HOST, "--port", str(port), "--no-access-log"]
    env = {**os.environ, "ATLAS_CONFIRM_ENABLED": "false", "PYTHONPATH": str(app_dir)}
    with log.open("wb") as sink:
        server = launch(command, port=port, ready_path="/healthz", env=env, cwd=app_dir, log=sink)
        try:
            size_before = log.stat().st_size
            with nginx_in_front(port) if nginx else nullcontext(port) as front:
                result = asyncio.run(ATTACKS[name](front))
            result["server_open_files_after"] = open_files(server.process.pid)
        finally:
            stop(server)
    text = log.read_bytes()[size_before:]
    result["log_bytes"] = len(text)
    result["log_tracebacks"] = text.count(b"Traceback")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hostile", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--only", nargs="+", choices=sorted(ATTACKS), default=list(ATTACKS))
    parser.add_argument("--app-dir", type=Path, default=ROOT, help="the checkout to serve")
    parser.add_argument(
        "--nginx", action="store_true", help="attack through nginx (docs/deployment.md's front)"
    )
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.only:
        log = RESULTS / f"hostile-{name}.log"
        results[name] = run_attack(name, args.app_dir.resolve(), log, nginx=args.nginx)
        print(name, json.dumps(results[name]), flush=True)
    (RESULTS / ("hostile-nginx.json" if args.nginx else "hostile.json")).write_text(
        json.dumps(results, indent=2) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
