"""proofeval serve: an HTTP service that checks proof attempts (for RL reward functions)."""

from __future__ import annotations

import argparse
import ipaddress
import os
from dataclasses import replace
from pathlib import Path

from proofeval.commands.options import add_checker_options, checker_settings, positive
from proofeval.errors import InputError
from proofeval.provers.registry import supported


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve checking over HTTP (POST /check, /states/..., GET /health, /metrics, "
        "/openapi.json)",
        description="Check batches of (problem, proof) over HTTP with warm contexts kept "
        "across requests: the verdicts of `proofeval check`. POST /check {items: [{problem: "
        "{prover, header, statement, timeout} or a --bench problem id, proof}]} answers one "
        "{verdict, stage, seconds, message} per item, in order; /states/... are proof-state "
        "sessions; GET /openapi.json describes every route, and every error answers "
        "{error: {code, message, details}}. The provers and --bench's contexts start at "
        "once (progress on stderr and in GET /health). SIGTERM finishes the requests in "
        "flight, then exits.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    p.add_argument("--port", type=int, default=8000, help="port (default %(default)s)")
    p.add_argument(
        "--token-env",
        metavar="VAR",
        help="require `Authorization: Bearer <the value of environment variable VAR>` on "
        "/check and /metrics; needed to listen beyond loopback",
    )
    p.add_argument(
        "--bench",
        type=Path,
        metavar="DIR",
        help="a benchmark (as `proofeval check` reads) whose problems items may name by id, "
        "with its timeouts",
    )
    p.add_argument(
        "--bench-only",
        action="store_true",
        help="refuse problems given inline: only --bench problems. An inline statement is "
        "data (for HOL Light one term in backquotes, parsed in a confined fork, never run: "
        "it cannot change another problem's goal). An inline HOL Light header may only load "
        'HOL Light\'s own files (`needs "Library/FILE.ml";;` lines) unless '
        "--client-header-code",
    )
    p.add_argument(
        "--client-header-code",
        action="store_true",
        help="run inline headers as the code they are (trusted clients only): a header is "
        "code the prover runs, in a context of its own (shared only by the same header "
        "text, loaded within --memory-limit and an hour), inside the sandbox the other "
        "contexts share; while it loads it can signal their processes, fill the shared "
        "scratch and take over what they share (docs/integrity.md)",
    )
    p.add_argument(
        "--provers",
        metavar="LIST",
        default=",".join(sorted(supported())),
        help="provers checked for inline problems, started before /health says ready "
        "(default %(default)s)",
    )
    p.add_argument(
        "--max-memory",
        type=positive(float),
        metavar="MB",
        help="close least recently used idle contexts while the prover processes use more "
        "(default: no budget)",
    )
    p.add_argument(
        "--idle-seconds",
        metavar="SECONDS",
        type=positive(float),
        default=600.0,
        help="close a context unused that long (default %(default)s)",
    )
    p.add_argument(
        "--max-body-mb",
        metavar="MB",
        type=positive(float),
        default=16.0,
        help="larger requests are refused with 413 (default %(default)s)",
    )
    p.add_argument(
        "--max-batch",
        metavar="N",
        type=positive(int),
        default=1024,
        help="items per request; more are refused with 422 (default %(default)s)",
    )
    p.add_argument(
        "--max-queue",
        metavar="N",
        type=positive(int),
        default=10_000,
        help="attempts waiting at most; a request that would exceed it gets 429 with "
        "Retry-After (default %(default)s)",
    )
    p.add_argument(
        "--max-timeout",
        metavar="SECONDS",
        type=positive(float),
        default=600.0,
        help="largest timeout a request may ask for, in seconds (default %(default)s)",
    )
    p.add_argument(
        "--header-timeout",
        metavar="SECONDS",
        type=positive(float),
        default=10.0,
        help="a request's headers must arrive within this of the connection or of the "
        "previous response; else 408 and the connection is closed (default %(default)s)",
    )
    p.add_argument(
        "--body-timeout",
        metavar="SECONDS",
        type=positive(float),
        default=60.0,
        help="a request's body must arrive within this of its headers; else 408 and the "
        "connection is closed (default %(default)s)",
    )
    p.add_argument(
        "--max-connections",
        metavar="N",
        type=positive(int),
        default=512,
        help="open connections at most; one more closes the one waiting longest on its "
        "client, or gets 503 when all are being answered (default %(default)s)",
    )
    add_checker_options(p)
    p.set_defaults(handler=run, own_signals=True)  # uvicorn drains on SIGTERM itself


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def token(args: argparse.Namespace) -> str | None:
    if args.token_env is None:
        if not is_loopback(args.host):
            raise InputError(
                f"listening on {args.host} needs a token: give --token-env VAR, with the "
                "token in environment variable VAR"
            )
        return None
    value = os.environ.get(args.token_env, "")
    if len(value) < 16:
        raise InputError(f"environment variable {args.token_env}: a token of 16+ characters")
    return value


def provers(text: str) -> tuple[str, ...]:
    names = tuple(sorted({name.strip() for name in text.split(",") if name.strip()}))
    unknown = sorted(set(names) - supported())
    if unknown or not names:
        raise InputError(
            f"--provers: {', '.join(unknown) or 'none given'} (proofeval checks: "
            f"{', '.join(sorted(supported()))})"
        )
    return names


def bench(args: argparse.Namespace):
    """The --bench problems by id, each with the timeout `proofeval check` would use."""
    if args.bench is None:
        return {}
    from proofeval.loaders import load_benchmark
    from proofeval.timeouts import load_policy

    problems = load_benchmark(args.bench).problems
    policy = load_policy(args.bench, args.timeout_map, args.timeouts, args.timeout)
    return {p.id: replace(p, timeout=policy.for_problem(p)) for p in problems}


def run(args: argparse.Namespace) -> int:
    from proofeval.console import say
    from proofeval.runs.manifest import version
    from proofeval.scale.api import Checker
    from proofeval.scale.service.app import ServiceConfig
    from proofeval.scale.service.connections import ConnectionLimits
    from proofeval.scale.service.server import make_server

    config = ServiceConfig(
        token=token(args),
        bench=bench(args),
        bench_only=args.bench_only,
        client_header_code=args.client_header_code,
        provers=provers(args.provers),
        max_body_bytes=int(args.max_body_mb * 2**20),
        max_batch=args.max_batch,
        max_queue=args.max_queue,
        max_timeout=args.max_timeout,
        connections=ConnectionLimits(args.header_timeout, args.body_timeout, args.max_connections),
        version=version(),
    )
    if args.bench_only and not config.bench:
        raise InputError("--bench-only needs --bench DIR")
    directories = {Path(p.directory) for p in config.bench.values() if p.directory}
    checker = Checker(
        checker_settings(args),
        timeout=args.timeout,
        max_memory_mb=args.max_memory,
        idle_seconds=args.idle_seconds,
        read_only=directories,
        on_event=say,
    )
    make_server(checker, config, args.host, args.port, say=say).run()
    return 0
