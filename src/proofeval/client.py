"""The service client's public path (its code lives in proofeval/scale/client.py)."""

from proofeval.scale.client import CheckClient, ServiceError

__all__ = ["CheckClient", "ServiceError"]
