"""Read /proc: a process tree (children, resident memory, which processes hold torch, CPU time)
and the machine's CPU time stolen by the hypervisor."""

import os
from pathlib import Path

PROC = Path("/proc")


def _parent(pid: int) -> int | None:
    """The parent of a live process; None once it is gone or a zombie (dead, not yet reaped)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name sits in parentheses and may itself hold spaces or parentheses.
    state, parent = stat[stat.rindex(")") + 2 :].split()[:2]
    return None if state in ("Z", "X") else int(parent)


def _parents() -> dict[int, int]:
    parents = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            parent = _parent(int(entry.name))
            if parent is not None:
                parents[int(entry.name)] = parent
    return parents


def children(pid: int) -> list[int]:
    """The live (not zombie) processes whose parent is ``pid``."""
    return [child for child, parent in _parents().items() if parent == pid]


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (children, grandchildren, ...), in no special order."""
    parents = _parents()
    found: list[int] = []
    frontier = [root]
    while frontier:
        current = frontier.pop()
        kids = [pid for pid, parent in parents.items() if parent == current]
        found.extend(kids)
        frontier.extend(kids)
    return found


def rss_bytes(pid: int) -> int:
    """Resident set size of one process (not its children), from /proc/<pid>/status."""
    for line in (PROC / str(pid) / "status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def pss_bytes(pids: list[int]) -> int:
    """The processes' proportional set size together (``smaps_rollup``)."""
    total = 0
    for pid in pids:
        try:
            rollup = (PROC / str(pid) / "smaps_rollup").read_text()
        except OSError:
            continue
        total += next(
            int(line.split()[1]) * 1024 for line in rollup.splitlines() if line.startswith("Pss:")
        )
    return total


# /proc/net/tcp's socket states.
LISTEN, ESTABLISHED = "0A", "01"


def sockets_on(port: int) -> dict[int, str]:
    """Each IPv4 TCP socket on local ``port`` of 127.0.0.1, by inode: its state."""
    found = {}
    for line in (PROC / "net" / "tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, state, inode = fields[1], fields[3], int(fields[9])
        if address == f"0100007F:{port:04X}" and inode:
            found[inode] = state
    return found


def holds_torch(pid: int) -> bool:
    """Whether the process has torch's C++ library mapped, i.e. it imported torch."""
    try:
        return "libtorch" in (PROC / str(pid) / "maps").read_text()
    except OSError:
        return False


def torch_processes(root: int) -> list[int]:
    """The processes below ``root`` that imported torch (the confirmation workers)."""
    return [pid for pid in descendants(root) if holds_torch(pid)]


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time the given processes have used so far."""
    ticks = 0
    for pid in pids:
        try:
            stat = (PROC / str(pid) / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _cmdline(pid: int) -> bytes:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def uvicorn_workers(supervisor: int) -> list[int]:
    """uvicorn's worker processes: those its supervisor started with multiprocessing, spawned
    (its children running ``spawn_main``: uvicorn's own way) or forked by a fork server (the
    children of its child running ``multiprocessing.forkserver``: ``app.web.listeners``')."""
    found = []
    for pid in children(supervisor):
        command = _cmdline(pid)
        if b"spawn_main" in command:
            found.append(pid)
        elif b"multiprocessing.forkserver" in command:
            found.extend(children(pid))
    return sorted(found)


def web_processes(root: int) -> list[int]:
    """A uvicorn server's own processes: the root and every descendant that does not hold torch."""
    return [root, *(pid for pid in descendants(root) if not holds_torch(pid))]


def stolen_and_total(stat: str) -> tuple[int, int]:
    """From the text of ``/proc/stat``: the whole machine's stolen clock ticks (a virtual CPU
    ready to run while the hypervisor ran another guest) and all its ticks so far, stolen and
    idle included. The first line's fields are user, nice, system, idle, iowait, irq, softirq,
    steal, then guest and guest_nice, which user and nice already count (proc(5))."""
    name, *fields = stat.split("\n", 1)[0].split()
    if name != "cpu" or len(fields) < 8:
        raise ValueError(f"not the machine's line of /proc/stat: {name} {fields}")
    ticks = [int(field) for field in fields[:8]]
    return ticks[7], sum(ticks)


def machine_ticks() -> tuple[int, int]:
    """The machine's stolen and total CPU clock ticks so far (``stolen_and_total``)."""
    return stolen_and_total((PROC / "stat").read_text())


def stolen_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time stolen between two ``machine_ticks`` readings."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0
