"""The service's OpenAPI (GET /openapi.json), which FastAPI makes from the routes'
reply models; this adds the bodies the routes read themselves (to bound them) rather
than through FastAPI, each with the models it uses, under components.schemas."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

REF = "#/components/schemas/{model}"


class Bodies:
    """The request models of one app's routes, for its OpenAPI."""

    def __init__(self) -> None:
        self.models: dict[str, type[BaseModel]] = {}

    def body(self, model: type[BaseModel]) -> dict[str, Any]:
        """A route's openapi_extra saying that its body is `model`."""
        self.models[model.__name__] = model
        schema = {"$ref": REF.format(model=model.__name__)}
        return {
            "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}
        }

    def install(self, app: FastAPI) -> None:
        def openapi() -> dict[str, Any]:
            if app.openapi_schema is None:
                schema = get_openapi(
                    title=app.title, version=app.version, description=app.description,
                    routes=app.routes,
                )  # fmt: skip
                found = schema.setdefault("components", {}).setdefault("schemas", {})
                for name, model in self.models.items():
                    own = model.model_json_schema(ref_template=REF)
                    found.update(own.pop("$defs", {}))
                    found[name] = own
                app.openapi_schema = schema
            return app.openapi_schema

        app.openapi = openapi  # type: ignore[method-assign]
