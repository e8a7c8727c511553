"""The pool's process groups (``app.confirm.worker.process_groups``) on real gloo, in two forked
ranks: a rank that arrives late still joins, and a collective then waits only its own timeout."""

import json
import subprocess
import sys

from tests.conftest import ROOT

# Rank 1 builds its groups LATE seconds after rank 0: longer than a collective's timeout, well
# inside the connect timeout. Then both all-reduce once; then rank 0 all-reduces alone while
# rank 1 waits, connected, for it to finish.
SCRIPT = """
import json, os, sys, tempfile, time
from datetime import timedelta
import torch
from torch._C._distributed_c10d import FileStore
from app.confirm.worker import process_groups

TIMEOUT, CONNECT, LATE = 1.0, 60.0, 3.0
store_path = os.path.join(tempfile.mkdtemp(), "store")
read, write = os.pipe()
done_read, done_write = os.pipe()  # rank 0 to rank 1: its lone try is over


def rank_main(rank):
    if rank == 1:
        time.sleep(LATE)
    store = FileStore(store_path, 2)
    groups = process_groups(
        rank, 2, store, timedelta(seconds=TIMEOUT), timedelta(seconds=CONNECT)
    )
    tensor = torch.ones(1)
    groups[2].allreduce([tensor]).wait()
    report = {"rank": rank, "sizes": sorted(groups), "sum": tensor.item()}
    if rank == 0:
        started = time.monotonic()
        try:
            groups[2].allreduce([tensor]).wait()
            report["alone"] = "finished"
        except RuntimeError:
            report["alone"] = time.monotonic() - started
        os.write(done_write, b"x")
    else:
        # Alive and connected until then: the lone collective can only end by its timeout.
        os.read(done_read, 1)
    os.write(write, (json.dumps(report) + "\\n").encode())
    os._exit(0)


pids = []
for rank in range(2):
    pid = os.fork()
    if pid == 0:
        rank_main(rank)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
os.close(write)
print(os.read(read, 4096).decode(), end="")
"""


def test_a_late_rank_joins_and_a_collective_waits_only_its_timeout() -> None:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    reports = {r["rank"]: r for r in map(json.loads, run.stdout.splitlines())}
    assert set(reports) == {0, 1}, run.stderr
    # Both ranks built their groups (rank 0: P = 2 and 1; rank 1: P = 2) and reduced together.
    assert reports[0]["sizes"] == [1, 2]
    assert reports[1]["sizes"] == [2]
    assert reports[0]["sum"] == reports[1]["sum"] == 2.0
    # Alone, rank 0's collective fails after its own timeout (1 s), not the connect one (60 s).
    alone = reports[0]["alone"]
    assert alone != "finished"
    assert 1.0 <= alone < 20.0
