"""proofeval.Checker: check (problem, proof) pairs from Python, warm across calls, on this
machine or on the nodes of a Ray cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from proofeval.checking.checker import LocalChecker, problem
from proofeval.checking.engine import Remote, Stats, context_key
from proofeval.provers.backend import SharedProcess
from proofeval.provers.interface import CheckSettings
from proofeval.timeouts import DEFAULT_TIMEOUT

__all__ = ["Checker", "Stats", "context_key", "problem"]


class Checker(LocalChecker):
    __doc__ = (LocalChecker.__doc__ or "").replace(
        "    remote: where attempts are checked instead of this machine's provers.",
        "    ray: the address of a Ray cluster whose nodes check instead of this machine, each\n"
        "    with a Checker of these settings (its `workers`: the node's cores).",
    )

    def __init__(
        self,
        settings: CheckSettings | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_memory_mb: float | None = None,
        idle_seconds: float = 600.0,
        read_only: Iterable[Path] = (),
        warm: Mapping[str, SharedProcess] | None = None,
        on_event=None,
        ray: str | None = None,
    ) -> None:
        settings = settings or CheckSettings()
        read_only = list(read_only)
        remote: Remote | None = None
        if ray is not None:
            from proofeval.scale.ray_cluster import RayExecutor

            node = {"timeout": timeout, "max_memory_mb": max_memory_mb}
            node |= {"idle_seconds": idle_seconds, "read_only": read_only}
            remote = RayExecutor(ray, settings, on_event or (lambda _msg: None), **node)
        super().__init__(
            settings,
            timeout=timeout,
            max_memory_mb=max_memory_mb,
            idle_seconds=idle_seconds,
            read_only=read_only,
            warm=warm,
            on_event=on_event,
            remote=remote,
        )
