"""An attempt's processes are reaped after its verdict, without the next request waiting
for them to die: none is left behind (HOL Light, both paths).

The warm process used to wait for each killed child's teardown after every reply; it now
reaps them as they end. Were that reaping lost, every attempt would leave its child and
its replaying sibling as zombies of the warm process for as long as it serves.
"""

from __future__ import annotations

import time
from pathlib import Path

from proofeval.provers.hol_light.server import WarmProcess
from tests.conftest import on_both_paths

hol_base, core = on_both_paths()

GOAL = "`!n. n + 0 = n`"
PROOF = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (state first, then ppid)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _host_pid(proc: WarmProcess) -> int:
    """The host's pid of the warm process, pid `proc.conn.pid` in its sandbox."""
    sandbox = proc.launcher._proc
    assert sandbox is not None
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines())
            nspid = [int(n) for n in fields.get("NSpid", "").split()]
            if len(nspid) > 1 and nspid[-1] == proc.conn.pid and _under(sandbox.pid, nspid[0]):
                return nspid[0]
        except (OSError, ValueError):
            continue
    raise AssertionError(f"no process {proc.conn.pid} in the sandbox")


def _under(root: int, pid: int) -> bool:
    while pid > 1:
        if pid == root:
            return True
        pid = int(_stat(pid)[1])
    return False


def _zombies(parent: int) -> int:
    count = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = _stat(int(stat.parent.name))[:2]
        except (OSError, ValueError, IndexError):
            continue
        count += int(ppid) == parent and state == "Z"
    return count


def test_no_attempt_process_is_left_behind(core: WarmProcess) -> None:
    proc = core.clone()
    try:
        assert proc.add_goal("g", GOAL) is None
        host = _host_pid(proc)
        for _ in range(30):  # each OK has a child and a replaying sibling
            assert proc.check("g", PROOF, 60.0, 2048, True).verdict.value == "OK"
        time.sleep(1.0)  # the last ones' teardown
        # The ended are reaped after a request's reply: after the first ping, before the
        # second is read, so none is left once the second is answered.
        for _ in range(2):
            assert proc._request(["ping"], 60.0) == ["ok"]
        assert _zombies(host) == 0
    finally:
        proc.close()
