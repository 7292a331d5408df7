"""The service's counters, in the Prometheus text format (version 0.0.4)."""

from __future__ import annotations

import threading
from bisect import bisect_left

from proofeval.checking.engine import Stats
from proofeval.model import Outcome, Verdict
from proofeval.scale.service.connections import ConnectionGuard

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class Histogram:
    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # the last one: above every bound
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(BUCKETS, value)] += 1
        self.total += value

    def lines(self, name: str) -> list[str]:
        out, running = [], 0
        for bound, count in zip((*map(str, BUCKETS), "+Inf"), self.counts, strict=True):
            running += count
            out.append(f'{name}_bucket{{le="{bound}"}} {running}')
        out += [f"{name}_sum {self.total}", f"{name}_count {running}"]
        return out


class Metrics:
    def __init__(self, guard: ConnectionGuard | None = None) -> None:
        self.guard = guard
        self._lock = threading.Lock()
        self.verdicts = dict.fromkeys((v.value for v in Verdict), 0)
        self.attempt_seconds = Histogram()
        self.request_seconds = Histogram()
        self.refused: dict[int, int] = {}

    def answered(self, outcomes: list[Outcome], seconds: float) -> None:
        with self._lock:
            for outcome in outcomes:
                self.verdicts[outcome.verdict.value] += 1
                self.attempt_seconds.observe(outcome.seconds)
            self.request_seconds.observe(seconds)

    def refuse(self, status: int) -> None:
        with self._lock:
            self.refused[status] = self.refused.get(status, 0) + 1

    def render(self, stats: Stats) -> str:
        with self._lock:
            lines = [
                "# HELP proofeval_attempts_total Attempts checked, by verdict.",
                "# TYPE proofeval_attempts_total counter",
                *(
                    f'proofeval_attempts_total{{verdict="{v}"}} {n}'
                    for v, n in self.verdicts.items()
                ),
                "# HELP proofeval_attempt_seconds Time the prover spent on each attempt.",
                "# TYPE proofeval_attempt_seconds histogram",
                *self.attempt_seconds.lines("proofeval_attempt_seconds"),
                "# HELP proofeval_request_seconds Time from a /check request to its answer.",
                "# TYPE proofeval_request_seconds histogram",
                *self.request_seconds.lines("proofeval_request_seconds"),
                "# HELP proofeval_requests_refused_total Requests refused, by HTTP status.",
                "# TYPE proofeval_requests_refused_total counter",
                *(
                    f'proofeval_requests_refused_total{{status="{s}"}} {n}'
                    for s, n in sorted(self.refused.items())
                ),
            ]
        gauges = {
            "queue_depth": ("Attempts waiting for a worker.", stats.queued),
            "running_attempts": ("Attempts being checked.", stats.running),
            "warm_contexts": ("Contexts kept loaded.", stats.contexts),
            "prover_memory_bytes": ("Memory of the prover processes.", stats.memory_mb * 2**20),
        }
        if self.guard is not None:
            gauges["open_connections"] = ("HTTP connections open.", len(self.guard.open))
        for name, (help_text, value) in gauges.items():
            lines += [
                f"# HELP proofeval_{name} {help_text}",
                f"# TYPE proofeval_{name} gauge",
                f"proofeval_{name} {value}",
            ]
        return "\n".join(lines + self._connections()) + "\n"

    def _connections(self) -> list[str]:
        if self.guard is None:
            return []
        return [
            "# HELP proofeval_connections_closed_total Connections closed by the service: "
            "a request too slow, the oldest waiter evicted, or refused (all busy).",
            "# TYPE proofeval_connections_closed_total counter",
            *(
                f'proofeval_connections_closed_total{{reason="{r}"}} {n}'
                for r, n in self.guard.closed.items()
            ),
        ]
