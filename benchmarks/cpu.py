"""CPU seconds of this process and everything it started: its own time, the children it
reaped, and every live descendant with the children each of those reaped.

Sandboxed provers are counted too: the prover is bubblewrap's first process and bwrap
waits for it (proofeval.provers.sandbox), so its time reaches us when bwrap ends, and
while it runs it is a live descendant. Unlike wall time, other load on the machine does
not stretch this figure."""

from __future__ import annotations

import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu() -> float:
    own = os.times()
    return own.user + own.system + own.children_user + own.children_system + descendants_cpu()


def process_tree_cpu(pid: int) -> float:
    """CPU seconds of `pid`, the children it reaped and every live descendant of it with
    the children each of those reaped (a warm process's attempts, and the warm parser it
    started with that parser's answers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / TICK + descendants_cpu(pid)


def descendants_cpu(root: int | None = None) -> float:
    """CPU seconds of every live descendant of `root` (this process by default) and of
    the children each of those reaped (the provers alone, without `root` and what it
    reaped)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry.name)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    todo, ticks = list(children.get(os.getpid() if root is None else root, [])), 0
    while todo:
        pid = todo.pop()
        ticks += sum(int(f) for f in stats[pid][11:15])  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return ticks / TICK
