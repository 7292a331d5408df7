"""Checking at RL scale: the same small HOL Light attempts through `proofeval check`'s code
(run_check, one batch), the Python API (proofeval.Checker) and the HTTP service (a real
uvicorn on loopback, called with CheckClient), all on one warm HOL Light core, and Ray (a
head and a second node on this machine, each node's actor booting its own core). One run
prints every figure:

    .venv/bin/python benchmarks/checking_throughput.py [--attempts 2000] [--clients 64] [--no-ray]
                                                       [--native auto|on|off]

- throughput: every attempt, from `--clients` concurrent callers that each send batches
  of `--batch` (threads for the API, asyncio tasks for the service), against run_check;
- latency: one attempt per call from a single caller, `--single` calls each through the
  API and the service, taking turns; the service's overhead per attempt is the
  difference of medians;
- a statement new to the warm context (registered, and the worker cloned anew), one
  attempt per call, against the same statements once known.

`--native` chooses HOL Light's path for every layer alike (default auto, as proofeval's).

The core is booted once (minutes) before anything is timed: `proofeval check` pays it
on every invocation, the API and the service once per process. The service runs in this
process (its event loop shares the interpreter with the callers), which is pessimistic.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import uvicorn

from proofeval.api import Checker, problem
from proofeval.client import CheckClient
from proofeval.provers.hol_light.server import launcher
from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check
from proofeval.scale.service.app import ServiceConfig, create_app


def attempts(n: int) -> list[tuple[str, str, str]]:
    """(statement, proof, expected verdict): nine of ten right, the others wrong."""
    rows = []
    for i in range(n):
        k = i % 97  # a few problems, many attempts each, as pass@k sampling gives
        statement = f"`!n. n + {k} = {k} + n`"
        wrong = i % 10 == 9
        rows.append(
            (statement, "REWRITE_TAC[]" if wrong else "ARITH_TAC", "FAIL" if wrong else "OK")
        )
    return rows


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def via_check(rows, base, settings: CheckSettings) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        ids = {s: f"p{i}" for i, s in enumerate(dict.fromkeys(s for s, _, _ in rows))}
        problems = Path(tmp, "problems.jsonl")
        problems.write_text(
            "".join(json.dumps({"id": pid, "statement": s}) + "\n" for s, pid in ids.items())
        )
        answers = Path(tmp, "answers.jsonl")
        answers.write_text(
            "".join(json.dumps({"problem_id": ids[s], "answer": p}) + "\n" for s, p, _ in rows)
        )
        opts = CheckOptions(problems, Path(tmp, "run"), answers, settings=settings)
        start = time.perf_counter()
        results = run_check(opts, warm={"hol-light": base})
        seconds = time.perf_counter() - start
    assert sorted(r.verdict.value for r in results) == sorted(v for _, _, v in rows)
    return seconds


def batches(rows, clients: int, batch: int) -> list[list[list[tuple[str, str, str]]]]:
    """Each client's batches, dealt round-robin."""
    chunks = [rows[i : i + batch] for i in range(0, len(rows), batch)]
    return [chunks[c::clients] for c in range(clients)]


def via_api(checker: Checker, rows, clients: int, batch: int) -> tuple[float, list[float]]:
    latencies: list[float] = []

    def client(mine) -> None:
        for chunk in mine:
            start = time.perf_counter()
            got = checker.check([(problem("hol-light", s), p) for s, p, _ in chunk])
            latencies.append(time.perf_counter() - start)
            assert [o.verdict.value for o in got] == [v for _, _, v in chunk]

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, batches(rows, clients, batch)))
    return time.perf_counter() - start, latencies


def item(statement: str, proof: str) -> dict:
    return {"problem": {"prover": "hol-light", "statement": statement}, "proof": proof}


