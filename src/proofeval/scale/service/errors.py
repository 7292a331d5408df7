"""The service's errors: every refusal, whichever layer makes it (a route, FastAPI's own
validation and routing, Starlette, the connection guard), answers with its status and
one JSON shape: {"error": {"code", "message", "details"}}. `code` is a stable name a
client can branch on; `message` says why in words; `details` is data or null."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.exceptions import HTTPException

# the code of a refusal that names none, by status
CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: "conflict",
    413: "too_large",
    422: "invalid_request",
    429: "too_many_requests",
    500: "internal_error",
    503: "unavailable",
}


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str
    message: str
    details: Any = None


class ErrorReply(BaseModel):
    """What every refusal of the service answers."""

    model_config = ConfigDict(extra="forbid")
    error: ErrorBody


class Refused(Exception):
    """A refusal: its status, code (by default the status's), message and details."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str = "",
        *,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message = status, message
        self.code = code or CODES.get(status, "error")
        self.details, self.headers = details, headers or {}


def error_json(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


def error_bytes(code: str, message: str) -> bytes:
    """The body of a refusal written below the app (connections.py)."""
    return json.dumps(error_json(code, message)).encode()


def validation_details(exc: ValidationError | RequestValidationError) -> list[dict]:
    """At most 5 of a validation's errors, as data: where, what, and pydantic's type."""
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
    else:
        errors = list(exc.errors())
    return [
        {"loc": [str(part) for part in e.get("loc", ())], "msg": e.get("msg", ""),
         "type": e.get("type", "")}
        for e in errors[:5]
    ]  # fmt: skip


def invalid(exc: ValidationError | RequestValidationError, what: str = "the request") -> Refused:
    """A body that its model refuses, as a 422 whose details list the errors."""
    details = validation_details(exc)
    first = details[0] if details else {"loc": [], "msg": "invalid"}
    where = ".".join(first["loc"]) or "body"
    return Refused(422, f"{what}: {where}: {first['msg']}", details=details)


def install(app: FastAPI, counted: Callable[[int], None]) -> None:
    """Answer every error of `app` in the one shape; `counted(status)` for each refusal."""

    def reply(status: int, code: str, message: str, details: Any = None,
              headers: dict[str, str] | None = None) -> JSONResponse:  # fmt: skip
        counted(status)
        return JSONResponse(error_json(code, message, details), status, headers=headers)

    @app.exception_handler(Refused)
    async def refused(_request: Request, exc: Refused) -> JSONResponse:
        return reply(exc.status, exc.code, exc.message, exc.details, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def unvalidated(_request: Request, exc: RequestValidationError) -> JSONResponse:
        found = invalid(exc)
        return reply(422, found.code, found.message, found.details)

    @app.exception_handler(HTTPException)
    async def routing(_request: Request, exc: HTTPException) -> JSONResponse:
        code = CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        return reply(exc.status_code, code, message, headers=exc.headers)

    @app.exception_handler(Exception)
    async def crashed(_request: Request, exc: Exception) -> JSONResponse:
        # a bug of the service: logged whole, answered without its text (it may hold
        # another client's data)
        logging.getLogger("proofeval.service").exception("internal error", exc_info=exc)
        return reply(500, "internal_error", "the service failed on this request")
