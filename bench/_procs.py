"""Read a process tree from /proc: children, resident memory, and which processes hold torch."""

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


def web_processes(root: int) -> list[int]:
    """A uvicorn server's own processes: the root and every descendant that does not hold torch."""
    return [root, *(pid for pid in descendants(root) if not holds_torch(pid))]
