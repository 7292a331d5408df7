"""The service's uvicorn server, as `proofeval serve` runs it and the tests start it."""

from __future__ import annotations

from collections.abc import Callable

import uvicorn

from proofeval.scale.api import Checker
from proofeval.scale.service.app import ServiceConfig, create_app
from proofeval.scale.service.connections import ConnectionGuard


def make_server(
    checker: Checker,
    config: ServiceConfig,
    host: str,
    port: int,
    log_level: str = "info",
    say: Callable[[str], None] = lambda _message: None,
) -> uvicorn.Server:
    """A server for `checker` on host:port (0: any free port), its connections guarded;
    `say`: the warm-up's progress."""
    guard = ConnectionGuard(config.connections)
    app = create_app(checker, config, guard, say)
    return uvicorn.Server(
        uvicorn.Config(
            app,
            host,
            port,
            http=guard.protocol(),
            ws="none",  # no upgrades: one protocol, one set of rules
            log_level=log_level,
            # an idle keep-alive is closed after this; its next request's headers are
            # under the header timeout from the end of the response anyway
            timeout_keep_alive=5,
        )
    )