def via_service(url: str, rows, clients: int, batch: int) -> tuple[float, list[float]]:
    latencies: list[float] = []

    async def client(http: CheckClient, mine) -> None:
        for chunk in mine:
            start = time.perf_counter()
            got = await http.acheck([item(s, p) for s, p, _ in chunk])
            latencies.append(time.perf_counter() - start)
            assert [o.verdict.value for o in got] == [v for _, _, v in chunk]

    async def everyone() -> None:
        http = CheckClient(url, timeout=3600)
        try:
            await asyncio.gather(*(client(http, m) for m in batches(rows, clients, batch)))
        finally:
            await http.aclose()

    start = time.perf_counter()
    asyncio.run(everyone())
    return time.perf_counter() - start, latencies


def single_latencies(calls, rows) -> list[list[float]]:
    """Seconds of each call, one attempt per call, the callers taking turns on each
    attempt (so that both see the same load on a shared machine)."""
    out: list[list[float]] = [[] for _ in calls]
    for statement, proof, verdict in rows:
        for call, seconds in zip(calls, out, strict=True):
            start = time.perf_counter()
            assert call(statement, proof) == verdict
            seconds.append(time.perf_counter() - start)
    return out


def new_statements(checker: Checker, count: int = 20) -> tuple[float, float]:
    """Median seconds of one attempt at a statement the warm context has not seen (it is
    registered, and the worker is cloned anew to have it), then at the same ones again."""
    rows = [(f"`!n. n + {k} = {k} + n`", "ARITH_TAC", "OK") for k in range(1000, 1000 + count)]

    def call(statement: str, proof: str) -> str:
        return checker.check([(problem("hol-light", statement), proof)])[0].verdict.value

    (new,) = single_latencies([call], rows)
    (known,) = single_latencies([call], rows)
    return statistics.median(new), statistics.median(known)


