"""What a hostile JSON body costs the server to refuse: CPU seconds per request, read from
/proc for the server's own processes (not the client's), against a real uvicorn on loopback.

Bodies: the lesson's valid body (the yardstick), 80,000 unknown keys beside it, a lone
surrogate in a key, and a 4,000-digit number. Each is posted ``--requests`` times, one at a time;
the table gives the status answered, the CPU per request and the size of the answer.

    python -m bench.hostile_bodies [--requests 20] [--cwd OTHER_CHECKOUT]

``--cwd`` serves the app of another checkout (e.g. a worktree of an older commit), to compare.
"""

import argparse
import json
from pathlib import Path

import httpx

from bench._http import TLS
from bench._procs import cpu_seconds, web_processes
from bench._servers import APP, ROOT, serve

LESSON = '"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10'


def bodies() -> dict[str, bytes]:
    many = "".join(f',"k{index}":0' for index in range(80_000))
    return {
        "lesson (valid)": f"{{{LESSON}}}".encode(),
        "80,000 unknown keys": f"{{{LESSON}{many}}}".encode(),
        "lone surrogate in a key": f'{{{LESSON}, "x\\ud800": 1}}'.encode(),
        "4,000-digit number": f'{{"counts": [2, 6], "means": [1, 3], "w": {"9" * 4000}}}'.encode(),
    }


def post(client: httpx.Client, path: str, body: bytes) -> tuple[int | str, int]:
    """The status and size of the answer; ``reset`` when the server dropped the connection."""
    try:
        response = client.post(path, content=body, headers={"content-type": "application/json"})
    except httpx.TransportError:
        return "reset", 0
    return response.status_code, len(response.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--cwd", type=Path, default=ROOT, help="the checkout whose app is served")
    parser.add_argument("--path", default="/api/gradient")
    args = parser.parse_args()
    env = {"ATLAS_CONFIRM_ENABLED": "false"}
    rows = []
    with serve(APP, workers=1, ready_path="/healthz", env=env, cwd=args.cwd) as server:
        processes = web_processes(server.process.pid)
        with httpx.Client(base_url=server.url, timeout=30, verify=TLS) as client:
            for name, body in bodies().items():
                post(client, args.path, body)  # warm
                before = cpu_seconds(processes)
                answers = [post(client, args.path, body) for _ in range(args.requests)]
                spent = (cpu_seconds(processes) - before) / args.requests
                statuses = "/".join(sorted({str(status) for status, _ in answers}))
                rows.append((name, len(body), statuses, spent, answers[-1][1]))
    print(f"{'body':26} {'bytes':>9} {'status':>6} {'CPU ms/request':>15} {'answer bytes':>13}")
    for name, size, status, spent, answer in rows:
        print(f"{name:26} {size:9,} {status:>6} {spent * 1000:15.1f} {answer:13,}")
    print(json.dumps({"path": args.path, "cwd": str(args.cwd), "rows": rows}))


if __name__ == "__main__":
    main()
