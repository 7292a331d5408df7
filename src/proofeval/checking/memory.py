"""How much memory this process's descendants (the prover processes) use, from /proc.

Forked HOL Light processes share most of their pages, so each counts its proportional
share (PSS) where the kernel shows it, else its resident size."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

PROC = Path("/proc")


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it exited meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children[ppid].append(int(entry.name))
    return children


def _kib(pid: int) -> int:
    try:
        for line in (PROC / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    try:
        resident_pages = int((PROC / str(pid) / "statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return resident_pages * os.sysconf("SC_PAGE_SIZE") // 1024


def descendants_mb(root: int | None = None) -> float:
    """MiB used by every descendant of `root` (default: this process), not by itself."""
    children = _children()
    todo = list(children.get(root or os.getpid(), []))
    total = 0
    while todo:
        pid = todo.pop()
        total += _kib(pid)
        todo.extend(children.get(pid, []))
    return total / 1024