def serve(checker: Checker) -> tuple[uvicorn.Server, str]:
    config = ServiceConfig(provers=("hol-light",), max_batch=4096, max_queue=100_000)
    app = create_app(checker, config)
    server = uvicorn.Server(uvicorn.Config(app, "127.0.0.1", 0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


def line(label: str, seconds: float, n: int, latencies: list[float] | None = None) -> None:
    text = f"{label:<34} {seconds:7.2f} s  {n / seconds:7.1f} attempts/s"
    if latencies:
        text += f"  p50 {percentile(latencies, 0.5) * 1e3:7.1f} ms"
        text += f"  p99 {percentile(latencies, 0.99) * 1e3:7.1f} ms (per call)"
    print(text, flush=True)


class LocalRay:
    """A head and a second node on this machine, 1 CPU each (the same 2 cores as the
    others' 2 workers); stopped by killing their process groups. Ray runs its workers,
    and so their prover processes, at niceness 15 unless told otherwise: 0 here, as the
    API's, or on a shared machine they get a fraction of the CPU the API gets."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        self.tmp = tempfile.mkdtemp(prefix="pe-ray-")
        ray = str(Path(sys.executable).parent / "ray")
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0"}
        common = [ray, "start", "--block", "--num-cpus", "1"]
        head = ["--head", "--port", str(port), "--include-dashboard", "false"]
        self.nodes = [
            subprocess.Popen(
                [*common, *where], env=env, start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            for where in ([*head, "--temp-dir", self.tmp], ["--address", self.address])
        ]  # fmt: skip
        time.sleep(15)  # both nodes registered (the executor uses those alive when it starts)

    def close(self) -> None:
        for node in reversed(self.nodes):
            try:
                os.killpg(node.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            node.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def via_ray(rows, settings: CheckSettings, clients: int, batch: int) -> tuple[float, list[float]]:
    cluster = LocalRay()
    try:
        with Checker(settings, ray=cluster.address) as on_ray:  # workers: 1 per CPU
            print("Ray: each node boots its own HOL Light core...", file=sys.stderr, flush=True)
            # Boots both nodes' cores and loads the context on each. A statement new to a
            # node costs it a goal and a new clone of its worker (about 0.1 s): the
            # API's context has every statement after its warm-up, so each node must too.
            # Attempts go to whichever node has room, so every statement is sent 4 times.
            via_api(on_ray, rows[: 97 * 4], 8, 4)
            return via_api(on_ray, rows, clients, batch)
    finally:
        cluster.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attempts", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4, help="attempts per call (default 4)")
    ap.add_argument("--single", type=int, default=200, help="one-attempt calls (default 200)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true", help="leave out the Ray part")
    ap.add_argument(
        "--native", choices=("auto", "on", "off"), default="auto",
        help="HOL Light natively compiled or on the toplevel, the same in every layer "
        "(proofeval's --native; default auto)",
    )  # fmt: skip
    args = ap.parse_args()
    rows = attempts(args.attempts)
    n = len(rows)
    settings = CheckSettings(workers=args.workers, native=args.native)
    print("booting the HOL Light core...", file=sys.stderr, flush=True)
    core = launcher(settings)
    start = time.perf_counter()
    base = core.start()
    path = "natively" if core.native else "on the toplevel"
    print(f"core booted {path} in {time.perf_counter() - start:.1f} s "
          "(paid by every `proofeval check`)")  # fmt: skip
    try:
        with (
            Checker(settings, warm={"hol-light": base}) as api,
            Checker(settings, warm={"hol-light": base}) as behind_service,
        ):
            server, url = serve(behind_service)
            # warm-up: every context loaded in both, so that no figure includes loading
            via_api(api, rows[:97], 8, 4)
            via_service(url, rows[:97], 8, 4)
            print(f"\n{n} attempts, {args.workers} workers, {args.clients} concurrent callers, "
                  f"{args.batch} attempts per call")  # fmt: skip
            check_s = via_check(rows, base, settings)
            line("run_check (proofeval check, warm)", check_s, n)
            api_s, api_lat = via_api(api, rows, args.clients, args.batch)
            line("API: Checker.check", api_s, n, api_lat)
            svc_s, svc_lat = via_service(url, rows, args.clients, args.batch)
            line("service: POST /check", svc_s, n, svc_lat)

            sample = rows[: args.single]
            http = CheckClient(url)
            one_api, one_svc = single_latencies(
                [
                    lambda s, p: api.check([(problem("hol-light", s), p)])[0].verdict.value,
                    lambda s, p: http.check([item(s, p)])[0].verdict.value,
                ],
                sample,
            )
            http.close()
            server.should_exit = True
            new_s, known_s = new_statements(api)
    finally:
        core.close()  # the Ray nodes boot their own cores: free these cores first
    if not args.no_ray:
        ray_s, ray_lat = via_ray(rows, settings, args.clients, args.batch)
        line("Ray: head + second node, 1 CPU each", ray_s, n, ray_lat)
    a50, s50 = statistics.median(one_api), statistics.median(one_svc)
    print(f"\none attempt per call, one caller, {len(sample)} calls each:")
    print(f"  API      p50 {a50 * 1e3:6.1f} ms  p99 {percentile(one_api, 0.99) * 1e3:6.1f} ms")
    print(f"  service  p50 {s50 * 1e3:6.1f} ms  p99 {percentile(one_svc, 0.99) * 1e3:6.1f} ms")
    print(f"  service overhead per attempt at p50: {(s50 - a50) * 1e3:.1f} ms (target <= 5)")
    print(f"  a statement new to the warm context: p50 {new_s * 1e3:.1f} ms "
          f"(the same statements again: {known_s * 1e3:.1f} ms)")  # fmt: skip
    print(f"\nper attempt under load: run_check {check_s / n * 1e3:.1f} ms, API "
          f"{api_s / n * 1e3:.1f} ms, service {svc_s / n * 1e3:.1f} ms "
          f"(+{(svc_s - api_s) / n * 1e3:.1f} ms over the API)")  # fmt: skip
    print(f"throughput API / run_check: {check_s / api_s:.2f}")
    print(f"throughput service / API:   {api_s / svc_s:.2f}")
    if not args.no_ray:
        print(f"throughput Ray / API:       {api_s / ray_s:.2f} (target >= 0.90)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
