"""Checking on Ray: a real local cluster (a head and a second node started by the test
with `ray start`, each of 1 CPU, stopped afterwards by their process ids), real Coq and
real HOL Light (natively compiled: each node's actor boots its own core, in seconds)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from proofeval.api import Checker, problem
from proofeval.model import Attempt, Outcome, Problem, Verdict
from proofeval.provers.interface import CheckSettings, Job
from proofeval.runs.check import CheckOptions, run_check
from proofeval.scale.ray_cluster import check_all, on_cluster
from tests.test_api import ANSWERS, PROBLEMS, scratch_named, write_jsonl

pytestmark = [pytest.mark.service, pytest.mark.hol, pytest.mark.coq]

RAY = Path(sys.executable).parent / "ray"
COQ_PROBLEMS = [p for p in PROBLEMS if p["prover"] == "coq"]
COQ_ANSWERS = [a for a in ANSWERS if a[0].startswith("coq.")]
HOL_PROBLEMS = [p for p in PROBLEMS if p["prover"] == "hol-light"]
HOL_ANSWERS = [a for a in ANSWERS if a[0].startswith("hol.")]


def remote(address: str | None):
    return on_cluster(address) if address is not None else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.tmp = tmp
        # the nodes' scratch (proofeval-coq-*) is made here: a killed node leaves its own
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "TMPDIR": str(tmp)}
        self.nodes: list[subprocess.Popen] = []

    def start(self, head: bool) -> subprocess.Popen:
        where = ["--head", "--port", str(self.port)] if head else ["--address", self.address]
        cmd = [str(RAY), "start", "--block", "--num-cpus", "1", *where]
        if head:
            cmd += ["--include-dashboard", "false", "--temp-dir", str(self.tmp)]
        log = open(self.tmp / f"node{len(self.nodes)}.log", "w")
        node = subprocess.Popen(
            cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.nodes.append(node)
        return node

    def alive_nodes(self) -> int:
        return sum(n["Alive"] for n in ray.nodes())

    def kill(self, node: subprocess.Popen) -> None:
        """Kill a node: its `ray start` and every process of its session (raylet, workers)."""
        try:
            os.killpg(node.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.wait()

    def wait_for_nodes(self, count: int, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                ray.init(address=self.address, ignore_reinit_error=True, log_to_driver=False)
                if self.alive_nodes() >= count:
                    return
            except ConnectionError:
                pass
            time.sleep(1.0)
        raise AssertionError(f"the Ray cluster did not reach {count} nodes")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    # Ray's socket paths must stay short (AF_UNIX: 107 bytes): not pytest's deep tmp path.
    c = Cluster(Path(tempfile.mkdtemp(prefix="pe-ray-")))
    try:
        c.start(head=True)
        c.wait_for_nodes(1)
        c.start(head=False)
        c.wait_for_nodes(2)
        yield c
    finally:
        ray.shutdown()
        for node in reversed(c.nodes):
            c.kill(node)
        shutil.rmtree(c.tmp, ignore_errors=True)


def test_verdicts_on_ray_equal_proofeval_check(cluster: Cluster, tmp_path: Path) -> None:
    answers = [{"problem_id": p, "answer": a} for p, a, _ in COQ_ANSWERS]
    problems = write_jsonl(tmp_path / "problems.jsonl", COQ_PROBLEMS)
    answers_file = write_jsonl(tmp_path / "answers.jsonl", answers)

    def checked(out: str, ray_address: str | None) -> list[tuple]:
        settings = CheckSettings(workers=2)
        opts = CheckOptions(
            problems, tmp_path / out, answers_file, settings=settings, remote=remote(ray_address)
        )
        rows = run_check(opts)
        return sorted((r.problem_id, r.attempt, r.verdict, r.stage, r.message) for r in rows)

    local, on_ray = checked("local", None), checked("ray", cluster.address)
    assert on_ray == local
    assert {row[2].value for row in on_ray} == {"OK", "FAIL", "CHEATING", "TIMEOUT", "ERROR"}

    with Checker(CheckSettings(), ray=cluster.address) as checker:
        made = {p["id"]: problem("coq", p["statement"], p["header"], p.get("timeout"))
                for p in COQ_PROBLEMS}  # fmt: skip
        outcomes = checker.check([(made[pid], proof) for pid, proof, _ in COQ_ANSWERS])
    assert [o.verdict.value for o in outcomes] == [v for _, _, v in COQ_ANSWERS]


def test_hol_light_verdicts_on_ray_equal_proofeval_check(cluster: Cluster, tmp_path: Path) -> None:
    answers = [{"problem_id": p, "answer": a} for p, a, _ in HOL_ANSWERS]
    problems = write_jsonl(tmp_path / "problems.jsonl", HOL_PROBLEMS)
    answers_file = write_jsonl(tmp_path / "answers.jsonl", answers)

    def checked(out: str, ray_address: str | None) -> list[tuple]:
        settings = CheckSettings(workers=1, native="on")
        opts = CheckOptions(
            problems, tmp_path / out, answers_file, settings=settings, remote=remote(ray_address)
        )
        rows = run_check(opts)
        return sorted((r.problem_id, r.attempt, r.verdict, r.stage, scratch_named(r.message))
                      for r in rows)  # fmt: skip

    local, on_ray = checked("local", None), checked("ray", cluster.address)
    assert on_ray == local
    assert {row[2].value for row in on_ray} == {"OK", "FAIL", "CHEATING", "TIMEOUT", "ERROR"}


def test_a_node_killed_mid_run_loses_no_attempt_and_answers_none_twice(cluster: Cluster) -> None:
    header = "Require Import Arith NArith."
    # each attempt takes a second or two (cbv of a long N.iter: the VM is refused), then
    # is proved
    slow = "let x := eval cbv in (N.iter 300000%N N.succ 0%N) in idtac. "
    jobs = [
        Job(
            Attempt(f"t{i}", k, "", slow + "intros. apply Nat.add_comm."),
            Problem(f"t{i}", f"Theorem t{i} : forall n : nat, n + {i} = {i} + n.",
                    "coq", header=header),
            60.0,
        )
        for i in range(4)
        for k in range(5)
    ]  # fmt: skip
    answered: list[tuple[Attempt, Outcome]] = []
    second = cluster.nodes[1]
    # killed at the first answer, so mid-run whatever this Coq's speed (a fixed delay
    # outlived the whole run on Debian 13's Coq 8.20)
    killer = threading.Thread(target=cluster.kill, args=(second,))

    def answer(attempt: Attempt, outcome: Outcome) -> None:
        answered.append((attempt, outcome))
        if len(answered) == 1:
            killer.start()

    check_all(jobs, CheckSettings(), answer, print, cluster.address)
    if killer.ident is not None:
        killer.join()
    assert second.poll() is not None, "the node was not killed mid-run"
    assert list(cluster.tmp.glob("proofeval-coq-*")), "the nodes' scratch was not in TMPDIR"
    counts = Counter(a for a, _ in answered)
    assert set(counts) == {j.attempt for j in jobs}  # none lost
    assert set(counts.values()) == {1}  # none answered twice
    assert all(o.verdict == Verdict.OK for _, o in answered), [o.message for _, o in answered]
